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

from pita.diagnose.base import Diagnosis, Pair, explained_limit

KIND = "transpose"
SHAPES_MAY_DIFFER = True
EXACT = 1e-6  # an axis order must reproduce the values to this fraction of max|reference| (or atol)


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


def best_axis_order(pair: Pair, swaps_only: bool):
    """The axis order that explains the difference, with its residual, or None. Each order is
    checked on the sampled candidate elements against the reference elements it says they came
    from, so a tensor of any size costs at most a sample of reads per order."""
    ndim = len(pair.shape)
    if ndim < 2 or not pair.comparable or not np.all(np.isfinite(pair.candidate_values)):
        return None
    limit = exact_limit(pair)
    moving = [axis for axis in range(ndim) if pair.shape[axis] != 1]
    for order in axis_orders(ndim, swaps_only):
        if tuple(pair.shape[axis] for axis in order) != pair.candidate_shape:
            continue
        if [axis for axis in order if pair.shape[axis] != 1] == moving:
            continue  # moves only size-1 axes: the same elements in the same order, already compared
        residual = pair.residual_under(lambda positions, order=order: source_positions(positions, order, pair), limit)
        if residual is not None:
            return list(order), residual
    return None


def source_positions(candidate_positions: np.ndarray, order, pair: Pair) -> np.ndarray:
    """The reference's flat positions of candidate elements, if candidate = reference.transpose(order)."""
    index = np.unravel_index(candidate_positions, pair.candidate_shape)
    source = [None] * len(order)
    for axis, moved in enumerate(order):
        source[moved] = index[axis]
    flat = np.zeros(np.shape(candidate_positions), dtype=np.int64)
    for position, size in zip(source, pair.shape):  # np.ravel_multi_index takes fewer axes than a dump may have (64)
        flat = flat * size + position
    return flat


def exact_limit(pair: Pair) -> float:
    """The residual an axis order may leave: it explains the error (when the shapes agree) and
    reproduces the values nearly exactly, so that a symmetric-looking tensor is not called transposed."""
    r = pair.reference_values
    before = float(np.max(np.abs(pair.candidate_values - r))) if pair.same_shape else np.inf
    return min(explained_limit(before, pair.atol), max(pair.atol, EXACT * float(np.max(np.abs(r), initial=0.0))))


def detect(pair: Pair) -> Diagnosis | None:
    found = best_axis_order(pair, swaps_only=True)
    if found is None:
        return None
    order, residual = found
    swapped = [axis for axis, moved in enumerate(order) if axis != moved]
    message = f"candidate = reference with axes {swapped[0]} and {swapped[1]} swapped (axes {order}; after transposing: max|diff| {residual:.2e})"
    return Diagnosis(KIND, {"axes": order}, message, residual)
