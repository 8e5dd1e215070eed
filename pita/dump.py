"""Dumps: named tensors plus provenance, read from and written to safetensors, JSON and npz.

The format is specified in docs/dump-format.md. Readers open regular files only, validate every
size and offset against the file's real size before touching data, and bound the memory and
time any input can take (the limits below), so a hostile file gets a `UsageError` with one line
naming it, never a huge allocation, a hang or a traceback. Writers refuse what the readers would
refuse, and are atomic: a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import os
import re
import reprlib
import stat
import struct
import tempfile
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pita.dtypes import DTYPES, FLOATS, bits, dtype_name, from_float64, normalize, widen
from pita.errors import UsageError
from pita.files import FileIdentity, open_regular, read_array, read_regular_file, shown, stat_path
from pita.filetensor import FileTensor

FORMAT = "pita-dump/1"
SUFFIXES = (".safetensors", ".json", ".npz")  # matched in any case: W.NPZ is an npz
INDEX_SUFFIX = ".safetensors.index.json"  # a sharded checkpoint's index (Hugging Face's layout), any case

# Limits: each bounds the memory or the time one input can take, with room for real models.
MAX_TENSORS = 100_000  # per dump, a folder's files together (large MoE checkpoints hold tens of thousands)
MAX_DIMS = 64  # numpy's own limit
# Parsing hostile JSON takes up to 26 bytes of memory per byte (`[[],[],...]`). A safetensors header
# of 100,000 entries takes ~11 MiB; the reference reader allows 100 MB.
MAX_HEADER_BYTES = 16 << 20
MAX_JSON_BYTES = 32 << 20  # a JSON dump is parsed whole
MAX_JSON_ELEMENTS = 500_000  # the JSON writer's limit: at most ~60 bytes an element keeps its files readable
MAX_FOLDER_ENTRIES = 10_000  # entries in a folder of dumps, skipped ones included
MAX_DEFLATE_RATIO = 1100  # deflate cannot compress better than ~1032:1
MAX_INFLATED_BYTES = 1 << 31  # deflated npz members, inflated into memory, together
LAZY_MIN_BYTES = 1 << 20  # safetensors tensors at least this large stay in the file (`FileTensor`)
# What `pita compare` and `pita trace` leave in the file: they read every tensor through pita.stats,
# whose kernel reads files in parallel threads, while a tensor read here is read in turn into fresh
# memory. On a BERT-style recording (536 tensors, 466 below 1 MiB) the whole process takes ~0.2 s
# less wall time, half the system time (bench/recording.py). Library callers keep LAZY_MIN_BYTES:
# they may hold small tensors as arrays.
COMPARED_LAZY_MIN_BYTES = 64 << 10
MAX_INDEX_BYTES = 16 << 20  # a sharded checkpoint's index, parsed whole (100,000 entries take ~10 MiB)
MAX_SHARDS = 10_000  # shard files one index may name


@dataclass
class Dump:
    """Named tensors and the provenance metadata (all values are strings)."""

    tensors: dict[str, np.ndarray]
    metadata: dict[str, str] = field(default_factory=dict)
    source: str = ""  # the path as reports print it
    notes: list[str] = field(default_factory=list)  # for the report, e.g. the files a folder skipped and why

    @property
    def batch_size(self) -> int | None:
        value = self.metadata.get("batch_size", "")
        # ASCII digits only: str.isdigit accepts "²", which int() refuses
        return int(value) if value.isascii() and value.isdigit() and len(value) <= 18 else None

    def describe(self) -> str:
        """`torch 2.15.0 (cpu)`: who wrote the dump, as far as its metadata says."""
        parts = [self.metadata.get(k, "") for k in ("framework", "framework_version")]
        text = " ".join(p for p in parts if p) or "no provenance"
        backend = self.metadata.get("backend")
        return f"{text} ({backend})" if backend else text


def read_dump(path: str | os.PathLike, *, lazy_min_bytes: int = LAZY_MIN_BYTES) -> Dump:
    """Reads a dump file (by its suffix) or a folder of dumps; raises `UsageError` with one line
    on anything unusable. Safetensors tensors of at least `lazy_min_bytes` stay in their file
    (`FileTensor`); smaller ones are read into memory."""
    if not os.fspath(path):
        raise UsageError("empty path: name a dump file or a folder of dumps")
    path = _index_in_place_of(Path(path))
    if stat.S_ISDIR(stat_path(path).st_mode):
        return read_directory(path, lazy_min_bytes=lazy_min_bytes)
    return _read_file(path, lazy_min_bytes)


def _index_in_place_of(path: Path) -> Path:
    """`P.index.json` for a `.safetensors` path P that does not exist when that index does: a
    recording a recorder sharded is read by the path it was asked to write (docs/recording.md)."""
    index = path.with_name(path.name + ".index.json")
    if path.suffix.lower() == ".safetensors" and path.name and not os.path.lexists(path) and os.path.isfile(index):
        return index
    return path


def _read_file(path: Path, lazy_min_bytes: int = LAZY_MIN_BYTES) -> Dump:
    if is_index(path.name):
        return read_sharded(path, lazy_min_bytes=lazy_min_bytes)
    readers = {".safetensors": lambda p: read_safetensors(p, lazy_min_bytes=lazy_min_bytes), ".json": read_json, ".npz": read_npz}
    reader = readers.get(path.suffix.lower())
    if reader is None:
        raise UsageError(f"{shown(path)}: unknown dump suffix {_brief(path.suffix)} (expected {', '.join(SUFFIXES)})")
    return reader(path)


# --- folders -----------------------------------------------------------------------------------

FORM_PREFERENCE = (".safetensors", INDEX_SUFFIX, ".npz", ".json")  # a stem written in several forms: the exact forms first


def read_directory(path: Path, *, lazy_min_bytes: int = LAZY_MIN_BYTES) -> Dump:
    """Every dump in a folder as one dump whose tensors are named `<file stem>/<tensor>`. A stem
    written in several forms is read from one (`FORM_PREFERENCE`); everything else in the folder
    is named in `notes` with the reason it was skipped. Metadata values shared by every file are
    kept. Files are read one at a time, each closed before the next is opened."""
    chosen, skipped = _folder_plan(path)
    _skip_shards(chosen, skipped)
    if not chosen:
        found = "; ".join(_skip_note(reason, names) for reason, names in skipped.items())
        raise UsageError(f"{shown(path)}: folder has no dumps ({', '.join(SUFFIXES)})" + (f"; {found}" if found else ""))
    dumps, count = {}, 0
    for stem, file in chosen.items():
        dumps[stem] = _read_file(file, lazy_min_bytes)
        count += len(dumps[stem].tensors)
        if count > MAX_TENSORS:
            raise UsageError(f"{shown(path)}: the folder's dumps hold more than {MAX_TENSORS} tensors, the most pita reads")
    tensors = {f"{stem}/{name}": t for stem, d in dumps.items() for name, t in d.tensors.items()}
    shared = dict(next(iter(dumps.values())).metadata)
    for d in dumps.values():
        shared = {k: v for k, v in shared.items() if d.metadata.get(k) == v}
    notes = [f"{stem}: {note}" for stem, d in dumps.items() for note in d.notes]
    notes += [_skip_note(reason, names) for reason, names in skipped.items()]
    return Dump(tensors=tensors, metadata=shared, source=shown(path), notes=notes)


def _folder_plan(path: Path) -> tuple[dict[str, Path], dict[tuple[str, str], list[str]]]:
    """The file to read for each stem, and the skipped names grouped by (what, why)."""
    forms: dict[str, dict[str, Path]] = {}
    skipped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for entry in _listing(path):
        reason = _skip_reason(entry)
        if reason:
            skipped[reason].append(entry.name)
            continue
        suffix = INDEX_SUFFIX if is_index(entry.name) else Path(entry.name).suffix
        stem, form = entry.name[: -len(suffix)], suffix.lower()
        same = forms.setdefault(stem, {})
        if form in same:
            raise UsageError(f"{shown(path)}: {shown(same[form].name)} and {shown(entry.name)} are both the dump {_brief(stem)}")
        same[form] = path / entry.name
    chosen = {}
    for stem, files in forms.items():
        form = next(f for f in FORM_PREFERENCE if f in files)
        chosen[stem] = files[form]
        for other in sorted(set(files) - {form}):
            skipped[("files", f"the same dumps are read from their {form} files")].append(files[other].name)
    return chosen, skipped


def _skip_shards(chosen: dict[str, Path], skipped: dict[tuple[str, str], list[str]]) -> None:
    """The shards of a sharded checkpoint whose index the folder reads are read through it, not
    as dumps of their own (their tensors would be there twice)."""
    for file in [f for f in chosen.values() if is_index(f.name)]:
        _, weight_map, _ = _sharded_index(file)
        for shard in sorted(set(weight_map.values())):
            stem = shard[: -len(".safetensors")]
            if chosen.get(stem) == file.parent / shard:
                del chosen[stem]
                skipped[("shards", f"read through their index {shown(file.name)}")].append(shard)


def _listing(path: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as entries:
            listed = list(itertools.islice(entries, MAX_FOLDER_ENTRIES + 1))
    except OSError as error:
        raise UsageError(f"{shown(path)}: cannot list the folder ({error.strerror})") from None
    if len(listed) > MAX_FOLDER_ENTRIES:
        raise UsageError(f"{shown(path)}: more than {MAX_FOLDER_ENTRIES} entries, the most pita reads in a folder of dumps")
    return sorted(listed, key=lambda entry: entry.name)


def _skip_reason(entry: os.DirEntry) -> tuple[str, str] | None:
    """(what, why) for a folder entry that is not read, None for a dump."""
    name, suffix = entry.name, Path(entry.name).suffix.lower()
    if name.startswith("."):
        return "hidden files", "names starting with '.', as a writer's temporary files have"
    if _is_folder(entry):
        return "folders", "subfolders are not read"
    if name.lower() == "record.json":
        return "run records", "pita run's record.json is not a dump"
    if suffix == ".npy":
        return ".npy files", "an .npy file holds one unnamed array, not a dump: put it in an .npz"
    if suffix not in SUFFIXES:
        return "files with other suffixes", f"dumps end in {', '.join(SUFFIXES)}"
    return None


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # follows symlinks: a link to a folder, or a loop of them, is a folder
    except OSError:
        return False  # a link that cannot be followed: reading it says why


def _skip_note(reason: tuple[str, str], names: list[str], shown_at_most: int = 5) -> str:
    what, why = reason
    listed = ", ".join(shown(name) for name in names[:shown_at_most])
    more = f" and {len(names) - shown_at_most} more" if len(names) > shown_at_most else ""
    return f"skipped {what} ({why}): {listed}{more}"


def files_read(path: str | os.PathLike) -> list[Path]:
    """The files reading `path` opens: the file itself; a sharded index and its shards; in a
    folder, every dump file and index and the shards they name. What a writer must never replace
    (`pita compare --html` refuses each of them as an output). Call it after `read_dump(path)`
    succeeded: the index is read again, and anything that cannot be listed is left out."""
    path = Path(path)
    try:
        folder = stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return [path]
    if folder:
        files = [path / entry.name for entry in _listing(path) if not entry.name.startswith(".")
                 and (is_index(entry.name) or Path(entry.name).suffix.lower() in SUFFIXES)]
    else:
        files = [path]
    for index in [f for f in files if is_index(f.name)]:
        with contextlib.suppress(UsageError):
            _, weight_map, _ = _sharded_index(index)
            files += [index.parent / shard for shard in sorted(set(weight_map.values()))]
    return files


# --- writing -----------------------------------------------------------------------------------


def write_dump(dump: Dump, path: str | os.PathLike) -> Path:
    """Writes `dump` in the format its suffix names, atomically."""
    path = check_dump_path(path)
    writer = {".safetensors": _safetensors_bytes, ".json": _json_bytes, ".npz": _npz_bytes}[path.suffix.lower()]
    if len(dump.tensors) > MAX_TENSORS:
        raise UsageError(f"{shown(path)}: {len(dump.tensors)} tensors, more than the {MAX_TENSORS} pita reads in a dump")
    write_atomically(path, writer(dump))
    return path


def check_dump_path(path: str | os.PathLike) -> Path:
    """`path` as `write_dump` checks it before writing, without writing anything, so that a caller
    can refuse an unusable path before a long run (`pita.torch.record` does): a suffix pita writes
    (a sharded index is not one), and a place a file can be written to (`check_destination`)."""
    path = Path(path)
    if is_index(path.name):
        raise UsageError(f"{shown(path)}: pita reads sharded checkpoints ({INDEX_SUFFIX}) but does not write them: write one .safetensors file")
    if path.suffix.lower() not in SUFFIXES:
        raise UsageError(f"{shown(path)}: unknown dump suffix {_brief(path.suffix)} (expected {', '.join(SUFFIXES)})")
    check_destination(path)
    return path


def check_destination(path: Path) -> None:
    """Refuses (`UsageError`) a path no file can be written to: one that is a folder, a FIFO, a
    device or a socket (renaming over it would replace it), or whose nearest existing folder
    above it is not a folder or cannot be written to (the writer creates missing folders)."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    except (OSError, ValueError) as error:  # a parent that is a file, a name too long, a NUL byte, ...
        raise UsageError(f"{shown(path)}: cannot write ({getattr(error, 'strerror', None) or error})") from None
    if status is not None and not stat.S_ISREG(status.st_mode):
        kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                 (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
        kind = next((name for test, name in kinds if test(status.st_mode)), "a special file")
        raise UsageError(f"{shown(path)}: {kind}, not a regular file (pita writes regular files only)")
    folder = path.absolute().parent
    while not os.path.lexists(folder) and folder.parent != folder:
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"{shown(path)}: cannot write ({shown(folder)} is not a folder)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{shown(path)}: cannot write (folder {shown(folder)}: permission denied)")


def _umask() -> int:
    """The process's umask (it can only be read by setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path: str | os.PathLike, data: bytes | Iterable[str]) -> None:
    """Writes `data` (bytes, or text in pieces, written as UTF-8 one piece at a time) to a
    temporary file in the same folder, flushed to disk, then renames it over `path`: a reader sees
    the old file or the new one, never part of one. A write that fails (a full disk, a file-size
    limit) leaves the old file, removes the temporary one and raises `UsageError`; so does a path
    that is empty, a folder, a FIFO, a device or a socket (`check_destination`), which the rename
    would replace with a regular file."""
    if not os.fspath(path):
        raise UsageError("empty path: name the file to write")
    path = Path(path)
    check_destination(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as error:
        raise UsageError(f"{shown(path)}: cannot write ({error.strerror or error})") from None
    try:
        with os.fdopen(fd, "wb") as file:
            if isinstance(data, (bytes, bytearray, memoryview)):
                file.write(data)
            else:
                for piece in data:
                    file.write(piece.encode())
            file.flush()
            os.fchmod(file.fileno(), 0o666 & ~_umask())  # mkstemp's 0600 would hide the file from others
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise UsageError(f"{shown(path)}: cannot write ({error.strerror or error})") from None
        raise


def _writable(name: str, tensor) -> tuple[np.ndarray, str]:
    """The tensor in memory, in the little-endian dtype its dump name says, and that name."""
    try:
        _check_name(name)
        array = normalize(np.asarray(tensor))  # keeps 0-d arrays 0-d
    except (TypeError, ValueError) as error:
        raise UsageError(f"tensor {_brief(name)}: {error}") from None
    return array, dtype_name(array.dtype)


# --- checks every reader shares ----------------------------------------------------------------

_brief_repr = reprlib.Repr()
_brief_repr.maxstring, _brief_repr.maxother, _brief_repr.maxlist, _brief_repr.maxdict = 60, 60, 6, 4


def _brief(value) -> str:
    """`repr(value)`, cut short: hostile values end up in messages, which must stay one short line."""
    return _brief_repr.repr(value)


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())[:200]


def _check_name(name: str) -> None:
    """Tensor names are printed one per report line: a control character (a newline could forge a
    line such as an `OK` verdict) or text that is not Unicode is refused."""
    if not isinstance(name, str) or not name.isprintable():
        raise ValueError("the name holds characters that cannot be printed on one line")


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, from a JSON escape such as "\ud800"
        raise ValueError(f"{_brief(text)} is not valid Unicode") from None


def _checked_shape(shape, itemsize: int) -> tuple[int, ...]:
    """`shape` if numpy can hold an array of it: at most `MAX_DIMS` non-negative integers (not
    booleans) whose nonzero product, in bytes, fits in an int64."""
    if not isinstance(shape, (list, tuple)) or len(shape) > MAX_DIMS or not all(type(d) is int and 0 <= d < 2**63 for d in shape):
        raise ValueError(f"shape must be a list of at most {MAX_DIMS} non-negative integers, got {_brief(shape)}")
    if math.prod(d for d in shape if d) * itemsize >= 2**63:
        raise ValueError(f"shape {_brief(shape)} is larger than any array")
    return tuple(shape)


def _loads(text: str, max_objects: int):
    """JSON, stricter than `json.loads`: a key given twice, a number out of float64's range (json
    reads 1e400 as inf), an integer of more than 24 digits (no dtype holds one), a bare NaN or
    Infinity (the format spells them as strings) and more than `max_objects` objects are refused
    with `ValueError`, as is nesting too deep for the parser."""
    count = 0

    def unique_keys(pairs):
        nonlocal count
        count += 1
        if count > max_objects:
            raise ValueError(f"more than {max_objects} JSON objects (a dump holds at most {MAX_TENSORS} tensors)")
        result = {}
        for key, value in pairs:
            if key in result:
                raise ValueError(f"key {_brief(key)} appears twice")
            result[key] = value
        return result

    try:
        return json.loads(text, object_pairs_hook=unique_keys, parse_float=_finite_float, parse_int=_short_int,
                          parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {_brief(text)} is beyond float64's range")
    return value


def _short_int(text: str) -> int:
    if len(text.lstrip("-")) > 24:
        raise ValueError(f"integer of {len(text)} digits (the largest a dump holds has 20)")
    return int(text)


def _no_constant(name: str):
    raise ValueError(f"bare {name} is not JSON (write it as the string \"{name}\")")


def _checked_metadata(metadata: dict) -> dict[str, str]:
    result = {str(k): str(v) for k, v in metadata.items()}
    for key, value in result.items():
        _check_text(key)
        _check_text(value)
    return result


# --- safetensors -------------------------------------------------------------------------------


def read_safetensors(path: Path, *, lazy_min_bytes: int = LAZY_MIN_BYTES) -> Dump:
    with open_regular(path) as (fd, status):
        size = status.st_size
        if size < 8:
            raise UsageError(f"{shown(path)}: truncated safetensors file ({size} bytes; the header length alone takes 8)")
        header_len = int(read_array(fd, path, 0, np.dtype("<u8"), ()))
        if header_len > size - 8:
            raise UsageError(f"{shown(path)}: header length {header_len} exceeds the file ({size} bytes): truncated or not safetensors")
        if header_len > MAX_HEADER_BYTES:
            raise UsageError(f"{shown(path)}: header of {header_len} bytes, more than the {MAX_HEADER_BYTES} pita reads")
        header = _parse_header(path, read_array(fd, path, 8, np.dtype("u1"), (header_len,)).tobytes())
        data_start = 8 + header_len
        entries = _validated_entries(path, header, size - data_start)
        identity = FileIdentity.of(status)
        tensors = {name: _safetensors_tensor(fd, path, data_start, entry, identity, lazy_min_bytes) for name, entry in entries.items()}
    return Dump(tensors=tensors, metadata=header.get("__metadata__") or {}, source=shown(path))


def _safetensors_tensor(fd: int, path: Path, data_start: int, entry: dict, identity: FileIdentity, lazy_min_bytes: int):
    """Large tensors (`lazy_min_bytes` or more) stay in the file; small ones are read now, through the open descriptor."""
    begin, end = entry["data_offsets"]
    dtype, shape = DTYPES[entry["dtype"]], tuple(entry["shape"])
    if end - begin >= lazy_min_bytes:
        return FileTensor(str(path), data_start + begin, dtype, shape, identity)
    return read_array(fd, path, data_start + begin, dtype, shape)


def _parse_header(path: Path, raw: bytes) -> dict:
    try:
        header = _loads(raw.decode("utf-8"), MAX_TENSORS + 2)
    except (UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"{shown(path)}: safetensors header is not valid JSON ({_one_line(error)})") from None
    if not isinstance(header, dict):
        raise UsageError(f"{shown(path)}: safetensors header is not a JSON object")
    metadata = header.get("__metadata__") or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise UsageError(f"{shown(path)}: __metadata__ must map names to strings")
    try:
        _checked_metadata(metadata)
    except ValueError as error:
        raise UsageError(f"{shown(path)}: __metadata__: {error}") from None
    return header


def _validated_entries(path: Path, header: dict, data_len: int) -> dict[str, dict]:
    entries = {k: v for k, v in header.items() if k != "__metadata__"}
    if len(entries) > MAX_TENSORS:
        raise UsageError(f"{shown(path)}: {len(entries)} tensors, more than the {MAX_TENSORS} pita reads in a dump")
    spans = []
    for name, entry in entries.items():
        where = f"{shown(path)}: tensor {_brief(name)}"
        try:
            spans.append((*_validated_span(name, entry, data_len), name))
        except ValueError as error:
            raise UsageError(f"{where}: {error}") from None
    spans.sort()
    for (_, end, first), (begin, _, second) in zip(spans, spans[1:]):
        if begin < end:
            raise UsageError(f"{shown(path)}: tensors {_brief(first)} and {_brief(second)} overlap")
    return entries


def _validated_span(name: str, entry, data_len: int) -> tuple[int, int]:
    """The entry's data offsets, once its name, dtype, shape and offsets are consistent."""
    _check_name(name)
    if not isinstance(entry, dict) or not isinstance(entry.get("dtype"), str) or entry["dtype"] not in DTYPES:
        dtype = entry.get("dtype") if isinstance(entry, dict) else entry
        raise ValueError(f"missing or unsupported dtype {_brief(dtype)} (pita reads {' '.join(DTYPES)})")
    itemsize = DTYPES[entry["dtype"]].itemsize
    shape = _checked_shape(entry.get("shape"), itemsize)
    offsets = entry.get("data_offsets")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)):
        raise ValueError(f"data_offsets must be two integers, got {_brief(offsets)}")
    begin, end = offsets
    if not 0 <= begin <= end <= data_len:
        raise ValueError(f"data_offsets {offsets} lie outside the data ({data_len} bytes)")
    expected = math.prod(shape) * itemsize
    if end - begin != expected:
        raise ValueError(f"{entry['dtype']}{list(shape)} needs {expected} bytes but data_offsets span {end - begin}")
    return begin, end


def _safetensors_bytes(dump: Dump) -> bytes:
    out = io.BytesIO()
    write_safetensors(out, dump.tensors, {str(k): str(v) for k, v in dump.metadata.items()})
    return out.getvalue()


def write_safetensors(out, tensors: dict, metadata: dict) -> None:
    """`tensors` as safetensors to the open binary file `out`, in the layout of the
    reference writer (names sorted, header padded to 8 bytes), each tensor's bytes written from its own memory."""
    header, arrays, offset = {}, [], 0
    for name in sorted(tensors):
        if name == "__metadata__":
            raise UsageError("tensor '__metadata__': the name is reserved for the metadata in safetensors")
        array, dtype = _writable(name, tensors[name])
        array = np.require(array, requirements="C")  # np.ascontiguousarray would make a 0-d array 1-d
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        arrays.append(array)
        offset += array.nbytes
    if metadata:
        header["__metadata__"] = metadata
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    out.write(struct.pack("<Q", len(raw)) + raw)
    for array in arrays:
        out.write(memoryview(array.reshape(-1).view(np.uint8)) if array.size else b"")


# --- sharded safetensors checkpoints -----------------------------------------------------------


def is_index(name: str) -> bool:
    """Whether a file name is a sharded checkpoint's index (`model.safetensors.index.json`)."""
    return name.lower().endswith(INDEX_SUFFIX) and len(name) > len(INDEX_SUFFIX)


def read_sharded(path: Path, *, lazy_min_bytes: int = LAZY_MIN_BYTES) -> Dump:
    """A sharded safetensors checkpoint, read through its index (`{"metadata": {...},
    "weight_map": {tensor: shard file}}`) as one dump. Shards are plain file names in the index's
    folder; every one is checked to be a regular file before any is read, then each is read and
    closed in turn (large tensors stay in their shard as `FileTensor`s). Each shard must hold
    exactly the tensors the index puts in it. The metadata is the index's, plus the values every
    shard's `__metadata__` shares (the index's wins where they disagree, with a note)."""
    metadata, weight_map, notes = _sharded_index(path)
    shards: dict[str, list[str]] = defaultdict(list)
    for name, shard in weight_map.items():
        shards[shard].append(name)
    for shard in shards:  # before any is read: a missing shard costs nothing
        status = stat_path(path.parent / shard)
        if not stat.S_ISREG(status.st_mode):
            read_safetensors(path.parent / shard)  # refuses it, saying what it is
    tensors, shared = {}, None
    for shard in sorted(shards):
        dump = read_safetensors(path.parent / shard, lazy_min_bytes=lazy_min_bytes)
        listed = set(shards[shard])
        for name in dump.tensors:
            if name not in listed:
                elsewhere = weight_map.get(name)
                where = f"the index puts it in {shown(elsewhere)}" if elsewhere else "the index does not list it"
                raise UsageError(f"{shown(path)}: shard {shown(shard)} holds tensor {_brief(name)}: {where}")
        absent = sorted(listed - set(dump.tensors))
        if absent:
            raise UsageError(f"{shown(path)}: tensor {_brief(absent[0])} is not in shard {shown(shard)}, where the index puts it")
        tensors.update(dump.tensors)
        shared = dict(dump.metadata) if shared is None else {k: v for k, v in shared.items() if dump.metadata.get(k) == v}
    for key, value in sorted((shared or {}).items()):
        if key in metadata and metadata[key] != value:
            notes.append(f"metadata {_brief(key)}: the index says {_brief(metadata[key])}, every shard {_brief(value)}; the index's is kept")
    merged = {**(shared or {}), **metadata}
    ordered = {name: tensors[name] for name in weight_map}  # the index's order
    return Dump(tensors=ordered, metadata=merged, source=shown(path), notes=notes)


def _sharded_index(path: Path) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """The index's metadata (as strings), its weight map (tensor -> shard file name), checked, and
    notes on what was ignored."""
    raw = read_regular_file(path, MAX_INDEX_BYTES, "a sharded checkpoint's index")
    try:
        document = _loads(raw.decode("utf-8"), 8)
    except (UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"{shown(path)}: not valid JSON ({_one_line(error)})") from None
    if not isinstance(document, dict) or not isinstance(document.get("weight_map"), dict):
        raise UsageError(f"{shown(path)}: not a sharded checkpoint's index (expected an object with a weight_map object)")
    notes = [f"ignored the index's key(s) {', '.join(map(_brief, sorted(set(document) - {'metadata', 'weight_map'})))}"] \
        if set(document) - {"metadata", "weight_map"} else []
    metadata = document.get("metadata") or {}
    try:
        if not isinstance(metadata, dict) or not all(type(v) in (str, int, float, bool) for v in metadata.values()):
            raise ValueError("must be an object of strings, numbers and booleans")
        metadata = _checked_metadata({k: json.dumps(v) if type(v) is bool else v for k, v in metadata.items()})
    except ValueError as error:
        raise UsageError(f"{shown(path)}: metadata: {error}") from None
    weight_map = document["weight_map"]
    if not weight_map:
        raise UsageError(f"{shown(path)}: the index lists no tensors")
    if len(weight_map) > MAX_TENSORS:
        raise UsageError(f"{shown(path)}: {len(weight_map)} tensors, more than the {MAX_TENSORS} pita reads in a dump")
    for name, shard in weight_map.items():
        try:
            _check_name(name)
            _check_shard_name(shard)
        except ValueError as error:
            raise UsageError(f"{shown(path)}: tensor {_brief(name)}: {error}") from None
    if len(set(weight_map.values())) > MAX_SHARDS:
        raise UsageError(f"{shown(path)}: {len(set(weight_map.values()))} shards, more than the {MAX_SHARDS} pita reads")
    return metadata, weight_map, notes


def _check_shard_name(shard) -> None:
    """A shard is a plain .safetensors file name in the index's folder: no folder part (no path
    separator, so no absolute path and no `..`), printable on one line."""
    if not isinstance(shard, str):
        raise ValueError(f"its shard must be a file name, got {_brief(shard)}")
    if not shard.isprintable() or "/" in shard or "\\" in shard or shard in (".", ".."):
        raise ValueError(f"shard {_brief(shard)} is not a plain file name in the index's folder (no folders, no '..', no absolute path)")
    if not shard.lower().endswith(".safetensors") or len(shard) == len(".safetensors"):
        raise ValueError(f"shard {_brief(shard)} is not a .safetensors file")


# --- JSON --------------------------------------------------------------------------------------

_ENTRY_KEYS = ("dtype", "shape", "values", "bits")
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_HEX = {width: re.compile(f"[0-9a-fA-F]{{{width}}}") for width in (4, 8, 16)}


def read_json(path: Path) -> Dump:
    raw = read_regular_file(path, MAX_JSON_BYTES, "a JSON dump (larger dumps are read as .safetensors)")
    try:
        document = _loads(raw.decode("utf-8"), MAX_TENSORS + 3)
    except (UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"{shown(path)}: not valid JSON ({_one_line(error)})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT or not isinstance(document.get("tensors"), dict):
        raise UsageError(f"{shown(path)}: not a pita JSON dump (expected an object with format {FORMAT!r} and tensors)")
    metadata = document.get("metadata", {})
    if not isinstance(metadata, dict):
        raise UsageError(f"{shown(path)}: metadata must be an object")
    if len(document["tensors"]) > MAX_TENSORS:
        raise UsageError(f"{shown(path)}: {len(document['tensors'])} tensors, more than the {MAX_TENSORS} pita reads in a dump")
    tensors = {}
    for name, entry in document["tensors"].items():
        try:
            _check_name(name)
            tensors[name] = _json_tensor(entry)
        except ValueError as error:
            raise UsageError(f"{shown(path)}: tensor {_brief(name)}: {error}") from None
    try:
        metadata = _checked_metadata(metadata)
    except ValueError as error:
        raise UsageError(f"{shown(path)}: metadata: {error}") from None
    return Dump(tensors=tensors, metadata=metadata, source=shown(path))


def _json_tensor(entry) -> np.ndarray:
    """One tensor of the JSON form. `bits` are authoritative; `values` alone (a hand-written file)
    must be exact for integers and booleans and are rounded for floats; both must agree."""
    if not isinstance(entry, dict):
        raise ValueError("must be an object with dtype, shape and values")
    unknown = set(entry) - set(_ENTRY_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(map(_brief, sorted(unknown)))} (expected {', '.join(_ENTRY_KEYS)})")
    name = entry.get("dtype")
    if not isinstance(name, str) or name not in DTYPES:
        raise ValueError(f"missing or unsupported dtype {_brief(name)} (expected one of {' '.join(DTYPES)})")
    shape = _checked_shape(entry.get("shape"), DTYPES[name].itemsize)
    count = math.prod(shape)
    if entry.get("bits") is not None and name not in FLOATS:
        raise ValueError(f"bits are given for float dtypes only, not {name}")
    if entry.get("values") is None and entry.get("bits") is None:
        raise ValueError("has neither values nor bits")
    from_values = _from_values(name, _listed(entry, "values", count)) if entry.get("values") is not None else None
    from_bits = _from_bits(name, _listed(entry, "bits", count)) if entry.get("bits") is not None else None
    if from_values is not None and from_bits is not None:
        _check_agreement(from_values, from_bits)
    return (from_values if from_bits is None else from_bits).reshape(shape)


def _listed(entry: dict, key: str, count: int) -> list:
    items = entry[key]
    if not isinstance(items, list) or len(items) != count:
        raise ValueError(f"{key} has {len(items) if isinstance(items, list) else 'no list of'} entries, shape needs {count}")
    return items


def _from_values(name: str, values: list) -> np.ndarray:
    if name == "BOOL":
        if not all(type(v) is bool for v in values):
            raise ValueError(f"BOOL values must be true or false, got {_brief(next(v for v in values if type(v) is not bool))}")
        return np.array(values, dtype=DTYPES[name]).reshape(-1)
    if name not in FLOATS:
        return _integers(name, values)
    exact = np.array([_float_value(v) for v in values], dtype=np.float64)
    rounded = from_float64(exact, name)
    overflow = np.flatnonzero(np.isinf(widen(rounded)) & np.isfinite(exact))
    if overflow.size:
        raise ValueError(f"value {values[overflow[0]]!r} overflows {name}")
    return rounded


def _integers(name: str, values: list) -> np.ndarray:
    info = np.iinfo(DTYPES[name])
    for v in values:
        if type(v) is not int:
            raise ValueError(f"{name} values must be JSON integers, got {_brief(v)}")
        if not info.min <= v <= info.max:
            raise ValueError(f"value {v} is out of range for {name} ({info.min}..{info.max})")
    return np.array(values, dtype=DTYPES[name]).reshape(-1)


def _float_value(value) -> float:
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    if type(value) in (int, float):  # JSON integers have at most 24 digits (`_short_int`): all fit a float64
        return float(value)
    raise ValueError(f"value {_brief(value)} is neither a number nor one of NaN, Infinity, -Infinity")


def _from_bits(name: str, patterns: list) -> np.ndarray:
    itemsize = DTYPES[name].itemsize
    pattern = _HEX[2 * itemsize]
    for b in patterns:
        if not isinstance(b, str) or not pattern.fullmatch(b):
            raise ValueError(f"bits must be {2 * itemsize} hex digits each, got {_brief(b)}")
    return np.array([int(b, 16) for b in patterns], dtype=f"<u{itemsize}").view(DTYPES[name])


def _check_agreement(from_values: np.ndarray, from_bits: np.ndarray) -> None:
    """Bits are authoritative, so a value edited by hand without its bits would be ignored: refuse."""
    nan = np.isnan(widen(from_values)) & np.isnan(widen(from_bits))
    disagree = np.flatnonzero((bits(from_values) != bits(from_bits)) & ~nan)
    if disagree.size:
        i = int(disagree[0])
        raise ValueError(f"values and bits disagree at flat index {i} ({widen(from_values)[i]} against "
                         f"{widen(from_bits)[i]}); edit both, or drop values")


def _readable(value: np.floating):
    """Shortest decimal that reads back to the same value; non-finite values as strings."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(str(value))  # numpy's str() of a float is its shortest round-trip form


def _bf16_readable(flat: np.ndarray) -> list:
    """Shortest decimals that read back to the same bfloat16 (numpy's str() knows no bfloat16);
    four significant digits always do, as 10**4 > 2**(8 + 1)."""
    exact = widen(flat)
    readable = [_readable(v) for v in exact]
    pending = np.flatnonzero(np.isfinite(exact))
    for digits in range(1, 5):
        short = np.array([float(f"{exact[i]:.{digits}g}") for i in pending])
        same = bits(from_float64(short, "BF16")) == bits(flat[pending])
        for i, value in zip(pending[same].tolist(), short[same].tolist()):
            readable[i] = value
        pending = pending[~same]
    return readable


def _json_entry(array: np.ndarray, name: str) -> dict:
    flat = array.reshape(-1)
    if name not in FLOATS:
        return {"dtype": name, "shape": list(array.shape), "values": flat.tolist()}
    width = 2 * array.dtype.itemsize
    values = _bf16_readable(flat) if name == "BF16" else [_readable(v) for v in flat]
    return {"dtype": name, "shape": list(array.shape), "values": values, "bits": [f"{b:0{width}x}" for b in bits(flat).tolist()]}


def _json_bytes(dump: Dump) -> bytes:
    arrays = {name: _writable(name, dump.tensors[name]) for name in sorted(dump.tensors)}
    elements = sum(array.size for array, _ in arrays.values())
    if elements > MAX_JSON_ELEMENTS:
        raise UsageError(f"the JSON form holds at most {MAX_JSON_ELEMENTS} elements, this dump has {elements}: write .safetensors")
    tensors = {name: _json_entry(array, dtype) for name, (array, dtype) in arrays.items()}
    metadata = {str(k): str(v) for k, v in sorted(dump.metadata.items())}
    data = (json.dumps({"format": FORMAT, "metadata": metadata, "tensors": tensors}, indent=2, ensure_ascii=False) + "\n").encode()
    if len(data) > MAX_JSON_BYTES:
        raise UsageError(f"the JSON form would take {len(data)} bytes, more than the {MAX_JSON_BYTES} pita reads: write .safetensors")
    return data


# --- npz ---------------------------------------------------------------------------------------

NPZ_METADATA_KEY = "__metadata__"
_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
_ZIP_METHODS = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}
# What zipfile and numpy's npy reader raise on a malformed archive.
_NPZ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, TypeError, UnicodeDecodeError, struct.error,
               NotImplementedError)  # zipfile: "zip file version 10.9"


def read_npz(path: Path) -> Dump:
    with open_regular(path) as (fd, status), open(fd, "rb", closefd=False) as file:
        try:
            members = _declared_members(file)
            if members > MAX_TENSORS + 1:
                raise UsageError(f"{shown(path)}: {members} members, more than the {MAX_TENSORS} tensors pita reads in a dump")
            with zipfile.ZipFile(file) as archive:
                infos = _checked_members(path, archive.infolist(), status.st_size)
                arrays = {info.filename[:-4]: _npz_array(path, archive, info) for info in infos}
        except _NPZ_ERRORS as error:
            raise UsageError(f"{shown(path)}: not a readable npz archive ({_one_line(error)})") from None
    try:
        metadata = _npz_metadata(arrays.pop(NPZ_METADATA_KEY, None))
        for name in arrays:
            _check_name(name)
    except ValueError as error:
        raise UsageError(f"{shown(path)}: {error}") from None
    tensors = {name: normalize(array) for name, array in arrays.items()}  # big-endian arrays become little-endian
    return Dump(tensors=tensors, metadata=metadata, source=shown(path))


def _declared_members(file) -> int:
    """How many members the archive's end record declares, read before `zipfile` builds an object
    for each (a million of them take half a gigabyte). `_EndRecData` is private to zipfile but has
    been there, unchanged in use, since Python 2."""
    end = zipfile._EndRecData(file)
    return end[zipfile._ECD_ENTRIES_TOTAL] if end else 0


def _checked_members(path: Path, infos: list[zipfile.ZipInfo], archive_size: int) -> list[zipfile.ZipInfo]:
    """The members, once each is an .npy array, stored or deflated, given once, and their sizes
    bound what they can inflate to."""
    seen = set()
    for info in infos:
        name = f"{shown(path)}: member {_brief(info.filename)}"
        if not info.filename.endswith(".npy"):
            raise UsageError(f"{name} is not an .npy array")
        if info.filename in seen:
            raise UsageError(f"{name} appears twice")
        seen.add(info.filename)
        if info.flag_bits & 0x1:
            raise UsageError(f"{name} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            method = _ZIP_METHODS.get(info.compress_type, f"method {info.compress_type}")
            raise UsageError(f"{name} is compressed with {method}; npz members are stored or deflated")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise UsageError(f"{name} is stored, declares {info.file_size} bytes but holds {info.compress_size}")
        if info.file_size > MAX_DEFLATE_RATIO * max(info.compress_size, 1):
            raise UsageError(f"{name} would inflate {info.file_size // max(info.compress_size, 1)}-fold")
    if sum(info.compress_size for info in infos) > archive_size:
        raise UsageError(f"{shown(path)}: members claim more bytes than the archive holds (overlapping members)")
    inflated = sum(info.file_size for info in infos if info.compress_type == zipfile.ZIP_DEFLATED)
    if inflated > MAX_INFLATED_BYTES:
        raise UsageError(f"{shown(path)}: deflated members inflate to {inflated} bytes, more than the {MAX_INFLATED_BYTES} pita reads into memory")
    return infos


def _npz_array(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """One array; its header must declare exactly the bytes the member holds, checked before
    any data is read, and the member must end where the data does (its CRC is checked there)."""
    name = f"{shown(path)}: member {_brief(info.filename)}"
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version not in _NPY_HEADERS:
            raise UsageError(f"{name}: npy format version {version} is not supported")
        shape, fortran, dtype = _NPY_HEADERS[version](member)
        if dtype_name(dtype) is None and not (info.filename == NPZ_METADATA_KEY + ".npy" and dtype.kind == "U"):
            raise UsageError(f"{name} has {_brief(dtype)}, which no dump holds (expected one of {' '.join(DTYPES)})")
        try:
            shape = _checked_shape(shape, dtype.itemsize)
        except ValueError as error:
            raise UsageError(f"{name}: {error}") from None
        nbytes = math.prod(shape) * dtype.itemsize
        if member.tell() + nbytes != info.file_size:
            raise UsageError(f"{name} declares {nbytes} bytes of data, the archive holds {info.file_size - member.tell()}")
        data = member.read(nbytes)
        if len(data) != nbytes or member.read(1):
            raise UsageError(f"{name} is truncated")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")


def _npz_metadata(array: np.ndarray | None) -> dict[str, str]:
    if array is None:
        return {}
    if array.dtype.kind != "U" or array.shape != ():
        raise ValueError(f"{NPZ_METADATA_KEY} must be one JSON string")
    try:
        metadata = _loads(array.item(), MAX_TENSORS)
    except ValueError as error:
        raise ValueError(f"{NPZ_METADATA_KEY} is not JSON ({_one_line(error)})") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{NPZ_METADATA_KEY} is not a JSON object")
    return _checked_metadata(metadata)


def _npz_bytes(dump: Dump) -> bytes:
    """An uncompressed npz, written member by member (np.savez takes names as keyword arguments,
    so a tensor named `file` or `allow_pickle` would break it)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(dump.tensors):
            if name == NPZ_METADATA_KEY:
                raise UsageError(f"tensor {NPZ_METADATA_KEY!r}: the name is reserved for the metadata in npz")
            _npz_member(archive, name, _writable(name, dump.tensors[name])[0])
        _npz_member(archive, NPZ_METADATA_KEY, np.array(json.dumps({str(k): str(v) for k, v in dump.metadata.items()})))
    return buffer.getvalue()


def _npz_member(archive: zipfile.ZipFile, name: str, array: np.ndarray) -> None:
    with archive.open(name + ".npy", "w", force_zip64=True) as member:
        np.lib.format.write_array(member, array, allow_pickle=False)
