"""sign: the candidate is the reference with its sign flipped.

What it detects
    `candidate ≈ −reference` element by element, with the error left after negating far below
    the error before.

Why it happens in a port
    A loss ported as `-log p` where the original minimised `log p` (or the reverse), a gradient
    applied with `+` instead of `-`, an argument order swapped in a difference (`a - b` for
    `b - a`), `mask_where`/`torch.where` branches exchanged on a symmetric pair.

Example
    reference `[0.5, -1.0, 2.0]`, candidate `[-0.5, 1.0, -2.0]`.

Remedy
    Find the subtraction or sign convention that differs; compare the update rule term by term.
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import Context, Diagnosis, explains

KIND = "sign"


def detect(reference: np.ndarray, candidate: np.ndarray, atol: float, context: Context) -> Diagnosis | None:
    r, c = reference.astype(np.float64).ravel(), candidate.astype(np.float64).ravel()
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(c))) or np.max(np.abs(r), initial=0.0) <= atol:
        return None
    residual = float(np.max(np.abs(c + r)))
    if not explains(residual, float(np.max(np.abs(c - r))), atol):
        return None
    return Diagnosis(KIND, {}, f"candidate = −reference (after negating: max|diff| {residual:.2e})", residual,
                     tentative=int(np.count_nonzero(r)) < 2)
