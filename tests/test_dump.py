import json
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pita.dump import Dump, read_dump, write_dump
from pita.errors import UsageError

FORMS = (".safetensors", ".json", ".npz")
finite_and_special_f32 = hnp.arrays(
    np.float32, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
    elements=st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True),
)


@pytest.mark.parametrize("suffix", FORMS)
@settings(max_examples=40, deadline=None)
@given(values=finite_and_special_f32)
def test_f32_bits_round_trip_exactly(tmp_path_factory, suffix, values):
    path = tmp_path_factory.mktemp("dump") / f"d{suffix}"
    write_dump(Dump({"t": values}, {"batch_size": "4"}), path)
    back = read_dump(path)
    assert back.tensors["t"].dtype == np.float32
    assert back.tensors["t"].shape == values.shape
    assert back.tensors["t"].tobytes() == values.tobytes()
    assert back.metadata == {"batch_size": "4"}


def test_json_form_is_readable_and_bits_are_authoritative(tmp_path):
    values = np.array([0.1, -0.0, np.nan], dtype=np.float32)
    path = write_dump(Dump({"w": values}), tmp_path / "d.json")
    entry = json.loads(path.read_text())["tensors"]["w"]
    assert entry["values"] == [0.1, -0.0, "NaN"]
    assert entry["bits"] == [f"{bits:08x}" for bits in values.view(np.uint32).tolist()]


def test_json_without_bits_reads_values(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"format": "pita-dump/1", "tensors": {"w": {"dtype": "F32", "shape": [2], "values": [0.5, "-Infinity"]}}}))
    assert read_dump(path).tensors["w"].tolist() == [0.5, -np.inf]


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


def _safetensors(header: dict, data: bytes = b"", header_len: int | None = None) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if header_len is None else header_len) + raw + data


HOSTILE = {
    "empty": b"",
    "truncated header length": b"\x01\x02\x03",
    "header longer than file": _safetensors({}, header_len=10**12),
    "garbage header": struct.pack("<Q", 4) + b"\xff\xfe{[",
    "header not an object": _safetensors([1, 2]),
    "offsets past the end": _safetensors({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8),
    "size disagrees with dtype": _safetensors({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
    "unknown dtype": _safetensors({"t": {"dtype": "F7", "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
    "negative dimension": _safetensors({"t": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}}, b"\0"),
    "overlapping tensors": _safetensors({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
    }, b"\0" * 12),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_safetensors_is_refused_with_one_line(tmp_path, case):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(HOSTILE[case])
    with pytest.raises(UsageError) as error:
        read_dump(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


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
    for path in (tmp_path / "bad.npz", tmp_path / "missing.safetensors", tmp_path, tmp_path / "x.txt"):
        if path.suffix == ".txt":
            path.write_text("")
        with pytest.raises(UsageError):
            read_dump(path)


def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    write_dump(Dump({"w": np.zeros(3, np.float32)}), tmp_path / "w.safetensors")
    with pytest.raises(UsageError):
        write_dump(Dump({"w": np.zeros(3, np.complex64)}), tmp_path / "w.safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.safetensors"]
    assert read_dump(tmp_path / "w.safetensors").tensors["w"].dtype == np.float32


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
    except UsageError:
        pass


def test_the_fuzz_target_finds_no_crash_in_a_short_run():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("fuzz_readers", Path(__file__).parents[1] / "fuzz" / "readers.py")
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    counts = fuzz.run(iterations=400, seconds=None, seed=12345, quiet=True)
    assert "crashed" not in counts and counts["tried"] == 400 and counts["refused"] > 0 and counts["read"] > 0
