"""Diagnosis: why two tensors differ. Each rule is a module with a docstring in fixed sections
(what it detects, why it happens in a port, example, remedy) and a `detect` function."""

from __future__ import annotations

import numpy as np

from pita.diagnose import nan, offset, permutation, rounding, scale, sign, transpose
from pita.diagnose.base import Context, Diagnosis

# Checked in this order; every rule that fits is reported. Rules that can explain a shape
# conflict (an axis order) set SHAPES_MAY_DIFFER.
RULES = (nan, scale, sign, offset, transpose, permutation, rounding)

__all__ = ["Context", "Diagnosis", "RULES", "corroborate", "explain"]


def explain(reference: np.ndarray, candidate: np.ndarray, tolerance, context: Context) -> list[Diagnosis]:
    """Every rule's explanation of a failing tensor pair that fits."""
    same_shape = reference.shape == candidate.shape
    rules = [rule for rule in RULES if same_shape or getattr(rule, "SHAPES_MAY_DIFFER", False)]
    found = (rule.detect(reference, candidate, tolerance.atol, context) for rule in rules)
    return [d for d in found if d is not None]


def corroborate(per_tensor: list[list[Diagnosis]]) -> None:
    """Keeps a tentative finding (say, a factor read off a single element) only where a firm
    finding of the same kind and parameters stands on another tensor; drops it otherwise."""
    firm = {(d.kind, _key(d)) for found in per_tensor for d in found if not d.tentative}
    for found in per_tensor:
        kept = [d for d in found if not d.tentative or (d.kind, _key(d)) in firm]
        for d in kept:
            if d.tentative:
                d.message += " (one element; the same finding fits the other tensors)"
        found[:] = kept


def _key(diagnosis: Diagnosis):
    return tuple(sorted((k, round(v, 4)) for k, v in diagnosis.params.items() if isinstance(v, float)))
