"""rounding: the difference is rounding noise, not a bug.

What it detects
    Either a few units in the last place (summation order, fused multiply-add, a different
    reduction tree), or one side holding only values that float16 or bfloat16 can represent,
    within a few of that format's rounding steps (2^-11, 2^-8 relative) of the other side:
    one side computed or stored in lower precision.

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
ROUNDING_STEPS = 4  # accumulated rounding in the low-precision side, in units of its step


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
    if r.size < 4:
        return None  # a few values are representable in float16 by chance
    for level, unit in LEVELS:
        for side, values, other in (("candidate", c, r), ("reference", r, c)):
            if worst_relative <= ROUNDING_STEPS * unit and representable(values, level) and not representable(other, level):
                message = (f"the {side} holds only {level} values, within {worst_relative:.2e} relative of the other side "
                           f"({level} rounds at {unit:.1e}): the {side} was computed or stored in {level}")
                return Diagnosis(KIND, {"level": level, "side": side, "max_rel_diff": worst_relative}, message, 0.0)
    return None


def representable(values: np.ndarray, level: str) -> bool:
    """Whether every value survives a round trip through float16 / bfloat16 unchanged."""
    as32 = values.astype(np.float32)
    if level == "float16":
        with np.errstate(over="ignore"):
            return bool(np.all(as32.astype(np.float16).astype(np.float32) == as32))
    return bool(np.all(as32.view(np.uint32) & 0xFFFF == 0))
