"""The numpy implementation of the statistics contract (`pita.stats_contract`): any dtypes, a
chunk of CHUNK elements at a time, so that comparing two large files (`FileTensor`s) holds only a
chunk of each in memory. Integer differences are exact (no overflow at the int64 and uint64
extremes) until rounded to float64 for the report.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from pita.dtypes import DTYPES, dtype_name, from_float64, widen
from pita.filetensor import flat_chunks
from pita.stats_contract import EXAMPLES, ULP_UNBOUNDED, TensorStats

CHUNK = 1 << 18  # elements per chunk: a dozen float64 temporaries of 2 MiB

# Float dtypes from the coarsest to the finest: ULPs across two dtypes count in the coarser one.
_PRECISION = {"BF16": 8, "F16": 11, "F32": 24, "F64": 53}
_BITS = {2: np.int16, 4: np.int32, 8: np.int64}
_EXACT_IN_FLOAT64 = 2**53  # integers up to this magnitude convert to float64 exactly


def measure_numpy(reference, candidate, tolerance) -> TensorStats:
    """Statistics of `candidate` against `reference` (arrays or `FileTensor`s of the same size)."""
    floats = both_float(reference.dtype, candidate.dtype)
    chunk_of = _float_chunk if floats else _exact_chunk
    total = TensorStats()
    chunks = zip(flat_chunks(reference, 0, reference.size, CHUNK), flat_chunks(candidate, 0, candidate.size, CHUNK))
    for start, (r, c) in zip(range(0, reference.size, CHUNK), chunks):
        stats = chunk_of(r, c, tolerance)
        stats.shift(start)
        total.merge(stats)
    return total.settled(floats)


def _float_chunk(reference: np.ndarray, candidate: np.ndarray, tolerance) -> TensorStats:
    x, y = as_float64(reference), as_float64(candidate)
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    finite = np.isfinite(x) & np.isfinite(y)
    with np.errstate(invalid="ignore", over="ignore"):
        same = (x == y) | (tolerance.equal_nan & nan_x & nan_y)
        diff = np.where(finite, np.abs(y - x), np.where(same, 0.0, np.inf))
        within = diff <= tolerance.atol + tolerance.rtol * np.abs(x)
    ulp = float_ulp_distance(reference, candidate, x, y)
    if tolerance.ulp is not None:
        within |= (ulp <= tolerance.ulp) & (ulp < ULP_UNBOUNDED)
    passed = same | (finite & within)
    return _summary(passed, diff, _relative(diff, np.abs(x)), ulp, nan_x, nan_y)


def _exact_chunk(reference: np.ndarray, candidate: np.ndarray, tolerance) -> TensorStats:
    """Integers and bools, alone or against floats: equal or not, no tolerance."""
    equal, diff = exact_difference(reference, candidate)
    magnitude = np.abs(as_float64(reference))
    return _summary(equal, diff, _relative(diff, magnitude), None, _nan(reference), _nan(candidate))


def _nan(values: np.ndarray) -> np.ndarray:
    return np.isnan(as_float64(values)) if _is_float(values.dtype) else np.zeros(values.shape, dtype=bool)


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


def as_float64(values: np.ndarray) -> np.ndarray:
    """Exact float64 values of any number dtype (BF16 included); integers beyond 2**53 round."""
    return widen(values).astype(np.float64)


def _is_float(dtype) -> bool:
    return dtype_name(dtype) in _PRECISION


def both_float(reference_dtype, candidate_dtype) -> bool:
    return _is_float(reference_dtype) and _is_float(candidate_dtype)


# --- exact differences of integers -------------------------------------------------------------


def exact_difference(reference: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    x, y = as_float64(reference), as_float64(candidate)
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
    return (as_float64(values) if _is_float(values.dtype) else values).tolist()


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
    if not both_float(reference.dtype, candidate.dtype):
        return None
    return float_ulp_distance(reference, candidate, as_float64(reference), as_float64(candidate))


def float_ulp_distance(reference: np.ndarray, candidate: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`ulp_distance` of two float arrays whose float64 values (`as_float64`) are `x` and `y`."""
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
    return from_float64(as_float64(values), coarse)


def _ordinals(values: np.ndarray) -> np.ndarray:
    """Float bits as int64 ordered like the floats; +0 and -0 both map to 0."""
    bits = values.view(_BITS[values.dtype.itemsize]).astype(np.int64)
    magnitude = bits & ((1 << (values.dtype.itemsize * 8 - 1)) - 1)
    return np.where(bits < 0, -magnitude, magnitude)
