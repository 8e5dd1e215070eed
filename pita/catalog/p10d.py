"""p10d: burn's PaddingConfig1d::Same ignores dilation, so a dilated Conv1d shrinks the sequence."""

from pita.experiment import Accepts, Experiment, Matches, Mismatches, Panics, SourceRef


def magnitude(record) -> str:
    row = record.comparison("torch-same", "burn-same").result["tensors"][0]
    return f"输出长度 {row['candidate_shape'][-1]}（PyTorch {row['shape'][-1]}）"


EXPERIMENT = Experiment(
    id="p10d",
    title="PaddingConfig Same 不看 dilation：膨胀卷积的输出变短",
    mainline="forward",
    kind="silent",
    torch_script="experiments/pytorch/p10d_same_dilation.py",
    burn_binary="p10d",
    torch_variants=("same", "residual"),
    burn_variants=("same", "explicit", "residual", "guard"),
    comparisons=(("torch-same", "burn-explicit"), ("torch-same", "burn-same")),
    compile_fail=(),
    sources=(
        SourceRef("burn-nn", "src/padding.rs", "calculate_same_padding", "let needed = (size_out - 1) * stride + kernel_size;"),
        SourceRef("burn-nn", "src/modules/conv/conv1d.rs", "Conv1d::forward", ".calculate_padding_1d_pair(length, self.kernel_size, self.stride);"),
        SourceRef("burn-nn", "src/modules/conv/conv2d.rs", "Conv2d::forward", "calculate_padding_2d_pairs("),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-keeps-length", "PyTorch's dilated Conv1d with padding='same' runs", "torch", "same"),
        Accepts("burn-accepts-same", "burn's dilated Conv1d with PaddingConfig1d::Same runs without error", "burn", "same"),
        Mismatches("same-mismatches", "burn's Same output against PyTorch's is a MISMATCH (shape conflict)", "torch-same", "burn-same"),
        Matches("explicit-matches", "Explicit padding of dilation·(k−1)/2 per side matches PyTorch at atol 1e-6", "torch-same", "burn-explicit"),
        Accepts("torch-residual-runs", "PyTorch's residual x + conv(x) runs", "torch", "residual"),
        Panics("burn-residual-panics", "burn's residual x + conv(x) panics on the shorter output", "burn", "residual",
               "incompatible shapes"),
        Panics("guard-rejects-same", "check_same_padding rejects Same with dilation before the layer is built",
               "burn", "guard", "PaddingConfig1d::Same ignores dilation"),
    ),
)
