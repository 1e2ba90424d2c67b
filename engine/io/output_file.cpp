#include "engine/io/output_file.h"

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
#include <sys/random.h>
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
// The signals that end a process mid-write and can be caught: Ctrl-C, kill,
// a closed terminal, Ctrl-\, and `ulimit -f` (SIGXFSZ: the file outgrew the
// limit; when it is ignored, write() fails with EFBIG, which fail_writing
// handles).
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXFSZ};
constexpr size_t kSignalCount = sizeof kCleanupSignals / sizeof kCleanupSignals[0];
struct sigaction previous_actions[kSignalCount];

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

// Marked in use before the file is created: a signal between the two finds
// a name that is not there yet, never a file that is not in the table.
int take_slot(const std::string& path) {
    std::lock_guard<std::mutex> lock(slots_mutex);
    if (path.size() >= kSlotPath) return -1;
    for (int i = 0; i < kSlots; ++i) {
        if (slot_used[i].load()) continue;
        std::memcpy(slot_paths[i], path.c_str(), path.size() + 1);
        if (slots_in_use++ == 0)
            for (size_t k = 0; k < kSignalCount; ++k) install(kCleanupSignals[k], previous_actions[k]);
        slot_used[i].store(true);
        return i;
    }
    return -1;  // more than kSlots files at once: written, but not cleaned up on a signal
}

void give_back_slot(int slot) {
    if (slot < 0) return;
    std::lock_guard<std::mutex> lock(slots_mutex);
    slot_used[slot].store(false);
    if (--slots_in_use == 0)
        for (size_t k = 0; k < kSignalCount; ++k) sigaction(kCleanupSignals[k], &previous_actions[k], nullptr);
}

// ".NAME.tmp-" and 12 random letters and digits beside `path` (NAME cut to
// 200 bytes, so that the name stays under NAME_MAX).
std::string temporary_name(const std::string& path) {
    static const char kLetters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char random[12];
    if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random))
        fail("cannot write ", path, ": no random numbers for a temporary name: ", std::strerror(errno));
    std::string suffix;
    for (unsigned char byte : random) suffix += kLetters[byte % (sizeof kLetters - 1)];
    const std::filesystem::path target(path);
    const std::string name = target.filename().string().substr(0, 200);
    return (target.parent_path() / ("." + name + ".tmp-" + suffix)).string();
}

// The file descriptor a path names, when it names one: /dev/stdout (1),
// /dev/stderr (2), /dev/fd/N, /proc/self/fd/N, /proc/<this pid>/fd/N, or a
// symlink that leads to one of them; -1 otherwise. Such a path is written
// through the descriptor the shell opened (its offset and O_APPEND kept):
// following the link would reach the shell's file by name, and replacing it
// would replace /dev/stdout itself.
int descriptor_named_by(std::string path) {
    const std::string own = "/proc/" + std::to_string(::getpid()) + "/fd/";
    for (int hop = 0; hop < 40; ++hop) {
        if (path == "/dev/stdout") return 1;
        if (path == "/dev/stderr") return 2;
        for (const std::string& prefix : {std::string("/dev/fd/"), std::string("/proc/self/fd/"), own}) {
            if (!path.starts_with(prefix) || path.size() == prefix.size() || path.size() > prefix.size() + 9) continue;
            const std::string digits = path.substr(prefix.size());
            if (digits.find_first_not_of("0123456789") == std::string::npos) return std::stoi(digits);
        }
        struct stat info {};
        if (::lstat(path.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return -1;
        std::string target(4096, '\0');
        const ssize_t length = ::readlink(path.c_str(), target.data(), target.size());
        if (length <= 0) return -1;
        target.resize(static_cast<size_t>(length));
        path = target.starts_with("/") ? target : (std::filesystem::path(path).parent_path() / target).string();
    }
    return -1;
}

// A terminal is no place for binary output (or for text the user did not ask to see).
void refuse_terminal(const char* op, const std::string& path, int fd) {
    if (::isatty(fd))
        fail(op, ": the output ", path, " is a terminal; the bytes would go to the screen: redirect it to a file");
}

// The folder a new file goes into exists and may be written.
void check_folder(const char* op, const std::string& path) {
    const std::string folder = std::filesystem::path(path).parent_path().string();
    const std::string shown = folder.empty() ? "." : folder;
    struct stat info {};
    if (::stat(shown.c_str(), &info) != 0)
        fail(op, ": cannot write ", path, ": its folder ", shown, ": ", std::strerror(errno));
    if (!S_ISDIR(info.st_mode)) fail(op, ": cannot write ", path, ": ", shown, " is not a folder");
    if (::access(shown.c_str(), W_OK | X_OK) != 0)
        fail(op, ": cannot write ", path, ": its folder ", shown, " is not writable: ", std::strerror(errno));
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
        if (output.empty()) fail(op, ": an output path is empty");
        Output o{&output, false, {}};
        if (const int fd = descriptor_named_by(output); fd >= 0) {
            if (::fstat(fd, &o.info) != 0) fail(op, ": the output ", output, " names file descriptor ", fd, ", which is not open");
            refuse_terminal(op, output, fd);
            o.exists = true;
        } else {
            check_name_length(op, output);
            o.exists = ::stat(output.c_str(), &o.info) == 0;
            if (!o.exists) check_folder(op, output);
        }
        if (o.exists) {
            if (const char* kind = refused_kind(o.info.st_mode))
                fail(op, ": the output ", output, " is ", kind, "; give a file name (a FIFO or a character device such "
                     "as /dev/null is written as a stream)");
            if (S_ISREG(o.info.st_mode) && descriptor_named_by(output) < 0) check_folder(op, output);
            // A character device (/dev/null, a terminal) is no input's file to lose.
            for (const std::string& input : S_ISCHR(o.info.st_mode) ? std::vector<std::string>{} : inputs) {
                struct stat in {};
                if (::stat(input.c_str(), &in) == 0 && same_file(in, o.info))
                    fail(op, ": the output ", output, " is the input ", input,
                         " (the same file); writing it would destroy the input: give another output path");
            }
        }
        for (const Output& earlier : seen) {
            if ((o.exists && S_ISCHR(o.info.st_mode)) || (earlier.exists && S_ISCHR(earlier.info.st_mode))) continue;
            const bool same = o.exists && earlier.exists ? same_file(o.info, earlier.info)
                                                         : normalized(output) == normalized(*earlier.path);
            if (same) fail(op, ": the outputs ", *earlier.path, " and ", output, " are the same file; give two paths");
        }
        seen.push_back(o);
    }
}

OutputFile::OutputFile(const std::string& path, const char* op) : path_(path), op_(op) {
    if (path.empty()) fail(op, ": the output path is empty");
    if (const int fd = descriptor_named_by(path); fd >= 0) {
        struct stat info {};
        if (::fstat(fd, &info) != 0) fail(op, ": cannot write ", path, ": file descriptor ", fd, " is not open");
        if (const char* kind = refused_kind(info.st_mode)) fail(op, ": cannot write ", path, ": it is ", kind);
        refuse_terminal(op, path, fd);
        fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (fd_ < 0) fail(op, ": cannot write ", path, ": ", std::strerror(errno));
        stream_ = true;
        return;
    }
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0) {
        if (const char* kind = refused_kind(info.st_mode))
            fail(op, ": cannot write ", path, ": it is ", kind, " (give a file name)");
        if (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode)) {
            // O_NOCTTY: a terminal named as the output must not become ours.
            fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
            if (fd_ < 0) fail(op, ": cannot write ", path, ": ", std::strerror(errno));
            struct stat opened {};
            const bool still_a_stream = ::fstat(fd_, &opened) == 0 && (S_ISCHR(opened.st_mode) || S_ISFIFO(opened.st_mode));
            const bool terminal = still_a_stream && ::isatty(fd_);
            if (!still_a_stream || terminal) {
                ::close(fd_);
                fd_ = -1;
                if (!still_a_stream) fail(op, ": cannot write ", path, ": it changed while being opened");
                fail(op, ": the output ", path, " is a terminal; the bytes would go to the screen: redirect it to a file");
            }
            stream_ = true;
            return;
        }
    }
    check_name_length(op, path);
    // O_CREAT|O_EXCL: a new file of an unpredictable name, never a symlink's target.
    for (int attempt = 0; fd_ < 0; ++attempt) {
        std::string name = temporary_name(path);
        slot_ = take_slot(name);
        fd_ = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd_ >= 0) {
            temporary_ = name;
            break;
        }
        const int error = errno;
        give_back_slot(slot_);
        slot_ = -1;
        if (error != EEXIST || attempt == 100)
            fail(op, ": cannot write ", path, ": ", std::strerror(error), " (creating a temporary file in its folder)");
    }
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

bool is_stream_output(const std::string& path) {
    if (descriptor_named_by(path) >= 0) return true;
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode));
}

bool is_standard_output(const std::string& path) {
    if (descriptor_named_by(path) == STDOUT_FILENO) return true;
    struct stat out {}, info {};
    return ::fstat(STDOUT_FILENO, &out) == 0 && ::stat(path.c_str(), &info) == 0 && same_file(out, info);
}

void write_file(const std::string& path, std::string_view bytes, const char* op) {
    OutputFile out(path, op);
    out.write(bytes);
    out.commit();
}

}  // namespace tinyformer
