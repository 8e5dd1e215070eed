"""p11b: CrossEntropyLoss `pad_tokens` against PyTorch's `ignore_index` (checked: both renormalise)."""

from pita_lab.experiment import LOSS_FN, Accepts, Experiment, Mapped, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    worst = record.comparison("torch-ref", "burn-port").result.worst
    return f"一致：最大差 {worst:.2e}"


EXPERIMENT = Experiment(
    id="p11b",
    title="CrossEntropyLoss 的 pad_tokens 和 ignore_index 一样只对非 pad 行平均（查过：一致）",
    mainline="loss",
    kind="same",
    symptoms=("loss-wrong",),
    related=("p10g", "p11d"),
    settings=(Mapped("CrossEntropyLoss.ignore_index", "CrossEntropyLoss.pad_tokens", -100, None, "ignore_index", scope=LOSS_FN),),
    torch_variants=("ref",),
    burn_variants=("port", "nopad", "shared"),
    comparisons=(("torch-ref", "burn-port"), ("torch-ref", "burn-nopad"), ("torch-ref", "burn-shared")),
    sources=(
        SourceRef("burn-nn", "src/loss/cross_entropy.rs", "CrossEntropyLoss::reduce_mean", "let normalizer = Self::apply_mask(normalizer, mask);"),
        SourceRef("burn-nn", "src/loss/cross_entropy.rs", "CrossEntropyLoss::reduce_mean", "tensor.sum().neg() / normalizer.sum()"),
        SourceRef("burn-nn", "src/loss/cross_entropy.rs", "CrossEntropyLoss::padding_mask", ".map(|token| targets.clone().equal_scalar(*token as i64))"),
        SourceRef("burn-nn", "src/loss/cross_entropy.rs", "CrossEntropyLoss::forward_default", "log_softmax(logits, 1).gather(1, target_indices)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-ref-runs", "PyTorch 带 `ignore_index` 的 `cross_entropy` 正常运行", "torch", "ref"),
        Accepts("burn-port-runs", "burn 带 `pad_tokens` 的 `CrossEntropyLoss` 正常运行", "burn", "port"),
        Matches("port-matches", "burn-port（`pad_tokens`）和 torch-ref（`ignore_index`）一致：普通、加权、label smoothing 都是",
                "torch-ref", "burn-port"),
        Mismatches("comparison-can-fail", "burn-nopad（忘了配 padding）对 torch-ref 报 MISMATCH", "torch-ref", "burn-nopad"),
        Mismatches("taken-pad-index-drops-real-rows",
                   "burn-shared（pad 映射到真实行也用的类别 2）对 torch-ref 报 MISMATCH：那一行也被当成 pad",
                   "torch-ref", "burn-shared"),
    ),
)
