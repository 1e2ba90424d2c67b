// The one way tinyformer writes a file (docs/FORMAT.md, "Writing files").
// Every output goes through here: safetensors (forward, trace), PNG
// pictures, the explorer's HTML and JSON, attention's index.md.
//
//   check_outputs("forward", {model, inputs}, {output});  // before any work
//   OutputFile out(output, "forward");
//   out.write(bytes.data(), bytes.size());                // as often as needed
//   out.commit();                                         // now it is there
//
// What the output path is decides how it is written:
//   - missing, a regular file, or a symlink to one (or a dangling one): the
//     bytes go to a new temporary file in the same folder, ".NAME.tmp-" and
//     12 random letters (created with O_CREAT|O_EXCL|O_NOFOLLOW, so never
//     through a symlink), which commit() fsyncs and renames over NAME. A
//     symlink at NAME is replaced by the new file; what it pointed at is
//     never written. Until commit() the old NAME is untouched; an OutputFile
//     destroyed without commit() (an error) removes its temporary file.
//   - a character device or a FIFO (/dev/null, a named pipe, `>(cat)`), also
//     through a symlink: opened and written as a stream, never replaced.
//   - a name for an open file descriptor (/dev/stdout, /dev/stderr,
//     /dev/fd/N, /proc/self/fd/N, or a symlink to one): written through that
//     descriptor as a stream, whatever it is open on (`--output /dev/stdout
//     > f` writes f), never replaced.
//   - a directory, a socket, a block device: refused (Error naming the path);
//     so is a terminal (bytes meant for a file would go to the screen).
// SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGXFSZ (a file past `ulimit -f`)
// while a temporary file exists remove it; the process then ends by that
// signal as it would have (exit status 128 + signal). A signal the process
// ignores stays ignored; an ignored SIGXFSZ makes write() fail with EFBIG,
// an Error that removes the temporary file too. A stream whose reader goes
// away ends the process by SIGPIPE, as `cat` does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tinyformer {

// Before any work: Error when an output path is empty, a directory, socket,
// block device or terminal, or a new file whose folder is missing or not
// writable; when an output is the same file as one of the inputs (same
// device and inode once links are followed, so `./m`, symlinks and hard
// links count); or when two outputs name the same file (paths that do not
// exist yet are compared by their absolute, normalized form). Character
// devices take part in neither comparison (/dev/null may be named twice).
// `op` starts the message.
void check_outputs(const char* op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);

class OutputFile {
public:
    OutputFile(const std::string& path, const char* op);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(const void* data, size_t size);
    void write(std::string_view text) { write(text.data(), text.size()); }
    // Regular file: fsync and rename into place. Stream: close.
    void commit();

    bool is_stream() const { return stream_; }
    const std::string& temporary_path() const { return temporary_; }  // empty for a stream

private:
    [[noreturn]] void fail_writing(const char* what, int error);

    std::string path_, temporary_, op_;
    int fd_ = -1;
    int slot_ = -1;  // in the signal handler's list of temporary files
    bool stream_ = false;
};

// Whether OutputFile writes `path` as a stream (a FIFO, a character device,
// a descriptor's name): such a path needs no file-name ending (`--output
// /dev/null` for a picture).
bool is_stream_output(const std::string& path);
// Whether `path` is the file standard output is open on (`--output
// /dev/stdout`, `/dev/fd/1`): then a command prints its report to stderr, so
// that the report and the file never mix.
bool is_standard_output(const std::string& path);

// A whole file at once through OutputFile.
void write_file(const std::string& path, std::string_view bytes, const char* op);

}  // namespace tinyformer
