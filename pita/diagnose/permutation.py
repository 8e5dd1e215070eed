"""permutation: the candidate holds the reference's values in another order.

What it detects
    Either an axis order other than a single swap (`axes`, e.g. `[2, 1, 0]`), or the reference's
    rows (slices along axis 0) in another order (`rows`: candidate row i is reference row
    `rows[i]`), e.g. a shuffled batch.

Why it happens in a port
    PyTorch's `.T` on a 3-D tensor reverses every axis, `permute` with the axes of the other
    framework's layout (`[B, T, F]` against `[T, B, F]`, NCHW against NHWC); a data loader that
    shuffles on one side only, heads stacked in another order (gate and projection blocks of a
    packed tensor moved whole are `block_permutation`).

Example
    reference rows `[a, b, c]`, candidate rows `[b, c, a]`: rows `[1, 2, 0]`.

Remedy
    For axes, `permute` to the reference's layout before comparing or porting; for rows, make
    both sides iterate the data in the same order (no shuffle, same sampler seed) or split
    stacked blocks in the reference's order.
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import SAMPLE, Diagnosis, Pair, read
from pita.diagnose.transpose import best_axis_order

KIND = "permutation"
SHAPES_MAY_DIFFER = True
SUPERSEDES = ("rows",)  # rows moved are rows that differ: where they came from says more
KEY_COLUMNS = 4  # columns (or all of a shorter row) that must identify every row
MATCH_WORK = 1 << 22  # element comparisons allowed among rows whose keys are within atol


def detect(pair: Pair) -> Diagnosis | None:
    found = best_axis_order(pair, swaps_only=False)
    if found is not None:
        order, residual = found
        return Diagnosis(KIND, {"axes": order}, f"candidate = reference with axes reordered to {order} (after permuting: max|diff| {residual:.2e})", residual)
    return _rows(pair)


def _rows(pair: Pair) -> Diagnosis | None:
    """Rows matched on a few key columns, then checked on the whole sample."""
    if not pair.same_shape or not pair.comparable or len(pair.shape) < 1 or pair.shape[0] < 2:
        return None
    n = pair.shape[0]
    width = pair.size // n
    columns = _key_columns(n, width)
    if columns is None:
        return None
    key_positions = (np.arange(n, dtype=np.int64)[:, None] * width + columns[None, :]).ravel()
    reference_keys = read(pair.reference, key_positions).reshape(n, -1)
    candidate_keys = read(pair.candidate, key_positions).reshape(n, -1)
    if not (np.all(np.isfinite(reference_keys)) and np.all(np.isfinite(candidate_keys))):
        return None
    rows = match_rows(reference_keys, candidate_keys, pair.atol)
    if rows is None or np.unique(rows).size != n or np.array_equal(rows, np.arange(n)):
        return None
    residual = pair.residual_under(lambda positions: rows[positions // width] * width + positions % width, pair.atol)
    if residual is None:
        return None
    shown = rows.tolist() if n <= 16 else "[" + ", ".join(map(str, rows[:16].tolist())) + ", …]"
    moved = int(np.count_nonzero(rows != np.arange(n)))
    message = f"candidate rows are reference rows {shown} ({moved} of {n} rows moved; after reordering: max|diff| {residual:.2e})"
    return Diagnosis(KIND, {"rows": rows.tolist()}, message, residual)


def _key_columns(rows: int, width: int) -> np.ndarray | None:
    """Evenly spread columns, as many as a sample holds for every row; None when too few fit."""
    count = min(width, SAMPLE // rows)
    if count < min(width, KEY_COLUMNS):
        return None
    return np.unique(np.linspace(0, width - 1, count).astype(np.int64))


def match_rows(reference_keys: np.ndarray, candidate_keys: np.ndarray, atol: float) -> np.ndarray | None:
    """For each candidate row, the reference row within atol of it on every key column (the
    closest, if several), or None when some candidate row has none. Reference rows are sorted by
    the key column that varies most, so each candidate row is set only against the rows near it."""
    column = int(np.argmax(np.ptp(reference_keys, axis=0)))
    order = np.argsort(reference_keys[:, column], kind="stable")
    keys = reference_keys[order, column]
    low = np.searchsorted(keys, candidate_keys[:, column] - atol, "left")
    high = np.searchsorted(keys, candidate_keys[:, column] + atol, "right")
    if int(np.sum(high - low)) * reference_keys.shape[1] > MATCH_WORK:
        return None  # too many near ties to match cheaply
    rows = np.empty(candidate_keys.shape[0], dtype=np.int64)
    for row, (start, stop) in enumerate(zip(low.tolist(), high.tolist())):
        near = order[start:stop]
        distance = np.max(np.abs(reference_keys[near] - candidate_keys[row]), axis=1, initial=0.0)
        if near.size == 0 or distance.min() > atol:
            return None
        rows[row] = near[int(np.argmin(distance))]
    return rows
