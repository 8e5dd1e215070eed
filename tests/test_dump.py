import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pita.dump
from pita.dtypes import BF16, DTYPES, FLOATS, dtype_name, widen
from pita.dump import Dump, read_dump, write_dump
from pita.errors import UsageError

FORMS = (".safetensors", ".json", ".npz")
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
printable_names = st.text(max_size=12).filter(lambda name: name.isprintable() and name != "__metadata__")
metadata_values = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)


@st.composite
def tensors_of(draw, name: str) -> np.ndarray:
    """Any tensor of dtype `name`, floats drawn as raw bits: every NaN payload, infinity,
    subnormal and -0.0 can appear; special values are drawn often."""
    dtype = DTYPES[name]
    if name == "BOOL":
        return draw(hnp.arrays(np.bool_, SHAPES))
    if name not in FLOATS:
        return draw(hnp.arrays(dtype, SHAPES))
    raw = np.dtype(f"<u{dtype.itemsize}")
    top = (1 << (8 * dtype.itemsize)) - 1
    specials = [0, 1, top, top >> 1, 1 << (8 * dtype.itemsize - 1)] + [int(b) for b in SPECIAL_BITS[name]]
    patterns = st.sampled_from(specials) | st.integers(0, top)
    return draw(hnp.arrays(raw, SHAPES, elements=patterns)).view(dtype)


def _special_bits(name: str) -> np.ndarray:
    if name == "BF16":
        return np.array([0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x0001, 0x8001, 0x7F7F, 0x3DCD], np.uint16)
    dtype = DTYPES[name]
    info = np.finfo(dtype)
    values = np.array([np.inf, -np.inf, np.nan, -0.0, info.tiny, info.smallest_subnormal, info.max, -info.max, 0.1], dtype)
    return values.view(f"<u{dtype.itemsize}")


SPECIAL_BITS = {name: _special_bits(name) for name in FLOATS}


@pytest.mark.parametrize("suffix", FORMS)
@pytest.mark.parametrize("name", sorted(DTYPES))
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_every_dtype_round_trips_bit_exactly_in_every_form(tmp_path_factory, suffix, name, data):
    tensors = data.draw(st.dictionaries(printable_names, tensors_of(name), min_size=1, max_size=3))
    metadata = data.draw(st.dictionaries(metadata_values, metadata_values, max_size=3))
    path = tmp_path_factory.mktemp("dump") / f"d{suffix}"
    write_dump(Dump(tensors, metadata), path)
    back = read_dump(path)
    assert back.metadata == metadata
    assert sorted(back.tensors) == sorted(tensors)
    for key, written in tensors.items():
        read = np.asarray(back.tensors[key])
        assert dtype_name(read.dtype) == name and read.shape == written.shape
        assert read.tobytes() == written.tobytes()


@pytest.mark.parametrize("suffix", FORMS)
def test_big_endian_arrays_are_written_and_read_by_value(tmp_path, suffix):
    one_ulp_apart = np.array([1.0, np.nextafter(np.float32(1), np.float32(2))], dtype=">f4")
    back = read_dump(write_dump(Dump({"w": one_ulp_apart}), tmp_path / f"w{suffix}")).tensors["w"]
    assert back.dtype == np.dtype("<f4") and back.tolist() == one_ulp_apart.tolist()


def test_a_big_endian_npz_from_another_tool_is_read_by_value(tmp_path):
    one_ulp_apart = np.array([1.0, np.nextafter(np.float32(1), np.float32(2))], dtype=">f4")
    (tmp_path / "big.npz").write_bytes(_npz({"w": one_ulp_apart}))
    back = read_dump(tmp_path / "big.npz").tensors["w"]
    assert back.dtype == np.dtype("<f4") and back.tolist() == one_ulp_apart.tolist()


def test_json_form_is_readable_and_bits_are_authoritative(tmp_path):
    values = np.array([0.1, -0.0, np.nan], dtype=np.float32)
    path = write_dump(Dump({"w": values}), tmp_path / "d.json")
    entry = json.loads(path.read_text())["tensors"]["w"]
    assert entry["values"] == [0.1, -0.0, "NaN"]
    assert entry["bits"] == [f"{bits:08x}" for bits in values.view(np.uint32).tolist()]


def test_bf16_json_carries_bits_and_the_shortest_values_that_read_back(tmp_path):
    raw = np.array([0x3DCD, 0xBF80, 0x7FC1, 0x8000, 0x7F7F, 0x0001], np.uint16)  # 0.10009765625, -1, NaN, -0, max, tiniest
    path = write_dump(Dump({"h": raw.view(BF16)}), tmp_path / "h.json")
    entry = json.loads(path.read_text())["tensors"]["h"]
    assert entry["dtype"] == "BF16" and entry["bits"] == ["3dcd", "bf80", "7fc1", "8000", "7f7f", "0001"]
    assert entry["values"] == [0.1, -1.0, "NaN", -0.0, 3.39e38, 9e-41]
    values_only = {"format": "pita-dump/1", "tensors": {"h": {k: v for k, v in entry.items() if k != "bits"}}}
    (tmp_path / "values.json").write_text(json.dumps(values_only))
    for form in (path, tmp_path / "values.json"):
        back = read_dump(form).tensors["h"].view(np.uint16)
        assert back[[0, 1, 3, 4, 5]].tolist() == raw[[0, 1, 3, 4, 5]].tolist()
    assert read_dump(path).tensors["h"].view(np.uint16)[2] == 0x7FC1  # the payload, from bits


def test_bool_json_is_true_and_false(tmp_path):
    path = write_dump(Dump({"m": np.array([True, False])}), tmp_path / "m.json")
    assert json.loads(path.read_text())["tensors"]["m"]["values"] == [True, False]
    assert read_dump(path).tensors["m"].tolist() == [True, False]


def _json_dump(tmp_path, entry: dict) -> Path:
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({"format": "pita-dump/1", "tensors": {"t": entry}}))
    return path


@pytest.mark.parametrize("dtype, values, expected", [
    ("F32", [0.5, "-Infinity", "NaN", 1e-50], [0.5, -np.inf, np.nan, 0.0]),  # underflow rounds, as any rounding
    ("F32", [16777217], [16777216.0]),
    ("F16", [65519.0], [65504.0]),  # below the midpoint to inf
    ("BF16", [0.1, 1.0039063], [0.10009765625, 1.0078125]),  # rounded once (through float32 it would tie to 1.0)
    ("U64", [2**64 - 1], [2**64 - 1]),
    ("I8", [-128, 127], [-128, 127]),
])
def test_hand_written_values_are_read_exactly_or_rounded_once(tmp_path, dtype, values, expected):
    read = read_dump(_json_dump(tmp_path, {"dtype": dtype, "shape": [len(values)], "values": values})).tensors["t"]
    assert dtype_name(read.dtype) == dtype
    np.testing.assert_array_equal(widen(read), np.array(expected, dtype=widen(read).dtype))


@pytest.mark.parametrize("entry, says", [
    ({"dtype": "F32", "shape": [2], "values": [1e39, 5e39]}, "overflows F32"),
    ({"dtype": "F16", "shape": [1], "values": [65520]}, "overflows F16"),
    ({"dtype": "BF16", "shape": [1], "values": [3.4e38]}, "overflows BF16"),
    ({"dtype": "I64", "shape": [1], "values": [1.5]}, "JSON integers"),
    ({"dtype": "I64", "shape": [1], "values": [1.0]}, "JSON integers"),
    ({"dtype": "I64", "shape": [1], "values": [2**63]}, "out of range"),
    ({"dtype": "U8", "shape": [1], "values": [-1]}, "out of range"),
    ({"dtype": "I32", "shape": [1], "values": [True]}, "JSON integers"),
    ({"dtype": "BOOL", "shape": [1], "values": [1]}, "true or false"),
    ({"dtype": "BOOL", "shape": [1], "values": ["true"]}, "true or false"),
    ({"dtype": "F32", "shape": [1], "values": [True]}, "neither a number"),
    ({"dtype": "F32", "shape": [1], "values": ["nan"]}, "neither a number"),
    ({"dtype": "F32", "shape": [1], "bits": ["0x3f80"]}, "8 hex digits"),
    ({"dtype": "F32", "shape": [1], "bits": ["+3f80000"]}, "8 hex digits"),
    ({"dtype": "F16", "shape": [1], "bits": ["3f800000"]}, "4 hex digits"),
    ({"dtype": "I32", "shape": [1], "values": [1], "bits": ["00000001"]}, "float dtypes only"),
    ({"dtype": "F32", "shape": [1], "values": [2.0], "bits": ["3f800000"]}, "disagree"),
    ({"dtype": "F32", "shape": [1], "value": [2.0]}, "unknown key"),
    ({"dtype": "F32", "shape": [True], "values": [2.0]}, "shape"),
    ({"dtype": "F32", "shape": [2], "values": [1]}, "shape needs 2"),
    ({"dtype": "F32", "shape": [1]}, "neither values nor bits"),
    ({"dtype": "C64", "shape": [1], "values": [1]}, "unsupported dtype"),
])
def test_json_values_that_its_dtype_cannot_hold_exactly_are_refused(tmp_path, entry, says):
    path = _json_dump(tmp_path, entry)
    with pytest.raises(UsageError, match=says) as error:
        read_dump(path)
    assert str(path) in str(error.value) and "'t'" in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("text, says", [
    ('{"format": "pita-dump/1", "tensors": {"t": {"dtype": "F64", "shape": [1], "values": [1e400]}}}', "beyond float64"),
    ('{"format": "pita-dump/1", "tensors": {"t": {"dtype": "F64", "shape": [1], "values": [NaN]}}}', "bare NaN"),
    ('{"format": "pita-dump/1", "tensors": {"t": {"dtype": "U8", "shape": [1], "values": [1]}, '
     '"t": {"dtype": "U8", "shape": [1], "values": [2]}}}', "appears twice"),
    ('{"format": "pita-dump/1", "tensors": {"t": {"dtype": "I64", "shape": [1], "values": [' + "9" * 5000 + ']}}}', "5000 digits"),
    ("[" * 100_000, "nested too deeply"),
    ('{"format": "pita-dump/1", "tensors": {"\\ud800": {"dtype": "U8", "shape": [1], "values": [1]}}}', "printed"),
    ('{"format": "pita-dump/1", "tensors": {"a\\nworst=0 OK": {"dtype": "U8", "shape": [1], "values": [1]}}}', "printed"),
    ('{"format": "pita-dump/1", "metadata": {"k": "\\udfff"}, "tensors": {}}', "not valid Unicode"),
])
def test_json_that_python_would_read_loosely_is_refused(tmp_path, text, says):
    path = tmp_path / "loose.json"
    path.write_text(text)
    with pytest.raises(UsageError, match=says):
        read_dump(path)


def test_reads_a_safetensors_file_written_by_the_reference_library(tmp_path):
    from safetensors.numpy import save_file

    save_file({"a": np.arange(6, dtype=np.int64).reshape(2, 3), "b": np.ones(2, np.float16)}, tmp_path / "x.safetensors", metadata={"k": "v"})
    dump = read_dump(tmp_path / "x.safetensors")
    assert dump.tensors["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert dump.tensors["b"].dtype == np.float16
    assert dump.metadata == {"k": "v"}


def test_written_safetensors_load_in_the_reference_library(tmp_path):
    from safetensors.numpy import load_file

    write_dump(Dump({"w": np.array([[1.5, 2.5]], dtype=np.float32)}, {"a": "b"}), tmp_path / "w.safetensors")
    assert load_file(tmp_path / "w.safetensors")["w"].tolist() == [[1.5, 2.5]]


def test_written_npz_loads_in_numpy_whatever_the_tensor_names(tmp_path):
    names = {"file": np.zeros(1, np.float32), "allow_pickle": np.ones(2, np.int8), "a/b.c": np.array(True)}
    write_dump(Dump(names, {"k": "v"}), tmp_path / "w.npz")
    with np.load(tmp_path / "w.npz") as archive:
        assert sorted(archive.files) == sorted([*names, "__metadata__"])
        assert archive["allow_pickle"].tolist() == [1, 1]


def _safetensors(header: dict, data: bytes = b"", header_len: int | None = None) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if header_len is None else header_len) + raw + data


def _entry(shape, offsets, dtype="F32") -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


HOSTILE = {
    "empty": b"",
    "truncated header length": b"\x01\x02\x03",
    "header longer than file": _safetensors({}, header_len=10**12),
    "garbage header": struct.pack("<Q", 4) + b"\xff\xfe{[",
    "header not an object": _safetensors([1, 2]),
    "offsets past the end": _safetensors({"t": _entry([4], [0, 16])}, b"\0" * 8),
    "size disagrees with dtype": _safetensors({"t": _entry([3], [0, 8])}, b"\0" * 8),
    "unknown dtype": _safetensors({"t": _entry([1], [0, 1], "F7")}, b"\0"),
    "a real but unsupported dtype": _safetensors({"t": _entry([1], [0, 1], "F8_E4M3")}, b"\0"),
    "negative dimension": _safetensors({"t": _entry([-1], [0, 1], "U8")}, b"\0"),
    "boolean dimension": _safetensors({"t": _entry([True], [0, 1], "U8")}, b"\0"),
    "boolean offsets": _safetensors({"t": _entry([1], [False, True], "U8")}, b"\0"),
    "too many dimensions": _safetensors({"t": _entry([1] * 65, [0, 1], "U8")}, b"\0"),
    "empty but too large for numpy": _safetensors({"t": _entry([0, 2**62, 2**62], [0, 0])}),
    "a dimension of 31 digits": _safetensors({"t": _entry([0, 10**30], [0, 0])}),
    "deep nesting": struct.pack("<Q", 200_000) + b"[" * 100_000 + b"]" * 100_000,
    "a key twice": (lambda raw: struct.pack("<Q", len(raw)) + raw + b"\0" * 4)(
        b'{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}'),
    "a newline in a name": _safetensors({"x\nworst=0 OK": _entry([1], [0, 4])}, b"\0" * 4),
    "metadata not strings": _safetensors({"__metadata__": {"k": 1}}),
    "overlapping tensors": _safetensors({"a": _entry([2], [0, 8]), "b": _entry([2], [4, 12])}, b"\0" * 12),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_safetensors_is_refused_with_one_line(tmp_path, case):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(HOSTILE[case])
    with pytest.raises(UsageError) as error:
        read_dump(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_small_safetensors_tensors_are_read_into_writable_memory_and_large_ones_stay_in_the_file(tmp_path):
    from pita.filetensor import FileTensor

    large = np.arange(pita.dump.LAZY_MIN_BYTES // 4, dtype=np.float32)
    dump = read_dump(write_dump(Dump({"small": np.ones(3, np.float32), "large": large}), tmp_path / "d.safetensors"))
    assert isinstance(dump.tensors["large"], FileTensor) and np.array_equal(np.asarray(dump.tensors["large"]), large)
    assert isinstance(dump.tensors["small"], np.ndarray) and dump.tensors["small"].flags.writeable


@pytest.mark.parametrize("form", ["file", "folder", "sharded"])
def test_compare_s_smaller_lazy_size_leaves_medium_tensors_in_their_file_however_the_dump_is_laid_out(tmp_path, form):
    from pita.filetensor import FileTensor

    medium = np.arange(pita.dump.COMPARED_LAZY_MIN_BYTES // 4, dtype=np.float32)  # 64 KiB: in memory by default
    tensors = {"small": np.ones(3, np.float32), "medium": medium}
    if form == "sharded":
        for name in tensors:
            write_dump(Dump({name: tensors[name]}), tmp_path / f"{name}.safetensors")
        (tmp_path / "m.safetensors.index.json").write_text(json.dumps({"weight_map": {name: f"{name}.safetensors" for name in tensors}}))
        path, prefix = tmp_path / "m.safetensors.index.json", ""
    else:
        write_dump(Dump(tensors), tmp_path / "d.safetensors")
        path, prefix = (tmp_path / "d.safetensors", "") if form == "file" else (tmp_path, "d/")
    default, compared = read_dump(path), read_dump(path, lazy_min_bytes=pita.dump.COMPARED_LAZY_MIN_BYTES)
    assert isinstance(default.tensors[prefix + "medium"], np.ndarray) and isinstance(compared.tensors[prefix + "medium"], FileTensor)
    assert np.array_equal(np.asarray(compared.tensors[prefix + "medium"]), medium)
    assert isinstance(compared.tensors[prefix + "small"], np.ndarray)


@pytest.mark.parametrize("text", ["{", "[]", '{"format": "other", "tensors": {}}',
                                  '{"format": "pita-dump/1", "tensors": {"w": {"dtype": "F32", "shape": [2], "values": [1]}}}',
                                  '{"format": "pita-dump/1", "tensors": {"w": {"dtype": "F32", "shape": [1], "values": ["x"]}}}'])
def test_malformed_json_is_refused(tmp_path, text):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(UsageError):
        read_dump(path)


def test_malformed_npz_and_paths_are_refused(tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not really")
    (tmp_path / "x.txt").write_text("")
    for path in (tmp_path / "bad.npz", tmp_path / "missing.safetensors", tmp_path / "x.txt", tmp_path / "x.txt" / "y.npz", ""):
        with pytest.raises(UsageError):
            read_dump(path)


@pytest.mark.parametrize("suffix", [".SAFETENSORS", ".Json", ".NPZ"])
def test_suffixes_are_matched_in_any_case(tmp_path, suffix):
    path = write_dump(Dump({"w": np.ones(2, np.float32)}), tmp_path / f"w{suffix}")
    assert read_dump(path).tensors["w"].tolist() == [1.0, 1.0]


def test_an_unreadable_file_is_refused_with_the_reason(tmp_path, monkeypatch):
    """Tests run as root, which can read anything: the denial is simulated where the file is opened."""
    path = write_dump(Dump({"w": np.ones(2, np.float32)}), tmp_path / "w.safetensors")

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(UsageError, match="cannot open \\(Permission denied\\)"):
        read_dump(path)


def test_the_tensor_count_is_bounded_in_every_form(tmp_path, monkeypatch):
    monkeypatch.setattr(pita.dump, "MAX_TENSORS", 3)
    many = Dump({f"t{i}": np.zeros(1, np.float32) for i in range(4)})
    with pytest.raises(UsageError, match="more than the 3"):
        write_dump(many, tmp_path / "w.safetensors")
    for suffix, data in ((".safetensors", pita.dump._safetensors_bytes(many)), (".json", pita.dump._json_bytes(many)),
                         (".npz", pita.dump._npz_bytes(many))):
        (tmp_path / f"many{suffix}").write_bytes(data)
        with pytest.raises(UsageError, match="more than"):
            read_dump(tmp_path / f"many{suffix}")


def test_the_json_form_is_bounded_and_written_only_where_it_will_be_read(tmp_path, monkeypatch):
    monkeypatch.setattr(pita.dump, "MAX_JSON_ELEMENTS", 10)
    with pytest.raises(UsageError, match="at most 10 elements"):
        write_dump(Dump({"w": np.zeros(11, np.float32)}), tmp_path / "w.json")
    monkeypatch.setattr(pita.dump, "MAX_JSON_BYTES", 100)
    (tmp_path / "big.json").write_text(" " * 101)
    with pytest.raises(UsageError, match="101 bytes, more than the 100"):
        read_dump(tmp_path / "big.json")


# --- npz -----------------------------------------------------------------------------------------


def _npz(members: dict[str, np.ndarray], method=0, edit=None) -> bytes:
    """An npz written member by member with zipfile (np.savez cannot choose bzip2, say); `edit`
    may change the npy bytes of each member before they are stored."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in members.items():
            npy = io.BytesIO()
            np.lib.format.write_array(npy, array, allow_pickle=True)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy"), (edit or bytes)(npy.getvalue()), compress_type=method)
    return buffer.getvalue()


def _declaring(data: bytes, size: int, compressed: bool = False) -> bytes:
    """The archive with its one member's uncompressed size (and compressed size) rewritten, in
    both of its headers."""
    data = bytearray(data)
    central = data.index(b"PK\x01\x02")
    for field in (0, 4) if compressed else (4,):
        struct.pack_into("<I", data, 18 + field, size)  # local file header
        struct.pack_into("<I", data, central + 20 + field, size)  # central directory
    return bytes(data)


def _one_zip_member_twice() -> bytes:
    data = _npz({"a": np.zeros(2, np.float32)})
    central = data.index(b"PK\x01\x02")
    end = data.index(b"PK\x05\x06")
    entry = data[central:end]
    record = bytearray(data[end:])
    struct.pack_into("<HHII", record, 8, 2, 2, 2 * len(entry), central)  # two entries, same member
    return data[:central] + entry + entry + bytes(record)


NPZ_HOSTILE = {
    "bzip2 member": (_npz({"a": np.zeros(1 << 16)}, method=12), "compressed with bzip2"),
    "lzma member": (_npz({"a": np.zeros(16)}, method=14), "compressed with lzma"),
    "inflating beyond what deflate can": (_declaring(_npz({"a": np.zeros(1 << 16, np.uint8)}, method=8), 2**32 - 1), "inflate"),
    "stored, declaring more than it holds": (_declaring(_npz({"a": np.zeros(16, np.uint8)}), 1 << 20), "stored"),
    "claiming more than the archive": (_declaring(_npz({"a": np.zeros(16, np.uint8)}), 1 << 20, compressed=True), "more bytes than the archive"),
    "longdouble": (_npz({"a": np.zeros(2, np.longdouble)}), "float128"),
    "complex": (_npz({"a": np.zeros(2, np.complex64)}), "complex64"),
    "objects": (_npz({"a": np.array([1, None], dtype=object)}), "'O'"),
    "strings": (_npz({"a": np.array(["ab"])}), "<U2"),
    "structured": (_npz({"a": np.zeros(2, "i4,f4")}), "no dump holds"),
    "data shorter than the header says": (_npz({"a": np.zeros(4, np.float32)}, edit=lambda b: b[:-4]), "declares 16 bytes"),
    "data longer than the header says": (_npz({"a": np.zeros(4, np.float32)}, edit=lambda b: b + b"\0" * 4), "declares 16 bytes"),
    "npy version 9": (_npz({"a": np.zeros(1)}, edit=lambda b: b[:6] + b"\x09\x00" + b[8:]), "version"),
    "member given twice": (_one_zip_member_twice(), "appears twice"),
    "metadata not a string": (_npz({"__metadata__": np.zeros(1)}), "one JSON string"),
    "metadata not an object": (_npz({"__metadata__": np.array("[1]")}), "not a JSON object"),
}


@pytest.mark.parametrize("case", sorted(NPZ_HOSTILE))
def test_hostile_npz_is_refused_before_it_costs_memory(tmp_path, case):
    data, says = NPZ_HOSTILE[case]
    path = tmp_path / "bad.npz"
    path.write_bytes(data)
    with pytest.raises(UsageError, match=says) as error:
        read_dump(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_deflated_npz_is_read_within_bounds(tmp_path, monkeypatch):
    path = tmp_path / "ok.npz"
    path.write_bytes(_npz({"a": np.arange(1000, dtype=np.int32)}, method=8))
    assert read_dump(path).tensors["a"].tolist() == list(range(1000))
    monkeypatch.setattr(pita.dump, "MAX_INFLATED_BYTES", 4000)
    with pytest.raises(UsageError, match="inflate to 4128 bytes, more than the 4000"):
        read_dump(path)


# --- folders -------------------------------------------------------------------------------------


def test_a_folder_reads_each_stem_once_and_notes_what_it_skipped(tmp_path):
    one = Dump({"w": np.ones(2, np.float32)})
    write_dump(one, tmp_path / "step1.safetensors")
    write_dump(one, tmp_path / "step1.json")
    write_dump(one, tmp_path / "step2.JSON")
    (tmp_path / ".step3.safetensors.tmp1").write_bytes(b"half a file")
    np.save(tmp_path / "loose.npy", np.ones(2))
    (tmp_path / "record.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "loop").symlink_to(tmp_path)
    dump = read_dump(tmp_path)
    assert sorted(dump.tensors) == ["step1/w", "step2/w"]
    assert dump.notes == [
        "skipped hidden files (names starting with '.', as a writer's temporary files have): .step3.safetensors.tmp1",
        "skipped folders (subfolders are not read): loop, sub",
        "skipped .npy files (an .npy file holds one unnamed array, not a dump: put it in an .npz): loose.npy",
        "skipped files with other suffixes (dumps end in .safetensors, .json, .npz): notes.txt",
        "skipped run records (pita run's record.json is not a dump): record.json",
        "skipped files (the same dumps are read from their .safetensors files): step1.json",
    ]


def test_a_folder_lists_at_most_five_names_per_reason(tmp_path):
    write_dump(Dump({"w": np.ones(1, np.float32)}), tmp_path / "d.npz")
    for i in range(7):
        (tmp_path / f"n{i}.txt").write_text("")
    [note] = read_dump(tmp_path).notes
    assert note.endswith(": n0.txt, n1.txt, n2.txt, n3.txt, n4.txt and 2 more")


def test_a_folder_without_dumps_says_what_it_holds(tmp_path):
    np.save(tmp_path / "a.npy", np.ones(2))
    with pytest.raises(UsageError, match="folder has no dumps .*skipped .npy files .*: a.npy"):
        read_dump(tmp_path)


def test_a_stem_in_one_form_twice_is_refused(tmp_path):
    write_dump(Dump({"w": np.ones(1, np.float32)}), tmp_path / "a.npz")
    write_dump(Dump({"w": np.zeros(1, np.float32)}), tmp_path / "a.NPZ")
    with pytest.raises(UsageError, match="a.NPZ and a.npz are both the dump 'a'"):
        read_dump(tmp_path)


def test_a_folder_is_bounded_in_entries_and_tensors(tmp_path, monkeypatch):
    for i in range(3):
        write_dump(Dump({"a": np.ones(1, np.float32), "b": np.ones(1, np.float32)}), tmp_path / f"d{i}.npz")
    monkeypatch.setattr(pita.dump, "MAX_TENSORS", 5)
    with pytest.raises(UsageError, match="more than 5 tensors"):
        read_dump(tmp_path)
    monkeypatch.setattr(pita.dump, "MAX_FOLDER_ENTRIES", 2)
    with pytest.raises(UsageError, match="more than 2 entries"):
        read_dump(tmp_path)


def test_a_file_name_with_a_newline_is_printed_on_one_line(tmp_path):
    path = tmp_path / "a\nb.json"
    path.write_text("{")
    with pytest.raises(UsageError) as error:
        read_dump(path)
    assert "\n" not in str(error.value) and "a\\nb.json" in str(error.value)


# --- writing -------------------------------------------------------------------------------------


INTERRUPTED_WRITE = r"""
import resource, signal, sys
import numpy as np
import pita.dump
from pita.dump import Dump, write_dump

path, writer, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
if writer == "in place":
    def write_in_place(path, data):
        with open(path, "wb") as file:
            file.write(data)
    pita.dump.write_atomically = write_in_place
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails (EFBIG), as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    write_dump(Dump({"w": np.ones(1 << 16, np.float32)}), path)
except Exception as error:
    print(type(error).__name__, error)
"""


def interrupted_write(folder: Path, writer: str) -> tuple[bool, list[str], str]:
    """Overwrites a dump with one four times the size the write may reach before it fails,
    in a subprocess: (old file intact, what the folder holds, what the writer said)."""
    path = write_dump(Dump({"w": np.zeros(3, np.float32)}), folder / "w.safetensors")
    before = path.read_bytes()
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_WRITE, str(path), writer, str(1 << 16)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return path.read_bytes() == before, sorted(p.name for p in folder.iterdir()), proc.stdout


def test_a_write_interrupted_midway_leaves_the_previous_file_and_no_temporary(tmp_path):
    intact, names, said = interrupted_write(tmp_path, "pita")
    assert intact and names == ["w.safetensors"]
    assert said.startswith("UsageError") and "File too large" in said and said.count("\n") == 1


def test_a_reader_holding_the_old_file_keeps_reading_it_whole(tmp_path):
    """The new file is renamed over the old one: never written into it."""
    path = write_dump(Dump({"w": np.zeros(3, np.float32)}), tmp_path / "w.npz")
    with open(path, "rb") as old:
        before = os.fstat(old.fileno()).st_ino
        write_dump(Dump({"w": np.ones(1 << 16, np.float32)}), path)
        assert read_dump(path).tensors["w"].size == 1 << 16
        assert os.stat(path).st_ino != before
        (tmp_path / "old.npz").write_bytes(old.read())
    assert read_dump(tmp_path / "old.npz").tensors["w"].tolist() == [0.0, 0.0, 0.0]


def test_the_interrupted_write_check_catches_a_writer_that_writes_in_place(tmp_path):
    intact, names, _ = interrupted_write(tmp_path, "in place")
    assert not intact and names == ["w.safetensors"]


def test_a_refused_write_leaves_the_previous_file(tmp_path):
    write_dump(Dump({"w": np.zeros(3, np.float32)}), tmp_path / "w.safetensors")
    for bad in ({"w": np.zeros(3, np.complex64)}, {"a\nb": np.zeros(1)}, {"__metadata__": np.zeros(1)}):
        with pytest.raises(UsageError):
            write_dump(Dump(bad), tmp_path / "w.safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.safetensors"]
    assert read_dump(tmp_path / "w.safetensors").tensors["w"].dtype == np.float32


def test_a_write_into_a_path_below_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="cannot write"):
        write_dump(Dump({"w": np.zeros(1, np.float32)}), tmp_path / "file" / "w.npz")


def test_batch_size_reads_ascii_digits_only():
    assert Dump({}, {"batch_size": "4"}).batch_size == 4
    assert [Dump({}, {"batch_size": v}).batch_size for v in ("²", "4.0", "-4", "9" * 5000)] == [None] * 4


# --- any input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", FORMS)
@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=256))
def test_arbitrary_bytes_are_read_or_refused_with_one_line(tmp_path_factory, suffix, data):
    path = tmp_path_factory.mktemp("raw") / f"x{suffix}"
    path.write_bytes(data)
    try:
        read_dump(path)
    except UsageError as error:
        assert "\n" not in str(error)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(entry=st.dictionaries(st.sampled_from(["dtype", "shape", "values", "bits"]), json_values))
def test_any_json_tensor_entry_is_read_or_refused(tmp_path_factory, entry):
    path = tmp_path_factory.mktemp("json") / "x.json"
    path.write_text(json.dumps({"format": "pita-dump/1", "tensors": {"t": entry}}))
    try:
        read_dump(path)
    except UsageError as error:
        assert "\n" not in str(error)


def test_the_fuzz_target_finds_no_crash_in_a_short_run():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fuzz_readers", Path(__file__).parents[1] / "fuzz" / "readers.py")
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    counts = fuzz.run(iterations=400, seconds=None, seed=12345, quiet=True)
    assert "crashed" not in counts and counts["tried"] == 400 and counts["refused"] > 0 and counts["read"] > 0


def test_a_written_file_gets_the_mode_the_umask_allows_not_mkstemps_private_one(tmp_path):
    previous = os.umask(0o027)
    try:
        pita.dump.write_atomically(tmp_path / "report.html", b"<html></html>")
    finally:
        os.umask(previous)
    assert (tmp_path / "report.html").stat().st_mode & 0o777 == 0o640
