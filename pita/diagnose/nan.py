"""nan: one side has NaN where the other has a number.

What it detects
    NaN elements present in one tensor but not at the same positions in the other: how many,
    on which side, and the first position.

Why it happens in a port
    An overflow one side guards against and the other does not (softplus without a threshold,
    `exp` of large logits), a fully masked attention row (-inf everywhere gives NaN in softmax),
    `log` of zero or of a negative number, `0/0` in a normalisation with a different `eps`.

Example
    reference `[100.0]`, candidate `[nan]` (softplus gradient computed as inf/inf).

Remedy
    Find the first operation that produces the NaN (dump intermediates, compare in order); add
    the guard the other side has (threshold, clamp, eps), or handle the edge case explicitly.
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import Context, Diagnosis

KIND = "nan"


def detect(reference: np.ndarray, candidate: np.ndarray, atol: float, context: Context) -> Diagnosis | None:
    if reference.dtype.kind != "f" and candidate.dtype.kind != "f":
        return None
    r_nan, c_nan = np.isnan(reference.astype(np.float64)), np.isnan(candidate.astype(np.float64))
    for side, own, other in (("candidate", c_nan, r_nan), ("reference", r_nan, c_nan)):
        stray = own & ~other
        if stray.any():
            count = int(np.count_nonzero(stray))
            first = [int(i) for i in np.unravel_index(int(np.argmax(stray.ravel())), stray.shape)]
            message = f"{side} has {count} NaN where the other side has numbers (first at {first})"
            return Diagnosis(KIND, {"side": side, "count": count, "first_index": first}, message, float("nan"))
    return None
