"""Where a pair's differences lie: the histogram of ULP distances and the error map.

Both come from one streaming pass over the pair (a chunk at a time, so a `FileTensor` pair holds
only a chunk of each side in memory); compare runs the pass only when asked (`pita compare
--histogram` or `--html`), so a plain comparison costs nothing more.

- The ULP histogram counts elements by their ULP distance (`pita.stats.ulp_distance`) in log2
  bins: 0, 1, 2–3, 4–7, …, bin k holding distances 2**(k-1) .. 2**k - 1, plus `unbounded` for pairs
  with no finite distance (NaN against a number, an infinity against anything else, an overflow).
  Float pairs only: integers and bools compare exactly and have no ULP distance.
- The error map is the tensor seen as a 2-D grid (a 1-D tensor as one row; an N-D tensor as
  `prod(shape[:-1])` rows of `shape[-1]`), cut into at most MAX_CELLS × MAX_CELLS blocks of
  neighbouring rows and columns; each cell holds the largest |candidate - reference| in its block
  (infinite where a NaN or an infinity fails).
"""

from __future__ import annotations

import math

import numpy as np

from pita.filetensor import flat_chunks
from pita.stats_contract import ULP_UNBOUNDED
from pita.stats_numpy import CHUNK, as_float64, both_float, exact_difference, float_ulp_distance

MAX_CELLS = 64  # rows and columns of an error map at most
_LOW_BITS = 32  # distances are split here so that their bit length is found exactly in float64


def bin_edges(bins: int) -> list[int]:
    """The lower bounds of the first `bins` log2 bins: 0, 1, 2, 4, 8, … One list per length, shared
    by every histogram of that length (100,000 tensors would otherwise hold 100,000 copies of it
    and their large ints, 70 MB): read it, never change it."""
    return _BIN_EDGES[bins] if 0 <= bins < len(_BIN_EDGES) else [0] + [1 << (k - 1) for k in range(1, bins)]


_BIN_EDGES = [[0] + [1 << (k - 1) for k in range(1, bins)] for bins in range(67)]


def bin_labels(edges: list[int]) -> list[str]:
    """`0`, `1`, `2–3`, `4–7`, … `64–127`; from 128 on by the lower bound only (`2^7`, meaning
    2**7 .. 2**8 - 1), short enough to sit under a bar."""
    return [str(low) if low <= 1 else (f"{low}–{2 * low - 1}" if low < 128 else f"2^{k - 1}") for k, low in enumerate(edges)]


def bin_range(edges: list[int], k: int) -> str:
    """Bin k's distances in full: `0`, `1`, `2–3`, …, `128–255`."""
    low = edges[k]
    return str(low) if low <= 1 else f"{low}–{2 * low - 1}"


def ulp_bins(distance: np.ndarray) -> np.ndarray:
    """The log2 bin of each finite ULP distance (int64, below ULP_UNBOUNDED): its bit length."""
    distance = distance.astype(np.int64, copy=False)
    high = distance >> _LOW_BITS
    low = distance & ((1 << _LOW_BITS) - 1)
    # Both halves are below 2**32, exact in float64: frexp's exponent is the bit length (0 for 0).
    return np.where(high > 0, _LOW_BITS + np.frexp(high.astype(np.float64))[1], np.frexp(low.astype(np.float64))[1])


class Distribution:
    """The histogram and, when `shape` is given, the error map of one pair, filled a chunk at a time."""

    def __init__(self, floats: bool, shape: tuple[int, ...] | None):
        self.floats = floats
        self.counts = np.zeros(65, dtype=np.int64)  # bit lengths 0..64 (a capped distance has 63)
        self.unbounded = 0
        self.view = as_2d(shape) if shape is not None else None
        if self.view is not None:
            rows, columns = self.view
            self.cells = (min(rows, MAX_CELLS), min(columns, MAX_CELLS))
            self.grid = np.zeros(self.cells[0] * self.cells[1])

    def add(self, start: int, reference: np.ndarray, candidate: np.ndarray) -> None:
        """Elements start.. of the pair, flat."""
        if self.floats:
            x, y = as_float64(reference), as_float64(candidate)
            distance = float_ulp_distance(reference, candidate, x, y)
            unbounded = distance >= ULP_UNBOUNDED
            self.unbounded += int(unbounded.sum())
            self.counts += np.bincount(ulp_bins(distance[~unbounded]), minlength=self.counts.size)[: self.counts.size]
            if self.view is not None:
                self._map(start, _float_difference(x, y))
        elif self.view is not None:
            self._map(start, exact_difference(reference, candidate)[1])

    def _map(self, start: int, diff: np.ndarray) -> None:
        rows, columns = self.view
        flat = np.arange(start, start + diff.size, dtype=np.int64)
        row, column = flat // columns, flat % columns
        cell = (row * self.cells[0] // rows) * self.cells[1] + column * self.cells[1] // columns
        np.maximum.at(self.grid, cell, diff)

    def histogram(self) -> dict | None:
        """`{edges, counts, unbounded}` up to the last non-empty bin; None for a pair that is not
        two floats."""
        if not self.floats:
            return None
        used = int(np.flatnonzero(self.counts)[-1]) + 1 if self.counts.any() else 1
        return {"edges": bin_edges(used), "counts": self.counts[:used].tolist(), "unbounded": self.unbounded}

    def error_map(self, shape: tuple[int, ...]) -> dict:
        rows, columns = self.view
        grid = self.grid.reshape(self.cells)
        return {
            "shape": list(shape),
            "view": [rows, columns],
            "cells": list(self.cells),
            "value": "max |candidate - reference|",
            "grid": [[float(v) for v in row] for row in grid],
        }


def as_2d(shape) -> tuple[int, int]:
    """The 2-D view an error map shows: a 1-D tensor as one row; N-D as rows of the last axis."""
    shape = tuple(int(d) for d in shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return 1, max(shape[0], 1)
    return max(math.prod(shape[:-1]), 1), max(shape[-1], 1)


def view_note(shape) -> str:
    """How the map shows a tensor of `shape`, in words."""
    rows, columns = as_2d(shape)
    if len(shape) == 2:
        return f"{rows} rows × {columns} columns"
    if len(shape) <= 1:
        return f"one row of {columns} elements"
    return f"reshaped from {list(shape)} to {rows} × {columns} (all leading axes as rows, the last axis as columns)"


def _float_difference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|y - x| where both are finite; 0 for equal non-finite values (NaN with NaN), else inf."""
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(x) & np.isfinite(y)
        same = (x == y) | (np.isnan(x) & np.isnan(y))
        return np.where(finite, np.abs(y - x), np.where(same, 0.0, np.inf))


def measure_distribution(reference, candidate, *, error_map: bool) -> tuple[dict | None, dict | None]:
    """(ULP histogram, error map or None) of a pair with the same number of elements (arrays or
    `FileTensor`s), in one pass of CHUNK elements at a time. The map follows the reference's shape."""
    if reference.size != candidate.size:
        raise ValueError(f"a distribution needs tensors of the same size, got {reference.size} and {candidate.size}")
    shape = tuple(reference.shape)
    distribution = Distribution(both_float(reference.dtype, candidate.dtype), shape if error_map else None)
    chunks = zip(flat_chunks(reference, 0, reference.size, CHUNK), flat_chunks(candidate, 0, candidate.size, CHUNK))
    for start, (r, c) in zip(range(0, reference.size, CHUNK), chunks):
        distribution.add(start, r, c)
    return distribution.histogram(), distribution.error_map(shape) if error_map else None


def merged_histogram(histograms: list[dict]) -> dict | None:
    """The sum of several histograms (one per tensor): the comparison's overall distribution."""
    histograms = [h for h in histograms if h]
    if not histograms:
        return None
    bins = max(len(h["counts"]) for h in histograms)
    counts = [sum(h["counts"][k] for h in histograms if k < len(h["counts"])) for k in range(bins)]
    return {"edges": bin_edges(bins), "counts": counts, "unbounded": sum(h["unbounded"] for h in histograms)}
