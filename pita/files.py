"""Regular files, read with pread: the one way pita opens an input.

Every reader (dumps, rules files) and every `FileTensor` read goes through `open_regular`, so a
FIFO, a device or a folder is refused with one line before it can block or flood memory, and a
file that shrinks while being read is an error, never a SIGBUS (nothing is memory-mapped).
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pita.errors import UsageError
from pita.text import printable


@dataclass(frozen=True)
class FileIdentity:
    """What must not change between reads of one file."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, status: os.stat_result) -> FileIdentity:
        return cls(status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def shown(path: str | os.PathLike) -> str:
    """A path as messages and reports print it: on one line, control characters and bytes that
    are not UTF-8 escaped (a newline in a file name must not start a new report line)."""
    return printable(os.fspath(path))


def read_regular_file(path: str | os.PathLike, max_bytes: int, what: str) -> bytes:
    """The bytes of the regular file `path`, at most `max_bytes` of them (`what` names it in the
    message); `UsageError` for a FIFO, a device, a folder, a missing or unreadable path."""
    path = Path(path)
    with open_regular(path) as (fd, status):
        if status.st_size > max_bytes:
            raise UsageError(f"{shown(path)}: {status.st_size} bytes, more than the {max_bytes} pita reads in {what}")
        data = os.pread(fd, status.st_size + 1, 0)  # one byte more: a file that grew is seen
    if len(data) != status.st_size:
        raise UsageError(f"{shown(path)}: the file changed while being read")
    return data


@contextlib.contextmanager
def open_regular(path: Path):
    """A descriptor on the regular file `path`, and its status. The path is checked before it is
    opened, so no device is opened (opening some has side effects), and the descriptor after, so
    the file checked is the file read; O_NONBLOCK keeps a FIFO swapped in between from blocking."""
    _check_regular(path, stat_path(path))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise UsageError(f"{shown(path)}: cannot open ({error.strerror})") from None
    try:
        status = os.fstat(fd)
        _check_regular(path, status)
        yield fd, status
    finally:
        os.close(fd)


def stat_path(path: Path) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as error:  # missing, a parent that is a file, a name too long, a symlink loop, ...
        raise UsageError(f"{shown(path)}: {error.strerror}") from None
    except ValueError as error:  # a NUL byte in the path
        raise UsageError(f"{shown(path)}: {error}") from None


_FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _check_regular(path: Path, status: os.stat_result) -> None:
    if not stat.S_ISREG(status.st_mode):
        kind = next((name for test, name in _FILE_KINDS if test(status.st_mode)), "a special file")
        raise UsageError(f"{shown(path)}: {kind}, not a regular file (pita reads regular files only)")


def read_array(fd: int, path: Path, offset: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """An array read from the open file at `offset`, straight into its own (writable) memory."""
    array = np.empty(shape, dtype=dtype)
    pread_exactly(fd, memoryview(array.reshape(-1).view(np.uint8)), offset, path)
    return array


def pread_exactly(fd: int, buffer: memoryview, offset: int, path: str | os.PathLike) -> None:
    """Fills `buffer` from `offset` of the open file; a pread may return less than asked, so
    it is repeated, and an end of file before the buffer is full means the file was truncated."""
    done = 0
    while done < len(buffer):
        count = os.preadv(fd, [buffer[done:]], offset + done)
        if count == 0:
            raise UsageError(f"{shown(path)}: the file was truncated while being read")
        done += count
