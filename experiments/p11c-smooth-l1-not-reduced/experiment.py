"""p11c: SmoothL1Loss::forward returns the element-wise loss; PyTorch's SmoothL1Loss() is reduced (mean)."""

from pita.likely import Signature
from pita_lab.experiment import (
    Accepts,
    CompileFails,
    Diagnosed,
    Experiment,
    Matches,
    Mismatches,
    Panics,
    ScaledByMetadata,
    SourceRef,
)


def magnitude(record) -> str:
    scale = next(d for t in record.comparison("torch-mean", "burn-port").tensors for d in t.diagnosis if d.kind == "scale")
    numel = record.program("torch", "mean").metadata["numel"]
    return f"梯度 ×{scale.params['factor']:.6g}（元素个数 {numel}）"


EXPERIMENT = Experiment(
    id="p11c",
    title="SmoothL1Loss::forward 不做归约，backward 后梯度大了元素个数倍",
    fix="`smooth_l1.forward_with_reduction(pred, target, Reduction::Mean)`",
    mainline="loss",
    kind="silent",
    symptoms=("grad-scaled",),
    related=("p11a", "p12"),
    signature=Signature("diagnosis", diagnosis="scale", factor="elements", phase="backward"),
    also=("p18a",),
    torch_variants=("mean",),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-mean", "burn-fixed"), ("torch-mean", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/loss/smooth_l1.rs", "SmoothL1Loss::forward", "pub fn forward<const D: usize>(&self, predictions: Tensor<D>"),
        SourceRef("burn-nn", "src/loss/smooth_l1.rs", "SmoothL1Loss::forward_with_reduction", "Reduction::Mean | Reduction::Auto => unreduced_loss.mean()"),
        SourceRef("burn-autodiff", "src/grads.rs", "Gradients::new", "float_ones("),
        SourceRef("burn-nn", "src/loss/huber.rs", "HuberLoss::forward", "reduction: Reduction,"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-mean-runs", "PyTorch 的 `SmoothL1Loss()` 返回标量，并能反向传播", "torch", "mean"),
        Accepts("burn-port-runs", "burn 对 `forward()` 返回的逐元素 loss 执行 `backward()`", "burn", "port"),
        ScaledByMetadata("port-is-numel-times-mean", "burn-port = numel × torch-mean，逐元素成立",
                         "torch-mean", "burn-port", "numel"),
        Diagnosed("compare-names-the-factor", "compare 诊断出 scale，倍数等于元素个数",
                  "torch-mean", "burn-port", "scale", "numel"),
        Mismatches("negative-control", "burn-port 对 torch-mean 报 MISMATCH", "torch-mean", "burn-port"),
        Matches("fix-matches", "burn-fixed（`forward_with_reduction`，Mean）在 atol 1e-6 下和 torch-mean 一致", "torch-mean", "burn-fixed"),
        CompileFails("ce11c-rejects-rank-2", "`backward_scalar` 在编译期拒绝 `forward()` 给出的 `[2, 3]` loss",
                     "ce11c", "E0308", "expected `1`, found `2`"),
        Panics("guard-panics-on-rank-1", "`backward_scalar` 在运行期拦下展平后的 `[6]` loss",
               "burn", "guard", "loss must be reduced (mean/sum) before backward"),
    ),
)
