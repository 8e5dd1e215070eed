"""offset: the candidate is the reference plus one constant.

What it detects
    A value `v` such that `candidate ≈ reference + v` element by element, with the error left
    after subtracting `v` far below the error before.

Why it happens in a port
    A bias added twice or not at all, a normalisation constant (`eps`, a mean) applied on one
    side only, a label or index shifted by one, a padding value that differs.

Example
    reference `[0.1, 0.2, 0.3]`, candidate `[0.6, 0.7, 0.8]`: `candidate = reference + 0.5`.

Remedy
    Look for an additive term present on one side only: biases, `eps`, mean subtraction.
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import Diagnosis, Pair, explains

KIND = "offset"


def detect(pair: Pair) -> Diagnosis | None:
    r, c = pair.reference_values, pair.candidate_values
    if r.size == 0 or not pair.finite:
        return None
    value = float(np.median(c - r))
    if abs(value) <= pair.atol:
        return None
    residual = float(np.max(np.abs(c - r - value)))
    if not explains(residual, float(np.max(np.abs(c - r))), pair.atol):
        return None
    return Diagnosis(KIND, {"value": value}, f"candidate = reference {'+' if value > 0 else '−'} {abs(value):.6g} "
                     f"(after subtracting it: max|diff| {residual:.2e})", residual, tentative=r.size < 2,
                     precision=2 * pair.epsilon * float(np.max(np.maximum(np.abs(r), np.abs(c)))))
