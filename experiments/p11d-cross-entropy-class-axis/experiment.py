"""p11d: cross_entropy_with_logits normalises over the last dim; PyTorch's cross_entropy over dim 1."""

from pita_lab.experiment import Accepts, CompileFails, Experiment, Matches, Mismatches, Panics, SourceRef


def magnitude(record) -> str:
    ref = record.program("torch", "ref").tensors["loss"][0]
    port = record.program("burn", "port").tensors["loss"][0]
    return f"loss {port:.4g}，应为 {ref:.4g}（×{port / ref:.3g}）"


EXPERIMENT = Experiment(
    id="p11d",
    title="cross_entropy_with_logits 的类别轴是最后一维，PyTorch 是第 1 维",
    mainline="loss",
    kind="silent",
    symptoms=("loss-wrong", "shape-axis", "compile-error"),
    related=("p03", "p04", "p11b"),
    torch_variants=("ref",),
    burn_variants=("port", "reshape", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-ref", "burn-reshape")),
    sources=(
        SourceRef("burn-tensor", "src/tensor/loss/mod.rs", "cross_entropy_with_logits", "activation::log_softmax(logits, D - 1)"),
        SourceRef("burn-tensor", "src/tensor/loss/mod.rs", "cross_entropy_with_logits", "tensor.sum_dim(D - 1)"),
        SourceRef("burn-nn", "src/loss/cross_entropy.rs", "CrossEntropyLoss::forward", "pub fn forward(&self, logits: Tensor<2>, targets: Tensor<1, Int>)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-ref-runs", "PyTorch 的 `cross_entropy` 接受类别在第 1 维的 `[N, C, L]` logits", "torch", "ref"),
        Accepts("burn-port-runs", "burn 的 `cross_entropy_with_logits` 接受同样的 `[N, C, L]` 张量，不报错", "burn", "port"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Mismatches("reshape-mismatches", "不挪轴、直接把 `[N, C, L]` reshape 成 `[N*L, C]`，同样报 MISMATCH", "torch-ref", "burn-reshape"),
        Matches("fix-matches", "burn-fixed（先 `swap_dims(1, 2)`）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
        CompileFails("ce11d-rejects-rank-3", "`CrossEntropyLoss::forward` 在编译期拒绝 `[N, C, L]` 的 logits",
                     "ce11d", "E0308", "expected `2`, found `3`"),
        Panics("guard-panics-on-class-dim-1", "目标求和守卫在运行期拦下直接移植的版本",
               "burn", "guard", "target_probs must sum to 1 over the last dim"),
    ),
)
