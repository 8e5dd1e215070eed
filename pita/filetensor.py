"""Tensors left in their file and read a chunk at a time.

A large tensor in a safetensors file is not loaded: `FileTensor` remembers where it lies and
reads elements on demand with `pread`. It is never memory-mapped, because a mapped file that
shrinks while being read kills the process with SIGBUS; a short read is an ordinary error. No file
descriptor is held between reads, so a folder of thousands of dumps opens one file at a time.
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass

import numpy as np

from pita.errors import UsageError


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


class FileTensor:
    """A tensor of `dtype` and `shape` stored at byte `offset` of the regular file `path`."""

    def __init__(self, path: str, offset: int, dtype: np.dtype, shape: tuple[int, ...], identity: FileIdentity):
        self.path, self.offset, self.dtype, self.shape, self.identity = str(path), offset, np.dtype(dtype), tuple(shape), identity

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"FileTensor({self.path!r}, offset={self.offset}, dtype={self.dtype}, shape={self.shape})"

    def read(self, start: int = 0, stop: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Flat elements `start..stop` as an array in memory (into `out` when given)."""
        stop = self.size if stop is None else stop
        if not 0 <= start <= stop <= self.size:
            raise IndexError(f"elements {start}..{stop} of a tensor of {self.size}")
        count = stop - start
        array = np.empty(count, dtype=self.dtype) if out is None else out[:count]
        with self._open() as fd:
            _pread_exactly(fd, memoryview(array.view(np.uint8)), self.offset + start * self.dtype.itemsize, self.path)
        return array

    def take(self, flat_indices: np.ndarray) -> np.ndarray:
        """The elements at `flat_indices` (any order, repeats allowed), one read per element."""
        flat_indices = np.asarray(flat_indices, dtype=np.int64)
        if flat_indices.size and (flat_indices.min() < 0 or flat_indices.max() >= self.size):
            raise IndexError(f"index outside a tensor of {self.size} elements")
        out = np.empty(flat_indices.size, dtype=self.dtype)
        raw = out.view(np.uint8).reshape(-1, self.dtype.itemsize) if out.size else None
        with self._open() as fd:
            for k, index in enumerate(flat_indices.tolist()):
                _pread_exactly(fd, memoryview(raw[k]), self.offset + index * self.dtype.itemsize, self.path)
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        array = self.read().reshape(self.shape)
        return array if dtype is None else array.astype(dtype)

    def _open(self) -> _Descriptor:
        return _Descriptor(self.path, self.identity)


class _Descriptor:
    """Opens the file for one read and checks it is still the file that was validated."""

    def __init__(self, path: str, identity: FileIdentity):
        self.path, self.identity, self.fd = path, identity, -1

    def __enter__(self) -> int:
        try:
            self.fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError as error:
            raise UsageError(f"{self.path}: cannot read ({error.strerror})") from None
        status = os.fstat(self.fd)
        if not stat.S_ISREG(status.st_mode) or FileIdentity.of(status) != self.identity:
            os.close(self.fd)
            raise UsageError(f"{self.path}: the file changed while being read")
        return self.fd

    def __exit__(self, *exc) -> None:
        os.close(self.fd)


def _pread_exactly(fd: int, buffer: memoryview, offset: int, path: str) -> None:
    done = 0
    while done < len(buffer):
        count = os.preadv(fd, [buffer[done:]], offset + done)
        if count == 0:
            raise UsageError(f"{path}: the file was truncated while being read")
        done += count


def flat_chunk(tensor, start: int, stop: int) -> np.ndarray:
    """Flat elements `start..stop` of an in-memory array or a `FileTensor`."""
    if isinstance(tensor, FileTensor):
        return tensor.read(start, stop)
    return np.asarray(tensor).reshape(-1)[start:stop]


def take(tensor, flat_indices: np.ndarray) -> np.ndarray:
    """The elements of an in-memory array or a `FileTensor` at `flat_indices`."""
    if isinstance(tensor, FileTensor):
        return tensor.take(flat_indices)
    return np.asarray(tensor).reshape(-1)[np.asarray(flat_indices, dtype=np.int64)]


def in_memory(tensor) -> np.ndarray:
    """The whole tensor as an array, shaped (reads a `FileTensor` whole: only for small ones)."""
    return np.asarray(tensor)
