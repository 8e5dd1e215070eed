"""rounding: the difference is rounding noise, not a bug.

What it detects
    Either a few units in the last place (summation order, fused multiply-add, a different
    reduction tree), or a relative error at the level of float16 (2^-11) or bfloat16 (2^-8)
    rounding: one side computed or stored in lower precision.

Why it happens in a port
    Different summation orders in matmul and reductions (burn and PyTorch block their loops
    differently), `mean` as `sum/n` against `sum*(1/n)`; weights or activations cast to f16/bf16
    on one side (mixed precision, a checkpoint saved in half precision).

Example
    reference `0.0425`, candidate `0.042500019` (8 ULP apart): summation-order noise.

Remedy
    For ULP-level noise, compare with `--ulp N` (or a small `--rtol`); it is not a porting error.
    For f16/bf16-level differences, check which side casts, and compare in the same precision.
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import Context, Diagnosis

KIND = "rounding"
NOISE_ULPS = 64  # up to this many float32 ULPs counts as order-of-operations noise
LEVELS = (("float16", 2.0**-11), ("bfloat16", 2.0**-8))


def detect(reference: np.ndarray, candidate: np.ndarray, atol: float, context: Context) -> Diagnosis | None:
    from pita.stats import ulp_distance

    r, c = reference.astype(np.float64).ravel(), candidate.astype(np.float64).ravel()
    if r.size == 0 or not (np.all(np.isfinite(r)) and np.all(np.isfinite(c))):
        return None
    ulps = ulp_distance(reference.astype(np.float32).ravel(), candidate.astype(np.float32).ravel())
    worst = int(ulps.max())
    if 0 < worst <= NOISE_ULPS:
        message = f"at most {worst} ULP apart: summation-order noise; --ulp {worst} would pass"
        return Diagnosis(KIND, {"level": "ulp", "ulps": worst}, message, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(r == 0, np.where(c == 0, 0.0, np.inf), np.abs(c - r) / np.abs(r))
    worst_relative = float(relative.max())
    for level, unit in LEVELS:
        if worst_relative <= unit:
            message = f"relative error at most {worst_relative:.2e}, the size of {level} rounding ({unit:.1e}): one side computed or stored in {level}"
            return Diagnosis(KIND, {"level": level, "max_rel_diff": worst_relative}, message, 0.0)
    return None
