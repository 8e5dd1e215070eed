"""scale: every element of the candidate is the reference times one common factor.

What it detects
    A factor `k` (not 1) such that `candidate ≈ k × reference` element by element, with the error
    left after dividing by `k` far below the error before and below the reference's own size (a
    huge `k` shrinks any candidate to about 0), read off at least two nonzero elements:
    any two numbers are a scale of each other, so a single element (a loss) is a scale only when
    `k` is a count (an integer of at least 2, or its inverse: a batch size, a number of classes, of
    accumulation steps), and only beside another tensor that shows the same factor.

Why it happens in a port
    A loss summed where PyTorch averaged: burn's `backward()` seeds the root with ones, so a
    per-sample loss backpropagates its sum and every gradient is batch-size times larger. Also:
    a learning rate or loss weight ported with a different convention, `reduction="sum"` against
    `"mean"`, a missing `1/(1-p)` dropout scale.

Example
    reference (torch, mean loss) `bias.grad [-0.65]`, candidate (burn, no mean) `[-2.6]`:
    `candidate = 4 × reference`, and 4 is the batch size recorded in the dumps.

Remedy
    Find where the factor enters. When it equals the batch size, reduce the loss with `.mean()`
    before `backward()` (pita's `backward_scalar` guard rejects an unreduced loss).
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import Context, Diagnosis, Pair, explains, format_factor

KIND = "scale"
SUPERSEDES = ("slice_scale",)  # one factor for every slice is the simpler story
NOT_A_SCALE = 1e-6  # |k - 1| below this is float32 rounding, not a scale


def detect(pair: Pair) -> Diagnosis | None:
    if not pair.finite:
        return None
    r, c = pair.reference_values, pair.candidate_values
    nonzero = r != 0
    if not nonzero.any():
        return None
    factor = float(np.median(c[nonzero] / r[nonzero]))
    if factor == 0 or not np.isfinite(factor) or abs(factor - 1) < NOT_A_SCALE or abs(factor + 1) < NOT_A_SCALE:
        return None
    before = float(np.max(np.abs(c - r)))
    residual = float(np.max(np.abs(c / factor - r)))
    # Dividing by a huge factor shrinks any candidate to about 0, leaving |reference| as the
    # residual, tiny beside `before`: the scaled candidate must also reproduce the reference.
    if not explains(residual, before, pair.atol) or not explains(residual, float(np.max(np.abs(r))), pair.atol):
        return None
    shown = format_factor(factor)
    message = f"candidate = {shown} × reference (after dividing by {shown}: max|diff| {residual:.2e})"
    hint = _batch_hint(factor, pair.context)
    support = int(np.count_nonzero(nonzero))
    if support < 2 and not _a_count(factor):
        return None
    return Diagnosis(
        kind=KIND,
        params={"factor": factor, "support": support, "hint": hint},
        message=f"{message}; {hint}" if hint else message,
        residual=residual,
        tentative=support < 2,
        precision=2 * pair.epsilon * abs(factor),  # a ratio of two rounded values
    )


def _a_count(factor: float) -> bool:
    """Whether `factor` or its inverse is an integer of at least 2 (to four decimals)."""
    return any(k >= 2 and abs(k - round(k)) <= 1e-4 * k for k in (abs(factor), 1 / abs(factor)))


def _batch_hint(factor: float, context: Context) -> str:
    for batch in sorted(context.batch_sizes):
        if batch > 1 and abs(factor - batch) <= 1e-4 * batch:
            return f"{batch} is the batch size recorded in the dumps: the candidate's loss was probably not reduced (mean) before backward"
        if batch > 1 and abs(factor * batch - 1) <= 1e-4:
            return f"1/{batch} is one over the batch size recorded in the dumps: the reference's loss was probably not reduced (mean) before backward"
    return ""
