"""The fused float32 kernel behind `pita.stats.measure`, compiled by numba (cached on disk).

One read of each element pair computes the same verdict and statistics as the numpy path in
`pita.stats`, which the tests hold it to. Blocks run in parallel; each keeps its own maxima,
counts and first mismatches, and the blocks are reduced in order.
"""

from __future__ import annotations

import numba
import numpy as np

from pita.stats import EXAMPLES, ULP_UNBOUNDED, TensorStats

BLOCKS = 64
_NO_ULP_LIMIT = -1


@numba.njit(cache=True, inline="always")
def _ordered(bits):
    # Branch-free: the sign of random data is unpredictable, a branch would mispredict half the time.
    wide = np.int64(bits)
    sign = wide >> 63  # 0 or -1
    return ((wide & 0x7FFFFFFF) ^ sign) - sign


@numba.njit(cache=True, error_model="numpy")
def _block(r, c, rb, cb, start, end, atol, rtol, ulp_limit, equal_nan, examples):
    """Statistics of elements start..end. A function of its own: numba optimises it better than
    the same loop written inside the parallel loop's body."""
    max_abs, max_rel = 0.0, 0.0
    bad, worst, max_ulp, ulp_at, nan_r, nan_c, kept = 0, start, 0, start, 0, 0, 0  # all 0 until an element differs
    for i in range(start, end):
        x = np.float64(r[i])
        y = np.float64(c[i])
        if x == y:  # the common case: equal (and so not NaN) contributes nothing else
            continue
        rn, cn = x != x, y != y
        if rn or cn:
            nan_r += rn
            nan_c += cn
            if equal_nan and rn and cn:
                continue
            diff, ulp, ok = np.inf, np.int64(ULP_UNBOUNDED), False
        else:
            diff = abs(y - x)  # never NaN here: equal infinities were caught above
            ulp = abs(_ordered(rb[i]) - _ordered(cb[i]))
            ax = abs(x)
            ok = diff <= atol + rtol * ax or (ulp_limit >= 0 and ulp <= ulp_limit)
            if diff > max_rel * ax:  # diff/|x| > max_rel, without dividing every element
                max_rel = np.inf if (ax == 0.0 or diff == np.inf) else diff / ax
        if diff > max_abs:
            max_abs, worst = diff, i
        if diff == np.inf:
            max_rel = np.inf
        if ulp > max_ulp:
            max_ulp, ulp_at = ulp, i
        if not ok:
            if kept < examples.shape[0]:
                examples[kept] = i
                kept += 1
            bad += 1
    return max_abs, max_rel, bad, worst, max_ulp, ulp_at, nan_r, nan_c


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _blocks(r, c, rb, cb, atol, rtol, ulp_limit, equal_nan, floats, ints, examples):
    n = r.size
    blocks = floats.shape[0]
    size = (n + blocks - 1) // blocks
    for b in numba.prange(blocks):
        start, end = b * size, min(n, b * size + size)
        if start >= end:
            ints[b, 1] = -1
            continue
        max_abs, max_rel, bad, worst, max_ulp, ulp_at, nan_r, nan_c = _block(
            r, c, rb, cb, start, end, atol, rtol, ulp_limit, equal_nan, examples[b])
        floats[b, 0], floats[b, 1] = max_abs, max_rel
        ints[b, 0], ints[b, 1], ints[b, 2], ints[b, 3], ints[b, 4], ints[b, 5] = bad, worst, max_ulp, ulp_at, nan_r, nan_c


def measure_f32(reference: np.ndarray, candidate: np.ndarray, tolerance) -> TensorStats:
    blocks = min(BLOCKS, max(1, reference.size))
    floats = np.zeros((blocks, 2))
    ints = np.zeros((blocks, 6), dtype=np.int64)
    examples = np.full((blocks, EXAMPLES), -1, dtype=np.int64)
    ulp_limit = _NO_ULP_LIMIT if tolerance.ulp is None else int(tolerance.ulp)
    _blocks(reference, candidate, reference.view(np.int32), candidate.view(np.int32),
            float(tolerance.atol), float(tolerance.rtol), ulp_limit, bool(tolerance.equal_nan), floats, ints, examples)
    total = TensorStats()
    for b in range(blocks):
        if ints[b, 1] < 0:
            continue
        part = TensorStats(
            n=0, mismatched=int(ints[b, 0]), max_abs_diff=float(floats[b, 0]), worst=int(ints[b, 1]),
            max_rel_diff=float(floats[b, 1]), max_ulp=int(ints[b, 2]), max_ulp_at=int(ints[b, 3]),
            examples=[int(i) for i in examples[b] if i >= 0], nan_reference=int(ints[b, 4]), nan_candidate=int(ints[b, 5]),
        )
        total.merge(part)
    total.n = reference.size
    return total
