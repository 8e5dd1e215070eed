"""rounding: the difference is rounding noise, not a bug.

What it detects
    Either a few units in the last place over the whole tensor (at most 64 in float32 and
    float64, 4 in float16 and bfloat16: summation order, fused multiply-add, a different
    reduction tree), or one side equal, element by element, to the other side rounded to
    nearest in float16, bfloat16 or float32 (at least four elements differ, and every other
    element already holds a value of that format): one side was cast to or stored in lower
    precision. Values that merely fit the format (integers, say) are not enough.

Why it happens in a port
    Different summation orders in matmul and reductions (burn and PyTorch block their loops
    differently), `mean` as `sum/n` against `sum*(1/n)`; weights or activations cast to f16/bf16
    on one side (mixed precision, a checkpoint saved in half precision), a float64 reference
    against a float32 port.

Example
    reference `0.0425`, candidate `0.042500019` (8 ULP apart): summation-order noise.

Remedy
    For ULP-level noise, compare with `--ulp N` (or a small `--rtol`); it is not a porting error.
    For f16/bf16-level differences, check which side casts, and compare in the same precision.
"""

from __future__ import annotations

import math

import numpy as np

from pita.diagnose.base import Diagnosis, Pair
from pita.dtypes import dtype_name, from_float64, is_float, widen

KIND = "rounding"
# ULPs (in the coarser dtype) that count as order-of-operations noise: 4 float16 ULPs are up to
# 0.4% of a value, 64 float32 ULPs 0.0008%.
NOISE_ULPS = {"F16": 4, "BF16": 4}
WIDE_NOISE_ULPS = 64  # float32 and float64
EVIDENCE = 4  # differing elements needed before a precision is named
LEVELS = {"float16": "F16", "bfloat16": "BF16", "float32": "F32"}  # checked in this order


def detect(pair: Pair) -> Diagnosis | None:
    if not (is_float(pair.reference.dtype) and is_float(pair.candidate.dtype)):
        return None
    return _ulp_noise(pair) or _lower_precision(pair)


def _ulp_noise(pair: Pair) -> Diagnosis | None:
    """Every element within a few ULPs; `stats` counted them over the whole tensor."""
    stats = pair.stats
    if stats is None or stats.max_ulp is None or not math.isfinite(stats.max_abs_diff):
        return None
    coarser = min((pair.reference.dtype, pair.candidate.dtype), key=lambda d: d.itemsize)
    worst = stats.max_ulp
    if not 0 < worst <= NOISE_ULPS.get(dtype_name(coarser), WIDE_NOISE_ULPS):
        return None
    return Diagnosis(KIND, {"level": "ulp", "ulps": worst}, f"at most {worst} ULP apart: summation-order noise", 0.0)


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
