"""block_transpose: square blocks of a packed weight, each or some of them transposed.

What it detects
    A 2-D tensor `[k × H, H]` (k 2, 3 or 4, H at least 2) whose k square blocks along axis 0
    are the reference's, some of them (`transposed`) transposed: candidate block i is reference
    block `permutation[i]`, transposed when i is in `transposed`, reproducing the values nearly
    exactly (to 1e-6 of max|reference|, or atol, as `transpose` does). Each block is matched on
    its own, so blocks both moved and transposed are one finding; a block that equals its own
    transpose counts as not transposed. The blocks are named as `block_permutation` names them
    (`layout`, `names`): GRU r|z|n and LSTM i|f|g|o in `weight_hh_l<n>` (and `weight_ih_l<n>`
    when the input size is the hidden size), `MultiheadAttention` q|k|v in `in_proj_weight`. A
    whole square tensor transposed is `transpose`; blocks moved but none transposed are
    `block_permutation`.

Why it happens in a port
    burn's `Linear` stores its weight `[d_input, d_output]`, PyTorch's `[out, in]`; a port that
    splits PyTorch's packed `weight_hh_l0` into burn's per-gate Linears must transpose each
    block. Every block is square there, so a forgotten transpose loads without a shape error,
    and so does one transposed block among others copied right. The input weights, not square
    when the input size differs, would have failed to load: only the hidden ones go wrong
    silently.

Example
    reference `gru.weight_hh_l0` `[144, 48]` (r|z|n, H 48), candidate with each 48 × 48 block
    transposed: transposed `[0, 1, 2]`, "every gate block transposed (GRU packs r|z|n along
    axis 0)".

Remedy
    Transpose each block as you split the packed tensor (`weight_hh_l0[i*H:(i+1)*H].T` for
    burn's Linear of gate i), or load through burn-store's `PyTorchToBurnAdapter`, which
    transposes Linear weights.
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import Diagnosis, Pair
from pita.diagnose.block_permutation import BLOCKS, named_blocks, order_text, packing, where_packed
from pita.diagnose.transpose import exact_limit

KIND = "block_transpose"
SUPERSEDES = ("rows",)  # a transposed block's rows are all it changes: said once, with its block named


def detect(pair: Pair) -> Diagnosis | None:
    if not pair.same_shape or len(pair.shape) != 2 or not pair.finite:
        return None
    rows, size = pair.shape
    k = rows // size if size >= 2 and rows % size == 0 else 0
    if k not in BLOCKS:
        return None  # no k square blocks
    limit = exact_limit(pair)
    sources = []
    for block in range(k):
        source = block_source(pair, block, k, size, limit)
        if source is None:
            return None
        sources.append(source)
    order = tuple(j for j, _, _ in sources)
    transposed = [i for i, (_, flipped, _) in enumerate(sources) if flipped]
    if not transposed or sorted(order) != list(range(k)):
        return None  # no block transposed (`block_permutation`'s), or not each reference block once
    return _diagnosis(pair, order, transposed, max(residual for _, _, residual in sources))


def block_source(pair: Pair, block: int, k: int, size: int, limit: float) -> tuple[int, bool, float] | None:
    """(reference block, transposed, residual) that candidate block `block` reproduces within
    `limit`: itself first, then itself transposed, then the other blocks as they are, then
    transposed; None when none does."""
    among = np.flatnonzero(pair.positions // (size * size) == block)
    if among.size == 0:
        return None
    others = [j for j in range(k) if j != block]
    for j, flipped in [(block, False), (block, True)] + [(j, False) for j in others] + [(j, True) for j in others]:
        source = lambda positions, j=j, flipped=flipped: source_positions(positions, block, j, flipped, size)
        residual = pair.residual_under(source, limit, among)
        if residual is not None:
            return j, flipped, residual
    return None


def source_positions(positions: np.ndarray, block: int, source: int, flipped: bool, size: int) -> np.ndarray:
    """The reference's flat positions of candidate elements of block `block`, if that block is
    reference block `source` (square, `size` × `size`), transposed when `flipped`."""
    row, column = np.divmod(positions - block * size * size, size)
    if flipped:
        row, column = column, row
    return source * size * size + row * size + column


def _diagnosis(pair: Pair, order: tuple[int, ...], transposed: list[int], residual: float) -> Diagnosis:
    k = len(order)
    packed = packing(pair.name).get(k)
    layout, names, what = named_blocks(k, packed)
    kind = f"{what} " if what else ""
    if len(transposed) == k:
        text = f"every {kind}block transposed"
    else:
        shown = [names[order[i]] for i in transposed]
        listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
        text = f"{kind}block{'s' if len(shown) > 1 else ''} {listed} transposed"
    if order != tuple(range(k)):
        text = f"{order_text(order, names, what)}, and {text}"
    message = f"{text} ({where_packed(k, 0, packed)}; after transposing back: max|diff| {residual:.2e})"
    params = {"axis": 0, "k": k, "transposed": transposed, "permutation": list(order), "layout": layout, "names": list(names) if layout else []}
    return Diagnosis(KIND, params, message, residual)
