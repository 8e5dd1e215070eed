"""permutation: the candidate holds the reference's values in another order.

What it detects
    Either an axis order other than a single swap (`axes`, e.g. `[2, 1, 0]`), or the reference's
    rows (slices along axis 0) in another order (`rows`: candidate row i is reference row
    `rows[i]`), e.g. a shuffled batch.

Why it happens in a port
    PyTorch's `.T` on a 3-D tensor reverses every axis, `permute` with the axes of the other
    framework's layout (`[B, T, F]` against `[T, B, F]`, NCHW against NHWC); a data loader that
    shuffles on one side only, gate or head blocks stacked in another order (LSTM i,f,g,o).

Example
    reference rows `[a, b, c]`, candidate rows `[b, c, a]`: rows `[1, 2, 0]`.

Remedy
    For axes, `permute` to the reference's layout before comparing or porting; for rows, make
    both sides iterate the data in the same order (no shuffle, same sampler seed) or split
    stacked blocks in the reference's order.
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import Context, Diagnosis
from pita.diagnose.transpose import best_axis_order

KIND = "permutation"
SHAPES_MAY_DIFFER = True
MAX_ROW_PAIRS = 4_000_000  # rows² · row size above which matching rows is skipped


def detect(reference: np.ndarray, candidate: np.ndarray, atol: float, context: Context) -> Diagnosis | None:
    found = best_axis_order(reference, candidate, atol, swaps_only=False)
    if found is not None:
        order, residual = found
        return Diagnosis(KIND, {"axes": order}, f"candidate = reference with axes reordered to {order} (after permuting: max|diff| {residual:.2e})", residual)
    return _rows(reference, candidate, atol)


def _rows(reference: np.ndarray, candidate: np.ndarray, atol: float) -> Diagnosis | None:
    if reference.shape != candidate.shape or reference.ndim < 1 or reference.shape[0] < 2:
        return None
    n = reference.shape[0]
    r = reference.reshape(n, -1).astype(np.float64)
    c = candidate.reshape(n, -1).astype(np.float64)
    if n * n * r.shape[1] > MAX_ROW_PAIRS or not (np.all(np.isfinite(r)) and np.all(np.isfinite(c))):
        return None
    distance = np.max(np.abs(c[:, None, :] - r[None, :, :]), axis=2)  # [candidate row, reference row]
    rows = np.argmin(distance, axis=1)
    residual = float(distance[np.arange(n), rows].max())
    if len(set(rows.tolist())) != n or residual > atol or np.array_equal(rows, np.arange(n)):
        return None
    shown = rows.tolist() if n <= 16 else rows[:16].tolist() + ["…"]
    moved = int(np.count_nonzero(rows != np.arange(n)))
    message = f"candidate rows are reference rows {shown} ({moved} of {n} rows moved; after reordering: max|diff| {residual:.2e})"
    return Diagnosis(KIND, {"rows": rows.tolist()}, message, residual)
