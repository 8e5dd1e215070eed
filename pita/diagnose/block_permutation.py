"""block_permutation: the candidate is the reference with equal blocks of one axis in another order.

What it detects
    `k` equal blocks (2, 3 or 4, each at least two indices wide) along axis 0 or the last axis
    (`axis`) in another order: candidate block i is reference block `permutation[i]`,
    reproducing the values nearly exactly (to 1e-6 of max|reference|, or atol, as `transpose`
    does). When the tensor's name says what
    is packed, the blocks are named (`layout`, `names`: the reference's blocks in order):
    PyTorch's GRU packs its gates r|z|n and its LSTM i|f|g|o along axis 0 of `weight_ih_l<n>`,
    `weight_hh_l<n>`, `bias_ih_l<n>` and `bias_hh_l<n>` (k 3 and 4), `MultiheadAttention` packs
    q|k|v in `in_proj_weight` and `in_proj_bias`. A row order that moves whole blocks is
    reported here, not again as `permutation`.

Why it happens in a port
    burn's `Gru` and `Lstm` hold one Linear per gate, its `MultiHeadAttention` one per
    projection; a port that splits PyTorch's packed tensor to load them, or packs its own to
    compare, in another order swaps gates: burn's `Gru` lists its gates as update, reset, new,
    while PyTorch's first block is the reset gate r. The model runs and trains; only the
    numbers tell.

Example
    reference `gru.weight_ih_l0` with rows r|z|n, candidate with rows z|r|n: permutation
    `[1, 0, 2]`, "gate blocks r and z swapped (GRU packs r|z|n along axis 0)".

Remedy
    Split and pack the tensor in the order its layout gives (GRU r|z|n, LSTM i|f|g|o, q|k|v),
    block i of the packed tensor to the gate or projection named i-th there.
"""

from __future__ import annotations

import itertools
import re

import numpy as np

from pita.diagnose.base import Diagnosis, Pair
from pita.diagnose.transpose import exact_limit

KIND = "block_permutation"
SUPERSEDES = ("permutation",)  # a block order is a row order: said once, with its blocks named
BLOCKS = (2, 3, 4)
RECURRENT = re.compile(r"(?:^|[./])(?:weight|bias)_(?:ih|hh)_l\d+(?:_reverse)?$")
IN_PROJECTION = re.compile(r"(?:^|[./])in_proj_(?:weight|bias)$")
# (pattern of the tensor's name, k) -> (layout, the blocks along axis 0, what a block is)
PACKED = {
    (RECURRENT, 3): ("GRU", ("r", "z", "n"), "gate"),
    (RECURRENT, 4): ("LSTM", ("i", "f", "g", "o"), "gate"),
    (IN_PROJECTION, 3): ("MultiheadAttention", ("q", "k", "v"), "projection"),
}


def packing(name: str) -> dict[int, tuple[str, tuple[str, ...], str]]:
    """k -> what PyTorch packs in a tensor of this name along axis 0 with k blocks."""
    return {k: packed for (pattern, k), packed in PACKED.items() if pattern.search(name)}


def detect(pair: Pair) -> Diagnosis | None:
    if not pair.same_shape or not pair.comparable or not pair.shape or not np.all(np.isfinite(pair.candidate_values)):
        return None
    known = packing(pair.name)
    limit = exact_limit(pair)
    for axis in dict.fromkeys((0, len(pair.shape) - 1)):
        for k in sorted(BLOCKS, key=lambda k: (axis != 0 or k not in known, k)):  # the name's k first
            if pair.shape[axis] % k or pair.shape[axis] // k < 2:
                continue  # blocks one index wide are a row order: `permutation`'s
            for order in block_orders(k):
                moved = lambda positions, axis=axis, order=order: source_positions(positions, pair.shape, axis, order)
                residual = pair.residual_under(moved, limit)
                if residual is not None:
                    return _diagnosis(axis, order, residual, known.get(k) if axis == 0 else None)
    return None


def block_orders(k: int):
    """Orders of k blocks other than the identity, those that move fewest blocks first."""
    identity = tuple(range(k))
    moved = lambda order: sum(i != j for i, j in enumerate(order))
    return sorted((order for order in itertools.permutations(identity) if order != identity), key=lambda order: (moved(order), order))


def source_positions(positions: np.ndarray, shape: tuple[int, ...], axis: int, order: tuple[int, ...]) -> np.ndarray:
    """The reference's flat positions of candidate elements, if candidate block i along `axis`
    is reference block order[i]."""
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    size = shape[axis]
    block = size // len(order)
    at = positions // inner % size
    source = np.asarray(order, dtype=np.int64)[at // block] * block + at % block
    return positions + (source - at) * inner


def _diagnosis(axis: int, order: tuple[int, ...], residual: float, packed) -> Diagnosis:
    k = len(order)
    layout, names, what = named_blocks(k, packed)
    message = f"{order_text(order, names, what)} ({where_packed(k, axis, packed)}; after reordering: max|diff| {residual:.2e})"
    params = {"axis": axis, "k": k, "permutation": list(order), "layout": layout, "names": list(names) if layout else []}
    return Diagnosis(KIND, params, message, residual)


def named_blocks(k: int, packed) -> tuple[str, tuple[str, ...], str]:
    """(layout, each block's name, what a block is): the packing's, or the blocks numbered."""
    return packed or ("", tuple(str(i) for i in range(k)), "")


def order_text(order: tuple[int, ...], names: tuple[str, ...], what: str) -> str:
    """'gate blocks r and z swapped', or 'blocks in the order 2|0|1' when more than two moved."""
    moved = [i for i in range(len(order)) if order[i] != i]
    if len(moved) == 2:
        a, b = moved
        return f"{what + ' ' if what else ''}blocks {names[a]} and {names[b]} swapped"
    return f"{what + ' ' if what else ''}blocks in the order {'|'.join(names[j] for j in order)}"


def where_packed(k: int, axis: int, packed) -> str:
    """'GRU packs r|z|n along axis 0', or '3 equal blocks along axis 0' without a packing name."""
    layout, names, _ = named_blocks(k, packed)
    return f"{layout} packs {'|'.join(names)} along axis 0" if layout else f"{k} equal blocks along axis {axis}"
