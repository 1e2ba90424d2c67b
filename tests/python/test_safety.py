#!/usr/bin/python3
"""Tests of the Python tools' file writing (tools/python/safe_write.py, used by every
tool's outputs) and of tools/python/compare_trace.py's refusals. Standard library and
numpy only: no PyTorch, no build/tinyformer (`make test-tools`).

- safe_write: a regular file is replaced through a temporary file of an
  unpredictable name (none left behind); a FIFO and, as root, a private
  character device made with mknod in a temporary folder are written as
  streams and stay what they were; a symlink at the target is replaced and
  the file it pointed to is left alone; a file at the old predictable temp
  name (`OUT.tmp<pid>`) is left alone; a directory, a socket, a block device
  (root) and a missing folder are refused by name; an output that is the same
  file as an input (also as ./NAME, a symlink or a hard link), or as another
  output, is refused; SIGTERM / SIGINT / SIGHUP / SIGQUIT in the middle of a
  write, and a file past `ulimit -f` (SIGXFSZ, or EFBIG where it is ignored,
  as Python does), remove the temporary file, leave the old output and kill
  the process by that signal
  (a script catching KeyboardInterrupt goes on; an ignored signal stays
  ignored); /proc/self/fd/N, /dev/fd/N and links to them are written to that
  descriptor (a child's stdout redirected to a file, never the real
  /dev/stdout), a closed one and a terminal (a private pty) are refused;
  every stat error is an OutputError; a 250-byte name is written, a 256-byte
  one refused; `a` and `./a` are one output; a FIFO swapped for a file after
  the check is not overwritten; a folder not writable is refused.
- compare_trace: says how many values it compared; all positions padding is
  refused (nothing to agree about); a name listed twice is refused by name.
Every refusal: its exit status, one line on stderr, nothing on stdout, the
folder unchanged (sha256 of each file).

    /usr/bin/python3 tests/python/test_safety.py          # from any folder
    /usr/bin/python3 tests/python/test_safety.py -v -k Signal
"""

import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

import numpy as np

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools" / "python"
sys.path.insert(0, str(TOOLS))
import safe_write  # noqa: E402
import safetensors_io as st  # noqa: E402

PY = sys.executable


def folder_state(folder):
    """{name: what is there}: sha256 of a regular file, the target of a link, the kind otherwise."""
    state = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            state[name] = ("link", os.readlink(path))
        elif stat.S_ISREG(info.st_mode):
            state[name] = ("file", hashlib.sha256(Path(path).read_bytes()).hexdigest(), info.st_ino)
        else:
            state[name] = ("special", stat.S_IFMT(info.st_mode), info.st_ino)
    return state


def start_reader(fifo, received):
    """A daemon thread reading FIFO to its end into `received`: when a writer
    never comes, the test fails on join's timeout instead of hanging at exit."""
    reader = threading.Thread(target=lambda: received.append(Path(fifo).read_bytes()), daemon=True)
    reader.start()
    return reader


def run_as_nobody(code):
    """Run Python `code` (safe_write importable) as a user who may not write the
    test's folders: as root, the child becomes uid/gid 65534; otherwise the
    caller has taken the write permission away and the child runs as we do."""
    prelude = f"import sys; sys.path.insert(0, {str(TOOLS)!r}); import safe_write\n"
    user = {"user": 65534, "group": 65534, "extra_groups": []} if os.geteuid() == 0 else {}
    return subprocess.run([PY, "-c", prelude + code], capture_output=True, text=True, **user)


class Temp:
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-safety-")
        self.dir = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return str(self.dir / name)

    def assert_one_line(self, text):
        self.assertTrue(text.endswith("\n") and text.count("\n") == 1, repr(text))

    def refused(self, outputs, inputs, *expected):
        """check_outputs refuses, the message holds every `expected`, nothing in the folder changes."""
        before = folder_state(self.dir)
        with self.assertRaises(safe_write.OutputError) as caught:
            safe_write.check_outputs(outputs, inputs)
        message = str(caught.exception)
        for text in expected:
            self.assertIn(text, message)
        self.assertNotIn("\n", message)
        self.assertEqual(folder_state(self.dir), before)
        return message


# ----------------------------------------------------------------------------
# safe_write
# ----------------------------------------------------------------------------


class Writing(Temp, unittest.TestCase):
    def test_regular_file_replaced_through_a_temporary_file(self):
        out = self.path("out.bin")
        Path(out).write_bytes(b"old")
        old_inode = os.stat(out).st_ino
        safe_write.write_bytes(out, b"new contents")
        self.assertEqual(Path(out).read_bytes(), b"new contents")
        self.assertNotEqual(os.stat(out).st_ino, old_inode, "a new file renamed into place, not rewritten")
        self.assertEqual(os.listdir(self.dir), ["out.bin"], "no temporary file left")
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(stat.S_IMODE(os.stat(out).st_mode), 0o666 & ~mask)

    def test_fifo_is_written_as_a_stream(self):
        fifo = self.path("pipe")
        os.mkfifo(fifo)
        received = []
        reader = start_reader(fifo, received)
        data = bytes(range(256)) * 1000          # more than a pipe buffer
        safe_write.write_bytes(fifo, data)
        reader.join(10)
        self.assertFalse(reader.is_alive(), "the reader got its end of file")
        self.assertEqual(received, [data])
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is still a FIFO")
        self.assertEqual(os.listdir(self.dir), ["pipe"])

    def test_safetensors_to_a_fifo(self):
        fifo = self.path("pipe")
        os.mkfifo(fifo)
        received = []
        reader = start_reader(fifo, received)
        tensors = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}
        st.write(fifo, tensors, {"k": "v"})
        reader.join(10)
        self.assertFalse(reader.is_alive(), "the reader got its end of file")
        self.assertEqual(received, [st.encode(tensors, {"k": "v"})])
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))

    @unittest.skipUnless(os.geteuid() == 0, "mknod needs root")
    def test_private_character_device_is_written_as_a_stream(self):
        device = self.path("null")                     # a null device of our own, never the real /dev/null
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        before = os.lstat(device)
        safe_write.write_bytes(device, b"x" * 100000)
        st.write(device, {"w": np.zeros(3, np.float32)})
        after = os.lstat(device)
        self.assertTrue(stat.S_ISCHR(after.st_mode), "still a character device")
        self.assertEqual((after.st_ino, after.st_rdev), (before.st_ino, before.st_rdev))
        self.assertEqual(os.listdir(self.dir), ["null"])

    def test_symlink_at_the_target_is_replaced_not_followed(self):
        victim = self.path("victim")
        Path(victim).write_bytes(b"precious")
        out = self.path("out.safetensors")
        os.symlink(victim, out)
        st.write(out, {"w": np.ones(2, np.float32)})
        self.assertEqual(Path(victim).read_bytes(), b"precious")
        self.assertTrue(stat.S_ISREG(os.lstat(out).st_mode), "the target is now a regular file")
        self.assertEqual(st.read(out)[0]["w"].tolist(), [1.0, 1.0])

    def test_file_at_the_old_predictable_temp_name_is_left_alone(self):
        victim = self.path("victim")
        Path(victim).write_bytes(b"precious")
        out = self.path("out.safetensors")
        old_temp = f"{out}.tmp{os.getpid()}"          # the name tools/python/safetensors_io.py used to write through
        os.symlink(victim, old_temp)
        Path(out).write_bytes(b"old output")
        st.write(out, {"w": np.ones(2, np.float32)})
        self.assertEqual(Path(victim).read_bytes(), b"precious")
        self.assertEqual(os.readlink(old_temp), victim)
        self.assertEqual(sorted(os.listdir(self.dir)), sorted(["victim", "out.safetensors",
                                                               os.path.basename(old_temp)]))
        # the same from a child whose pid is known beforehand (exec keeps it), as the attack was made
        script = (f"import sys; sys.path.insert(0, {str(TOOLS)!r}); import numpy as np, safetensors_io as st; "
                  f"st.write({out!r}, {{'w': np.zeros(2, np.float32)}})")
        run = subprocess.run(["sh", "-c", f'ln -s "$1" "$2.tmp$$" && exec "$3" -c "$4"', "sh", victim, out, PY,
                              script], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(Path(victim).read_bytes(), b"precious")
        self.assertEqual(st.read(out)[0]["w"].tolist(), [0.0, 0.0])

    def test_a_long_name_is_written_its_temporary_name_cut(self):
        for name in ["n" * 250, "a" + "é" * 124 + "b", "m" * 255]:        # é: 2 bytes, cut in the middle of one
            with self.subTest(length=len(name.encode())):
                out = self.path(name)
                safe_write.write_bytes(out, b"long name")
                self.assertEqual(Path(out).read_bytes(), b"long name")
                self.assertEqual(os.listdir(self.dir), [name], "no temporary file left")
                os.remove(out)

    def test_a_name_over_255_bytes_is_refused_before_any_work(self):
        for name in ["n" * 256, "é" * 128]:
            with self.subTest(length=len(name.encode())):
                self.refused([("--out", self.path(name))], [], "--out ", "File name too long", "256 bytes")

    def test_a_stream_replaced_after_the_check_is_not_overwritten(self):
        fifo = self.path("pipe")
        os.mkfifo(fifo)
        real_open = os.open

        def swapped_open(path, flags, *args, **kwargs):       # between the check and the open, a file takes its place
            if path == fifo:
                os.remove(fifo)
                Path(fifo).write_bytes(b"precious contents")
            return real_open(path, flags, *args, **kwargs)

        with mock.patch.object(safe_write.os, "open", swapped_open):
            with self.assertRaises(safe_write.OutputError) as caught:
                safe_write.write_bytes(fifo, b"XXXX")
        self.assertIn("no longer a FIFO or character device", str(caught.exception))
        self.assertEqual(Path(fifo).read_bytes(), b"precious contents")

    def test_text_and_labels(self):
        out = self.path("README.md")
        safe_write.write_text(out, "zéro\n")
        self.assertEqual(Path(out).read_bytes(), "zéro\n".encode())
        message = self.refused([("--out", self.path("no/such/x"))], [], "--out ", "no/such/x",
                               "does not exist")
        self.assertTrue(message.startswith("--out "), message)


class FileDescriptors(Temp, unittest.TestCase):
    """/dev/stdout, /dev/fd/N, /proc/self/fd/N and links to them: written to
    that descriptor. Never tried on the real /dev/stdout: on descriptors of our
    own, and on a child's stdout redirected to a file."""

    def descriptor(self, name, flags=0, head=b""):
        path = self.path(name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
        self.addCleanup(os.close, fd)
        os.write(fd, head)
        return fd, path

    def test_a_link_chain_to_proc_self_fd_writes_to_the_descriptor(self):
        fd, target = self.descriptor("target", head=b"head:")
        os.symlink(f"/proc/self/fd/{fd}", self.path("out"))
        os.symlink("out", self.path("out2"))                              # a chain of two links
        safe_write.write_bytes(self.path("out2"), b"one,")
        safe_write.write_bytes(self.path("out"), b"two")
        self.assertEqual(Path(target).read_bytes(), b"head:one,two", "at the descriptor's offset, in turn")
        self.assertEqual(os.readlink(self.path("out")), f"/proc/self/fd/{fd}", "the link is still a link")
        self.assertEqual(os.readlink(self.path("out2")), "out")
        self.assertEqual(sorted(os.listdir(self.dir)), ["out", "out2", "target"], "no temporary file")
        self.assertTrue(safe_write.is_stream(self.path("out2")))

    def test_every_spelling_of_a_descriptor(self):
        fd, target = self.descriptor("target", os.O_APPEND, b"0")
        for i, path in enumerate([f"/dev/fd/{fd}", f"/proc/self/fd/{fd}", f"/proc/{os.getpid()}/fd/{fd}"], 1):
            with self.subTest(path=path):
                safe_write.check_outputs([path])
                safe_write.write_bytes(path, str(i).encode())
        self.assertEqual(Path(target).read_bytes(), b"0123")
        self.assertEqual(os.listdir(self.dir), ["target"])

    def test_a_closed_descriptor_is_refused(self):
        fd = os.open(self.path("gone"), os.O_WRONLY | os.O_CREAT)
        os.close(fd)
        os.remove(self.path("gone"))
        os.symlink(f"/proc/self/fd/{fd}", self.path("out"))
        self.refused([("--out", self.path("out"))], [], f"--out {self.path('out')}: cannot write: file descriptor "
                     f"{fd} is not open")
        with self.assertRaises(safe_write.OutputError):
            safe_write.write_bytes(self.path("out"), b"x")
        self.assertEqual(os.readlink(self.path("out")), f"/proc/self/fd/{fd}")

    def test_a_child_writing_to_its_stdout_redirected_to_a_file(self):
        out = self.path("stdout.bin")
        Path(out).write_bytes(b"before;")
        data = bytes(range(256)) * 300
        script = (f"import sys; sys.path.insert(0, {str(TOOLS)!r}); import safe_write; "
                  f"safe_write.write_bytes('/proc/self/fd/1', bytes(range(256)) * 300)")
        with open(out, "ab") as stdout:                                   # O_APPEND, as the shell's >>
            run = subprocess.run([PY, "-c", script], stdout=stdout, stderr=subprocess.PIPE, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(Path(out).read_bytes(), b"before;" + data)
        self.assertEqual(os.listdir(self.dir), ["stdout.bin"])

    def test_a_terminal_is_refused(self):
        master, slave = os.openpty()
        self.addCleanup(os.close, master)
        self.addCleanup(os.close, slave)
        os.set_blocking(master, False)
        os.symlink(f"/proc/self/fd/{slave}", self.path("out"))
        for path in [self.path("out"), os.ttyname(slave)]:
            with self.subTest(path=path):
                with self.assertRaises(safe_write.OutputError) as caught:
                    safe_write.write_bytes(("--out", path), b"\x1b]0;binary\x07")
                self.assertEqual(str(caught.exception), f"--out {path}: is a terminal; binary output would go to "
                                 f"the screen: redirect it to a file")
        with self.assertRaises(BlockingIOError):
            os.read(master, 100)                                         # nothing reached the terminal
        self.assertEqual(os.listdir(self.dir), ["out"])


class Refusals(Temp, unittest.TestCase):
    def test_directory_is_refused_by_name(self):
        os.mkdir(self.path("out-dir"))
        self.refused([self.path("out-dir")], [], "out-dir", "is a directory")
        with self.assertRaises(safe_write.OutputError):
            safe_write.write_bytes(self.path("out-dir"), b"x")
        self.assertEqual(os.listdir(self.path("out-dir")), [])

    def test_socket_is_refused_by_name(self):
        path = self.path("sock")
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(path)
            self.refused([path], [], "sock", "is a socket")
            before = folder_state(self.dir)
            with self.assertRaises(safe_write.OutputError):
                st.write(path, {"w": np.zeros(1, np.float32)})
            self.assertEqual(folder_state(self.dir), before)
        finally:
            server.close()

    @unittest.skipUnless(os.geteuid() == 0, "mknod needs root")
    def test_block_device_is_refused_by_name(self):
        path = self.path("block")
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 250))      # never opened: refused before
        self.refused([path], [], "block", "is a block device")

    def test_missing_folder_and_file_as_folder(self):
        self.refused([self.path("no/such/out.safetensors")], [], "no/such/out.safetensors", "does not exist")
        Path(self.path("plain")).write_text("not a folder")
        self.refused([self.path("plain/out.safetensors")], [], "plain/out.safetensors", "is not a folder")

    def test_output_that_is_an_input_is_refused_in_every_spelling(self):
        model = self.path("model.safetensors")
        st.write(model, {"w": np.ones(3, np.float32)})
        os.symlink(model, self.path("link"))
        os.link(model, self.path("hard"))
        inputs = [("MODEL", model)]
        for spelling in [model, os.path.join(str(self.dir), ".", "model.safetensors"), self.path("link"),
                         self.path("hard"), os.path.relpath(model)]:
            with self.subTest(spelling=spelling):
                self.refused([("--output", spelling)], inputs, f"--output {spelling}", "same file as the input",
                             f"MODEL {model}")
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            self.refused([("--output", "./model.safetensors")], [("MODEL", "model.safetensors")],
                         "--output ./model.safetensors", "same file as the input MODEL model.safetensors")
        finally:
            os.chdir(cwd)

    def test_two_outputs_that_are_one_file(self):
        out = self.path("out.json")
        Path(out).write_text("{}")
        os.link(out, self.path("same.json"))
        self.refused([("--json", out), ("--html", self.path("same.json"))], [], "--html", "same file as the output",
                     "--json")

    def test_nothing_is_written_when_the_output_is_an_input(self):
        model = self.path("model.safetensors")
        st.write(model, {"w": np.ones(3, np.float32)})
        os.link(model, self.path("hard"))
        before = folder_state(self.dir)
        with self.assertRaises(safe_write.OutputError):
            st.write(self.path("hard"), {"w": np.zeros(1, np.float32)}, inputs=[model])
        self.assertEqual(folder_state(self.dir), before)

    def test_errors_of_stat_are_output_errors_naming_the_path(self):
        long_folder = self.path("d" * 300 + "/out.bin")                 # ENAMETOOLONG
        os.symlink("loop", self.path("loop"))                           # ELOOP
        for path, expected in [(long_folder, "File name too long"),
                               (self.path("loop"), "Too many levels of symbolic links"),
                               (self.path("loop") + "/out.bin", "Too many levels of symbolic links")]:
            with self.subTest(path=path[-40:]):
                self.refused([("--out", path)], [], f"--out {path}: cannot write: {expected}")
                with self.assertRaises(safe_write.OutputError):
                    safe_write.write_bytes(path, b"x")

    def test_permission_denied_and_a_folder_not_writable(self):
        folder = self.path("locked")
        os.mkdir(folder)
        secret = os.path.join(folder, "inner")
        os.mkdir(secret, 0o700)
        os.chmod(self.dir, 0o755)
        os.chmod(folder, 0o555)
        if os.geteuid() != 0:
            os.chmod(secret, 0o000)
        try:
            for path, expected in [(os.path.join(folder, "out.bin"), f"the folder {folder} is not writable"),
                                   (os.path.join(secret, "x", "out.bin"), "Permission denied")]:
                with self.subTest(path=path):
                    run = run_as_nobody(f"""
try:
    safe_write.check_outputs([("--out", {path!r})])
    print("accepted")
except safe_write.OutputError as e:
    print("OutputError:", e)
except OSError as e:
    print("raw OSError:", e)
""")
                    self.assertEqual(run.returncode, 0, run.stderr)
                    self.assertTrue(run.stdout.startswith(f"OutputError: --out {path}: cannot write: "), run.stdout)
                    self.assertIn(expected, run.stdout)
                    self.assertEqual(run.stdout.count("\n"), 1)
            self.assertEqual(os.listdir(folder), ["inner"])
        finally:
            os.chmod(secret, 0o700)
            os.chmod(folder, 0o755)

    def test_two_outputs_not_there_yet_compared_by_their_path(self):
        os.mkdir(self.path("sub"))
        os.symlink("sub", self.path("link"))
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            for a, b in [("a", "./a"), ("a", str(self.dir / "a")), ("sub/x", "link/x"), ("sub/x", "sub/../sub/x")]:
                with self.subTest(a=a, b=b):
                    self.refused([("--json", a), ("--html", b)], [], f"--html {b}: is the same file as the output "
                                 f"--json {a}")
            safe_write.check_outputs([("--json", "a"), ("--html", "b"), ("--png", "sub/a")])     # three files
        finally:
            os.chdir(cwd)

    def test_character_devices_are_not_compared(self):
        if not os.path.exists("/dev/null"):
            self.skipTest("no /dev/null")
        safe_write.check_outputs(["/dev/null"], ["/dev/null"])     # checked only, never written here


# ----------------------------------------------------------------------------
# Signals in the middle of a write
# ----------------------------------------------------------------------------

# The child writes OUT; safe_write's fsync (the last step before the rename)
# is replaced by one that says so and waits, so the parent can signal it while
# the temporary file exists.
_CHILD = """
import os, sys, time
sys.path.insert(0, {tools!r})
import safe_write
def paused_fsync(fd):
    print("in the write", flush=True)
    time.sleep({pause})
safe_write.os.fsync = paused_fsync
{before}
{write}
print("finished", flush=True)
"""
_WRITE = 'safe_write.write_bytes({out!r}, b"new" * 100000)'
# The same write in a script that catches what it can (library use).
_CAUGHT = """try:
    safe_write.write_bytes({out!r}, b"new" * 100000)
except KeyboardInterrupt:
    print("KeyboardInterrupt caught", flush=True)
except safe_write.OutputError as e:
    print("OutputError:", e, flush=True)"""


class Signals(Temp, unittest.TestCase):
    def interrupted_write(self, signum, before="", pause=60, library=False):
        """Signal a child in the middle of its write: (exit status, what it printed after)."""
        out = self.path("out.safetensors")
        Path(out).write_bytes(b"old output")
        code = _CHILD.format(tools=str(TOOLS), out=out, pause=pause, before=before,
                             write=(_CAUGHT if library else _WRITE).format(out=out))
        child = subprocess.Popen([PY, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            self.assertEqual(child.stdout.readline(), "in the write\n")
            temps = [n for n in os.listdir(self.dir) if n != "out.safetensors"]
            self.assertEqual(len(temps), 1, temps)             # the temporary file exists now ...
            self.assertTrue(temps[0].startswith(".out.safetensors.tmp-"), temps)
            self.assertGreater(len(temps[0]), len(".out.safetensors.tmp-"))
            child.send_signal(signum)
            child.wait(20)
            printed = child.stdout.read()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()
            child.stderr.close()
        return child.returncode, printed

    def assert_removed(self, old=b"old output"):
        self.assertEqual(os.listdir(self.dir), ["out.safetensors"], "the temporary file is gone")
        self.assertEqual(Path(self.path("out.safetensors")).read_bytes(), old)

    def test_sigterm_removes_the_temporary_file(self):
        status, _ = self.interrupted_write(signal.SIGTERM)
        self.assertEqual(status, -signal.SIGTERM, "the child dies by the signal")
        self.assert_removed()

    def test_sigint_removes_the_temporary_file(self):
        status, _ = self.interrupted_write(signal.SIGINT)
        self.assertEqual(status, -signal.SIGINT, "KeyboardInterrupt not caught: the child dies by SIGINT")
        self.assert_removed()

    def test_sigint_in_library_use_is_a_keyboard_interrupt(self):
        status, printed = self.interrupted_write(signal.SIGINT, library=True)
        self.assertEqual((status, printed), (0, "KeyboardInterrupt caught\nfinished\n"))
        self.assert_removed()

    def test_a_python_handler_that_returns_ends_the_write(self):
        before = "import signal; signal.signal(signal.SIGTERM, lambda signum, frame: print('handler ran', flush=True))"
        status, printed = self.interrupted_write(signal.SIGTERM, before, library=True)
        self.assertEqual(status, 0)
        self.assertEqual(printed, f"handler ran\nOutputError: {self.path('out.safetensors')}: not written: "
                                  f"interrupted by SIGTERM\nfinished\n")
        self.assert_removed()

    def test_an_ignored_signal_stays_ignored(self):
        before = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)"
        status, printed = self.interrupted_write(signal.SIGINT, before, pause=1)
        self.assertEqual((status, printed), (0, "finished\n"))
        self.assert_removed(b"new" * 100000)

    def test_handlers_are_restored(self):
        every = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGXFSZ)
        before = [signal.getsignal(s) for s in every]
        safe_write.write_bytes(self.path("x"), b"x")
        self.assertEqual([signal.getsignal(s) for s in every], before)

    def test_sighup_and_sigquit_remove_the_temporary_file(self):
        # SIGQUIT's default action dumps core: none is wanted in the test's folder.
        no_core = "import resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0))"
        for signum in (signal.SIGHUP, signal.SIGQUIT):
            with self.subTest(signal=signum.name):
                status, _ = self.interrupted_write(signum, no_core)
                self.assertEqual(status, -signum, "the child dies by the signal")
                self.assert_removed()

    def write_past_ulimit_f(self, before):
        """A child whose file size limit (`ulimit -f`) is 1000 bytes writes 300,000:
        (exit status, what it printed)."""
        out = self.path("out.safetensors")
        Path(out).write_bytes(b"old output")
        limit = ("import resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
                 "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))")
        code = _CHILD.format(tools=str(TOOLS), out=out, pause=0, before=before + "\n" + limit,
                             write=_CAUGHT.format(out=out))
        child = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60)
        return child.returncode, child.stdout

    def test_a_file_past_ulimit_f_is_an_error_and_leaves_nothing(self):
        # Python ignores SIGXFSZ: write() fails with EFBIG instead.
        status, printed = self.write_past_ulimit_f("")
        self.assertEqual((status, printed), (0, f"OutputError: {self.path('out.safetensors')}: cannot write: "
                                                f"File too large\nfinished\n"))
        self.assert_removed()

    def test_sigxfsz_past_ulimit_f_removes_the_temporary_file(self):
        # A process that takes SIGXFSZ back to its default dies by it, mid-write.
        status, printed = self.write_past_ulimit_f("import signal; signal.signal(signal.SIGXFSZ, signal.SIG_DFL)")
        self.assertEqual((status, printed), (-signal.SIGXFSZ, ""))
        self.assert_removed()


# ----------------------------------------------------------------------------
# compare_trace: what was compared, nothing compared, a name twice
# ----------------------------------------------------------------------------


def trace(padding, names=None, seed=0, d=3, v=4):
    """(tensors, metadata) of a small single-stack trace; padding [B, T] True = padding."""
    rng = np.random.default_rng(seed)
    b, t = padding.shape
    allowed = np.broadcast_to(~padding[:, None, :], (b, t, t)).astype(np.uint8)      # [B, L, S], 1 = may attend
    tensors = {"embed.output": rng.standard_normal((b, t, d)).astype(np.float32),
               "layers.0.self_attn.mask": np.ascontiguousarray(allowed),
               "logits": rng.standard_normal((b, t, v)).astype(np.float32)}
    names = names or ["embed.output", "layers.0.self_attn.mask", "logits"]
    return tensors, {"names": json.dumps(names)}


class CompareTrace(Temp, unittest.TestCase):
    def write(self, name, tensors, metadata):
        st.write(self.path(name), tensors, metadata)
        return self.path(name)

    def run_compare(self, *args):
        return subprocess.run([PY, str(TOOLS / "compare_trace.py"), *args], capture_output=True, text=True,
                              cwd=self.dir)

    def test_reports_how_many_values_it_compared(self):
        padding = np.array([[False, False, True], [True, False, False]])
        a = self.write("a.safetensors", *trace(padding))
        b = self.write("b.safetensors", *trace(padding))
        run = self.run_compare(a, b, "--atol", "10")           # different random numbers, a tolerance they meet
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        real = int((~padding).sum())                           # 4 real positions of 6
        self.assertIn(f"all 3 activations agree: {real * 3 + real * 4} values compared at non-padding positions, "
                      f"{2 * 3 * 3} mask cells equal", run.stdout)

    def test_all_padding_is_not_agreement(self):
        padding = np.ones((2, 3), dtype=bool)
        a = self.write("a.safetensors", *trace(padding))
        b = self.write("b.safetensors", *trace(padding, seed=1))
        before = folder_state(self.dir)
        run = self.run_compare(a, b)
        self.assertEqual(run.returncode, 2)
        self.assertEqual(run.stdout, "")
        self.assert_one_line(run.stderr)
        self.assertIn("no value was compared", run.stderr)
        self.assertIn("padding", run.stderr)
        self.assertNotIn("agree:", run.stderr)
        self.assertEqual(folder_state(self.dir), before)

    def test_a_name_listed_twice_is_refused_by_name(self):
        padding = np.zeros((1, 3), dtype=bool)
        twice = ["embed.output", "logits", "layers.0.self_attn.mask", "logits"]
        for which in ("a", "b"):
            with self.subTest(which=which):
                a = self.write("a.safetensors", *trace(padding, names=twice if which == "a" else None))
                b = self.write("b.safetensors", *trace(padding, names=twice if which == "b" else None))
                before = folder_state(self.dir)
                run = self.run_compare(a, b, "--atol", "10")
                self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
                self.assertEqual(run.stdout, "")
                self.assert_one_line(run.stderr)
                self.assertIn(f"{which}.safetensors", run.stderr)
                self.assertIn('lists "logits" twice', run.stderr)
                self.assertEqual(folder_state(self.dir), before)


if __name__ == "__main__":
    unittest.main(verbosity=1)
