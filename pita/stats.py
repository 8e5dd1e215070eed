"""Measure: every statistic compare reports, in one streaming pass over a tensor pair.

How an element pair is judged, in this order:

- Floats. A NaN or an infinity on either side is decided by equality, before any tolerance: an
  infinity passes only against the same infinity, NaN only against NaN and only with `equal_nan`.
  A finite pair passes when `|candidate - reference| <= atol + rtol*|reference|` (in float64), or,
  with `ulp` set, when at most `ulp` units in the last place apart.
- ULPs are counted in the tensors' own dtype (F16, BF16, F32, F64); across two float dtypes, in
  the coarser one. A value that is finite in its own dtype but overflows to infinity in the
  coarser one has no finite distance (`ULP_UNBOUNDED`) and never passes by ULPs.
- Integers and bools are compared exactly: an element passes only if both values are equal, and
  no tolerance applies (an integer against a float too: the float must hold exactly that
  integer). Their differences are exact (no overflow at the int64 and uint64 extremes) until
  rounded to float64 for the report, and they have no ULP distance (`max_ulp` is None).

Large float32 pairs go through a compiled kernel (`pita.stats_jit`, numba); everything else, and
every pair when numba is missing or PITA_JIT=0, goes through numpy a chunk at a time. Both give
the same statistics. Tensors left in their file (`FileTensor`) are read a chunk at a time, so
comparing two large files holds only a chunk of each in memory.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from pita.dtypes import DTYPES, dtype_name, from_float64, widen
from pita.filetensor import flat_chunks

EXAMPLES = 5  # mismatch positions kept for the report
CHUNK = 1 << 18  # elements per chunk on the numpy path: a dozen float64 temporaries of 2 MiB
JIT_MIN = 1 << 20  # below this many elements numpy is faster than importing the kernel
ULP_UNBOUNDED = 2**63 - 1  # no finite ULP distance (NaN against a number, an overflow), or one beyond counting

# Float dtypes from the coarsest to the finest: ULPs across two dtypes count in the coarser one.
_PRECISION = {"BF16": 8, "F16": 11, "F32": 24, "F64": 53}
_BITS = {2: np.int16, 4: np.int32, 8: np.int64}
_EXACT_IN_FLOAT64 = 2**53  # integers up to this magnitude convert to float64 exactly


@dataclass
class TensorStats:
    n: int = 0
    mismatched: int = 0
    max_abs_diff: float = 0.0
    worst: int = -1  # flat index of the (first) largest |diff|
    max_rel_diff: float = 0.0
    max_ulp: int | None = None  # None for pairs that are not both floats
    max_ulp_at: int = -1
    examples: list[int] = field(default_factory=list)  # flat indices of the first mismatches
    nan_reference: int = 0
    nan_candidate: int = 0

    def merge(self, other: TensorStats) -> None:
        """Adds the statistics of the elements after these (ties keep the earlier position)."""
        self.n += other.n
        self.mismatched += other.mismatched
        if other.worst >= 0 and (self.worst < 0 or other.max_abs_diff > self.max_abs_diff):
            self.max_abs_diff, self.worst = other.max_abs_diff, other.worst
        self.max_rel_diff = max(self.max_rel_diff, other.max_rel_diff)
        if other.max_ulp_at >= 0 and (self.max_ulp_at < 0 or other.max_ulp > self.max_ulp):
            self.max_ulp, self.max_ulp_at = other.max_ulp, other.max_ulp_at
        self.examples = (self.examples + other.examples)[:EXAMPLES]
        self.nan_reference += other.nan_reference
        self.nan_candidate += other.nan_candidate

    def shift(self, offset: int) -> None:
        """Moves every position by `offset` (statistics of a chunk starting there)."""
        self.worst += offset if self.worst >= 0 else 0
        self.max_ulp_at += offset if self.max_ulp_at >= 0 else 0
        self.examples = [i + offset for i in self.examples]


def measure(reference, candidate, tolerance) -> TensorStats:
    """Statistics of `candidate` against `reference` (arrays or `FileTensor`s with the same number
    of elements, any shapes), judged as the module docstring says."""
    if reference.size != candidate.size:
        raise ValueError(f"measure needs tensors of the same size, got {reference.size} and {candidate.size}")
    floats = _both_float(reference.dtype, candidate.dtype)
    kernel = _jit_kernel() if reference.dtype == candidate.dtype == np.float32 and reference.size >= JIT_MIN else None
    total = kernel(reference, candidate, tolerance) if kernel else _numpy_measure(reference, candidate, tolerance, floats)
    if total.n and total.worst < 0:  # every difference is 0: the first element is as bad as any
        total.worst = 0
    if floats and total.max_ulp is None:
        total.max_ulp, total.max_ulp_at = 0, 0 if total.n else -1
    return total


def _numpy_measure(reference, candidate, tolerance, floats: bool) -> TensorStats:
    chunk_of = _float_chunk if floats else _exact_chunk
    total = TensorStats()
    chunks = zip(flat_chunks(reference, 0, reference.size, CHUNK), flat_chunks(candidate, 0, candidate.size, CHUNK))
    for start, (r, c) in zip(range(0, reference.size, CHUNK), chunks):
        stats = chunk_of(r, c, tolerance)
        stats.shift(start)
        total.merge(stats)
    return total


# --- numpy path --------------------------------------------------------------------------------


def _float_chunk(reference: np.ndarray, candidate: np.ndarray, tolerance) -> TensorStats:
    x, y = _float64(reference), _float64(candidate)
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    finite = np.isfinite(x) & np.isfinite(y)
    with np.errstate(invalid="ignore", over="ignore"):
        same = (x == y) | (tolerance.equal_nan & nan_x & nan_y)
        diff = np.where(finite, np.abs(y - x), np.where(same, 0.0, np.inf))
        within = diff <= tolerance.atol + tolerance.rtol * np.abs(x)
    ulp = _ulp_distance(reference, candidate, x, y)
    if tolerance.ulp is not None:
        within |= (ulp <= tolerance.ulp) & (ulp < ULP_UNBOUNDED)
    passed = same | (finite & within)
    return _summary(passed, diff, _relative(diff, np.abs(x)), ulp, nan_x, nan_y)


def _exact_chunk(reference: np.ndarray, candidate: np.ndarray, tolerance) -> TensorStats:
    """Integers and bools, alone or against floats: equal or not, no tolerance."""
    equal, diff = _exact_difference(reference, candidate)
    magnitude = np.abs(_float64(reference))
    return _summary(equal, diff, _relative(diff, magnitude), None, _nan(reference), _nan(candidate))


def _nan(values: np.ndarray) -> np.ndarray:
    return np.isnan(_float64(values)) if _is_float(values.dtype) else np.zeros(values.shape, dtype=bool)


def _summary(passed, diff, rel, ulp, nan_reference, nan_candidate) -> TensorStats:
    failed = np.flatnonzero(~passed)
    stats = TensorStats(n=int(diff.size), mismatched=int(failed.size), examples=failed[:EXAMPLES].tolist(),
                        nan_reference=int(nan_reference.sum()), nan_candidate=int(nan_candidate.sum()))
    if diff.size:
        stats.worst = int(np.argmax(diff))
        stats.max_abs_diff = float(diff[stats.worst])
        stats.max_rel_diff = float(rel.max())
        if ulp is not None:
            stats.max_ulp_at = int(np.argmax(ulp))
            stats.max_ulp = int(ulp[stats.max_ulp_at])
    return stats


def _relative(diff: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """diff / |reference|: 0 where diff is 0, infinite where diff is or the reference is 0."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.where(diff == 0, 0.0, np.where(np.isinf(diff) | (magnitude == 0), np.inf, diff / magnitude))


def _float64(values: np.ndarray) -> np.ndarray:
    """Exact float64 values of any number dtype (BF16 included); integers beyond 2**53 round."""
    return widen(values).astype(np.float64)


def _is_float(dtype) -> bool:
    return dtype_name(dtype) in _PRECISION


def _both_float(reference_dtype, candidate_dtype) -> bool:
    return _is_float(reference_dtype) and _is_float(candidate_dtype)


# --- exact differences of integers -------------------------------------------------------------


def _exact_difference(reference: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(equal, |candidate - reference| rounded once to float64) where either side is an integer."""
    if _is_float(reference.dtype) or _is_float(candidate.dtype):
        return _integer_against_float(reference, candidate)
    common = _common_integer_dtype(reference.dtype, candidate.dtype)
    if common is None:  # uint64 against a signed type: the difference needs 65 bits
        return _python_difference(reference, candidate)
    r, c = reference.astype(common), candidate.astype(common)
    unsigned = np.uint64
    # The true difference always fits in uint64, so wrapping subtraction in uint64 is exact.
    magnitude = np.where(c >= r, c.view(unsigned) - r.view(unsigned), r.view(unsigned) - c.view(unsigned))
    return r == c, magnitude.astype(np.float64)


def _common_integer_dtype(first: np.dtype, second: np.dtype):
    if np.can_cast(first, np.int64) and np.can_cast(second, np.int64):
        return np.dtype(np.int64)
    if all(np.can_cast(d, np.uint64) for d in (first, second)):
        return np.dtype(np.uint64)
    return None


def _integer_against_float(reference: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    integer = candidate if _is_float(reference.dtype) else reference
    x, y = _float64(reference), _float64(candidate)
    with np.errstate(invalid="ignore"):
        equal = x == y
        diff = np.abs(y - x)
    diff[np.isnan(diff)] = np.inf
    # float64 holds integers exactly only up to 2**53; larger ones are worked out in Python.
    large = np.flatnonzero((integer > _EXACT_IN_FLOAT64) | (integer < -_EXACT_IN_FLOAT64))
    if large.size:
        equal[large], diff[large] = _python_difference(reference[large], candidate[large])
    return equal, diff


def _python_difference(reference: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact differences in Python numbers, for the rare pairs numpy cannot subtract exactly."""
    pairs = [_exact_pair(r, c) for r, c in zip(_python_values(reference), _python_values(candidate))]
    return np.array([p[0] for p in pairs], dtype=bool), np.array([p[1] for p in pairs], dtype=np.float64)


def _python_values(values: np.ndarray) -> list:
    return (_float64(values) if _is_float(values.dtype) else values).tolist()


def _exact_pair(reference, candidate) -> tuple[bool, float]:
    if not all(math.isfinite(v) for v in (reference, candidate) if isinstance(v, float)):
        return False, float("inf")  # an integer is never NaN or infinite
    difference = abs(Fraction(candidate) - Fraction(reference))
    return difference == 0, float(difference)


# --- ULP distance ------------------------------------------------------------------------------


def ulp_distance(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray | None:
    """Units in the last place between elements (int64), counted in the coarser of the two float
    dtypes; None unless both are floats.

    +0 and -0 are 0 apart. A NaN or an infinity is 0 from an equal value (NaN from NaN) and
    `ULP_UNBOUNDED` from anything else; so is a finite value that overflows in the coarser dtype.
    Distances beyond ULP_UNBOUNDED (float64 values of opposite sign, far apart) are capped there."""
    if not _both_float(reference.dtype, candidate.dtype):
        return None
    return _ulp_distance(reference, candidate, _float64(reference), _float64(candidate))


def _ulp_distance(reference: np.ndarray, candidate: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`ulp_distance` of two float arrays whose float64 values are `x` and `y`."""
    coarse = min(dtype_name(reference.dtype), dtype_name(candidate.dtype), key=_PRECISION.get)
    rounded_reference, rounded_candidate = _rounded(reference, coarse), _rounded(candidate, coarse)
    a, b = _ordinals(rounded_reference), _ordinals(rounded_candidate)
    unsigned = np.uint64
    # The distance of two ordinals always fits in uint64, so wrapping subtraction there is exact.
    distance = np.where(a >= b, a.view(unsigned) - b.view(unsigned), b.view(unsigned) - a.view(unsigned))
    distance = np.minimum(distance, ULP_UNBOUNDED).astype(np.int64)
    with np.errstate(invalid="ignore"):
        equal = (x == y) | (np.isnan(x) & np.isnan(y))
    nonfinite = ~(np.isfinite(x) & np.isfinite(y))
    overflowed = ~nonfinite & ~(np.isfinite(widen(rounded_reference)) & np.isfinite(widen(rounded_candidate)))
    distance[nonfinite] = np.where(equal[nonfinite], 0, ULP_UNBOUNDED)
    distance[overflowed] = ULP_UNBOUNDED
    return distance


def _rounded(values: np.ndarray, coarse: str) -> np.ndarray:
    """`values` rounded once, to nearest with ties to even, in the float dtype named `coarse`."""
    if dtype_name(values.dtype) == coarse:
        return np.ascontiguousarray(values, dtype=DTYPES[coarse])  # little-endian, as its bits are read
    return from_float64(_float64(values), coarse)


def _ordinals(values: np.ndarray) -> np.ndarray:
    """Float bits as int64 ordered like the floats; +0 and -0 both map to 0."""
    bits = values.view(_BITS[values.dtype.itemsize]).astype(np.int64)
    magnitude = bits & ((1 << (values.dtype.itemsize * 8 - 1)) - 1)
    return np.where(bits < 0, -magnitude, magnitude)


# --- compiled kernel ---------------------------------------------------------------------------

_KERNEL = None


def _jit_kernel():
    """The compiled float32 kernel, or None where numba is missing or PITA_JIT=0."""
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = False
        if os.environ.get("PITA_JIT", "1") != "0":
            try:
                from pita import stats_jit
            except ImportError:
                return None
            _KERNEL = stats_jit.measure_f32
    return _KERNEL or None
