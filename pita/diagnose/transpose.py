"""transpose: the candidate is the reference with two axes swapped.

What it detects
    Two axes `i, j` such that `candidate ≈ reference.swapaxes(i, j)`, also when the shapes
    agree (a square matrix), which defeats every shape-based check. `axes` is the full axis
    order that maps the reference onto the candidate.

Why it happens in a port
    burn's `Linear` stores its weight as `[d_input, d_output]`, PyTorch's `nn.Linear` as
    `[out, in]`: a weight copied without transposing computes garbage on a square layer and
    fails with a shape error only on a non-square one. Also `transpose()` in burn swaps the last
    two axes where `.T` on a 3-D tensor in PyTorch reverses all of them.

Example
    reference `[[1, 2], [3, 4]]`, candidate `[[1, 3], [2, 4]]`: axes `[1, 0]`.

Remedy
    Transpose when copying weights by hand (`weight.transpose()`), or load PyTorch weights through
    burn-store's `PyTorchToBurnAdapter`, which transposes Linear weights.
"""

from __future__ import annotations

import itertools

import numpy as np

from pita.diagnose.base import Context, Diagnosis, explains

KIND = "transpose"
SHAPES_MAY_DIFFER = True


def axis_orders(ndim: int, swaps_only: bool):
    """Axis orders other than the identity: single swaps, or every other permutation."""
    identity = tuple(range(ndim))
    if swaps_only:
        for i, j in itertools.combinations(range(ndim), 2):
            order = list(identity)
            order[i], order[j] = j, i
            yield tuple(order)
    elif ndim <= 5:
        swaps = set(axis_orders(ndim, True))
        yield from (p for p in itertools.permutations(identity) if p != identity and p not in swaps)


def best_axis_order(reference: np.ndarray, candidate: np.ndarray, atol: float, swaps_only: bool):
    """The axis order that explains the difference, with its residual, or None."""
    if reference.ndim < 2 or not (np.all(np.isfinite(reference)) and np.all(np.isfinite(candidate))):
        return None
    r, c = reference.astype(np.float64), candidate.astype(np.float64)
    before = float(np.max(np.abs(c - r))) if r.shape == c.shape else np.inf
    for order in axis_orders(r.ndim, swaps_only):
        moved = np.transpose(r, order)
        if moved.shape != c.shape:
            continue
        residual = float(np.max(np.abs(c - moved), initial=0.0))
        if explains(residual, before, atol) and residual <= max(atol, 1e-6 * float(np.max(np.abs(r), initial=0.0))):
            return list(order), residual
    return None


def detect(reference: np.ndarray, candidate: np.ndarray, atol: float, context: Context) -> Diagnosis | None:
    found = best_axis_order(reference, candidate, atol, swaps_only=True)
    if found is None:
        return None
    order, residual = found
    swapped = [axis for axis, moved in enumerate(order) if axis != moved]
    message = f"candidate = reference with axes {swapped[0]} and {swapped[1]} swapped (axes {order}; after transposing: max|diff| {residual:.2e})"
    return Diagnosis(KIND, {"axes": order}, message, residual)
