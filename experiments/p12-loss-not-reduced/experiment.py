"""p12: the loss is not reduced before backward, so burn's gradients are batch-size times larger."""

from pita_lab.experiment import (
    Accepts,
    CompileFails,
    Diagnosed,
    Experiment,
    Matches,
    Mismatches,
    Panics,
    Raises,
    ScaledByMetadata,
    SourceRef,
)


def magnitude(record) -> str:
    factor = record.comparison("torch-mean", "burn-nomean").result["tensors"][0]["diagnosis"][0]["factor"]
    return f"梯度 ×{factor:.6g}"


EXPERIMENT = Experiment(
    id="p12",
    title="loss 忘了 mean，梯度大了 batch 倍",
    mainline="loss → backward",
    kind="silent",
    torch_variants=("nonscalar", "mean"),
    burn_variants=("nomean", "mean", "guard"),
    comparisons=(("torch-mean", "burn-mean"), ("torch-mean", "burn-nomean")),
    sources=(
        SourceRef("burn-autodiff", "src/grads.rs", "Gradients::new", "float_ones("),
        SourceRef("burn-nn", "src/loss/mse.rs", "MseLoss::forward", "Reduction::Mean | Reduction::Auto"),
    ),
    magnitude=magnitude,
    claims=(
        Raises("torch-rejects-nonscalar", "PyTorch 拒绝对逐样本 loss 执行 `backward()`",
               "torch", "nonscalar", "RuntimeError", "grad can be implicitly created only for scalar outputs"),
        Accepts("burn-accepts-nonscalar", "burn 对逐样本 loss 执行 `backward()`", "burn", "nomean"),
        ScaledByMetadata("nomean-is-batch-times-mean", "burn-nomean = batch_size × torch-mean，逐元素成立",
                         "torch-mean", "burn-nomean", "batch_size"),
        Diagnosed("compare-names-the-factor", "compare 诊断出 scale，并指出倍数就是 batch 大小",
                  "torch-mean", "burn-nomean", "scale", "batch_size"),
        Matches("fix-matches", "burn-mean 在 atol 1e-6 下和 torch-mean 一致", "torch-mean", "burn-mean"),
        Mismatches("negative-control", "burn-nomean 对 torch-mean 报 MISMATCH", "torch-mean", "burn-nomean"),
        CompileFails("ce12-rejects-rank-2", "`backward_scalar` 在编译期拒绝 `[B, 1]` 的 loss",
                     "ce12", "E0308", "expected `1`, found `2`"),
        Panics("guard-panics-on-rank-1", "`backward_scalar` 在运行期拦下 `[B]` 的 loss",
               "burn", "guard", "loss must be reduced (mean/sum) before backward"),
    ),
)
