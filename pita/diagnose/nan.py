"""nan: one side has NaN where the other has a number.

What it detects
    NaN elements present in one tensor but not at the same positions in the other: how many,
    on which side, and the first position (in a tensor diagnosed on a sample: within the sample).

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

from pita.diagnose.base import Diagnosis, Pair
from pita.dtypes import is_float

KIND = "nan"


def detect(pair: Pair) -> Diagnosis | None:
    if not (is_float(pair.reference.dtype) or is_float(pair.candidate.dtype)):
        return None
    r_nan, c_nan = np.isnan(pair.reference_values), np.isnan(pair.candidate_values)
    for side, own, other in (("candidate", c_nan, r_nan), ("reference", r_nan, c_nan)):
        stray = own & ~other
        if stray.any():
            count = int(np.count_nonzero(stray))
            first = [int(i) for i in np.unravel_index(int(pair.positions[np.argmax(stray)]), pair.shape)]
            where = f"one at {first}" if pair.sampled else f"first at {first}"
            message = f"{side} has {count} NaN where the other side has numbers ({where})"
            return Diagnosis(KIND, {"side": side, "count": count, "first_index": first}, message, float("nan"))
    return None
