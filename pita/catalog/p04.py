"""p04: burn reductions keep the reduced dim and `unsqueeze()` prepends, so the rank "fix" for a
[B, 1] prediction against a [B] target compares [B, 1] with [1, B] and broadcasts to [B, B]."""

from pita.experiment import Accepts, CompileFails, Experiment, Matches, Mismatches, Panics, Relates, SourceRef, Warns


def magnitude(record) -> str:
    ref, port = record.program("torch", "ref").tensors, record.program("burn", "port").tensors
    return f"loss {ref['loss'][0]:.3g} → {port['loss'][0]:.3g}，准确率 {ref['accuracy'][0]:.4g} → {port['accuracy'][0]:.4g}"


EXPERIMENT = Experiment(
    id="p04",
    title="unsqueeze() 加在最前面，补齐秩的「修法」悄悄广播成 [B, B]",
    mainline="tensors and shapes",
    kind="silent",
    torch_script="experiments/pytorch/p04_unsqueeze.py",
    burn_binary="p04",
    torch_variants=("ref", "broadcast"),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    compile_fail=("ce04",),
    sources=(
        SourceRef("burn-tensor", "src/tensor/api/base.rs", "Tensor::unsqueeze", "dims[num_ones..(D + num_ones)].copy_from_slice(&shape[..D]);"),
        SourceRef("burn-tensor", "src/tensor/api/orderable.rs", "Tensor::argmax", "pub fn argmax(self, dim: impl AsIndex) -> Tensor<D, Int>"),
        SourceRef("burn-nn", "src/loss/mse.rs", "MseLoss::forward_no_reduction", "logits.sub(targets).square()"),
    ),
    magnitude=magnitude,
    claims=(
        Warns("torch-warns-on-broadcast", "PyTorch's mse_loss warns when the target shape differs, then broadcasts",
              "torch", "broadcast", "UserWarning", "Using a target size"),
        CompileFails("ce04-rejects-rank-mismatch", "rustc rejects the loss on a [B, 1] prediction and a [B] target",
                     "ce04", "E0308", "expected `2`, found `1`"),
        Accepts("burn-accepts-unsqueeze", "after y.unsqueeze() burn computes the loss without complaint", "burn", "port"),
        Relates("port-is-torch-broadcast", "burn's unsqueeze() loss equals PyTorch's broadcast [B, B] loss",
                "torch-broadcast", "burn-port", "loss", "identity", atol=1e-6),
        Mismatches("negative-control", "the unsqueeze() port against PyTorch is a MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "unsqueeze_dim(1) and squeeze_dim(1) match PyTorch", "torch-ref", "burn-fixed"),
        Panics("guard-panics-on-broadcast", "pita's mse_loss guard rejects [B, 1] against [1, B] at run time",
               "burn", "guard", "prediction and target shapes differ"),
    ),
)
