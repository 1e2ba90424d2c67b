// engine/io/output_file: the one way tinyformer writes a file. Each kind of
// output path (missing, regular, symlink, FIFO, character device, directory,
// socket, block device), outputs over inputs, and a signal mid-write.
#include <doctest/doctest.h>

#include "engine/error.h"
#include "engine/io/output_file.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

using test_helpers::TempDirectory;
using test_helpers::read_file;
using tinyformer::OutputFile;
using tinyformer::check_outputs;
using tinyformer::write_file;

namespace {

// Runs `body` in a forked child, which exits with body's return value (unless a signal
// ends it first), and returns the child's wait status.
template <typename Body>
int wait_status_of_child(Body body) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) ::_exit(body());
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    return status;
}

// The names in a folder, to see that no temporary file stays behind.
std::set<std::string> names_in(const std::filesystem::path& folder) {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) names.insert(entry.path().filename().string());
    return names;
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

mode_t file_type(const std::string& path) {
    struct stat info {};
    REQUIRE(::lstat(path.c_str(), &info) == 0);
    return info.st_mode & S_IFMT;
}

// Reads a FIFO in a thread until every writer has closed it, or 60 s pass,
// so that a writer that replaced the FIFO instead of writing into it fails
// the test instead of hanging it. The reader holds a writing end of its own
// until finish(), so that the pipe shows no end of file before the writer
// under test has come.
class FifoReader {
public:
    explicit FifoReader(const std::string& path) {
        read_fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        REQUIRE(read_fd_ >= 0);
        hold_fd_ = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        REQUIRE(hold_fd_ >= 0);
        thread_ = std::thread([this] {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            char buffer[65536];
            while (std::chrono::steady_clock::now() < deadline) {
                pollfd ready{read_fd_, POLLIN, 0};
                if (::poll(&ready, 1, 100) <= 0) continue;
                const ssize_t got = ::read(read_fd_, buffer, sizeof buffer);
                if (got > 0) received_.append(buffer, static_cast<size_t>(got));
                if (got == 0 && released_.load()) break;  // every writer has closed the pipe
                if (got == 0) ::usleep(1000);
            }
        });
    }
    ~FifoReader() {
        if (thread_.joinable()) finish();
    }
    // What came through, once the writer under test is done.
    std::string finish() {
        released_.store(true);
        ::close(hold_fd_);
        thread_.join();
        ::close(read_fd_);
        return received_;
    }

private:
    int read_fd_ = -1, hold_fd_ = -1;
    std::atomic<bool> released_{false};
    std::string received_;
    std::thread thread_;
};

}  // namespace

TEST_CASE("A new file is written whole, as an ordinary file (0666 less the umask), and no temporary file stays") {
    TempDirectory dir;
    const std::string path = dir.file("out.bin");
    const mode_t old_mask = ::umask(027);
    write_file(path, std::string("hello\0world", 11), "test");
    ::umask(old_mask);
    CHECK(read_file(path) == std::string("hello\0world", 11));
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0640);  // 0666 & ~027, worked by hand
    CHECK(names_in(dir.path()) == std::set<std::string>{"out.bin"});
}

TEST_CASE("The old file stays until commit(); an OutputFile dropped without commit() leaves it and no temporary") {
    TempDirectory dir;
    const std::string path = dir.file("out.bin");
    write_text(path, "old");
    {
        OutputFile out(path, "test");
        out.write("new bytes");
        const std::string temporary = std::filesystem::path(out.temporary_path()).filename().string();
        // ".out.bin.tmp-" and 12 random characters, beside the target.
        CHECK(temporary.starts_with(".out.bin.tmp-"));
        CHECK(temporary.size() == std::string(".out.bin.tmp-").size() + 12);
        CHECK(std::filesystem::path(out.temporary_path()).parent_path() == dir.path());
        CHECK(read_file(path) == "old");
        CHECK(names_in(dir.path()).size() == 2);
    }  // an error would leave the scope like this
    CHECK(read_file(path) == "old");
    CHECK(names_in(dir.path()) == std::set<std::string>{"out.bin"});

    OutputFile out(path, "test");
    out.write("new bytes");
    out.commit();
    CHECK(read_file(path) == "new bytes");
    CHECK(names_in(dir.path()) == std::set<std::string>{"out.bin"});
}

TEST_CASE("Two temporary names for the same output differ (not predictable from the path and the process id)") {
    TempDirectory dir;
    OutputFile first(dir.file("out"), "test");
    OutputFile second(dir.file("out"), "test");
    CHECK(first.temporary_path() != second.temporary_path());
    CHECK(std::filesystem::path(first.temporary_path()).filename().string().find(std::to_string(::getpid())) ==
          std::string::npos);
}

TEST_CASE("A symlink at the output is replaced by the new file; the file it pointed at is not written") {
    TempDirectory dir;
    write_text(dir.file("victim"), "precious");
    std::filesystem::create_symlink(dir.file("victim"), dir.file("out"));
    write_file(dir.file("out"), "new", "test");
    CHECK(read_file(dir.file("victim")) == "precious");
    CHECK(file_type(dir.file("out")) == S_IFREG);
    CHECK(read_file(dir.file("out")) == "new");
}

TEST_CASE("A symlink planted at the old predictable temporary name (PATH.tmp-<pid>) is left alone") {
    TempDirectory dir;
    write_text(dir.file("victim"), "precious");
    const std::string planted = dir.file("out.tmp-" + std::to_string(::getpid()));
    std::filesystem::create_symlink(dir.file("victim"), planted);
    write_file(dir.file("out"), "new", "test");
    CHECK(read_file(dir.file("victim")) == "precious");
    CHECK(file_type(planted) == S_IFLNK);
    CHECK(read_file(dir.file("out")) == "new");
}

TEST_CASE("A FIFO is written as a stream and stays a FIFO") {
    TempDirectory dir;
    const std::string fifo = dir.file("pipe");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    FifoReader reader(fifo);
    const std::string bytes(100000, 'x');                      // more than a pipe's buffer
    {
        OutputFile out(fifo, "test");
        CHECK(out.is_stream());
        out.write(bytes);
        out.commit();
    }
    CHECK(reader.finish() == bytes);
    CHECK(file_type(fifo) == S_IFIFO);
    CHECK(names_in(dir.path()) == std::set<std::string>{"pipe"});
}

TEST_CASE("A character device is written as a stream and stays one (as root: a private node with /dev/null's numbers)") {
    if (::geteuid() != 0) {
        MESSAGE("not root: no private device node can be made; /dev/null itself is not used for this test");
        return;
    }
    TempDirectory dir;
    const std::string device = dir.file("null");
    REQUIRE(::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    write_file(device, "into the void", "test");
    CHECK(file_type(device) == S_IFCHR);
    CHECK(names_in(dir.path()) == std::set<std::string>{"null"});
}

TEST_CASE("A directory, a socket and a block device are refused by name, and nothing is created") {
    TempDirectory dir;
    std::filesystem::create_directory(dir.file("folder"));
    CHECK_ERROR_CONTAINS(OutputFile(dir.file("folder"), "test"), "test: cannot write ", "folder: it is a directory");
    CHECK_ERROR_CONTAINS(check_outputs("test", {}, {dir.file("folder")}), "folder is a directory");

    const std::string socket_path = dir.file("socket");
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    REQUIRE(socket_path.size() < sizeof(address.sun_path));
    std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
    CHECK_ERROR_CONTAINS(OutputFile(socket_path, "test"), "socket: it is a socket");
    ::close(fd);

    if (::geteuid() == 0) {
        const std::string block = dir.file("block");
        REQUIRE(::mknod(block.c_str(), S_IFBLK | 0600, makedev(7, 200)) == 0);  // a loop device number, never opened
        CHECK_ERROR_CONTAINS(OutputFile(block, "test"), "block: it is a block device");
    }
    CHECK(names_in(dir.path()).size() == (::geteuid() == 0 ? 3u : 2u));
}

TEST_CASE("check_outputs refuses an output that is an input: the same path, ./path, a symlink, a hard link") {
    TempDirectory dir;
    const std::string model = dir.file("m.safetensors");
    write_text(model, "the model");
    std::filesystem::create_symlink(model, dir.file("link"));
    std::filesystem::create_hard_link(model, dir.file("hard"));
    for (const std::string& output : {model, dir.path().string() + "/./m.safetensors", dir.file("link"), dir.file("hard")}) {
        CAPTURE(output);
        CHECK_ERROR_CONTAINS(check_outputs("forward", {dir.file("other"), model}, {output}), "forward: the output ",
                             "is the input ", "m.safetensors (the same file)");
    }
    CHECK_NOTHROW(check_outputs("forward", {model}, {dir.file("new.safetensors")}));
    CHECK_NOTHROW(check_outputs("forward", {dir.file("missing-input")}, {dir.file("new.safetensors")}));
    CHECK(read_file(model) == "the model");
}

TEST_CASE("check_outputs refuses two outputs that are the same file, existing or not yet") {
    TempDirectory dir;
    CHECK_ERROR_CONTAINS(check_outputs("explore", {}, {dir.file("x.html"), dir.path().string() + "/./x.html"}),
                         "explore: the outputs ", "are the same file");
    write_text(dir.file("a"), "a");
    std::filesystem::create_hard_link(dir.file("a"), dir.file("b"));
    CHECK_ERROR_CONTAINS(check_outputs("explore", {}, {dir.file("a"), dir.file("b")}), "are the same file");
    CHECK_NOTHROW(check_outputs("explore", {}, {dir.file("x.html"), dir.file("x.json")}));
}

TEST_CASE("SIGTERM, SIGINT, SIGHUP, SIGQUIT and SIGXFSZ during a write remove the temporary file, keep the old output, and end the process by that signal") {
    for (const int signal_number : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXFSZ}) {
        CAPTURE(signal_number);
        TempDirectory dir;
        const std::string path = dir.file("out");
        write_text(path, "old output");
        const int status = wait_status_of_child([&] {
            const struct rlimit no_core {0, 0};  // SIGQUIT and SIGXFSZ dump core by default: not here
            ::setrlimit(RLIMIT_CORE, &no_core);
            // A shell without job control starts a background command with SIGINT and SIGQUIT
            // ignored, and the writer keeps an ignored signal ignored (the next test case):
            // the signal's default action, as in a terminal, whoever started the suite.
            std::signal(signal_number, SIG_DFL);
            OutputFile out(path, "test");
            out.write("half of the new output");
            std::raise(signal_number);  // as Ctrl-C or kill would, mid-write
            return 0;                   // not reached: the signal ends the process
        });
        CHECK(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == signal_number);
        CHECK(read_file(path) == "old output");
        CHECK(names_in(dir.path()) == std::set<std::string>{"out"});
    }
}

TEST_CASE("A signal the process ignores (nohup, a background job) stays ignored during a write: the write completes") {
    for (const int signal_number : {SIGINT, SIGQUIT, SIGHUP}) {
        CAPTURE(signal_number);
        TempDirectory dir;
        const std::string path = dir.file("out");
        write_text(path, "old output");
        const int status = wait_status_of_child([&] {
            std::signal(signal_number, SIG_IGN);
            {
                OutputFile out(path, "test");
                out.write("new output");
                std::raise(signal_number);  // ignored: nothing happens
                out.commit();
            }
            return std::signal(signal_number, SIG_DFL) == SIG_IGN ? 0 : 3;  // still ignored after the write
        });
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        CHECK(read_file(path) == "new output");
        CHECK(names_in(dir.path()) == std::set<std::string>{"out"});
    }
}

namespace {

// A child whose file size limit (`ulimit -f`) is 1000 bytes writes 300,000
// bytes to `path`, SIGXFSZ as `sigxfsz` says; its wait status, or its exit
// status 3 when the write was refused with an Error.
int write_past_file_size_limit(const std::string& path, void (*sigxfsz)(int)) {
    return wait_status_of_child([&] {
        const struct rlimit no_core {0, 0};
        ::setrlimit(RLIMIT_CORE, &no_core);
        std::signal(SIGXFSZ, sigxfsz);
        struct rlimit size {};
        ::getrlimit(RLIMIT_FSIZE, &size);
        size.rlim_cur = 1000;
        ::setrlimit(RLIMIT_FSIZE, &size);
        try {
            OutputFile out(path, "test");
            out.write(std::string(300000, 'n'));
            out.commit();
        } catch (const tinyformer::Error& error) {
            return std::string(error.what()).find("File too large") != std::string::npos ? 3 : 4;
        }
        return 0;
    });
}

}  // namespace

TEST_CASE("A file past ulimit -f leaves no temporary file: SIGXFSZ ends the process, or an ignored one is an Error") {
    TempDirectory dir;
    const std::string path = dir.file("out");
    write_text(path, "old output");
    const int killed = write_past_file_size_limit(path, SIG_DFL);
    CHECK(WIFSIGNALED(killed));
    CHECK(WTERMSIG(killed) == SIGXFSZ);
    CHECK(read_file(path) == "old output");
    CHECK(names_in(dir.path()) == std::set<std::string>{"out"});
    const int refused = write_past_file_size_limit(path, SIG_IGN);  // write() fails with EFBIG
    CHECK(WIFEXITED(refused));
    CHECK(WEXITSTATUS(refused) == 3);
    CHECK(read_file(path) == "old output");
    CHECK(names_in(dir.path()) == std::set<std::string>{"out"});
}

TEST_CASE("A signal the process ignores stays ignored while a file is written") {
    TempDirectory dir;
    struct sigaction ignore {}, before {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ignore, &before);
    {
        OutputFile out(dir.file("out"), "test");
        struct sigaction during {};
        sigaction(SIGINT, nullptr, &during);
        CHECK((during.sa_handler == SIG_IGN));
        out.commit();
    }
    sigaction(SIGINT, &before, nullptr);
}

TEST_CASE("A folder that does not exist is named in the error") {
    TempDirectory dir;
    CHECK_ERROR_CONTAINS(write_file(dir.file("missing/out.png"), "x", "write_png"), "write_png: cannot write ",
                         "missing/out.png: No such file or directory (creating a temporary file in its folder)");
}

// --- The same rules seen from the command line ------------------------------

namespace {

const std::string kModel = "data/reference/ed_post_relu_sin.model.safetensors";
const std::string kInputs = "data/reference/ed_post_relu_sin.inputs.safetensors";

}  // namespace

TEST_CASE("tinyformer forward --output FIFO streams the whole file into the pipe, which stays a FIFO") {
    TempDirectory dir;
    const std::string fifo = dir.file("pipe");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    FifoReader reader(fifo);
    const auto run = test_helpers::run_tinyformer({"forward", kModel, "--inputs", kInputs, "--output", fifo});
    const std::string received = reader.finish();
    INFO("stderr: ", run.err);
    CHECK(run.status == 0);
    CHECK(file_type(fifo) == S_IFIFO);
    // What came through the pipe is the same file that a regular output gets.
    test_helpers::run_tinyformer_ok({"forward", kModel, "--inputs", kInputs, "--output", dir.file("file.safetensors")});
    CHECK(received.size() > 8);
    CHECK(received == read_file(dir.file("file.safetensors")));
}

TEST_CASE("tinyformer forward --output DEVICE writes into a character device and leaves it one (as root, a private node)") {
    if (::geteuid() != 0) {
        MESSAGE("not root: no private device node can be made");
        return;
    }
    TempDirectory dir;
    const std::string device = dir.file("null");
    REQUIRE(::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    test_helpers::run_tinyformer_ok({"forward", kModel, "--inputs", kInputs, "--output", device});
    CHECK(file_type(device) == S_IFCHR);
    CHECK(names_in(dir.path()) == std::set<std::string>{"null"});
}

TEST_CASE("tinyformer forward through a symlink planted at the old temporary name PATH.tmp-$$ leaves the victim alone") {
    TempDirectory dir;
    write_text(dir.file("victim"), "precious");
    const std::string command = "cd " + test_helpers::shell_quoted(dir.path().string()) +
                                " && ln -s victim out.safetensors.tmp-$$ && exec " +
                                test_helpers::shell_quoted(std::filesystem::absolute(test_helpers::tinyformer_binary()).string()) +
                                " forward " + std::filesystem::absolute(kModel).string() + " --inputs " +
                                std::filesystem::absolute(kInputs).string() + " --output out.safetensors 2>/dev/null";
    const int status = std::system(("sh -c " + test_helpers::shell_quoted(command)).c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(read_file(dir.file("victim")) == "precious");
    CHECK(file_type(dir.file("out.safetensors")) == S_IFREG);
}

TEST_CASE("tinyformer attention leaves a user's own index.md alone (one note line) and rewrites its own") {
    TempDirectory dir;
    const std::string out = dir.file("maps");
    std::filesystem::create_directory(out);
    write_text(out + "/index.md", "# my notes\n");
    auto run = test_helpers::run_tinyformer_ok({"attention", "data/models/reverse.safetensors", "abc", "--grids-only",
                                                "--output", out});
    CHECK(read_file(out + "/index.md") == "# my notes\n");
    CHECK(run.err.find("wrote ") != std::string::npos);
    CHECK(run.err.find("index.md is not one this command wrote (no marker line): left alone") != std::string::npos);
    CHECK(run.err.find("pictures and ") == std::string::npos);  // no claim that it wrote index.md

    std::filesystem::remove(out + "/index.md");
    run = test_helpers::run_tinyformer_ok({"attention", "data/models/reverse.safetensors", "abc", "--grids-only", "--output", out});
    const std::string first = read_file(out + "/index.md");
    CHECK(first.starts_with("<!-- written by tinyformer attention"));
    run = test_helpers::run_tinyformer_ok({"attention", "data/models/reverse.safetensors", "abcd", "--grids-only", "--output", out});
    CHECK(read_file(out + "/index.md") != first);  // its own file, written afresh
    CHECK(read_file(out + "/index.md").find("abcd") != std::string::npos);

    // A symlink named index.md is not this command's file either: the file it points at is not written.
    write_text(dir.file("elsewhere.md"), "keep me");
    std::filesystem::remove(out + "/index.md");
    std::filesystem::create_symlink(dir.file("elsewhere.md"), out + "/index.md");
    test_helpers::run_tinyformer_ok({"attention", "data/models/reverse.safetensors", "abc", "--grids-only", "--output", out});
    CHECK(read_file(dir.file("elsewhere.md")) == "keep me");
    CHECK(file_type(out + "/index.md") == S_IFLNK);
}

TEST_CASE("tinyformer attention whose picture cannot be written exits 1 with one error line and claims nothing") {
    TempDirectory dir;
    const std::string out = dir.file("maps");
    std::filesystem::create_directories(out + "/overview.png");  // a folder where a picture goes
    const auto run = test_helpers::run_tinyformer({"attention", "data/models/reverse.safetensors", "abc", "--output", out});
    INFO("stderr: ", run.err);
    CHECK(run.status == 1);
    CHECK(run.err.starts_with("tinyformer: error: "));
    CHECK(run.err.find("overview.png") != std::string::npos);
    CHECK(run.err.find('\n') == run.err.size() - 1);
    CHECK(run.err.find("wrote") == std::string::npos);
}

TEST_CASE("tinyformer explore leaves a user's own x.html.tmp alone (it used to be its temporary name)") {
    TempDirectory dir;
    write_text(dir.file("x.html.tmp"), "my draft");
    test_helpers::run_tinyformer_ok({"explore", "data/models/reverse.safetensors", "abc", "--html", dir.file("x.html")});
    CHECK(read_file(dir.file("x.html.tmp")) == "my draft");
    CHECK(read_file(dir.file("x.html")).starts_with("<!DOCTYPE html>"));
    CHECK(names_in(dir.path()) == std::set<std::string>{"x.html", "x.html.tmp"});
}

TEST_CASE("A name for an open descriptor (/proc/self/fd/N, or a symlink to it) is written through it, never replaced") {
    TempDirectory dir;
    const std::string file = dir.file("shell-opened");
    write_text(file, "");
    const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "first ", 6) == 6);
    // A private stand-in for /dev/stdout: a symlink to /proc/self/fd/N.
    std::filesystem::create_symlink("/proc/self/fd/" + std::to_string(fd), dir.file("stdout"));
    {
        OutputFile out(dir.file("stdout"), "test");
        CHECK(out.is_stream());
        out.write("second");
        out.commit();
    }
    ::close(fd);
    CHECK(read_file(file) == "first second");  // the descriptor's O_APPEND kept
    CHECK(file_type(dir.file("stdout")) == S_IFLNK);
    CHECK(names_in(dir.path()) == std::set<std::string>{"shell-opened", "stdout"});

    CHECK_ERROR_CONTAINS(OutputFile("/proc/self/fd/987654", "test"), "file descriptor 987654 is not open");
    CHECK_ERROR_CONTAINS(check_outputs("test", {}, {"/dev/fd/987654"}), "names file descriptor 987654, which is not open");
}

TEST_CASE("check_outputs refuses a descriptor's name that is open on an input") {
    TempDirectory dir;
    write_text(dir.file("m"), "model");
    const int fd = ::open(dir.file("m").c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK_ERROR_CONTAINS(check_outputs("forward", {dir.file("m")}, {"/proc/self/fd/" + std::to_string(fd)}),
                         "is the input ", "(the same file)");
    ::close(fd);
}

TEST_CASE("A terminal is refused as an output, by path and by descriptor") {
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
    REQUIRE(master >= 0);
    REQUIRE(::grantpt(master) == 0);
    REQUIRE(::unlockpt(master) == 0);
    const std::string terminal = ::ptsname(master);
    CHECK_ERROR_CONTAINS(OutputFile(terminal, "forward"), "forward: the output ", "is a terminal");
    const int slave = ::open(terminal.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    REQUIRE(slave >= 0);
    CHECK_ERROR_CONTAINS(check_outputs("forward", {}, {"/proc/self/fd/" + std::to_string(slave)}), "is a terminal");
    ::close(slave);
    ::close(master);
}

TEST_CASE("check_outputs refuses a new file whose folder is missing or is a file, before any work") {
    TempDirectory dir;
    CHECK_ERROR_CONTAINS(check_outputs("forward", {}, {dir.file("missing/out")}), "forward: cannot write ",
                         "missing/out: its folder ", "No such file or directory");
    write_text(dir.file("plain"), "x");
    CHECK_ERROR_CONTAINS(check_outputs("forward", {}, {dir.file("plain/out")}), "plain/out: ", "plain is not a folder");
    CHECK_ERROR_CONTAINS(check_outputs("forward", {}, {""}), "forward: an output path is empty");
    CHECK_NOTHROW(check_outputs("forward", {}, {"relative-name-in-cwd"}));
}

TEST_CASE("A picture or a page can go to a stream: --output /dev/stdout puts only the PNG on stdout, the report on stderr") {
    // /dev/stdout of the child is the test's capture file: written through the descriptor, never replaced.
    auto run = test_helpers::run_tinyformer_ok({"mask", "causal", "--len", "4", "--output", "/dev/stdout"});
    CHECK(run.out.starts_with("\x89PNG\r\n\x1a\n"));
    CHECK(run.err.find("causal mask, T=4") != std::string::npos);
    run = test_helpers::run_tinyformer_ok({"probe", "data/models/sort.safetensors", "314", "--output", "/dev/stdout"});
    CHECK(run.out.starts_with("\x89PNG\r\n\x1a\n"));
    CHECK(run.err.find("head ablation") != std::string::npos);
    run = test_helpers::run_tinyformer_ok({"explore", "data/models/reverse.safetensors", "abc", "--html", "/dev/stdout"});
    CHECK(run.out.starts_with("<!DOCTYPE html>"));
    CHECK(run.out.find("/dev/stdout\n") == std::string::npos);  // no path line mixed into the page
    // And into a FIFO, whose name has no .png ending.
    TempDirectory dir;
    const std::string fifo = dir.file("pipe");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    FifoReader reader(fifo);
    run = test_helpers::run_tinyformer({"mask", "causal", "--len", "4", "--output", fifo});
    const std::string received = reader.finish();
    CHECK(run.status == 0);
    CHECK(received.starts_with("\x89PNG\r\n\x1a\n"));
    CHECK(run.out.find("causal mask, T=4") != std::string::npos);  // stdout is not the picture: the report stays there
}
