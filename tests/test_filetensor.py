import os

import numpy as np
import pytest

from pita import filetensor
from pita.compare import Tolerance
from pita.dump import Dump, read_dump, write_dump
from pita.errors import UsageError
from pita.filetensor import FileTensor, flat_chunks, take
from pita.stats import measure

ELEMENTS = 1 << 19  # 2 MiB of float32: large enough to stay in the file


@pytest.fixture
def stored(tmp_path):
    """(path, values, FileTensor) of a float32 tensor written to a safetensors file."""
    values = np.arange(ELEMENTS, dtype=np.float32).reshape(512, -1)
    path = tmp_path / "t.safetensors"
    write_dump(Dump({"t": values}), path)
    tensor = read_dump(path).tensors["t"]
    assert isinstance(tensor, FileTensor)
    return path, values, tensor


def test_a_file_truncated_between_reads_is_a_usage_error(stored):
    path, values, tensor = stored
    assert np.array_equal(tensor.read(0, 10), values.reshape(-1)[:10])
    os.truncate(path, path.stat().st_size // 2)
    with pytest.raises(UsageError, match="changed while being read"):
        tensor.read(0, 10)
    with pytest.raises(UsageError):
        measure(tensor, values, Tolerance())


def test_a_file_truncated_while_streamed_is_a_usage_error(stored):
    path, values, tensor = stored
    chunks = tensor.stream(0, tensor.size, 1 << 16)
    assert np.array_equal(next(chunks), values.reshape(-1)[: 1 << 16])
    os.truncate(path, path.stat().st_size // 2)  # the open file shrinks under the stream: no SIGBUS, a short read
    with pytest.raises(UsageError, match="truncated while being read"):
        for _ in chunks:
            pass


def test_a_file_replaced_between_reads_is_a_usage_error(stored, tmp_path):
    path, values, tensor = stored
    write_dump(Dump({"t": values + 1}), tmp_path / "other.safetensors")
    os.replace(tmp_path / "other.safetensors", path)  # same size, another file
    with pytest.raises(UsageError, match="changed while being read"):
        tensor.take([0])


def test_a_streamed_file_is_never_memory_mapped(stored):
    path, _, tensor = stored
    chunks = tensor.stream(0, tensor.size, 1 << 16)
    next(chunks)
    with open("/proc/self/maps") as maps:
        assert str(path) not in maps.read()


def test_take_reads_any_positions_in_any_order(stored, monkeypatch):
    _, values, tensor = stored
    positions = np.random.default_rng(0).integers(0, ELEMENTS, 3000)
    positions = np.concatenate([positions, positions[:10], [0, ELEMENTS - 1]])  # repeats and both ends
    for window, gap in ((1 << 20, 8 << 10), (64, 16)):  # few large reads; many small ones
        monkeypatch.setattr(filetensor, "TAKE_WINDOW_BYTES", window)
        monkeypatch.setattr(filetensor, "TAKE_GAP_BYTES", gap)
        assert np.array_equal(tensor.take(positions), values.reshape(-1)[positions])
    assert tensor.take([]).size == 0
    with pytest.raises(IndexError):
        tensor.take([ELEMENTS])


def test_take_reads_nearby_positions_together(stored, monkeypatch):
    _, values, tensor = stored
    reads = []
    original = filetensor.pread_exactly
    monkeypatch.setattr(filetensor, "pread_exactly", lambda fd, buffer, *rest: (reads.append(len(buffer)), original(fd, buffer, *rest)))
    spread = np.arange(0, ELEMENTS, 16)  # 64 bytes apart: one read per window
    assert np.array_equal(take(tensor, spread), values.reshape(-1)[spread])
    assert len(reads) == -(-tensor.nbytes // filetensor.TAKE_WINDOW_BYTES)
    reads.clear()
    take(tensor, [100_000, 5])  # 400 KB apart, within one window: one element each
    assert reads == [4, 4]


def test_reshape_keeps_the_elements_in_the_file(stored):
    _, values, tensor = stored
    flat = tensor.reshape(ELEMENTS)
    assert isinstance(flat, FileTensor) and flat.shape == (ELEMENTS,)
    assert np.array_equal(np.asarray(tensor.reshape((1, 512, 1024))), values.reshape(1, 512, 1024))
    assert tensor.reshape(-1, 2).shape == (ELEMENTS // 2, 2)
    for wrong in ((3, 5), (-1, 3), (-1, -1), (-2, -ELEMENTS // 2)):
        with pytest.raises(ValueError):
            tensor.reshape(wrong)


def test_flat_chunks_of_arrays_and_file_tensors_are_the_same(stored):
    _, values, tensor = stored
    transposed = values.T  # not contiguous: flattened once, in its own order
    expected = transposed.reshape(-1)[100:70_000]
    for source in (transposed, np.ascontiguousarray(transposed)):
        assert np.array_equal(np.concatenate(list(flat_chunks(source, 100, 70_000, 4096))), expected)
    streamed = [chunk.copy() for chunk in flat_chunks(tensor, 100, 70_000, 4096)]  # each chunk reuses one buffer
    assert np.array_equal(np.concatenate(streamed), values.reshape(-1)[100:70_000])
