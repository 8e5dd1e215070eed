"""p29b: PyTorch's BatchNorm with affine=False has no parameters; burn's BatchNorm always has a
learnable gamma and beta: the same at initialisation, different after the first optimizer step."""

from pita_lab.experiment import (
    Accepts,
    CompileFails,
    Experiment,
    Mapped,
    Matches,
    Mismatches,
    SameHparam,
    SourceRef,
    TensorsCompare,
)


def magnitude(record) -> str:
    steps = record.program("burn", "port").metadata["steps"]
    rows = {t.name: t for t in record.comparison("torch-ref", "burn-port").tensors}
    return f"初始一致；{steps} 步 SGD 后输出差 {rows[f'out.step{steps}'].max_abs_diff:.2g}"


EXPERIMENT = Experiment(
    id="p29b",
    title="BatchNorm 的 affine=False 没有对应：burn 的 γ/β 总是可学习，训练一步就分叉",
    mainline="train/eval",
    kind="silent",
    symptoms=("slow-drift", "init-differs"),
    related=("p29", "p26", "p27", "p29a", "p29c"),
    settings=(Mapped("BatchNorm1d|BatchNorm2d|BatchNorm3d.affine", "BatchNorm.", True, True),),
    torch_variants=("ref", "affine"),
    burn_variants=("port", "fixed", "freeze"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-affine", "burn-port"),
                 ("torch-ref", "burn-freeze")),
    sources=(
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNormConfig::init", "let gamma = Initializer::Ones.init([self.num_features], device);"),
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm", "pub gamma: Param<Tensor<1>>,"),
        SourceRef("burn-core", "src/module/base.rs", "Module::no_grad", "self.set_require_grad(false)"),
        SourceRef("burn-core", "src/module/base.rs", "Module::freeze", "training = false"),
    ),
    magnitude=magnitude,
    claims=(
        CompileFails("ce29b-no-option", "`BatchNormConfig` 没有 `with_affine`（`InstanceNormConfig` 有）：照写编译不过",
                     "ce29b", "E0599", "no method named `with_affine` found"),
        Accepts("burn-port-runs", "删掉这个选项后，burn 训练不报错", "burn", "port"),
        SameHparam("state-is-affine", "burn 的 BatchNorm 的状态元素数（`num_params()`，含 running 统计量）等于 PyTorch `affine=True` 的",
                   "torch-affine", "burn-port", "norm_state"),
        SameHparam("state-has-gamma-beta", "比 PyTorch `affine=False` 多：多出来的就是 γ/β",
                   "torch-ref", "burn-port", "norm_state", same=False),
        TensorsCompare("same-at-init", "还没有更新时两边输出一致（γ = 1, β = 0）",
                       "torch-ref", "burn-port", ("out.step0",)),
        TensorsCompare("differ-after-steps", "跑完这几步 SGD 后，输出和 Linear 权重都不同",
                       "torch-ref", "burn-port", ("out.step2", "fc.weight"), ok=False),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("port-is-torch-affine", "burn 的 BatchNorm 和 PyTorch `BatchNorm1d(affine=True)` 一致", "torch-affine", "burn-port"),
        Matches("fix-matches", "burn-fixed（`.no_grad()`：γ/β 不求梯度）和 torch-ref 一致", "torch-ref", "burn-fixed"),
        TensorsCompare("freeze-is-not-the-fix", "`.freeze()` 连训练路径也关了：第 0 步的输出就和 torch-ref 不同",
                       "torch-ref", "burn-freeze", ("out.step0",), ok=False),
    ),
)
