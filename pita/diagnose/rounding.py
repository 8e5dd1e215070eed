"""rounding: the difference is rounding noise, not a bug.

What it detects
    Either a few units in the last place over the whole tensor (at most 64 in float32 and
    float64, 4 in float16 and bfloat16: summation order, fused multiply-add, a different
    reduction tree), counted for each element in ULPs of its own value (`ulps`) or, for the
    largest error, in ULPs at the tensor's scale (`ulps_at_rms`: max|diff| over ε × `rms`, the
    reference's RMS over the sampled elements, ε the coarser dtype's spacing near 1); or one
    side equal, element by element, to the other side rounded to nearest in float16, bfloat16 or
    float32 (at least four elements differ, and every other element already holds a value of
    that format): one side was cast to or stored in lower precision. Values that merely fit the
    format (integers, say) are not enough.
    The tensor's scale is its RMS rather than its largest value, which one outlier sets alone
    (in the RMS of n elements it weighs 1/√n) and which a sample may miss, while the sample
    estimates the RMS well. An element near zero has tiny ULPs of its own, and noise carried
    there from larger values counts thousands of them (`ulps`) while it is a few ULPs at the
    tensor's scale.

Why it happens in a port
    Different summation orders in matmul and reductions (burn and PyTorch block their loops
    differently), `mean` as `sum/n` against `sum*(1/n)`; weights or activations cast to f16/bf16
    on one side (mixed precision, a checkpoint saved in half precision), a float64 reference
    against a float32 port.

Example
    reference `0.0425`, candidate `0.042500019` (5 ULP apart): summation-order noise. A
    LayerNorm output of RMS 1 whose largest error, 1.06e-6 at an element of 0.01, is 1,139 ULPs
    of that element and 9 at the tensor's scale: summation-order noise too.

Remedy
    For ULP-level noise, compare with `--ulp N` (or a small `--rtol`, or an `--atol` at the
    tensor's scale); it is not a porting error. For f16/bf16-level differences, check which side
    casts, and compare in the same precision.
"""

from __future__ import annotations

import math

import numpy as np

from pita.diagnose.base import Diagnosis, Pair
from pita.dtypes import dtype_name, from_float64, is_float, widen

KIND = "rounding"
SUPERSEDES = ("rows",)  # noise confined to a few rows is still noise
# ULPs (in the coarser dtype) that count as order-of-operations noise, of each element's own
# value or at the tensor's scale (ε × RMS): 4 float16 ULPs are up to 0.4% of a value, 64 float32
# ULPs 0.0008%.
NOISE_ULPS = {"F16": 4, "BF16": 4}
WIDE_NOISE_ULPS = 64  # float32 and float64
EVIDENCE = 4  # differing elements needed before a precision is named
LEVELS = {"float16": "F16", "bfloat16": "BF16", "float32": "F32"}  # checked in this order


def detect(pair: Pair) -> Diagnosis | None:
    if not (is_float(pair.reference.dtype) and is_float(pair.candidate.dtype)):
        return None
    return _ulp_noise(pair) or _lower_precision(pair)


def _ulp_noise(pair: Pair) -> Diagnosis | None:
    """Every element within a few ULPs of its own value (`stats` counted them over the whole
    tensor), or the largest error within as many ULPs at the tensor's scale."""
    stats = pair.stats
    # 0 ULPs with a difference: the values differ only below the coarser dtype's resolution,
    # which `_lower_precision` names
    if stats is None or not stats.max_ulp or not 0 < stats.max_abs_diff < math.inf:
        return None
    noise = noise_ulps(pair)
    own, rms = stats.max_ulp, tensor_scale(pair)
    unit = pair.epsilon * rms  # 0 when the RMS is 0 or so small that its ULP underflows
    at_rms = stats.max_abs_diff / unit if unit > 0 else math.inf
    params = {"level": "ulp", "ulps": own, "ulps_at_rms": at_rms, "rms": rms}
    if own <= noise:
        return Diagnosis(KIND, params, f"at most {own} ULP apart: summation-order noise", 0.0)
    if at_rms <= noise:
        message = (f"max|diff| {stats.max_abs_diff:.2e} is {at_rms:.3g} ULPs at the tensor's scale (RMS {rms:.3g}): summation-order noise "
                   f"(up to {own} ULPs of an element's own value, at an element near zero)")
        return Diagnosis(KIND, params, message, 0.0)
    return None


def noise_ulps(pair: Pair) -> int:
    """How many ULPs of the coarser dtype count as order-of-operations noise."""
    coarser = min((pair.reference.dtype, pair.candidate.dtype), key=lambda d: d.itemsize)
    return NOISE_ULPS.get(dtype_name(coarser), WIDE_NOISE_ULPS)


def tensor_scale(pair: Pair) -> float:
    """The reference's RMS over the sampled elements (all of a tensor of at most SAMPLE), 0 when
    a sampled value is not finite: the size of a typical element, which the rounding of the sums
    that made it is relative to. Not the largest value: one outlier sets that alone, and a sample
    may miss it."""
    r = pair.reference_values
    if r.size == 0 or not np.all(np.isfinite(r)):
        return 0.0
    largest = float(np.max(np.abs(r)))
    return largest * float(np.sqrt(np.mean(np.square(r / largest)))) if largest else 0.0  # scaled: no overflow in the squares


def _lower_precision(pair: Pair) -> Diagnosis | None:
    r, c = pair.reference_values, pair.candidate_values
    if not pair.finite or np.count_nonzero(r != c) < EVIDENCE:
        return None
    for level in LEVELS:
        for side, low, other in (("candidate", c, r), ("reference", r, c)):
            if np.array_equal(low, rounded(other, level)):
                with np.errstate(divide="ignore", invalid="ignore"):
                    worst = float(np.max(np.where(r == c, 0.0, np.abs(c - r) / np.abs(other))))
                message = (f"the {side} is the other side rounded to nearest {level} (max rel diff {worst:.2e}): "
                           f"the {side} was cast to or stored in {level}")
                return Diagnosis(KIND, {"level": level, "side": side, "max_rel_diff": worst}, message, 0.0)
    return None


def rounded(values: np.ndarray, level: str) -> np.ndarray:
    """float64 values rounded to nearest (ties to even) in `level`, as float64."""
    return widen(from_float64(values, LEVELS[level])).astype(np.float64)
