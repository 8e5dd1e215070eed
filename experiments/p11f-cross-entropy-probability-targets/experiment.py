"""p11f: class probabilities (mixup, label smoothing) as the target of cross-entropy. PyTorch's
`CrossEntropyLoss` takes them as a float target; burn's `CrossEntropyLoss::forward` takes class
indices only (`Tensor<1, Int>`), and the port that takes each row's argmax trains on hard labels.
burn's `cross_entropy_with_logits(logits, target_probs)` is the loss PyTorch computes."""

from pita_lab.experiment import Accepts, CompileFails, Experiment, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    rows = {t.name: t for t in record.comparison("torch-ref", "burn-port").tensors}
    return f"目标被 argmax 成硬标签：loss 差 {rows['loss'].max_abs_diff:.3g}，梯度差 {rows['logits.grad'].max_abs_diff:.3g}"


EXPERIMENT = Experiment(
    id="p11f",
    title="CrossEntropyLoss 的目标只收类别下标：概率目标 argmax 之后成了硬标签",
    fix="概率目标用 `burn::tensor::loss::cross_entropy_with_logits(logits, target_probs)`",
    mainline="loss",
    kind="silent",
    symptoms=("loss-wrong", "compile-error"),
    related=("p11d", "p11e"),
    related_reports=("tracel-ai/burn#4829",),  # probabilities as the input (logits = false), not as the target
    torch_variants=("ref",),
    burn_variants=("port", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/loss/cross_entropy.rs", "CrossEntropyLoss::forward",
                  "pub fn forward(&self, logits: Tensor<2>, targets: Tensor<1, Int>) -> Tensor<1>"),
        SourceRef("burn-nn", "src/loss/cross_entropy.rs", "CrossEntropyLossConfig", "pub logits: bool,"),
        SourceRef("burn-nn", "src/loss/cross_entropy.rs", "CrossEntropyLoss::forward_default",
                  "Self::clamp_probs(logits).gather(1, target_indices).log()"),
        SourceRef("burn-nn", "src/loss/cross_entropy.rs", "CrossEntropyLoss::compute_smoothed_targets",
                  "targets_matrix * (1. - alpha) + alpha / nr_classes as f32"),
        SourceRef("burn-tensor", "src/tensor/loss/mod.rs", "cross_entropy_with_logits", "let tensor = tensor.mul(target_probs);"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 `cross_entropy` 接受概率目标", "torch", "ref"),
        CompileFails("ce11f-rejects-probabilities", "把 `[B, C]` 的概率目标直接交给 `CrossEntropyLoss::forward`，编译不过",
                     "ce11f", "E0308", "expected `1`, found `2`"),
        Accepts("burn-port-runs", "目标 argmax 成类别下标后，burn 的 `CrossEntropyLoss` 正常运行，不报错", "burn", "port"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "burn-fixed（`cross_entropy_with_logits`）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
    ),
)
