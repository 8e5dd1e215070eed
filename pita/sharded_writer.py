"""Writing a recording as it is produced, in bounded memory: sharded safetensors with an index.

    writer = ShardedWriter(path, shard_bytes=256 << 20, shard_metadata={...})
    writer.add("param/fc.weight", array)     # held until the held tensors would pass shard_bytes
    ...
    written = writer.close(metadata)          # `path`, or `path + ".index.json"`

Tensors are held in memory until the next one would take them past `shard_bytes`; then they are
written as one shard and freed (a tensor larger than `shard_bytes` is a shard of its own). If
everything fits in one shard, `close` writes the one file `path` as `pita.dump.write_dump` would
(then calls `after_single`, so a caller may add the JSON form beside it). Otherwise the shards are
`<stem>-00001.safetensors`, `<stem>-00002.safetensors`, … beside `path` and the index
`<stem>.safetensors.index.json` (Hugging Face's layout: `{"metadata": {...}, "weight_map":
{tensor: shard}}`), which `pita.dump.read_dump(path)` finds when `path` itself does not exist.

Nothing half-written: shards are written under hidden temporary names and take their names only
when `close` has written them all; the index is written last; `abort` (or an error inside `with`)
removes every file this writer wrote. An earlier recording's files at the same `path` (the file,
its JSON form, its index, its shards) are removed once the new one is complete, not before.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pita.dump import INDEX_SUFFIX, MAX_TENSORS, Dump, check_dump_path, write_atomically, write_safetensors
from pita.errors import UsageError
from pita.files import shown

DEFAULT_SHARD_BYTES = 256 << 20
SHARD_DIGITS = 5  # `<stem>-00001.safetensors`; more digits when there are more shards


def index_path(path: Path) -> Path:
    """Where the index of a sharded recording at `path` goes: `<stem>.safetensors.index.json`."""
    return path.with_name(path.name + INDEX_SUFFIX.removeprefix(".safetensors"))


def shard_name(path: Path, number: int, count: int) -> str:
    """The file name of shard `number` (from 1) of `count` written for `path`."""
    digits = max(SHARD_DIGITS, len(str(count)))
    return f"{path.stem}-{number:0{digits}d}{path.suffix}"


def check_shard_bytes(shard_bytes) -> int:
    if isinstance(shard_bytes, bool) or not isinstance(shard_bytes, int) or shard_bytes < 1:
        raise UsageError(f"shard_bytes must be a positive integer (bytes held before a shard is written), got {shard_bytes!r}")
    return shard_bytes


class ShardedWriter:
    """Writes named numpy arrays to `path` (`.safetensors`) as they come, in shards of at most
    about `shard_bytes`. `shard_metadata` goes into every shard's `__metadata__` (provenance and
    `recording`); `close(metadata)` puts the whole metadata in the index, or in the one file.
    `sharded`: None shards only when the tensors pass `shard_bytes`; True always writes the index
    form (one shard or more); False never shards (everything is held until `close`)."""

    def __init__(self, path: str | Path, *, shard_bytes: int = DEFAULT_SHARD_BYTES, shard_metadata: dict | None = None,
                 sharded: bool | None = None, after_single: Callable[[Dump, Path], None] | None = None):
        self.path = check_dump_path(path)
        if self.path.suffix != ".safetensors":
            raise UsageError(f"{shown(self.path)}: a streamed recording is written as .safetensors (shards and an index when large)")
        self.shard_bytes = check_shard_bytes(shard_bytes)
        self.sharded = sharded
        self.bytes_written = 0  # the tensors' bytes written to shards so far
        self.bytes_added = 0  # the tensors' bytes added so far
        self.shard_metadata = {str(k): str(v) for k, v in (shard_metadata or {}).items()}
        self._after_single = after_single
        self._held: dict[str, np.ndarray] = {}
        self._held_bytes = 0
        self._names: set[str] = set()
        self._shards: list[tuple[Path, list[str]]] = []  # (temporary file, its tensors' names), in order
        self._done: list[Path] = []  # files that hold this recording under their final names
        self._closed = False

    def __enter__(self) -> ShardedWriter:
        return self

    def __exit__(self, exc_type, *_rest) -> None:
        if exc_type is not None:
            self.abort()

    def writes_at_once(self, size: int) -> bool:
        """Whether a tensor of `size` bytes is a shard of its own, which `add(..., at_once=True)`
        can write before returning (so the caller need not copy it first)."""
        return self.sharded is not False and size >= self.shard_bytes

    def add(self, name: str, array: np.ndarray, *, at_once: bool = False) -> None:
        """Holds `array` under `name`; writes the tensors held so far as a shard first when `array`
        would take them past `shard_bytes`. `at_once` (only where `writes_at_once(array.nbytes)`):
        `array` is written as its own shard before this returns and not held, so it may be a view
        of memory that changes afterwards (a parameter an optimizer will step)."""
        if at_once and not self.writes_at_once(array.nbytes):
            raise ValueError(f"{name}: {array.nbytes} bytes is not a shard of its own (shard_bytes {self.shard_bytes})")
        if self._closed:
            raise UsageError(f"{shown(self.path)}: the recording is closed; nothing more can be added")
        if name in self._names:
            raise UsageError(f"{name} is already recorded")
        if len(self._names) >= MAX_TENSORS:
            raise UsageError(f"{shown(self.path)}: more than {MAX_TENSORS} tensors, the most pita reads in a recording")
        size = array.nbytes
        if self._held and self._held_bytes + size > self.shard_bytes and self.sharded is not False:
            self._flush()
        self._names.add(name)
        self._held[name] = array
        self._held_bytes += size
        self.bytes_added += size
        if at_once:
            self._flush()

    def close(self, metadata: dict) -> Path:
        """Writes what is held and the index (or the one file) with `metadata`; returns the path written."""
        if self._closed:
            raise UsageError(f"{shown(self.path)}: the recording is closed already")
        metadata = {str(k): str(v) for k, v in metadata.items()}
        try:
            if not self._shards and not self.sharded:
                written = self._write_one(metadata)
                if self._after_single is not None:
                    self._after_single(Dump(tensors=self._held, metadata=metadata), written)
                self._held, self._held_bytes = {}, 0
                _remove_earlier(self.path, keep={written, written.with_suffix(".json")})
            else:
                if self._held or not self._shards:
                    self._flush()
                written = self._publish(metadata)
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return written

    def abort(self) -> None:
        """Removes every file this writer wrote (temporary or named); an earlier recording at the path is left as it was."""
        self._closed = True
        self._held, self._held_bytes = {}, 0
        for file in [temporary for temporary, _ in self._shards] + self._done:
            with contextlib.suppress(OSError):
                os.unlink(file)
        self._shards, self._done = [], []

    def _write_one(self, metadata: dict) -> Path:
        """The one file `path`: the tensors held, written under a temporary name and renamed."""
        temporary = self._temporary()
        self._shards.append((temporary, list(self._held)))
        self._write(temporary, metadata)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, self.path)
        self._shards = []
        self._done.append(self.path)
        return self.path

    def _flush(self) -> None:
        """Writes the tensors held as one shard, under a temporary name, and frees them."""
        temporary = self._temporary()
        self._shards.append((temporary, list(self._held)))
        self._write(temporary, self.shard_metadata)
        self._held, self._held_bytes = {}, 0
        _give_back_freed_memory()

    def _temporary(self) -> Path:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".part", dir=self.path.parent)
        except OSError as error:
            raise UsageError(f"{shown(self.path)}: cannot write ({error.strerror or error})") from None
        os.close(fd)
        return Path(temporary)

    def _write(self, file: Path, metadata: dict) -> None:
        """The tensors held, as safetensors, to `file`, one tensor at a time: no copy of the whole shard."""
        try:
            with open(file, "wb") as out:
                write_safetensors(out, self._held, metadata)
                out.flush()
                os.fsync(out.fileno())
        except OSError as error:
            raise UsageError(f"{shown(self.path)}: cannot write ({error.strerror or error})") from None
        self.bytes_written += self._held_bytes

    def _publish(self, metadata: dict) -> Path:
        """Gives every shard its name, then writes the index, then removes an earlier recording's
        files. Files of an earlier recording that a shard's name would replace are moved aside
        first and put back if this fails, so the earlier recording stays whole until the index is written."""
        count = len(self._shards)
        finals = [self.path.with_name(shard_name(self.path, number, count)) for number in range(1, count + 1)]
        aside = self._move_aside([final for final in finals if os.path.lexists(final)])
        try:
            weight_map = {}
            for final, (temporary, names) in zip(finals, self._shards, strict=True):
                os.chmod(temporary, 0o666 & ~_umask())
                os.replace(temporary, final)
                self._done.append(final)
                weight_map.update(dict.fromkeys(names, final.name))
            self._shards = []
            index = index_path(self.path)
            write_atomically(index, json.dumps({"metadata": metadata, "weight_map": weight_map}, indent=1).encode())
            self._done.append(index)
        except BaseException:
            self.abort()
            for original, moved in aside:
                with contextlib.suppress(OSError):
                    os.replace(moved, original)
            raise
        for _, moved in aside:
            with contextlib.suppress(OSError):
                os.unlink(moved)
        _remove_earlier(self.path, keep=set(self._done))
        return index

    def _move_aside(self, files: list[Path]) -> list[tuple[Path, Path]]:
        """Renames `files` to hidden names beside them; (original, hidden) pairs."""
        moved = []
        for file in files:
            hidden = file.with_name(f".{file.name}.{os.getpid()}.earlier")
            os.replace(file, hidden)
            moved.append((file, hidden))
        return moved


def _give_back_freed_memory() -> None:
    """Returns the memory of the shard just freed to the system (glibc's `malloc_trim`): tensors
    below glibc's mmap threshold come from its heap, whose freed pages it otherwise keeps, so the
    process would grow by up to a shard more than it holds. Nothing where there is no glibc."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim = None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove_recording(path: str | Path) -> None:
    """Removes a recording written at `path` earlier, in any form: the file, its JSON form, its index and shards."""
    _remove_earlier(Path(path), keep=set())


def _remove_earlier(path: Path, keep: set[Path]) -> None:
    """Removes the files an earlier recording at `path` left that this one did not write: the
    file, its JSON form, its index and its shards (`<stem>-<digits>.safetensors`)."""
    shard = re.compile(re.escape(path.stem) + rf"-[0-9]{{{SHARD_DIGITS},}}" + re.escape(path.suffix))
    candidates = [path, path.with_suffix(".json"), index_path(path)]
    with contextlib.suppress(OSError):
        candidates += [path.parent / entry.name for entry in os.scandir(path.parent) if shard.fullmatch(entry.name)]
    for file in candidates:
        if file not in keep:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                if file.is_file():
                    file.unlink()
