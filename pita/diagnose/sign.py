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

from pita.diagnose.base import Diagnosis, Pair, explains

KIND = "sign"


def detect(pair: Pair) -> Diagnosis | None:
    r, c = pair.reference_values, pair.candidate_values
    if not pair.finite or np.max(np.abs(r), initial=0.0) <= pair.atol:
        return None
    residual = float(np.max(np.abs(c + r)))
    if not explains(residual, float(np.max(np.abs(c - r))), pair.atol):
        return None
    return Diagnosis(KIND, {}, f"candidate = −reference (after negating: max|diff| {residual:.2e})", residual,
                     tentative=int(np.count_nonzero(r)) < 2)
