"""Diagnosis: why two tensors differ. Each rule is a module with a docstring in fixed sections
(what it detects, why it happens in a port, example, remedy) and a `detect` function."""

from __future__ import annotations

import numpy as np

from pita.diagnose import scale
from pita.diagnose.base import Context, Diagnosis

RULES = (scale,)

__all__ = ["Context", "Diagnosis", "RULES", "corroborate", "explain"]


def explain(reference: np.ndarray, candidate: np.ndarray, tolerance, context: Context) -> list[Diagnosis]:
    """Every rule's explanation of a failing tensor pair that fits."""
    found = (rule.detect(reference, candidate, tolerance.atol, context) for rule in RULES)
    return [d for d in found if d is not None]


def corroborate(per_tensor: list[list[Diagnosis]]) -> None:
    """Keeps a tentative finding (say, a factor read off a single element) only where a firm
    finding of the same kind and parameters stands on another tensor; drops it otherwise."""
    firm = {(d.kind, _key(d)) for found in per_tensor for d in found if not d.tentative}
    for found in per_tensor:
        kept = [d for d in found if not d.tentative or (d.kind, _key(d)) in firm]
        for d in kept:
            if d.tentative:
                d.message += " (one element; the same factor fits the other tensors)"
        found[:] = kept


def _key(diagnosis: Diagnosis):
    factor = diagnosis.params.get("factor")
    return None if factor is None else round(factor, 4)
