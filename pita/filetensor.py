"""Tensors left in their file and read a chunk at a time.

A large tensor in a safetensors file is not loaded: `FileTensor` remembers where it lies and
reads elements on demand with `pread`. It is never memory-mapped, because a mapped file that
shrinks while being read kills the process with SIGBUS; a short read is an ordinary error. No file
descriptor is held between reads (a streamed read holds one until it ends), so a folder of
thousands of dumps opens one file at a time.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from pita.errors import UsageError
from pita.files import FileIdentity, open_regular, pread_exactly, shown

# `take` reads neighbouring elements with one pread when the bytes between them cost less to copy
# than another system call (about a microsecond, some kilobytes of copying), in windows of at
# most TAKE_WINDOW_BYTES.
TAKE_GAP_BYTES = 8 << 10
TAKE_WINDOW_BYTES = 1 << 20


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

    def reshape(self, *shape) -> FileTensor:
        """The same elements in another shape (of the same size; one axis may be -1), still in the file."""
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else tuple(shape)
        known = math.prod(d for d in shape if d != -1)
        if shape.count(-1) == 1 and known and self.size % known == 0:
            shape = tuple(self.size // known if d == -1 else d for d in shape)
        if math.prod(shape) != self.size or min(shape, default=0) < 0:
            raise ValueError(f"cannot reshape a tensor of {self.size} elements into {shape}")
        return FileTensor(self.path, self.offset, self.dtype, shape, self.identity)

    def read(self, start: int = 0, stop: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Flat elements `start..stop` as an array in memory (into `out` when given)."""
        stop = self._checked(start, stop)
        with self._open() as fd:
            return self._read_from(fd, start, stop, out)

    def stream(self, start: int, stop: int, chunk: int) -> Iterator[np.ndarray]:
        """Flat elements `start..stop`, `chunk` at a time, each read into the same buffer: a chunk
        is valid only until the next one is asked for. The file stays open while streaming."""
        stop = self._checked(start, stop)
        buffer = np.empty(min(chunk, stop - start), dtype=self.dtype)
        with self._open() as fd:
            for first in range(start, stop, chunk):
                yield self._read_from(fd, first, min(first + chunk, stop), buffer)

    def take(self, flat_indices: np.ndarray) -> np.ndarray:
        """The elements at `flat_indices` (any order, repeats allowed); elements close together in
        the file are read with one pread."""
        flat_indices = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        if flat_indices.size and (flat_indices.min() < 0 or flat_indices.max() >= self.size):
            raise IndexError(f"index outside a tensor of {self.size} elements")
        order = np.argsort(flat_indices, kind="stable")
        wanted = flat_indices[order]
        out = np.empty(wanted.size, dtype=self.dtype)
        window = max(1, TAKE_WINDOW_BYTES // self.dtype.itemsize)
        buffer = np.empty(min(window, self.size), dtype=self.dtype)
        far = np.flatnonzero(np.diff(wanted) * self.dtype.itemsize > TAKE_GAP_BYTES) + 1  # where a new read must start
        with self._open() as fd:
            first = 0
            while first < wanted.size:
                start = int(wanted[first])
                last = min(int(np.searchsorted(wanted, start + window)), _next_after(far, first, wanted.size))
                values = self._read_from(fd, start, int(wanted[last - 1]) + 1, buffer)
                out[order[first:last]] = values[wanted[first:last] - start]
                first = last
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        array = self.read().reshape(self.shape)
        return array if dtype is None else array.astype(dtype)

    def _checked(self, start: int, stop: int | None) -> int:
        stop = self.size if stop is None else stop
        if not 0 <= start <= stop <= self.size:
            raise IndexError(f"elements {start}..{stop} of a tensor of {self.size}")
        return stop

    def _read_from(self, fd: int, start: int, stop: int, out: np.ndarray | None) -> np.ndarray:
        count = stop - start
        array = np.empty(count, dtype=self.dtype) if out is None else out[:count]
        pread_exactly(fd, memoryview(array.view(np.uint8)), self.offset + start * self.dtype.itemsize, self.path)
        return array

    def _open(self):
        return _opened(self.path, self.identity)


def _next_after(starts: np.ndarray, position: int, end: int) -> int:
    """The first of the sorted `starts` after `position`, else `end`."""
    found = int(np.searchsorted(starts, position, side="right"))
    return int(starts[found]) if found < starts.size else end


@contextlib.contextmanager
def _opened(path: str, identity: FileIdentity) -> Iterator[int]:
    """A descriptor on the file for one read, checked to be still the file that was validated."""
    with open_regular(Path(path)) as (fd, status):
        if FileIdentity.of(status) != identity:
            raise UsageError(f"{shown(path)}: the file changed while being read")
        yield fd


def flat_chunks(tensor, start: int, stop: int, chunk: int) -> Iterator[np.ndarray]:
    """Flat elements `start..stop` of an in-memory array or a `FileTensor`, `chunk` at a time.
    Chunks of a `FileTensor` share one buffer: each is valid only until the next is asked for."""
    if isinstance(tensor, FileTensor):
        yield from tensor.stream(start, stop, chunk)
        return
    flat = np.asarray(tensor).reshape(-1)  # once: a non-contiguous array is copied here, not per chunk
    for first in range(start, stop, chunk):
        yield flat[first:min(first + chunk, stop)]


def take(tensor, flat_indices: np.ndarray) -> np.ndarray:
    """The elements of an in-memory array or a `FileTensor` at `flat_indices`."""
    if isinstance(tensor, FileTensor):
        return tensor.take(flat_indices)
    return np.asarray(tensor).reshape(-1)[np.asarray(flat_indices, dtype=np.int64)]
