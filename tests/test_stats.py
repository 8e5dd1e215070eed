import dataclasses
import functools
import sys

import numpy as np
import pytest

from pita import stats, stats_numpy
from pita.compare import Tolerance
from pita.dtypes import BF16
from pita.dump import Dump, read_dump, write_dump
from pita.stats import ULP_UNBOUNDED, measure, ulp_distance
from pita.tolerance import ULP_MAX

HAS_KERNEL = stats._kernel() is not None


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


def use_numpy(monkeypatch):
    monkeypatch.setattr(stats, "_kernel", lambda: None)


# Chunks, pieces, sub-blocks and threads small enough that a few hundred elements cross every
# boundary: 256 elements are two pieces of two chunks each, shared by two threads.
SMALL_GRAIN = {"chunk": 64, "piece": 128, "sub_block": 8, "threads": 2}


def use_kernel(monkeypatch, **grain):
    """The compiled kernel, cut as `grain` says (SMALL_GRAIN by default; {} for its own sizes)."""
    if not HAS_KERNEL:
        pytest.skip("the compiled kernel (pita_kernel) is not installed")
    import pita_kernel

    monkeypatch.setattr(stats, "_kernel", lambda: functools.partial(pita_kernel.measure_many, **(grain or SMALL_GRAIN)))


@pytest.fixture(params=[use_numpy, use_kernel], ids=["numpy", "kernel"])
def path(request, monkeypatch):
    """Runs a float32 test once through the numpy path and once through the compiled kernel."""
    request.param(monkeypatch)


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def one_step_up(values: np.ndarray) -> np.ndarray:
    """The next representable value away from zero, in the array's own dtype (BF16 included)."""
    bits = values.view(f"<u{values.dtype.itemsize}")
    return (bits + 1).astype(bits.dtype).view(values.dtype)


# --- non-finite values are decided by equality, before any tolerance ---------------------------


LOOSEST = sys.float_info.max  # a Tolerance is finite: this is as loose as one gets


@pytest.mark.parametrize("tolerance", [Tolerance(rtol=0.5), Tolerance(ulp=2**40), Tolerance(atol=LOOSEST, rtol=LOOSEST, ulp=2**62)])
def test_an_infinity_passes_only_against_the_same_infinity(path, tolerance):
    largest = np.finfo(np.float32).max
    r = f32([np.inf, np.inf, -np.inf, np.inf, 1.0, np.inf, 2.0])
    c = f32([-np.inf, 1.0, -np.inf, np.inf, np.inf, largest, 2.0])  # the largest float is 1 bit below inf
    found = measure(r, c, tolerance)
    assert (found.mismatched, found.examples) == (4, [0, 1, 4, 5])
    assert found.max_abs_diff == np.inf and found.worst == 0 and found.max_rel_diff == np.inf
    assert (found.max_ulp, found.max_ulp_at) == (ULP_UNBOUNDED, 0)


@pytest.mark.parametrize("equal_nan", [False, True])
def test_nan_passes_only_against_nan_and_only_with_equal_nan(path, equal_nan):
    r, c = f32([np.nan, np.nan, 1.0, 3.0]), f32([np.nan, 1.0, np.nan, 3.0])
    found = measure(r, c, Tolerance(atol=LOOSEST, rtol=1.0, ulp=2**40, equal_nan=equal_nan))
    assert found.examples == ([1, 2] if equal_nan else [0, 1, 2])
    assert (found.nan_reference, found.nan_candidate) == (2, 2)


def test_nan_against_nan_is_zero_ulps_apart_on_both_paths(path):
    found = measure(f32([np.nan, 1.0]), f32([np.nan, 1.0]), Tolerance())
    assert (found.mismatched, found.max_ulp, found.max_abs_diff) == (1, 0, np.inf)


# --- integers and bools are compared exactly --------------------------------------------------


def test_integers_are_compared_exactly_whatever_the_tolerance():
    r, c = np.int64([2**53 + 1, 7]), np.int64([2**53, 7])  # equal once converted to float64
    for tolerance in (Tolerance(atol=0), Tolerance(atol=10, rtol=1.0, ulp=5)):
        found = measure(r, c, tolerance)
        assert (found.mismatched, found.examples, found.max_abs_diff, found.worst) == (1, [0], 1.0, 0)
        assert (found.max_ulp, found.max_ulp_at) == (None, -1)


@pytest.mark.parametrize("reference, candidate, difference", [
    (np.int64([2**63 - 1, 0]), np.int64([-2**63, 0]), 2**64 - 1),
    (np.uint64([0]), np.uint64([2**64 - 1]), 2**64 - 1),
    (np.uint64([2**64 - 1]), np.int64([-2**63]), 2**64 - 1 + 2**63),
    (np.int8([-128]), np.uint32([2**32 - 1]), 2**32 - 1 + 128),
    (np.int64([1]), np.int64([2**53 + 1]), 2**53),  # through float64: 2**53 - 1
])
def test_integer_differences_are_exact_at_the_extremes(reference, candidate, difference):
    found = measure(reference, candidate, Tolerance())
    assert found.max_abs_diff == float(difference) and found.mismatched == 1


def test_bools_are_compared_exactly():
    found = measure(np.array([True, False, True]), np.array([True, True, True]), Tolerance(atol=1))
    assert (found.mismatched, found.examples, found.max_abs_diff, found.max_rel_diff, found.max_ulp) == (1, [1], 1.0, np.inf, None)


def test_an_integer_against_a_float_passes_only_if_the_float_holds_that_integer():
    r = np.int64([2**53 + 1, 3, 3, -5, 2**62])
    c = np.float64([2**53, 3.0, 3.5, np.nan, 2**62])
    found = measure(r, c, Tolerance(atol=1.0, ulp=4))
    assert (found.mismatched, found.examples, found.nan_candidate) == (3, [0, 2, 3], 1)
    assert (found.max_abs_diff, found.worst, found.max_ulp) == (np.inf, 3, None)
    assert measure(c[:3], r[:3], Tolerance()).max_rel_diff == 0.5 / 3.5  # relative to the float reference


# --- ULPs in the tensors' own dtype -----------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64], ids=["F16", "BF16", "F32", "F64"])
def test_one_step_is_one_ulp_in_every_float_dtype(dtype):
    ones = np.ones(4, dtype=np.float32).astype(dtype) if dtype is not BF16 else np.full(4, 0x3F80, np.uint16).view(BF16)
    found = measure(ones, one_step_up(ones), Tolerance(atol=0, ulp=1))
    assert (found.mismatched, found.max_ulp, found.max_ulp_at) == (0, 1, 0)


def test_ulps_across_float_dtypes_count_in_the_coarser():
    one_bf16 = np.uint16([0x3F80]).view(BF16)
    assert ulp_distance(np.float64([1.0]), one_step_up(np.float32([1.0])))[0] == 1
    assert ulp_distance(np.float32([1.0 + 2**-7]), one_bf16)[0] == 1  # one bfloat16 step, 2**16 float32 steps
    assert ulp_distance(np.float16([1.0]), one_step_up(one_bf16))[0] == 1


def test_a_float64_rounds_to_bfloat16_once_not_through_float32():
    # Just above the midpoint of 1 and the next bfloat16: through float32 it lands on the
    # midpoint, which ties to even (1.0); rounded directly it goes up.
    x = np.float64([1 + 2**-8 + 2**-30])
    next_bf16 = one_step_up(np.uint16([0x3F80]).view(BF16))
    assert ulp_distance(x, next_bf16)[0] == 0
    assert ulp_distance(x, np.uint16([0x3F80]).view(BF16))[0] == 1


@pytest.mark.parametrize("ulps", [2**62, ULP_MAX])  # the largest a Tolerance holds
def test_a_value_that_overflows_in_the_coarser_dtype_never_passes_by_ulps(ulps):
    huge = Tolerance(ulp=ulps)
    assert measure(np.float64([1e39]), f32([np.inf]), Tolerance(atol=0, rtol=1.0, ulp=ulps)).mismatched == 1
    found = measure(np.float64([1e39, 1.0]), f32([3e38, 1.0]), huge)
    assert (found.mismatched, found.max_ulp, found.max_ulp_at) == (1, ULP_UNBOUNDED, 0)
    assert measure(np.float64([1e39]), np.float64([1.1e39]), huge).mismatched == 0  # finite in float64


def test_ulp_distance_counts_representable_floats_across_zero():
    one = np.float32(1.0)
    assert ulp_distance(np.float32([one]), np.float32([np.nextafter(one, np.float32(2))]))[0] == 1
    assert ulp_distance(np.float32([-0.0]), np.float32([0.0]))[0] == 0
    tiny = np.float32(1e-45)
    assert ulp_distance(np.float32([-tiny]), np.float32([tiny]))[0] == 2
    assert ulp_distance(np.float16([-1.0]), np.float16([1.0]))[0] == 2 * 0x3C00
    assert ulp_distance(np.array([-1.7e308]), np.array([1.7e308]))[0] == ULP_UNBOUNDED  # beyond int64: capped
    assert ulp_distance(np.array([-1e-300]), np.array([1e-300]))[0] == 2 * np.float64(1e-300).view(np.int64)
    assert ulp_distance(np.int64([1]), np.float32([1.0])) is None


# --- both paths, every statistic --------------------------------------------------------------


@pytest.mark.parametrize("tolerance", TOLERANCES + [Tolerance(atol=0, rtol=1.0, ulp=3)])
def test_the_kernel_and_numpy_give_identical_statistics(monkeypatch, tolerance):
    r, c = awkward_pair(4000, seed=2)
    use_numpy(monkeypatch)
    by_numpy = measure(r, c, tolerance)
    monkeypatch.undo()
    use_kernel(monkeypatch)
    assert dataclasses.asdict(measure(r, c, tolerance)) == dataclasses.asdict(by_numpy)


@pytest.mark.skipif(not HAS_KERNEL, reason="the compiled kernel (pita_kernel) is not installed")
def test_the_kernel_at_full_size_agrees_with_numpy(monkeypatch):
    r, c = awkward_pair((1 << 21) + 12345)  # several threads' shares, each of several chunks
    for tolerance in TOLERANCES:
        by_kernel = measure(r, c, tolerance)
        with monkeypatch.context() as patched:
            use_numpy(patched)
            assert dataclasses.asdict(by_kernel) == dataclasses.asdict(measure(r, c, tolerance))


def test_measure_streams_in_chunks_like_one_pass(monkeypatch):
    r, c = awkward_pair(10_000, seed=1)
    use_numpy(monkeypatch)
    whole = measure(r, c, Tolerance())
    monkeypatch.setattr(stats_numpy, "CHUNK", 777)
    assert dataclasses.asdict(measure(r, c, Tolerance())) == dataclasses.asdict(whole)


def test_without_the_kernel_or_with_pita_kernel_0_the_same_statistics_come_slower(monkeypatch):
    r, c = awkward_pair((1 << 20) + 10, seed=3)
    compiled = measure(r, c, Tolerance())
    monkeypatch.setattr(stats, "_KERNEL", None)
    monkeypatch.setenv("PITA_KERNEL", "0")
    assert stats._kernel() is None
    monkeypatch.setattr(stats, "_KERNEL", None)
    monkeypatch.delenv("PITA_KERNEL")
    monkeypatch.setitem(sys.modules, "pita_kernel", None)  # makes `import pita_kernel` fail
    assert stats._kernel() is None
    assert dataclasses.asdict(measure(r, c, Tolerance())) == dataclasses.asdict(compiled)


def test_an_empty_pair_has_no_positions():
    found = measure(f32([]), f32([]), Tolerance())
    assert (found.n, found.worst, found.max_ulp, found.max_ulp_at, found.examples) == (0, -1, 0, -1, [])
    assert measure(np.int64([]), np.int64([]), Tolerance()).max_ulp is None


def test_measure_refuses_tensors_of_different_sizes():
    with pytest.raises(ValueError, match="same size"):
        measure(f32([1, 2]), f32([1]), Tolerance())


# --- memory ------------------------------------------------------------------------------------


def peak_growth_mb(run) -> float:
    """How far the process's peak resident memory rises above its current level during `run`."""
    def status(key):
        return int(open("/proc/self/status").read().split(f"{key}:")[1].split()[0]) / 1024

    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets the peak (VmHWM) to the current resident size
    before = status("VmRSS")
    run()
    return status("VmHWM") - before


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "kernel"])
def test_measuring_two_large_files_holds_only_chunks_of_them(tmp_path, monkeypatch, compiled):
    values = np.random.default_rng(0).standard_normal(16 * 1024 * 1024, dtype=np.float32)  # 64 MB a file
    write_dump(Dump({"t": values}), tmp_path / "reference.safetensors")
    values[::3] = one_step_up(values[::3])
    write_dump(Dump({"t": values}), tmp_path / "candidate.safetensors")
    del values
    reference = read_dump(tmp_path / "reference.safetensors").tensors["t"]
    candidate = read_dump(tmp_path / "candidate.safetensors").tensors["t"]
    use_kernel(monkeypatch, threads=None) if compiled else use_numpy(monkeypatch)  # the kernel at its own sizes
    measure(f32([1, 2]), f32([1, 3]), Tolerance())  # loads the kernel before memory is watched
    found = []
    growth = peak_growth_mb(lambda: found.append(measure(reference, candidate, Tolerance(atol=0))))
    assert found[0].mismatched == -(-reference.size // 3) and found[0].max_ulp == 1
    assert growth < 32, f"peak memory rose {growth:.0f} MB while reading two 64 MB files"
