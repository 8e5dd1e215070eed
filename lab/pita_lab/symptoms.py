"""Symptoms: what a reader sees in a port before knowing the cause. Each experiment declares the
keys it explains (`Experiment.symptoms`); the book's index by symptom (book/symptoms.md) groups
the chapters under these titles. The vocabulary names no experiment: facts about an experiment
live in its folder."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Symptom:
    key: str  # stable: the anchor in book/symptoms.md (`symptoms.md#<key>`)
    title: str
    description: str


# In the order a port meets them along the training main line.
SYMPTOMS = tuple(Symptom(*fields) for fields in (
    ("integer-wrong", "整数结果不对",
     "商差 1、整数平均变成 0、乘积溢出成负数：整数运算的约定和默认宽度不同。"),
    ("shape-axis", "形状、轴或广播不对",
     "维度顺序、类别轴、广播后的形状、块数或输出长度和 PyTorch 不同；形状碰巧对得上时只有值错。"),
    ("compile-error", "编译不过，补一维或换个函数才过",
     "类型或秩对不上时，为了过编译顺手补的 `unsqueeze`、换的函数版，可能悄悄改了语义。"),
    ("panic", "运行期 panic 或报错",
     "PyTorch 能跑的写法在 burn 里 panic 或返回 `Err`；照报错绕过去时还要看结果是否仍然对。"),
    ("forward-wrong", "同样的权重和输入，前向输出不对",
     "默认参数、掩码含义或算子约定不同：输出差一截，不报错。"),
    ("nan", "出现 NaN 或 inf",
     "一边是有限数、另一边是 NaN 或 inf：溢出、全被遮住的行、越界的输入。"),
    ("wrong-after-load", "加载 PyTorch 权重后输出不对",
     "权重布局或参数名和 PyTorch 不同：加载不报错，或者部分加载后输出错。"),
    ("init-differs", "初始参数不同",
     "初始化范围、参数个数或某些行的初值和 PyTorch 不同，训练起点就不一样。"),
    ("loss-wrong", "loss 的值不对",
     "同样的输入，loss 的数值和 PyTorch 不同：归约方式、输入的含义或类别轴不同。"),
    ("grad-scaled", "梯度大了 N 倍",
     "每个梯度都是 PyTorch 的同一个倍数（batch 大小、元素个数、类别数）：loss 没按 PyTorch 的方式归约。"),
    ("grad-at-kinks", "梯度只在个别点上不同",
     "前向一致，梯度只在拐点、边界或并列的输入上不同：不可导点上的约定不同。"),
    ("grad-differs", "前向一致，梯度不同",
     "前向的每个张量都在容差内和 PyTorch 一致（不一定逐位相同），梯度却不同：反向的公式、累加方式或某些行的梯度和 PyTorch 不同。"),
    ("update-differs", "梯度一致，一步更新就不同",
     "每个梯度都和 PyTorch 一致，optimizer 一步之后参数就不同：裁剪方式、学习率或超参数的默认值不同。"),
    ("slow-drift", "训练中慢慢漂移",
     "开头一致或只差几个 ulp，训练越久差得越多：默认超参数、精度或额外的可学习参数。"),
    ("eval-wrong", "eval 输出不对",
     "训练看着正常，评估或推理时的输出和 PyTorch eval 不同：dropout、BatchNorm 的训练态和统计量。"),
))
BY_KEY = {symptom.key: symptom for symptom in SYMPTOMS}


def unknown(keys) -> list[str]:
    """The keys that are not in the vocabulary."""
    return [key for key in keys if key not in BY_KEY]
