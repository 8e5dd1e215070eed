"""rows: the mismatches lie in a few rows; every other row matches.

What it detects
    A tensor of two axes or more whose failing elements (as the tolerance judges them) all lie
    in a few rows (indices of axis 0, each row at least two elements), while every other row
    matches within the tolerance: the rows that fail are at most a quarter of the rows that
    hold values (nonzero on either side), so that at least three matching rows carry evidence
    for each failing one, and rows that are zero on both sides prove nothing; and each failing
    row fails in at least half of its sampled elements that hold a value (whole rows, not stray
    elements). `rows`: the failing rows (the first 8), `count`: how many, `share`: `count` over
    the tensor's rows.
    Over a tensor diagnosed on a sample, the rows are those of the sampled failing elements,
    and the whole tensor's mismatch count must fit in them. When the tensor's name looks like
    an embedding's (`embed`, `wte`, `wpe`) and the one failing row is all zero in the
    reference, `hint` names `padding_idx`. A row order (`permutation`), a
    transposed block (`block_transpose`) and rounding noise (`rounding`) say more than where,
    and are reported instead.

Why it happens in a port
    `nn.Embedding(padding_idx=p)` keeps row p at zero: PyTorch neither gives it a gradient nor
    updates it, and burn's `Embedding` has no such option, so the port's padding row is
    trained. Also one sample of a batch treated differently (a mask, a length, a special
    token), one class's row of a classifier weight or one token's embedding loaded from
    elsewhere.

Example
    reference `grad/embed.weight` `[40, 32]` with row 0 all zero, candidate with row 0 nonzero
    and every other row equal: rows `[0]`, count 1, share 0.025, "the reference's row 0 is
    zero: an Embedding's padding_idx row".

Remedy
    Look at what makes those rows special: a padding index (in burn, wrap the lookup in
    `pita::padding_idx::embedding_with_padding_idx`), the samples' masks or lengths, the
    tokens or classes the rows stand for.
"""

from __future__ import annotations

import re

import numpy as np

from pita.diagnose.base import SAMPLE, Diagnosis, Pair, explains, read

KIND = "rows"
FEW = 0.25  # failing rows, at most this share of the rows that hold values
WHOLE = 0.5  # a failing row fails in at least this share of its elements that hold values
LISTED = 8  # failing rows named in `rows` and the message
EMBEDDING = re.compile(r"embed|wte|wpe", re.IGNORECASE)  # names of embedding tables (`embed`, `embedding`, GPT-2's `wte`, `wpe`)


def detect(pair: Pair) -> Diagnosis | None:
    if not pair.shape or not pair.same_shape or not pair.finite:
        return None
    width = pair.size // pair.shape[0]
    if width < 2 or not pair.failing.any():
        return None  # a vector's rows are its elements
    row = pair.positions // width
    failing = np.unique(row[pair.failing])
    r, c = pair.reference_values, pair.candidate_values
    holds = (r != 0) | (c != 0)
    if failing.size > FEW * np.unique(row[holds]).size:
        return None  # spread over many of the rows that say anything
    if not whole(failing, row, pair.failing, holds):
        return None  # stray elements in rows that otherwise match
    if pair.stats is not None and pair.stats.mismatched > failing.size * width:
        return None  # the whole tensor fails in more elements than these rows hold
    differences = np.abs(c - r)
    residual = float(np.max(differences[~np.isin(row, failing)], initial=0.0))
    if not explains(residual, float(np.max(differences)), pair.atol):
        return None
    return _diagnosis(pair, failing, width, residual)


def whole(failing: np.ndarray, row: np.ndarray, fails: np.ndarray, holds: np.ndarray) -> bool:
    """Whether each of the `failing` rows (sorted) fails in at least WHOLE of its sampled
    elements that hold a value on either side."""
    counted = lambda chosen: np.bincount(np.searchsorted(failing, row[chosen & np.isin(row, failing)]), minlength=failing.size)
    return bool(np.all(counted(fails) >= WHOLE * counted(holds)))


def _diagnosis(pair: Pair, failing: np.ndarray, width: int, residual: float) -> Diagnosis:
    n, count = pair.shape[0], int(failing.size)
    listed = failing[:LISTED].tolist()
    shown = ", ".join(map(str, listed[:-1])) + f" and {listed[-1]}" if 1 < count <= LISTED else ", ".join(map(str, listed))
    shown += ", …" if count > LISTED else ""
    message = (f"mismatches confined to row{'s' if count > 1 else ''} {shown} ({count} of {n} rows); "
               f"every other row matches (max|diff| {residual:.2e})")
    hint = _padding_hint(pair, failing, width)
    params = {"rows": listed, "count": count, "share": count / n, "hint": hint}
    return Diagnosis(KIND, params, f"{message}; {hint}" if hint else message, residual)


def _padding_hint(pair: Pair, failing: np.ndarray, width: int) -> str:
    """The padding_idx hint, for an embedding whose one failing row is zero in the reference
    (read whole: the sample may hold few of its elements)."""
    if failing.size != 1 or not EMBEDDING.search(pair.name) or width > SAMPLE:
        return ""
    index = int(failing[0])
    if np.any(read(pair.reference, np.arange(index * width, (index + 1) * width, dtype=np.int64))):
        return ""
    return (f"the reference's row {index} is zero: an Embedding's padding_idx row, which PyTorch neither updates nor gives a gradient "
            "(burn's Embedding has no padding_idx: pita::padding_idx::embedding_with_padding_idx)")
