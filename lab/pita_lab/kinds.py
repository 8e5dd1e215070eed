"""What an experiment is (`Kind`) and where on the training main line it sits (`Stage`), each
with the Chinese name the book gives it. Declarations pass plain strings (`kind="silent"`): both
are `StrEnum`s, so a string and its member are equal and hash alike."""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    """The training main line, in order; every experiment sits at one of these stages."""

    TENSORS = "tensors and shapes"
    INIT = "init and weight layout"
    FORWARD = "forward"
    LOSS = "loss"
    LOSS_BACKWARD = "loss → backward"
    BACKWARD = "backward"
    CLIPPING = "clipping and accumulation"
    OPTIMIZER = "optimizer"
    SCHEDULE = "schedule"
    TRAIN_EVAL = "train/eval"
    SAVE_LOAD = "save/load PyTorch weights"

    @property
    def zh(self) -> str:
        return _STAGE_ZH[self]


_STAGE_ZH = {
    Stage.TENSORS: "张量与形状",
    Stage.INIT: "初始化与权重布局",
    Stage.FORWARD: "前向",
    Stage.LOSS: "loss",
    Stage.LOSS_BACKWARD: "loss → backward",
    Stage.BACKWARD: "backward",
    Stage.CLIPPING: "梯度裁剪与累积",
    Stage.OPTIMIZER: "优化器",
    Stage.SCHEDULE: "学习率调度",
    Stage.TRAIN_EVAL: "train/eval",
    Stage.SAVE_LOAD: "保存/加载 PyTorch 权重",
}


class Kind(StrEnum):
    """How a divergence shows in a port. `same` marks a candidate whose paired run showed none;
    `tutorial` a worked port under examples/ or ports/, traced phase by phase rather than one pitfall;
    `guide` a front or reference page under guides/ whose examples run like an experiment's."""

    SILENT = "silent"
    PANIC = "panic"
    COMPILE = "compile"
    SAME = "same"
    TUTORIAL = "tutorial"
    GUIDE = "guide"

    @property
    def zh(self) -> str:
        return _KIND_ZH[self]

    @property
    def is_pitfall(self) -> bool:
        """A chapter of the catalog proper (a row of the version matrix, a fix to show), as
        opposed to a tutorial or a guide."""
        return self not in (Kind.TUTORIAL, Kind.GUIDE)

    @property
    def place(self) -> str:
        """The checkout folder its folders live in."""
        return {Kind.TUTORIAL: "examples", Kind.GUIDE: "guides"}.get(self, "experiments")


_KIND_ZH = {
    Kind.SILENT: "静默的数值差异",
    Kind.PANIC: "运行期 panic/报错",
    Kind.COMPILE: "编译错误",
    Kind.SAME: "查过：一致",
    Kind.TUTORIAL: "教程",
    Kind.GUIDE: "导读",
}

PITFALL_KINDS = tuple(kind for kind in Kind if kind.is_pitfall)
