#include "engine/output_file.h"

#include "engine/error.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <climits>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tinyformer {

namespace {

// What a path is, in words, for the messages; nullptr for a kind we write.
const char* refused_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISREG(mode) || S_ISCHR(mode) || S_ISFIFO(mode)) return nullptr;
    return "not a regular file, character device or FIFO";
}

// A name the folder cannot hold, refused before a temporary file is made.
void check_name_length(const char* op, const std::string& path) {
    const size_t length = std::filesystem::path(path).filename().string().size();
    if (length > NAME_MAX)
        fail(op, ": cannot write ", path, ": File name too long (", length, " bytes; a file name holds at most ",
             NAME_MAX, ")");
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

std::string normalized(const std::string& path) {
    std::error_code ignored;
    return std::filesystem::weakly_canonical(std::filesystem::absolute(path, ignored), ignored).string();
}

// --- The temporary files a signal must remove -------------------------------
// A fixed table the handler can read without locks or allocation: a slot's
// path is written before it is marked in use.
constexpr int kSlots = 16;
constexpr size_t kSlotPath = 4096;
char slot_paths[kSlots][kSlotPath];
std::atomic<bool> slot_used[kSlots];
std::mutex slots_mutex;  // taking and giving back slots (never in the handler)
int slots_in_use = 0;
struct sigaction previous_int, previous_term;

extern "C" void remove_temporaries_and_die(int signal_number) {
    for (int i = 0; i < kSlots; ++i)
        if (slot_used[i].load()) ::unlink(slot_paths[i]);
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
}

// A signal the process ignores (nohup, a shell's background job) stays ignored.
void install(int signal_number, struct sigaction& previous) {
    struct sigaction action {};
    action.sa_handler = remove_temporaries_and_die;
    sigemptyset(&action.sa_mask);
    sigaction(signal_number, nullptr, &previous);
    if (previous.sa_handler != SIG_IGN) sigaction(signal_number, &action, nullptr);
}

int take_slot(const std::string& path) {
    std::lock_guard<std::mutex> lock(slots_mutex);
    if (path.size() >= kSlotPath) return -1;
    for (int i = 0; i < kSlots; ++i) {
        if (slot_used[i].load()) continue;
        std::memcpy(slot_paths[i], path.c_str(), path.size() + 1);
        if (slots_in_use++ == 0) {
            install(SIGINT, previous_int);
            install(SIGTERM, previous_term);
        }
        slot_used[i].store(true);
        return i;
    }
    return -1;  // more than kSlots files at once: written, but not cleaned up on a signal
}

void give_back_slot(int slot) {
    if (slot < 0) return;
    std::lock_guard<std::mutex> lock(slots_mutex);
    slot_used[slot].store(false);
    if (--slots_in_use == 0) {
        sigaction(SIGINT, &previous_int, nullptr);
        sigaction(SIGTERM, &previous_term, nullptr);
    }
}

// ".NAME.tmp-XXXXXX" beside `path` (NAME cut so that the name stays under NAME_MAX).
std::string temporary_template(const std::string& path) {
    const std::filesystem::path target(path);
    std::string name = target.filename().string().substr(0, 200);
    const std::filesystem::path folder = target.parent_path();
    return (folder / ("." + name + ".tmp-XXXXXX")).string();
}

mode_t current_umask() {
    const mode_t mask = ::umask(022);
    ::umask(mask);
    return mask;
}

}  // namespace

void check_outputs(const char* op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
    struct Output {
        const std::string* path;
        bool exists;
        struct stat info;
    };
    std::vector<Output> seen;
    for (const std::string& output : outputs) {
        check_name_length(op, output);
        Output o{&output, false, {}};
        o.exists = ::stat(output.c_str(), &o.info) == 0;
        if (o.exists) {
            if (const char* kind = refused_kind(o.info.st_mode))
                fail(op, ": the output ", output, " is ", kind, "; give a file name (a FIFO or a character device such "
                     "as /dev/null is written as a stream)");
            // A character device (/dev/null, a terminal) is no input's file to lose.
            for (const std::string& input : S_ISCHR(o.info.st_mode) ? std::vector<std::string>{} : inputs) {
                struct stat in {};
                if (::stat(input.c_str(), &in) == 0 && same_file(in, o.info))
                    fail(op, ": the output ", output, " is the input ", input,
                         " (the same file); writing it would destroy the input: give another output path");
            }
        }
        for (const Output& earlier : seen) {
            const bool same = o.exists && earlier.exists ? same_file(o.info, earlier.info)
                                                         : normalized(output) == normalized(*earlier.path);
            if (same) fail(op, ": the outputs ", *earlier.path, " and ", output, " are the same file; give two paths");
        }
        seen.push_back(o);
    }
}

OutputFile::OutputFile(const std::string& path, const char* op) : path_(path), op_(op) {
    if (path.empty()) fail(op, ": the output path is empty");
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0) {
        if (const char* kind = refused_kind(info.st_mode))
            fail(op, ": cannot write ", path, ": it is ", kind, " (give a file name)");
        if (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode)) {
            // O_NOCTTY: a terminal named as the output must not become ours.
            fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
            if (fd_ < 0) fail(op, ": cannot write ", path, ": ", std::strerror(errno));
            struct stat opened {};
            if (::fstat(fd_, &opened) != 0 || !(S_ISCHR(opened.st_mode) || S_ISFIFO(opened.st_mode))) {
                ::close(fd_);
                fd_ = -1;
                fail(op, ": cannot write ", path, ": it changed while being opened");
            }
            stream_ = true;
            return;
        }
    }
    check_name_length(op, path);
    std::string name = temporary_template(path);
    fd_ = ::mkostemp(name.data(), O_CLOEXEC);  // O_CREAT|O_EXCL: a new file, never a symlink's target
    if (fd_ < 0)
        fail(op, ": cannot write ", path, ": ", std::strerror(errno), " (creating a temporary file in its folder)");
    temporary_ = name;
    slot_ = take_slot(temporary_);
    // mkostemp makes the file 0600; an output is an ordinary file (0666 less the umask).
    ::fchmod(fd_, 0666 & ~current_umask());
}

OutputFile::~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!temporary_.empty()) ::unlink(temporary_.c_str());
    give_back_slot(slot_);
}

void OutputFile::fail_writing(const char* what, int error) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temporary_.empty()) ::unlink(temporary_.c_str());
    temporary_.clear();
    give_back_slot(slot_);
    slot_ = -1;
    fail(op_, ": cannot write ", path_, ": ", what, std::strerror(error));
}

void OutputFile::write(const void* data, size_t size) {
    if (fd_ < 0) fail(op_, ": ", path_, " was already written or has failed");
    const char* bytes = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t written = ::write(fd_, bytes, size);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) fail_writing("", written < 0 ? errno : ENOSPC);
        bytes += written;
        size -= static_cast<size_t>(written);
    }
}

void OutputFile::commit() {
    if (fd_ < 0) fail(op_, ": ", path_, " was already written or has failed");
    if (!stream_ && ::fsync(fd_) != 0) fail_writing("", errno);
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) fail_writing("", errno);
    if (stream_) return;
    if (::rename(temporary_.c_str(), path_.c_str()) != 0) fail_writing("moving the written file into place: ", errno);
    temporary_.clear();
    give_back_slot(slot_);
    slot_ = -1;
    // The rename itself on disk: best effort (a folder that cannot be opened is still written).
    const std::string folder = std::filesystem::path(path_).parent_path().string();
    const int folder_fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folder_fd >= 0) {
        ::fsync(folder_fd);
        ::close(folder_fd);
    }
}

void write_file(const std::string& path, std::string_view bytes, const char* op) {
    OutputFile out(path, op);
    out.write(bytes);
    out.commit();
}

}  // namespace tinyformer
