"""The compiled implementation of the statistics contract (`pita.stats_contract`) for float32
pairs, by numba (cached on disk); `pita.stats.measure` picks it for large pairs.

It gives the same verdict and statistics as the numpy implementation (`pita.stats_numpy`), the
oracle test holds both to the contract, at the speed of reading the files. Nearly every element pair is looked at once, by a screen:

- a screen over a sub-block of SUB_BLOCK elements, written so that LLVM vectorises it without
  fast-math (integer and boolean reductions only; float maxima are not reduced but compared
  against the running ones): it counts mismatches and tells whether the sub-block could change
  anything else (a non-finite value, a new largest |diff|, ULP distance or relative difference,
  a mismatch while example positions are still wanted). With rtol 0 it runs in float32 first
  (`_screen32`, twice the lanes), with bounds rounded so that it decides exactly as float64
  would, and hands over to the float64 screen (`_screen`) wherever float32 could round;
- only where a screen says something may change, an exact scalar pass over that sub-block,
  which updates every statistic and position in order.

After a few training steps every element of a port differs by some ULPs, and maxima stop growing
after the first blocks, so nearly every sub-block is settled by the screen alone. The tensor is
split into one contiguous range per thread (numba `nogil` kernels called from a thread pool); a
`FileTensor` range is read with pread into one buffer per side, reused chunk after chunk, so the
data stays in cache between the read and the kernel. The ranges are merged in order.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from pita.filetensor import flat_chunks
from pita.stats_contract import EXAMPLES, ULP_UNBOUNDED, TensorStats

CHUNK = 1 << 17  # elements read at a time by each thread: 512 KiB a side, both in L2 cache
SUB_BLOCK = 2048  # elements the screen settles at once; a rescan costs about this many scalar steps
MAX_THREADS = 8

MAGNITUDE = np.int32(0x7FFFFFFF)
INFINITY_BITS = np.int32(0x7F800000)  # magnitudes above are NaN; this one is infinity
LARGEST = np.finfo(np.float64).max
FILTER_BITS = 29  # the relative-difference filter keeps this many significant bits, see _rel_filter
FILTER_MARGIN = 2.0**-20  # the float32 screen's filter sits this far below max_rel, see _rel_filter32
SMALLEST_NORMAL32 = np.float32(2.0**-126)
EXACT_ULPS = np.uint32(1 << 23)  # float32 fewer ULPs apart subtract exactly, see _screen32

# Running state of one range, in two small arrays the kernel updates in place.
MAX_ABS, MAX_REL, REL_FILTER, REL_FILTER32 = range(4)
BAD, WORST, MAX_ULP, ULP_AT, NAN_REFERENCE, NAN_CANDIDATE, KEPT = range(7)


@numba.njit(cache=True, inline="always")
def _ulp_distance(reference_bits, candidate_bits):
    """ULP distance of two finite float32 given as int32 bits, in uint32 (it may exceed int32).
    Every step is cast back to 32 bits: numba widens integer arithmetic to int64, which would
    halve the lanes of the vectorised screen."""
    a, b = np.int32(reference_bits & MAGNITUDE), np.int32(candidate_bits & MAGNITUDE)
    if np.int32(reference_bits ^ candidate_bits) < 0:  # opposite signs: the distance passes through zero
        return np.uint32(np.uint32(a) + np.uint32(b))
    return np.uint32(np.uint32(max(a, b)) - np.uint32(min(a, b)))


@numba.njit(cache=True, inline="always")
def _element(reference_bits, candidate_bits, reference, candidate, atol, rtol, ulp_limit, equal_nan):
    """(passed, |diff|, ULP distance, relative diff, NaN reference, NaN candidate) of one pair,
    exactly as the numpy path computes them."""
    # NaN and infinity are told by their exponent bits, like everywhere in this module.
    nan_reference = (reference_bits & MAGNITUDE) > INFINITY_BITS
    nan_candidate = (candidate_bits & MAGNITUDE) > INFINITY_BITS
    finite = (reference_bits & MAGNITUDE) < INFINITY_BITS and (candidate_bits & MAGNITUDE) < INFINITY_BITS
    x, y = np.float64(reference), np.float64(candidate)
    same = x == y or (equal_nan and nan_reference and nan_candidate)
    if finite:
        diff = abs(y - x)
        ulp = np.int64(_ulp_distance(reference_bits, candidate_bits))
        passed = same or diff <= atol + rtol * abs(x) or ulp <= ulp_limit
    else:
        diff = 0.0 if same else np.inf
        ulp = np.int64(0) if same or (nan_reference and nan_candidate) else np.int64(ULP_UNBOUNDED)
        passed = same
    rel = 0.0 if diff == 0.0 else (np.inf if diff == np.inf or x == 0.0 else diff / abs(x))
    return passed, diff, ulp, rel, nan_reference, nan_candidate


@numba.njit(cache=True)
def _rel_filter(max_rel):
    """max_rel cut to FILTER_BITS significant bits (rounded down). Times |reference| (at most 24
    bits, a float32) the product is exact, so `diff > filter * |reference|` holds for every
    element whose diff / |reference| exceeds max_rel; ties with max_rel do not pass it."""
    if max_rel == np.inf:
        return max_rel
    mantissa, exponent = math.frexp(max_rel)
    return math.ldexp(np.floor(math.ldexp(mantissa, FILTER_BITS)), exponent - FILTER_BITS)


@numba.njit(cache=True)
def _rel_filter32(max_rel):
    """A float32 at least FILTER_MARGIN below max_rel: float32 rounding of `filter * |reference|`
    (2**-24 relative in the normal range) then cannot lift it to a diff with diff / |reference|
    above max_rel, so `diff > filter * |reference|` holds for every such element."""
    return _down32(max_rel * (1 - FILTER_MARGIN))


@numba.njit(cache=True)
def _down32(value):
    """The largest float32 at most `value` (a float64): a float32 is above it exactly when it
    is above `value`."""
    rounded = np.float32(value)
    if np.float64(rounded) > value:
        rounded = np.nextafter(rounded, np.float32(-np.inf))
    return rounded


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _screen32(reference, candidate, reference_bits, candidate_bits, atol, ulp_cut, max_abs, rel_filter):
    """`_screen` in float32 arithmetic, twice as many lanes, for rtol 0, with the bounds rounded
    down to float32. Returns (mismatches, changes, unsure, largest ULP distance): unless unsure,
    the first are what `_screen` would say, or changes errs towards true. Unsure where a
    subtraction may round in float32 or a filter product is subnormal. Pairs fewer than 2**23
    ULPs apart subtract exactly: of one sign they are within a factor 2 (Sterbenz), of opposite
    signs both are subnormal."""
    mismatches = np.int32(0)  # int32, not numba's int64: 64-bit lanes would halve the vector width
    changes, unsure = False, False
    top_ulp = np.uint32(0)
    for i in range(reference.size):
        a, b = reference_bits[i], candidate_bits[i]
        ulp = _ulp_distance(a, b)
        top_ulp = max(top_ulp, ulp)
        diff = abs(candidate[i] - reference[i])
        bound = rel_filter * abs(reference[i])
        unsure |= (ulp >= EXACT_ULPS) | ((bound < SMALLEST_NORMAL32) & (bound > 0))
        # `not <=` for NaN, as in `_screen`.
        mismatches = np.int32(mismatches + np.int32((not (diff <= atol)) & (ulp > ulp_cut)))
        changes |= (not (diff <= max_abs)) | (diff > bound)
    return mismatches, changes, unsure, top_ulp


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _screen(reference, candidate, reference_bits, candidate_bits, atol, rtol, ulp_cut, max_abs, rel_filter):
    """(mismatches, whether any statistic but the count may change, largest ULP distance) of a
    sub-block; the count is right when nothing else may change. `max_abs` must be finite."""
    mismatches = 0
    changes = False
    top_ulp = np.uint32(0)
    for i in range(reference.size):
        ulp = _ulp_distance(reference_bits[i], candidate_bits[i])
        top_ulp = max(top_ulp, ulp)
        x, y = np.float64(reference[i]), np.float64(candidate[i])
        diff = abs(y - x)
        # `not <=` rather than `>`, deliberately: a NaN must count as above every bound. An allowance
        # of NaN (rtol=inf times 0) then fails, as on the scalar path; and since a NaN or an infinity
        # makes diff NaN or infinite, above any finite bound, such a sub-block is always rescanned.
        mismatches += (not (diff <= atol + rtol * abs(x))) & (ulp > ulp_cut)
        # min() keeps max_abs when the product is NaN (an infinite filter times 0), as Python's does.
        changes |= not (diff <= min(max_abs, rel_filter * abs(x)))
    return mismatches, changes, top_ulp


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _rescan(reference, candidate, reference_bits, candidate_bits, start, stop, offset, atol, rtol, ulp_limit,
            equal_nan, floats, ints, examples):
    """Elements start..stop one by one: every statistic and position, in order."""
    for i in range(start, stop):
        passed, diff, ulp, rel, nan_reference, nan_candidate = _element(
            reference_bits[i], candidate_bits[i], reference[i], candidate[i], atol, rtol, ulp_limit, equal_nan)
        ints[NAN_REFERENCE] += nan_reference
        ints[NAN_CANDIDATE] += nan_candidate
        if not passed:
            if ints[KEPT] < EXAMPLES:
                examples[ints[KEPT]] = offset + i
                ints[KEPT] += 1
            ints[BAD] += 1
        if diff > floats[MAX_ABS]:
            floats[MAX_ABS], ints[WORST] = diff, offset + i
        if ulp > ints[MAX_ULP]:
            ints[MAX_ULP], ints[ULP_AT] = ulp, offset + i
        if rel > floats[MAX_REL]:
            floats[MAX_REL], floats[REL_FILTER], floats[REL_FILTER32] = rel, _rel_filter(rel), _rel_filter32(rel)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _sweep(reference, candidate, offset, atol, rtol, ulp_limit, ulp_cut, equal_nan, sub_block, floats, ints, examples):
    """One chunk (flat elements from `offset` on), screened a sub-block at a time: in float32
    first where rtol is 0, then in float64 where that screen is unsure or sees a change."""
    reference_bits, candidate_bits = reference.view(np.int32), candidate.view(np.int32)
    atol32 = _down32(atol)
    for start in range(0, reference.size, sub_block):
        stop = min(reference.size, start + sub_block)
        r, c, rb, cb = reference[start:stop], candidate[start:stop], reference_bits[start:stop], candidate_bits[start:stop]
        max_abs = min(floats[MAX_ABS], LARGEST)
        changes = unsure = True
        if rtol == 0.0:
            rel_filter32 = np.float32(floats[REL_FILTER32])  # exact, and float32 keeps the screen in float32
            mismatches, changes, unsure, top_ulp = _screen32(r, c, rb, cb, atol32, ulp_cut, _down32(max_abs), rel_filter32)
        if changes or unsure:
            mismatches, changes, top_ulp = _screen(r, c, rb, cb, atol, rtol, ulp_cut, max_abs, floats[REL_FILTER])
        if not changes and top_ulp <= ints[MAX_ULP] and (mismatches == 0 or ints[KEPT] == EXAMPLES):
            ints[BAD] += mismatches
        else:
            _rescan(reference, candidate, reference_bits, candidate_bits, start, stop, offset, atol, rtol, ulp_limit,
                    equal_nan, floats, ints, examples)


def measure_f32(reference, candidate, tolerance) -> TensorStats:
    """The statistics of two float32 tensors (arrays or `FileTensor`s) of the same size."""
    ranges = _ranges(reference.size, _threads())
    if len(ranges) == 1:
        return _measure_range(reference, candidate, *ranges[0], tolerance).settled(floats=True)
    with ThreadPoolExecutor(len(ranges)) as pool:
        parts = [pool.submit(_measure_range, reference, candidate, start, stop, tolerance) for start, stop in ranges]
        total = TensorStats()
        for part in parts:
            total.merge(part.result())
    return total.settled(floats=True)


def _measure_range(reference, candidate, start: int, stop: int, tolerance) -> TensorStats:
    floats = np.zeros(4)
    ints = np.zeros(7, dtype=np.int64)
    ints[WORST] = ints[ULP_AT] = -1
    examples = np.full(EXAMPLES, -1, dtype=np.int64)
    ulp_limit = -1 if tolerance.ulp is None else max(-1, min(int(tolerance.ulp), ULP_UNBOUNDED - 1))
    # On the screen, a finite pair fails by ULPs when further apart than this; apart at all without --ulp.
    ulp_cut = np.uint32(min(max(ulp_limit, 0), 2**32 - 1))
    chunks = zip(flat_chunks(reference, start, stop, CHUNK), flat_chunks(candidate, start, stop, CHUNK))
    for offset, (r, c) in zip(range(start, stop, CHUNK), chunks):
        _sweep(r, c, offset, float(tolerance.atol), float(tolerance.rtol), ulp_limit, ulp_cut,
               bool(tolerance.equal_nan), SUB_BLOCK, floats, ints, examples)
    found = ints[ULP_AT] >= 0
    return TensorStats(
        n=stop - start, mismatched=int(ints[BAD]), max_abs_diff=float(floats[MAX_ABS]), worst=int(ints[WORST]),
        max_rel_diff=float(floats[MAX_REL]), max_ulp=int(ints[MAX_ULP]) if found else None, max_ulp_at=int(ints[ULP_AT]),
        examples=examples[:ints[KEPT]].tolist(), nan_reference=int(ints[NAN_REFERENCE]), nan_candidate=int(ints[NAN_CANDIDATE]),
    )


def _threads() -> int:
    return max(1, min(MAX_THREADS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _ranges(size: int, threads: int) -> list[tuple[int, int]]:
    """`threads` contiguous ranges covering 0..size (fewer when there is too little to share)."""
    count = max(1, min(threads, size // CHUNK))
    bounds = [size * k // count for k in range(count + 1)]
    return list(zip(bounds, bounds[1:]))
