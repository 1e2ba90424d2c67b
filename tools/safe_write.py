"""The one way every Python tool writes a file (the file-writing rule of
docs/FORMAT.md, the same as the C++ side's). Standard library only.

    check_outputs([("--out", out)], inputs=[("--from-state-dict", state)])   # before any work
    write_bytes(path, data)
    write_text(path, text)

What happens to an output PATH:
- a character device or a FIFO (`/dev/null`, `>(cat)`, a named pipe) is
  opened and written as a stream, never replaced;
- a directory, a socket, a block device or any other special file is refused
  by name (OutputError), and so is a PATH whose folder does not exist;
- anything else (a regular file, nothing yet, a symlink) is written to
  `.NAME.tmp-XXXXXXXX` in the same folder (tempfile.mkstemp: O_CREAT|O_EXCL|
  O_NOFOLLOW, an unpredictable name), flushed, fsync'ed and renamed over
  PATH. A symlink at PATH is replaced by the new file, never followed for
  writing: the file it pointed to is left as it was. The new file gets the
  mode a plain open() would give it (0666 less the umask);
- SIGINT or SIGTERM during the write removes the temporary file, the old
  PATH stays as it was, and the process then dies by that signal.

check_outputs refuses, before anything runs, an output that is the same file
(st_dev and st_ino, after following links: `./m`, a symlink and a hard link
count) as an input of the command or as another output. Character devices
are left out of that comparison (`/dev/stdin` and `/dev/stdout` on one
terminal are one device, and nothing is replaced there).
"""

import os
import signal
import stat
import tempfile
import threading

__all__ = ["OutputError", "check_outputs", "is_stream", "write_bytes", "write_text"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class OutputError(ValueError):
    """An output the rule refuses; the message names the path."""


def _named(item):
    """(label, path) from "PATH" or ("--flag", PATH): the text messages show."""
    label, path = item if isinstance(item, tuple) else (None, item)
    path = os.fspath(path)
    return (f"{label} {path}" if label else path), path


def _stat(path):
    """os.stat(path) following links, or None when nothing (or a dangling link) is there."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _is_stream(info):
    return info is not None and (stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode))


def is_stream(path):
    """True when PATH is (a link to) a FIFO or a character device: written as a stream."""
    return _is_stream(_stat(os.fspath(path)))


def _check_target(shown, path):
    """Refuse what cannot be written; True when PATH is written as a stream."""
    info = _stat(path)
    if _is_stream(info):
        return True
    if info is not None and not stat.S_ISREG(info.st_mode):
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode)
                else "a block device" if stat.S_ISBLK(info.st_mode) else "a special file")
        raise OutputError(f"{shown}: is {kind}, expected a file to write (or a FIFO or character device)")
    folder = os.path.dirname(path) or "."
    folder_info = _stat(folder)
    if folder_info is None:
        raise OutputError(f"{shown}: cannot write: the folder {folder} does not exist")
    if not stat.S_ISDIR(folder_info.st_mode):
        raise OutputError(f"{shown}: cannot write: {folder} is not a folder")
    return False


def check_outputs(outputs, inputs=()):
    """Refuse (OutputError) any output that cannot be written, or that is the
    same file as an input or as another output. Items: PATH or (label, PATH);
    an input that does not exist is left to its reader."""
    seen = {}
    for item in inputs:
        shown, path = _named(item)
        info = _stat(path)
        if info is not None and not stat.S_ISCHR(info.st_mode):
            seen.setdefault((info.st_dev, info.st_ino), ("input", shown))
    for item in outputs:
        shown, path = _named(item)
        _check_target(shown, path)
        info = _stat(path)
        if info is None or stat.S_ISCHR(info.st_mode):
            continue
        other = seen.get((info.st_dev, info.st_ino))
        if other is not None:
            role, other_shown = other
            raise OutputError(f"{shown}: is the same file as the {role} {other_shown}; writing it would replace "
                              f"that {role}: choose another output")
        seen[(info.st_dev, info.st_ino)] = ("output", shown)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class _RemoveOnSignal:
    """While active, SIGINT/SIGTERM remove `self.path` (when set) and then kill
    the process by the same signal. Only the main thread can install handlers;
    elsewhere (and for a signal the process ignores) nothing is changed."""

    def __init__(self):
        self.path = None
        self.previous = {}

    def _handler(self, signum, frame):
        if self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
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
    """SIGINT/SIGTERM held back (delivered at the end) while the temporary
    file's name is being recorded, so that no signal falls in between."""

    def __enter__(self):
        self.old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_SETMASK, self.old)


def _write_stream(shown, path, data):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError as e:
        raise OutputError(f"{shown}: cannot write: {e.strerror or e}") from None


def write_bytes(path, data, inputs=()):
    """Write `data` (bytes) to `path` by the rule above. `path`: PATH or
    (label, PATH); `inputs`: the command's inputs, refused as outputs (see
    check_outputs)."""
    check_outputs([path], inputs)
    shown, path = _named(path)
    if _is_stream(_stat(path)):
        _write_stream(shown, path, data)
        return
    folder = os.path.dirname(os.path.abspath(path))
    with _RemoveOnSignal() as cleanup:
        try:
            with _SignalsHeld():
                fd, cleanup.path = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.tmp-")
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), 0o666 & ~_umask())
                f.write(data)
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
