"""p11e: soft targets (label smoothing, distillation, mixup) in binary cross-entropy: burn's
`BinaryCrossEntropyLoss::forward` takes Int targets, and the `.int()` a port adds truncates them."""

from pita_lab.experiment import (
    Accepts,
    CompileFails,
    Experiment,
    Matches,
    Mismatches,
    Panics,
    Relates,
    SourceRef,
)


def magnitude(record) -> str:
    port = record.program("burn", "port").tensors
    ref = record.program("torch", "ref").tensors
    return f"目标被 `.int()` 截成 0：loss {port['smooth.loss'][0]:.4g}（应为 {ref['smooth.loss'][0]:.4g}）"


EXPERIMENT = Experiment(
    id="p11e",
    title="BCE 的目标只收整数：软标签 `.int()` 之后全成了 0",
    mainline="loss",
    kind="silent",
    symptoms=("compile-error", "loss-wrong"),
    related=("p11",),
    related_reports=("tracel-ai/burn#2739",),  # about log clamping, not soft labels
    torch_variants=("ref",),
    burn_variants=("port", "smoothing", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward", "targets: Tensor<D, Int>"),
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward",
                  "(targets_float.neg() + 1.) * logits.clone() - log_sigmoid(logits)"),
        SourceRef("burn-flex", "src/ops/float.rs", "float_into_int", "read_floats!(|x| x as $int_ty)"),
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward",
                  "let num_classes = if D > 1 { shape[D - 1] } else { 2 };"),
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward",
                  "targets_float = targets_float * (1. - alpha) + alpha / num_classes as f32;"),
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward",
                  ".gather(0, targets.flatten(0, 0))"),
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward",
                  "weights.clone().expand(shape)"),
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward",
                  "https://github.com/tracel-ai/burn/issues/2739"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 `binary_cross_entropy_with_logits` 接受软目标", "torch", "ref"),
        CompileFails("ce11e-rejects-float-targets", "把 float 目标直接交给 `BinaryCrossEntropyLoss::forward`，编译不过",
                     "ce11e", "E0308", "expected `Tensor<1, Int>`, found `Tensor<1>`"),
        Accepts("burn-port-runs", "加上 `.int()` 之后 burn 的移植正常运行，不报错", "burn", "port"),
        Relates("cast-truncates-smoothed", "`.int()` 把平滑后的目标 0.1 / 0.9 截成 0：burn-port 用的目标 = trunc(PyTorch 的目标)",
                "torch-ref", "burn-port", "smooth.target", "trunc"),
        Relates("cast-truncates-teacher", "老师给的概率同样全被截成 0", "torch-ref", "burn-port", "distill.target", "trunc"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "burn-fixed（float 目标的手写 BCE-with-logits）在 atol 1e-6 下和 torch-ref 一致",
                "torch-ref", "burn-fixed"),
        Relates("smoothing-loss-matches", "硬标签加 burn 的 `smoothing = 0.2`：smooth 这组的 loss 和 PyTorch 差不超过 1e-6",
                "torch-ref", "burn-smoothing", "smooth.loss", "identity", atol=1e-6),
        Relates("smoothing-grad-matches", "同上，梯度也差不超过 1e-6",
                "torch-ref", "burn-smoothing", "smooth.logits.grad", "identity", atol=1e-6),
        Panics("guard-panics-on-soft-targets", "`bce_targets::hard_targets` 在运行期拦下软目标，不让 `.int()` 截断",
               "burn", "guard", "which .int() truncates"),
    ),
)
