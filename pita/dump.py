"""Dumps: named tensors plus provenance, read from and written to safetensors, JSON and npz.

The format is specified in docs/dump-format.md. Readers validate every size and offset against
the file's real size before touching data, so a hostile file gets a `UsageError`, never a huge
allocation. Writers are atomic: a reader never sees half a file.
"""

from __future__ import annotations

import json
import math
import os
import struct
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pita.dtypes import DTYPES, dtype_name, normalize
from pita.errors import UsageError
from pita.filetensor import FileIdentity, FileTensor

FORMAT = "pita-dump/1"
SUFFIXES = (".safetensors", ".json", ".npz")
MAX_HEADER_BYTES = 100 * 1024 * 1024



@dataclass
class Dump:
    """Named tensors and the provenance metadata (all values are strings)."""

    tensors: dict[str, np.ndarray]
    metadata: dict[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def batch_size(self) -> int | None:
        value = self.metadata.get("batch_size", "")
        return int(value) if value.isdigit() else None

    def describe(self) -> str:
        """`torch 2.15.0 (cpu)`: who wrote the dump, as far as its metadata says."""
        parts = [self.metadata.get(k, "") for k in ("framework", "framework_version")]
        text = " ".join(p for p in parts if p) or "no provenance"
        backend = self.metadata.get("backend")
        return f"{text} ({backend})" if backend else text


def read_dump(path: str | os.PathLike) -> Dump:
    """Reads a dump by its suffix; raises `UsageError` with one line on anything unusable."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if path.is_dir():
        return read_directory(path)
    readers = {".safetensors": read_safetensors, ".json": read_json, ".npz": read_npz}
    reader = readers.get(path.suffix)
    if reader is None:
        raise UsageError(f"{path}: unknown dump suffix {path.suffix!r} (expected {', '.join(SUFFIXES)})")
    return reader(path)


def read_directory(path: Path) -> Dump:
    """Every dump in a folder as one dump whose tensors are named `<file stem>/<tensor>`; a stem
    written in several forms is read from its safetensors file. Metadata values shared by every
    file are kept."""
    files = {}
    for file in sorted(path.iterdir()):
        if file.suffix in SUFFIXES and not file.name.startswith(".") and file.name != "record.json":
            files.setdefault(file.stem, file)  # sorted: .json < .npz < .safetensors
            if file.suffix == ".safetensors":
                files[file.stem] = file
    if not files:
        raise UsageError(f"{path}: directory has no dumps ({', '.join(SUFFIXES)})")
    dumps = {stem: read_dump(file) for stem, file in files.items()}
    tensors = {f"{stem}/{name}": t for stem, d in dumps.items() for name, t in d.tensors.items()}
    shared = dict(next(iter(dumps.values())).metadata)
    for d in dumps.values():
        shared = {k: v for k, v in shared.items() if d.metadata.get(k) == v}
    return Dump(tensors=tensors, metadata=shared, source=str(path))


def write_dump(dump: Dump, path: str | os.PathLike) -> Path:
    """Writes `dump` in the format its suffix names, atomically."""
    path = Path(path)
    writers = {".safetensors": _safetensors_bytes, ".json": _json_bytes, ".npz": _npz_bytes}
    if path.suffix not in writers:
        raise UsageError(f"{path}: unknown dump suffix {path.suffix!r} (expected {', '.join(SUFFIXES)})")
    write_atomically(path, writers[path.suffix](dump))
    return path


def write_atomically(path: str | os.PathLike, data: bytes) -> None:
    """Writes to a temporary file in the same folder, then renames it over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# --- safetensors -------------------------------------------------------------------------------


LAZY_MIN_BYTES = 1 << 20  # tensors at least this large stay in the file, read a chunk at a time


def read_safetensors(path: Path) -> Dump:
    with open(path, "rb") as file:
        status = os.fstat(file.fileno())
        size = status.st_size
        if size < 8:
            raise UsageError(f"{path}: truncated safetensors file ({size} bytes; the header length alone takes 8)")
        (header_len,) = struct.unpack("<Q", file.read(8))
        if header_len > size - 8 or header_len > MAX_HEADER_BYTES:
            raise UsageError(f"{path}: header length {header_len} exceeds the file ({size} bytes): truncated or not safetensors")
        header = _parse_header(path, file.read(header_len))
        data_start = 8 + header_len
        entries = _validated_entries(path, header, size - data_start)
    identity = FileIdentity.of(status)
    tensors = {}
    for name, entry in entries.items():
        begin, _ = entry["data_offsets"]
        lazy = FileTensor(str(path), data_start + begin, DTYPES[entry["dtype"]], tuple(entry["shape"]), identity)
        tensors[name] = lazy if lazy.nbytes >= LAZY_MIN_BYTES else np.asarray(lazy)
    metadata = header.get("__metadata__") or {}
    return Dump(tensors=tensors, metadata=metadata, source=str(path))


def _parse_header(path: Path, raw: bytes) -> dict:
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"{path}: safetensors header is not valid JSON ({error})") from None
    if not isinstance(header, dict):
        raise UsageError(f"{path}: safetensors header is not a JSON object")
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise UsageError(f"{path}: __metadata__ must map names to strings")
    return header


def _validated_entries(path: Path, header: dict, data_len: int) -> dict[str, dict]:
    entries = {k: v for k, v in header.items() if k != "__metadata__"}
    spans = []
    for name, entry in entries.items():
        where = f"{path}: tensor {name!r}"
        if not isinstance(entry, dict) or not isinstance(entry.get("dtype"), str) or entry["dtype"] not in DTYPES:
            raise UsageError(f"{where}: missing or unknown dtype {entry.get('dtype') if isinstance(entry, dict) else entry!r}")
        shape, offsets = entry.get("shape"), entry.get("data_offsets")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise UsageError(f"{where}: shape must be a list of non-negative integers, got {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            raise UsageError(f"{where}: data_offsets must be two integers, got {offsets!r}")
        begin, end = offsets
        if not 0 <= begin <= end <= data_len:
            raise UsageError(f"{where}: data_offsets {offsets} lie outside the data ({data_len} bytes)")
        expected = math.prod(shape) * np.dtype(DTYPES[entry["dtype"]]).itemsize
        if end - begin != expected:
            raise UsageError(f"{where}: {entry['dtype']}{shape} needs {expected} bytes but data_offsets span {end - begin}")
        spans.append((begin, end, name))
    spans.sort()
    for (_, end, first), (begin, _, second) in zip(spans, spans[1:]):
        if begin < end:
            raise UsageError(f"{path}: tensors {first!r} and {second!r} overlap")
    return entries


def _safetensors_bytes(dump: Dump) -> bytes:
    header, chunks, offset = {}, [], 0
    for name in sorted(dump.tensors):
        array, dtype = _writable(name, dump.tensors[name])
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if dump.metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in dump.metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the reference writer pads the header to 8 bytes
    return struct.pack("<Q", len(raw)) + raw + b"".join(chunks)


def _writable(name: str, tensor) -> tuple[np.ndarray, str]:
    """The tensor in memory, in the little-endian dtype its dump name says, and that name."""
    try:
        array = normalize(np.asarray(tensor))  # keeps 0-d arrays 0-d
    except TypeError as error:
        raise UsageError(f"tensor {name!r}: {error}") from None
    return array, dtype_name(array.dtype)


# --- JSON --------------------------------------------------------------------------------------


def read_json(path: Path) -> Dump:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT or not isinstance(document.get("tensors"), dict):
        raise UsageError(f"{path}: not a pita JSON dump (expected an object with format {FORMAT!r} and tensors)")
    metadata = document.get("metadata", {})
    if not isinstance(metadata, dict):
        raise UsageError(f"{path}: metadata must be an object")
    tensors = {name: _json_tensor(path, name, entry) for name, entry in document["tensors"].items()}
    return Dump(tensors=tensors, metadata={str(k): str(v) for k, v in metadata.items()}, source=str(path))


def _json_tensor(path: Path, name: str, entry) -> np.ndarray:
    where = f"{path}: tensor {name!r}"
    if not isinstance(entry, dict) or not isinstance(entry.get("dtype"), str) or entry["dtype"] not in DTYPES or entry["dtype"] == "BF16":
        raise UsageError(f"{where}: missing or unsupported dtype")
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise UsageError(f"{where}: shape must be a list of non-negative integers")
    dtype = np.dtype(DTYPES[entry["dtype"]])
    bits, values = entry.get("bits"), entry.get("values")
    count = math.prod(shape)
    try:
        if bits is not None:
            if not isinstance(bits, list) or len(bits) != count:
                raise ValueError(f"bits has {len(bits) if isinstance(bits, list) else 'no'} entries, shape needs {count}")
            raw = np.array([int(b, 16) for b in bits], dtype=f"<u{dtype.itemsize}")
            return raw.view(dtype).reshape(shape)
        if not isinstance(values, list) or len(values) != count:
            raise ValueError(f"values has {len(values) if isinstance(values, list) else 'no'} entries, shape needs {count}")
        return np.array([_json_number(v) for v in values], dtype=dtype).reshape(shape)
    except (ValueError, TypeError, OverflowError) as error:
        raise UsageError(f"{where}: {error}") from None


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _json_number(value):
    if isinstance(value, str):
        if value not in _NON_FINITE:
            raise ValueError(f"value {value!r} is neither a number nor NaN/Infinity/-Infinity")
        return _NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"value {value!r} is not a number")
    return value


def _readable(value) -> object:
    """Shortest decimal that reads back to the same value; non-finite values as strings."""
    if isinstance(value, (np.bool_, np.integer)):
        return value.item()
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(str(value))  # numpy's str() of a float32 is its shortest round-trip form


def _json_bytes(dump: Dump) -> bytes:
    tensors = {}
    for name in sorted(dump.tensors):
        array, dtype = _writable(name, dump.tensors[name])
        entry = {"dtype": dtype, "shape": list(array.shape), "values": [_readable(v) for v in array.reshape(-1)]}
        if array.dtype.kind == "f":
            width = array.dtype.itemsize * 2
            entry["bits"] = [f"{b:0{width}x}" for b in array.reshape(-1).view(f"<u{array.dtype.itemsize}").tolist()]
        tensors[name] = entry
    document = {"format": FORMAT, "metadata": dict(sorted(dump.metadata.items())), "tensors": tensors}
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


# --- npz ---------------------------------------------------------------------------------------

NPZ_METADATA_KEY = "__metadata__"


MAX_DEFLATE_RATIO = 1100  # deflate cannot compress better than ~1032:1


def read_npz(path: Path) -> Dump:
    try:
        with zipfile.ZipFile(path) as archive:
            arrays = {}
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    raise ValueError(f"member {info.filename!r} is not an .npy array")
                arrays[info.filename[:-4]] = _npz_member(archive, info, path.stat().st_size)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, NotImplementedError, RuntimeError, TypeError, SyntaxError) as error:
        raise UsageError(f"{path}: not a readable npz archive ({error})") from None
    metadata = {}
    if NPZ_METADATA_KEY in arrays:
        try:
            metadata = json.loads(str(arrays.pop(NPZ_METADATA_KEY)))
        except json.JSONDecodeError as error:
            raise UsageError(f"{path}: {NPZ_METADATA_KEY} is not JSON ({error})") from None
        if not isinstance(metadata, dict):
            raise UsageError(f"{path}: {NPZ_METADATA_KEY} is not a JSON object")
    return Dump(tensors=arrays, metadata={str(k): str(v) for k, v in metadata.items()}, source=str(path))


def _npz_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, archive_size: int) -> np.ndarray:
    """One array, its size checked against the archive before anything is allocated."""
    if info.compress_size > archive_size:
        raise ValueError(f"member {info.filename!r} claims {info.compress_size} bytes, more than the archive")
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > MAX_DEFLATE_RATIO * max(info.compress_size, 1):
        raise ValueError(f"member {info.filename!r} would inflate {info.file_size // max(info.compress_size, 1)}-fold")
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(member)
        if dtype.hasobject:
            raise ValueError(f"member {info.filename!r} holds Python objects")
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > info.file_size:
            raise ValueError(f"member {info.filename!r} declares {nbytes} bytes of data in {info.file_size}")
        data = member.read(nbytes)
    if len(data) != nbytes:
        raise ValueError(f"member {info.filename!r} is truncated")
    array = np.frombuffer(data, dtype=dtype)
    return array.reshape(shape, order="F" if fortran else "C")


def _npz_bytes(dump: Dump) -> bytes:
    import io

    buffer = io.BytesIO()
    arrays = {name: np.asarray(array) for name, array in dump.tensors.items()}
    arrays[NPZ_METADATA_KEY] = np.array(json.dumps(dump.metadata))
    np.savez(buffer, **arrays)
    return buffer.getvalue()
