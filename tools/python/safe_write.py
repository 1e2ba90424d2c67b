"""The one way every Python tool writes a file (the file-writing rule of
docs/FORMAT.md, the same as the C++ side's). Standard library only.

    check_outputs([("--out", out)], inputs=[("--from-state-dict", state)])   # before any work
    write_bytes(path, data)          # data: bytes, or an iterable of bytes-like parts written in turn
    write_text(path, text)

What happens to an output PATH:
- `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N` or
  `/proc/<this process>/fd/N`, or a symlink chain (followed by hand, at most
  40 links) that reaches one: written as a stream to a duplicate of the
  process's file descriptor N (1, 2, N), so the shell's offset and O_APPEND
  are kept, whatever N is open on; N not open is refused;
- a character device or a FIFO (`/dev/null`, `>(cat)`, a named pipe) is
  opened and written as a stream, never replaced;
- a directory, a socket, a block device or any other special file is refused
  by name (OutputError), and so is a PATH whose folder does not exist or
  cannot be written, and a NAME longer than 255 bytes;
- a stream that turns out to be a terminal is refused (binary output would
  go to the screen);
- anything else (a regular file, nothing yet, a symlink) is written to
  `.NAME.tmp-XXXXXXXX` in the same folder (NAME cut to 200 bytes there;
  tempfile.mkstemp: O_CREAT|O_EXCL|
  O_NOFOLLOW, an unpredictable name), flushed, fsync'ed and renamed over
  PATH. A symlink at PATH is replaced by the new file, never followed for
  writing: the file it pointed to is left as it was. The new file gets the
  mode a plain open() would give it (0666 less the umask);
- SIGINT, SIGTERM, SIGHUP, SIGQUIT or SIGXFSZ during the write removes the
  temporary file and the old PATH stays as it was; then the handler that was
  there before runs (Python's own SIGINT handler raises KeyboardInterrupt, so
  a caller can catch it; a handler that returns ends the write with an
  OutputError), and where there was none (SIG_DFL) the process dies by that
  signal. An ignored signal stays ignored: Python itself ignores SIGXFSZ, so
  a file past `ulimit -f` makes the write fail with EFBIG ("File too large"),
  an OutputError that removes the temporary file too.

check_outputs refuses, before anything runs, an output that is the same file
(st_dev and st_ino, after following links: `./m`, a symlink and a hard link
count) as an input of the command or as another output; two outputs that do
not exist yet are compared by their absolute path (the folder's links
resolved), so `a` and `./a` are one. Character devices are left out of that
comparison (`/dev/stdin` and `/dev/stdout` on one terminal are one device,
and nothing is replaced there). Every error is an OutputError naming the path.
"""

import os
import signal
import stat
import tempfile
import threading

__all__ = ["OutputError", "check_outputs", "is_stream", "write_bytes", "write_text"]

# The signals that end a process mid-write and can be caught: Ctrl-C, kill, a
# closed terminal, Ctrl-\, and a file past `ulimit -f` (when not ignored).
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGXFSZ)
_MAX_LINKS = 40            # links followed by hand looking for a file descriptor (Linux's own limit)
_MAX_NAME = 255            # bytes in one file name (NAME_MAX)
_TEMP_NAME = 200           # bytes of NAME kept in `.NAME.tmp-XXXXXXXX`


class OutputError(ValueError):
    """An output the rule refuses; the message names the path."""


def _named(item):
    """(label, path) from "PATH" or ("--flag", PATH): the text messages show."""
    label, path = item if isinstance(item, tuple) else (None, item)
    path = os.fspath(path)
    return (f"{label} {path}" if label else path), path


def _stat(path, shown=None):
    """os.stat(path) following links, or None when nothing (or a dangling link) is
    there. Any other error (too long, no permission, a link loop) is an
    OutputError naming `shown` (default: the path)."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise OutputError(f"{shown or path}: cannot write: {e.strerror or e}") from None


def _fd_number(path):
    """N when `path` names the process's file descriptor N (see the module's text)."""
    if path == "/dev/stdout":
        return 1
    if path == "/dev/stderr":
        return 2
    for prefix in ("/dev/fd/", "/proc/self/fd/", f"/proc/{os.getpid()}/fd/"):
        rest = path[len(prefix):]
        if path.startswith(prefix) and rest.isascii() and rest.isdigit():
            return int(rest)
    return None


def _fd_target(path):
    """N when PATH, or a link of the chain of symlinks starting at PATH, names
    the process's file descriptor N; else None. Followed by hand (os.readlink),
    at most 40 links: Linux's /proc/self/fd/N is itself a link to the open
    file, which must not be followed."""
    path = os.path.abspath(path)
    for _ in range(_MAX_LINKS + 1):
        n = _fd_number(path)
        if n is not None:
            return n
        try:
            if not stat.S_ISLNK(os.lstat(path).st_mode):
                return None
            path = os.path.abspath(os.path.join(os.path.dirname(path), os.readlink(path)))
        except OSError:
            return None              # left to os.stat, which says what is wrong
    return None


def _fd_info(shown, n):
    """os.fstat of the process's file descriptor n, refused when it is not open or a terminal."""
    try:
        info = os.fstat(n)
    except OSError:
        raise OutputError(f"{shown}: cannot write: file descriptor {n} is not open") from None
    if os.isatty(n):
        raise OutputError(_terminal(shown))
    return info


def _terminal(shown):
    return f"{shown}: is a terminal; binary output would go to the screen: redirect it to a file"


def _is_stream(info):
    return info is not None and (stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode))


def is_stream(path):
    """True when PATH is (a link to) a FIFO, a character device or one of the
    process's file descriptors (/dev/stdout, /proc/self/fd/N): written as a stream."""
    path = os.fspath(path)
    return _fd_target(path) is not None or _is_stream(_stat(path))


def _check_target(shown, path):
    """Refuse what cannot be written; True when PATH is written as a stream."""
    n = _fd_target(path)
    if n is not None:
        _fd_info(shown, n)
        return True
    name = os.fsencode(os.path.basename(path))
    if len(name) > _MAX_NAME:
        raise OutputError(f"{shown}: cannot write: File name too long (the name is {len(name)} bytes, "
                          f"at most {_MAX_NAME})")
    info = _stat(path, shown)
    if _is_stream(info):
        return True
    if info is not None and not stat.S_ISREG(info.st_mode):
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode)
                else "a block device" if stat.S_ISBLK(info.st_mode) else "a special file")
        raise OutputError(f"{shown}: is {kind}, expected a file to write (or a FIFO or character device)")
    folder = os.path.dirname(path) or "."
    folder_info = _stat(folder, shown)
    if folder_info is None:
        raise OutputError(f"{shown}: cannot write: the folder {folder} does not exist")
    if not stat.S_ISDIR(folder_info.st_mode):
        raise OutputError(f"{shown}: cannot write: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{shown}: cannot write: the folder {folder} is not writable (Permission denied)")
    return False


def _normalized(path):
    """The absolute path of a file that does not exist yet, its folder's links resolved."""
    path = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def check_outputs(outputs, inputs=()):
    """Refuse (OutputError) any output that cannot be written, or that is the
    same file as an input or as another output. Items: PATH or (label, PATH);
    an input that does not exist is left to its reader."""
    seen = {}
    for item in inputs:
        shown, path = _named(item)
        try:
            info = os.stat(path)
        except OSError:
            continue                 # left to its reader, which says what is wrong
        if not stat.S_ISCHR(info.st_mode):
            seen.setdefault((info.st_dev, info.st_ino), ("input", shown))
    for item in outputs:
        shown, path = _named(item)
        _check_target(shown, path)
        info = _stat(path, shown)
        if info is not None and stat.S_ISCHR(info.st_mode):
            continue
        key = (info.st_dev, info.st_ino) if info is not None else _normalized(path)
        other = seen.get(key)
        if other is not None:
            role, other_shown = other
            raise OutputError(f"{shown}: is the same file as the {role} {other_shown}; writing it would replace "
                              f"that {role}: choose another output")
        seen[key] = ("output", shown)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class _RemoveOnSignal:
    """While active, the signals of _SIGNALS remove `self.path` (when set), then run the
    handler that was there before: a Python handler is called (Python's own
    SIGINT handler raises KeyboardInterrupt; when it returns, the write ends
    with an OutputError: its temporary file is gone), SIG_DFL (or a handler not
    set from Python) kills the process by the same signal. Only the main thread
    can install handlers; elsewhere (and for a signal the process ignores)
    nothing is changed."""

    def __init__(self, shown):
        self.shown = shown
        self.path = None
        self.previous = {}

    def _handler(self, signum, frame):
        if self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            self.path = None
        previous = self.previous.get(signum)
        if callable(previous):
            previous(signum, frame)
            raise OutputError(f"{self.shown}: not written: interrupted by {signal.Signals(signum).name}")
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        os.kill(os.getpid(), signum)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                if signal.getsignal(sig) != signal.SIG_IGN:
                    self.previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


class _SignalsHeld:
    """The signals of _SIGNALS held back (delivered at the end) while the temporary
    file's name is being recorded, so that no signal falls in between."""

    def __enter__(self):
        self.old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_SETMASK, self.old)


def _write_stream(shown, path, data, fd_number=None):
    """Write to the FIFO or character device at `path`, or to a duplicate of the
    process's file descriptor `fd_number` (kept open: closing the duplicate
    leaves it as it was)."""
    try:
        if fd_number is not None:
            _fd_info(shown, fd_number)
            fd = os.dup(fd_number)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)
        with os.fdopen(fd, "wb") as f:
            if os.isatty(fd):
                raise OutputError(_terminal(shown))
            if fd_number is None and not _is_stream(os.fstat(fd)):    # replaced since it was checked
                raise OutputError(f"{shown}: cannot write: it is no longer a FIFO or character device")
            _write_parts(f, data)
    except OSError as e:
        raise OutputError(f"{shown}: cannot write: {e.strerror or e}") from None


def _write_parts(f, data):
    """Write bytes, or each bytes-like part of an iterable in turn (a list, or a
    generator making each part as it is written): a large file (a converted
    checkpoint) is written from its tensors' own memory, never joined into one
    more copy of itself first."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        f.write(data)
        return
    for part in data:
        f.write(part)


def write_bytes(path, data, inputs=()):
    """Write `data` (bytes, or an iterable of bytes-like parts) to `path` by the rule above. `path`: PATH or
    (label, PATH); `inputs`: the command's inputs, refused as outputs (see
    check_outputs)."""
    check_outputs([path], inputs)
    shown, path = _named(path)
    n = _fd_target(path)
    if n is not None or _is_stream(_stat(path, shown)):
        _write_stream(shown, path, data, n)
        return
    folder = os.path.dirname(os.path.abspath(path))
    name = os.fsdecode(os.fsencode(os.path.basename(path))[:_TEMP_NAME])
    with _RemoveOnSignal(shown) as cleanup:
        try:
            with _SignalsHeld():
                fd, cleanup.path = tempfile.mkstemp(dir=folder, prefix=f".{name}.tmp-")
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), 0o666 & ~_umask())
                _write_parts(f, data)
                f.flush()
                os.fsync(f.fileno())
            with _SignalsHeld():
                os.replace(cleanup.path, path)
                cleanup.path = None
        except OSError as e:
            raise OutputError(f"{shown}: cannot write: {e.strerror or e}") from None
        finally:
            if cleanup.path is not None:
                try:
                    os.unlink(cleanup.path)
                except OSError:
                    pass


def write_text(path, text, inputs=(), encoding="utf-8"):
    """write_bytes of `text` encoded (UTF-8 by default)."""
    write_bytes(path, text.encode(encoding), inputs)
