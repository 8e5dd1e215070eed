"""p11c: SmoothL1Loss::forward returns the element-wise loss; PyTorch's SmoothL1Loss() is reduced (mean)."""

from pita.experiment import (
    Accepts, CompileFails, Diagnosed, Experiment, Matches, Mismatches, Panics, ScaledByMetadata, SourceRef,
)


def magnitude(record) -> str:
    scale = next(d for t in record.comparison("torch-mean", "burn-port").result["tensors"] for d in t["diagnosis"] if d["kind"] == "scale")
    numel = record.program("torch", "mean").metadata["numel"]
    return f"梯度 ×{scale['factor']:.6g}（元素个数 {numel}）"


EXPERIMENT = Experiment(
    id="p11c",
    title="SmoothL1Loss::forward 不做归约，backward 后梯度大了元素个数倍",
    mainline="loss",
    kind="silent",
    torch_script="experiments/pytorch/p11c_smooth_l1.py",
    burn_binary="p11c",
    torch_variants=("mean",),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-mean", "burn-fixed"), ("torch-mean", "burn-port")),
    compile_fail=("ce11c",),
    sources=(
        SourceRef("burn-nn", "src/loss/smooth_l1.rs", "SmoothL1Loss::forward", "pub fn forward<const D: usize>(&self, predictions: Tensor<D>, targets: Tensor<D>) -> Tensor<D>"),
        SourceRef("burn-nn", "src/loss/smooth_l1.rs", "SmoothL1Loss::forward_with_reduction", "Reduction::Mean | Reduction::Auto => unreduced_loss.mean()"),
        SourceRef("burn-autodiff", "src/grads.rs", "Gradients::new", "float_ones("),
        SourceRef("burn-nn", "src/loss/huber.rs", "HuberLoss::forward", "reduction: Reduction,"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-mean-runs", "PyTorch's SmoothL1Loss() returns a scalar and backpropagates", "torch", "mean"),
        Accepts("burn-port-runs", "burn runs backward() on the element-wise loss from forward()", "burn", "port"),
        ScaledByMetadata("port-is-numel-times-mean", "burn-port = numel × torch-mean, element by element",
                         "torch-mean", "burn-port", "numel"),
        Diagnosed("compare-names-the-factor", "compare diagnoses a scale equal to the number of elements",
                  "torch-mean", "burn-port", "scale", "numel"),
        Mismatches("negative-control", "burn-port against torch-mean is a MISMATCH", "torch-mean", "burn-port"),
        Matches("fix-matches", "burn-fixed (forward_with_reduction, Mean) matches torch-mean at atol 1e-6", "torch-mean", "burn-fixed"),
        CompileFails("ce11c-rejects-rank-2", "backward_scalar rejects the [2, 3] loss of forward() at compile time",
                     "ce11c", "E0308", "expected `1`, found `2`"),
        Panics("guard-panics-on-rank-1", "backward_scalar rejects the flattened [6] loss at run time",
               "burn", "guard", "loss must be reduced (mean/sum) before backward"),
    ),
)
