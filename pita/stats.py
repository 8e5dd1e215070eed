"""Measure: every statistic compare reports, in one streaming pass over a tensor pair.

The pair is walked in chunks. Large float32 pairs go through a fused, parallel kernel compiled
with numba (one read of each element computes the verdict, |diff|, relative diff, ULP distance
and NaN counts); everything else, and every pair when numba is missing, goes through numpy, a
chunk at a time. Pages of memory-mapped inputs are released after each chunk, so comparing two
large files holds only a chunk of each in memory.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field

import numpy as np

from pita.filetensor import flat_chunk

EXAMPLES = 5  # mismatch positions kept for the report
CHUNK = 1 << 22  # elements per chunk
JIT_MIN = 1 << 20  # below this many elements numpy is faster than importing the kernel
PAGE = mmap.PAGESIZE
ULP_UNBOUNDED = 2**63 - 1  # NaN against a number; also caps float64 distances across zero


@dataclass
class TensorStats:
    n: int = 0
    mismatched: int = 0
    max_abs_diff: float = 0.0
    worst: int = -1  # flat index of the largest |diff|
    max_rel_diff: float = 0.0
    max_ulp: int | None = None
    max_ulp_at: int = -1
    examples: list[int] = field(default_factory=list)  # flat indices of the first mismatches
    nan_reference: int = 0
    nan_candidate: int = 0

    def merge(self, other: TensorStats) -> None:
        self.n += other.n
        self.mismatched += other.mismatched
        if other.worst >= 0 and (self.worst < 0 or other.max_abs_diff > self.max_abs_diff):
            self.max_abs_diff, self.worst = other.max_abs_diff, other.worst
        self.max_rel_diff = max(self.max_rel_diff, other.max_rel_diff)
        if other.max_ulp is not None and (self.max_ulp is None or other.max_ulp > self.max_ulp):
            self.max_ulp, self.max_ulp_at = other.max_ulp, other.max_ulp_at
        self.examples = (self.examples + other.examples)[:EXAMPLES]
        self.nan_reference += other.nan_reference
        self.nan_candidate += other.nan_candidate


def measure(reference: np.ndarray, candidate: np.ndarray, tolerance) -> TensorStats:
    """Statistics of `candidate` against `reference` (same number of elements, any shapes)."""
    kernel = _jit_kernel() if reference.dtype == candidate.dtype == np.float32 and reference.size >= JIT_MIN else None
    total = TensorStats()
    for start in range(0, reference.size, CHUNK):
        end = min(start + CHUNK, reference.size)
        r, c = flat_chunk(reference, start, end), flat_chunk(candidate, start, end)
        chunk = kernel(r, c, tolerance) if kernel else _numpy_chunk(r, c, tolerance)
        _shift(chunk, start)
        total.merge(chunk)
    r, c = flat_chunk(reference, 0, 0), flat_chunk(candidate, 0, 0)
    if reference.size == 0:
        total.max_ulp = 0 if _ulp_dtype(r, c) is not None else None
    return total


def _shift(stats: TensorStats, offset: int) -> None:
    stats.worst += offset if stats.worst >= 0 else 0
    stats.max_ulp_at += offset if stats.max_ulp_at >= 0 else 0
    stats.examples = [i + offset for i in stats.examples]


# --- numpy path --------------------------------------------------------------------------------


def _numpy_chunk(reference: np.ndarray, candidate: np.ndarray, tolerance) -> TensorStats:
    r = reference.astype(np.float64)
    c = candidate.astype(np.float64)
    nan_r, nan_c = np.isnan(r), np.isnan(c)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        same = (c == r) | (tolerance.equal_nan & nan_r & nan_c)
        diff = np.abs(c - r)
        passed = same | (diff <= tolerance.atol + tolerance.rtol * np.abs(r))
        diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
        rel = np.where(diff == 0, 0.0, np.where(np.isinf(diff) | (r == 0), np.inf, diff / np.abs(r)))
    stats = TensorStats(n=r.size, nan_reference=int(nan_r.sum()), nan_candidate=int(nan_c.sum()))
    ulp = ulp_distance(reference, candidate)
    if ulp is not None and tolerance.ulp is not None:
        passed |= (ulp <= tolerance.ulp) & ~(nan_r | nan_c)
    failed = np.flatnonzero(~passed)
    stats.mismatched = int(failed.size)
    stats.examples = failed[:EXAMPLES].tolist()
    if r.size:
        stats.worst = int(np.argmax(diff))
        stats.max_abs_diff = float(diff[stats.worst])
        stats.max_rel_diff = float(rel.max())
        if ulp is not None:
            stats.max_ulp_at = int(np.argmax(ulp))
            stats.max_ulp = min(int(ulp[stats.max_ulp_at]), ULP_UNBOUNDED)
    return stats


_INT_OF_FLOAT = {2: np.int16, 4: np.int32, 8: np.int64}


def _ulp_dtype(reference: np.ndarray, candidate: np.ndarray):
    if reference.dtype.kind != "f" or candidate.dtype.kind != "f":
        return None
    return min(reference.dtype, candidate.dtype, key=lambda d: d.itemsize)


def ulp_distance(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray | None:
    """Units in the last place between elements, in the coarser of the two float dtypes.

    NaN pairs count as 0 when both are NaN and as the largest distance otherwise."""
    dtype = _ulp_dtype(reference, candidate)
    if dtype is None:
        return None
    r, c = reference.astype(dtype), candidate.astype(dtype)
    a, b = _ordered(r), _ordered(c)
    same_sign = (a >= 0) == (b >= 0)
    # Across zero the distance is |a| + |b|, which can exceed int64 for float64: count in uint64.
    distance = np.where(same_sign, np.abs(a - np.where(same_sign, b, a)), 0).astype(np.uint64)
    distance[~same_sign] = np.abs(a[~same_sign]).astype(np.uint64) + np.abs(b[~same_sign]).astype(np.uint64)
    nan_r, nan_c = np.isnan(r), np.isnan(c)
    distance[nan_r != nan_c] = np.iinfo(np.uint64).max
    distance[nan_r & nan_c] = 0
    return distance


def _ordered(values: np.ndarray) -> np.ndarray:
    """Maps float bits to integers ordered like the floats (+0 and -0 both map to 0)."""
    bits = values.view(_INT_OF_FLOAT[values.dtype.itemsize]).astype(np.int64)
    sign_bit = 1 << (values.dtype.itemsize * 8 - 1)
    return np.where(bits < 0, -(bits & (sign_bit - 1)), bits)


# --- memory-mapped inputs ----------------------------------------------------------------------


def _mapped_range(chunk: np.ndarray):
    """(mapping, page-aligned start, length) of a chunk of a memory-mapped file, else None."""
    mapping = chunk
    while isinstance(mapping, (np.ndarray, memoryview)):
        mapping = mapping.base if isinstance(mapping, np.ndarray) else mapping.obj
    if not isinstance(mapping, mmap.mmap) or chunk.size == 0 or not hasattr(mapping, "madvise"):
        return None
    start = chunk.ctypes.data - np.frombuffer(mapping, dtype=np.uint8).ctypes.data
    aligned = start - start % PAGE
    return mapping, aligned, start + chunk.nbytes - aligned


# MADV_POPULATE_READ (Linux 5.14+; Python names it from 3.13) maps a whole chunk in one call
# instead of one page fault at a time; older kernels refuse it and get MADV_WILLNEED.
_POPULATE = [getattr(mmap, "MADV_POPULATE_READ", 22), getattr(mmap, "MADV_WILLNEED", None)]


def prefetch(chunk: np.ndarray) -> None:
    """Maps the pages of a memory-mapped chunk before the kernel reads it."""
    found = _mapped_range(chunk)
    while found and _POPULATE and _POPULATE[0] is not None:
        try:
            found[0].madvise(_POPULATE[0], found[1], found[2])
            return
        except OSError:
            _POPULATE.pop(0)


def release(chunk: np.ndarray) -> None:
    """Drops the pages of a memory-mapped chunk from this process (they stay in the page cache)."""
    found = _mapped_range(chunk)
    if found:
        found[0].madvise(mmap.MADV_DONTNEED, found[1], found[2])


# --- float32 kernel ----------------------------------------------------------------------------

_KERNEL = None


def _jit_kernel():
    """The compiled kernel, or None where numba is missing or PITA_JIT=0."""
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
