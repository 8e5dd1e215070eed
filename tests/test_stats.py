import dataclasses

import numpy as np
import pytest

from pita import stats
from pita.stats import ulp_distance
from pita.compare import Tolerance
from pita.dump import Dump, read_dump, write_dump


def awkward_pair(n: int, seed: int = 0):
    """float32 pairs with every edge case: NaN on either side, infinities, zeros of both signs,
    subnormals, near misses and far misses."""
    rng = np.random.default_rng(seed)
    r = rng.standard_normal(n).astype(np.float32)
    c = r.copy()
    picks = rng.choice(n, size=(8, 50), replace=False)
    c[picks[0]] = np.nextafter(c[picks[0]], np.float32(np.inf))
    c[picks[1]] += np.float32(1e-3)
    r[picks[2]] = np.nan
    c[picks[3]] = np.nan
    r[picks[4]] = c[picks[4]] = np.nan
    r[picks[5]], c[picks[5]] = np.inf, np.inf
    r[picks[6]], c[picks[6]] = np.inf, -np.inf
    r[picks[7]], c[picks[7]] = 0.0, -0.0
    c[picks[7][:10]] = np.float32(1e-45)
    return r, c


TOLERANCES = [Tolerance(), Tolerance(atol=0, rtol=1e-3), Tolerance(atol=1e-6, ulp=2), Tolerance(equal_nan=True)]


@pytest.mark.parametrize("tolerance", TOLERANCES)
def test_the_kernel_agrees_with_numpy_on_every_statistic(tolerance):
    if stats._jit_kernel() is None:
        pytest.skip("numba is not installed")
    r, c = awkward_pair(stats.JIT_MIN + 12345)
    jit = stats._jit_kernel()(r, c, tolerance)
    reference = stats._numpy_chunk(r, c, tolerance)
    assert dataclasses.asdict(jit) == dataclasses.asdict(reference)


def test_measure_streams_in_chunks_like_one_pass(monkeypatch):
    r, c = awkward_pair(10_000, seed=1)
    whole = stats._numpy_chunk(r, c, Tolerance())
    monkeypatch.setattr(stats, "CHUNK", 777)
    chunked = stats.measure(r, c, Tolerance())
    assert dataclasses.asdict(chunked) == dataclasses.asdict(whole)


def test_released_pages_of_a_mapped_file_read_back_the_same(tmp_path):
    values = np.arange(3 * stats.PAGE, dtype=np.float32)
    write_dump(Dump({"t": values}), tmp_path / "t.safetensors")
    mapped = read_dump(tmp_path / "t.safetensors").tensors["t"]
    stats.release(mapped[100:5000])
    stats.release(mapped)
    assert np.array_equal(mapped, values)


def test_releasing_chunks_keeps_a_large_mapped_file_out_of_memory(tmp_path):
    def resident_mb():
        status = open("/proc/self/status").read()
        return int(status.split("VmRSS:")[1].split()[0]) / 1024

    values = np.ones(16 * 1024 * 1024, dtype=np.float32)  # 64 MB
    write_dump(Dump({"t": values}), tmp_path / "t.safetensors")
    del values
    mapped = read_dump(tmp_path / "t.safetensors").tensors["t"]
    before = resident_mb()
    assert float(mapped.sum(dtype=np.float64)) == mapped.size  # touches every page
    touched = resident_mb()
    stats.release(mapped)
    assert touched - before > 48 and touched - resident_mb() > 48


def test_ulp_distance_counts_representable_floats_across_zero():
    one = np.float32(1.0)
    assert ulp_distance(np.float32([one]), np.float32([np.nextafter(one, np.float32(2))]))[0] == 1
    assert ulp_distance(np.float32([-0.0]), np.float32([0.0]))[0] == 0
    tiny = np.float32(1e-45)
    assert ulp_distance(np.float32([-tiny]), np.float32([tiny]))[0] == 2
    assert ulp_distance(np.array([-1.7e308]), np.array([1.7e308]))[0] > 2**63  # no int64 overflow
