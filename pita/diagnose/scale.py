"""scale: every element of the candidate is the reference times one common factor.

What it detects
    A factor `k` (not 1) such that `candidate ≈ k × reference` element by element, with the error
    left after dividing by `k` far below the error before.

Why it happens in a port
    A loss summed where PyTorch averaged: burn's `backward()` seeds the root with ones, so a
    per-sample loss backpropagates its sum and every gradient is batch-size times larger. Also:
    a learning rate or loss weight ported with a different convention, `reduction="sum"` against
    `"mean"`, a missing `1/(1-p)` dropout scale.

Example
    reference (torch, mean loss) `bias.grad [-0.65]`, candidate (burn, no mean) `[-2.6]`:
    `candidate = 4 × reference`, and 4 is the batch size recorded in the dumps.

Remedy
    Find where the factor enters. When it equals the batch size, reduce the loss with `.mean()`
    before `backward()` (pita's `backward_scalar` guard rejects an unreduced loss).
"""

from __future__ import annotations

import numpy as np

from pita.diagnose.base import Context, Diagnosis, Pair, explains, format_factor

KIND = "scale"
# The same doc in Chinese, for the handbook's diagnosis reference (book/diagnosis.md).
DOC_ZH = """scale：候选的每个元素都是参考乘以同一个倍数。

检测什么
    一个不为 1 的倍数 `k`，使 `candidate ≈ k × reference` 逐元素成立，除以 `k` 之后剩下的误差
    远小于原来的误差。

移植中为什么会出现
    PyTorch 取平均的 loss 在移植里求了和：burn 的 `backward()` 用全 1 作根节点的种子，逐样本的
    loss 反传的是它们的和，每个梯度都大了 batch 倍。还有：学习率或 loss 权重按另一种约定搬过来，
    `reduction="sum"` 对 `"mean"`，dropout 少了 `1/(1-p)` 的缩放。

例子
    参考（torch，loss 取了 mean）`bias.grad [-0.65]`，候选（burn，没有 mean）`[-2.6]`：
    `candidate = 4 × reference`，4 是 dump 里记下的 batch 大小。

怎么改
    找到倍数从哪里进来。倍数等于 batch 大小时，在 `backward()` 之前用 `.mean()` 归约 loss
    （pita 的 `backward_scalar` 拒绝没有归约的 loss）。
"""
NOT_A_SCALE = 1e-6  # |k - 1| below this is float32 rounding, not a scale


def detect(pair: Pair) -> Diagnosis | None:
    if not pair.finite:
        return None
    r, c = pair.reference_values, pair.candidate_values
    nonzero = r != 0
    if not nonzero.any():
        return None
    factor = float(np.median(c[nonzero] / r[nonzero]))
    if factor == 0 or not np.isfinite(factor) or abs(factor - 1) < NOT_A_SCALE or abs(factor + 1) < NOT_A_SCALE:
        return None
    before = float(np.max(np.abs(c - r)))
    residual = float(np.max(np.abs(c / factor - r)))
    if not explains(residual, before, pair.atol):
        return None
    shown = format_factor(factor)
    message = f"candidate = {shown} × reference (after dividing by {shown}: max|diff| {residual:.2e})"
    hint = _batch_hint(factor, pair.context)
    support = int(np.count_nonzero(nonzero))
    return Diagnosis(
        kind=KIND,
        params={"factor": factor, "support": support, "hint": hint},
        message=f"{message}; {hint}" if hint else message,
        residual=residual,
        tentative=support < 2,
        precision=2 * pair.epsilon * abs(factor),  # a ratio of two rounded values
    )


def _batch_hint(factor: float, context: Context) -> str:
    for batch in sorted(context.batch_sizes):
        if batch > 1 and abs(factor - batch) <= 1e-4 * batch:
            return f"{batch} is the batch size recorded in the dumps: the candidate's loss was probably not reduced (mean) before backward"
        if batch > 1 and abs(factor * batch - 1) <= 1e-4:
            return f"1/{batch} is one over the batch size recorded in the dumps: the reference's loss was probably not reduced (mean) before backward"
    return ""
