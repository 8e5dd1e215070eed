"""sign: the candidate is the reference with its sign flipped.

What it detects
    `candidate ≈ −reference` element by element, with the error left after negating far below
    the error before.

Why it happens in a port
    A loss ported as `-log p` where the original minimised `log p` (or the reverse), a gradient
    applied with `+` instead of `-`, an argument order swapped in a difference (`a - b` for
    `b - a`), `mask_where`/`torch.where` branches exchanged on a symmetric pair.

Example
    reference `[0.5, -1.0, 2.0]`, candidate `[-0.5, 1.0, -2.0]`.

Remedy
    Find the subtraction or sign convention that differs; compare the update rule term by term.
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import Diagnosis, Pair, explains

KIND = "sign"
# The same doc in Chinese, for the handbook's diagnosis reference (book/diagnosis.md).
DOC_ZH = """sign：候选是参考取反。

检测什么
    `candidate ≈ −reference` 逐元素成立，取反之后剩下的误差远小于原来的误差。

移植中为什么会出现
    原来最小化 `log p` 的 loss 搬成了 `-log p`（或者反过来），梯度用 `+` 而不是 `-` 更新，
    差的两项写反（`a - b` 写成 `b - a`），在一对对称的值上 `mask_where`/`torch.where` 的两个
    分支对调。

例子
    参考 `[0.5, -1.0, 2.0]`，候选 `[-0.5, 1.0, -2.0]`。

怎么改
    找到不同的减法或符号约定；逐项对照更新规则。
"""


def detect(pair: Pair) -> Diagnosis | None:
    r, c = pair.reference_values, pair.candidate_values
    if not pair.finite or np.max(np.abs(r), initial=0.0) <= pair.atol:
        return None
    residual = float(np.max(np.abs(c + r)))
    if not explains(residual, float(np.max(np.abs(c - r))), pair.atol):
        return None
    return Diagnosis(KIND, {}, f"candidate = −reference (after negating: max|diff| {residual:.2e})", residual,
                     tentative=int(np.count_nonzero(r)) < 2)
