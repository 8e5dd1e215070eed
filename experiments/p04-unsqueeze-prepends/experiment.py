"""p04: burn reductions keep the reduced dim and `unsqueeze()` prepends, so the rank "fix" for a
[B, 1] prediction against a [B] target compares [B, 1] with [1, B] and broadcasts to [B, B]."""

from pita_lab.experiment import Accepts, CompileFails, Experiment, Matches, Mismatches, Panics, Relates, SourceRef, Warns


def magnitude(record) -> str:
    ref, port = record.program("torch", "ref").tensors, record.program("burn", "port").tensors
    return f"loss {ref['loss'][0]:.3g} → {port['loss'][0]:.3g}，准确率 {ref['accuracy'][0]:.4g} → {port['accuracy'][0]:.4g}"


EXPERIMENT = Experiment(
    id="p04",
    title="unsqueeze() 加在最前面，补齐秩的「修法」悄悄广播成 [B, B]",
    mainline="tensors and shapes",
    kind="silent",
    symptoms=("shape-axis", "compile-error", "loss-wrong"),
    related=("p03", "p11d"),
    torch_variants=("ref", "broadcast"),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-tensor", "src/tensor/api/base.rs", "Tensor::unsqueeze", "dims[num_ones..(D + num_ones)].copy_from_slice(&shape[..D]);"),
        SourceRef("burn-tensor", "src/tensor/api/orderable.rs", "Tensor::argmax", "pub fn argmax(self, dim: impl AsIndex) -> Tensor<D, Int>"),
        SourceRef("burn-nn", "src/loss/mse.rs", "MseLoss::forward_no_reduction", "logits.sub(targets).square()"),
    ),
    magnitude=magnitude,
    claims=(
        Warns("torch-warns-on-broadcast", "目标形状不同时，PyTorch 的 `mse_loss` 先发出警告，再广播",
              "torch", "broadcast", "UserWarning", "Using a target size"),
        CompileFails("ce04-rejects-rank-mismatch", "rustc 拒绝对 `[B, 1]` 的预测和 `[B]` 的目标求 loss",
                     "ce04", "E0308", "expected `2`, found `1`"),
        Accepts("burn-accepts-unsqueeze", "`y.unsqueeze()` 之后，burn 算出 loss，不报错", "burn", "port"),
        Relates("port-is-torch-broadcast", "burn 用 `unsqueeze()` 算的 loss 等于 PyTorch 广播成 `[B, B]` 后的 loss",
                "torch-broadcast", "burn-port", "loss", "identity", atol=1e-6),
        Mismatches("negative-control", "用 `unsqueeze()` 的移植对 PyTorch 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "用 `unsqueeze_dim(1)`、`squeeze_dim(1)` 后和 PyTorch 一致", "torch-ref", "burn-fixed"),
        Panics("guard-panics-on-broadcast", "pita 的 `mse_loss` 守卫在运行期拦下 `[B, 1]` 对 `[1, B]`",
               "burn", "guard", "prediction and target shapes differ"),
    ),
)
