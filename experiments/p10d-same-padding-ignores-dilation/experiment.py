"""p10d: burn's PaddingConfig1d::Same ignores dilation, so a dilated Conv1d shrinks the sequence."""

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, Panics, SourceRef


def magnitude(record) -> str:
    row = record.comparison("torch-same", "burn-same").tensors[0]
    return f"输出长度 {row.candidate_shape[-1]}（PyTorch {row.shape[-1]}）"


EXPERIMENT = Experiment(
    id="p10d",
    title="PaddingConfig Same 不看 dilation：膨胀卷积的输出变短",
    fix="按膨胀后的核算 padding：`PaddingConfig1d::Explicit(dilation * (kernel - 1) / 2)`",
    mainline="forward",
    kind="silent",
    symptoms=("shape-axis", "panic"),
    related=("p06",),
    torch_variants=("same", "residual"),
    burn_variants=("same", "explicit", "residual", "guard"),
    comparisons=(("torch-same", "burn-explicit"), ("torch-same", "burn-same")),
    sources=(
        SourceRef("burn-nn", "src/padding.rs", "calculate_same_padding", "let needed = (size_out - 1) * stride + kernel_size;"),
        SourceRef("burn-nn", "src/modules/conv/conv1d.rs", "Conv1d::forward", ".calculate_padding_1d_pair(length, self.kernel_size, self.stride);"),
        SourceRef("burn-nn", "src/modules/conv/conv2d.rs", "Conv2d::forward", "calculate_padding_2d_pairs("),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-keeps-length", "PyTorch 带 dilation、`padding='same'` 的 Conv1d 正常运行", "torch", "same"),
        Accepts("burn-accepts-same", "burn 带 dilation、`PaddingConfig1d::Same` 的 Conv1d 正常运行，不报错", "burn", "same"),
        Mismatches("same-mismatches", "burn 的 Same 输出对 PyTorch 的输出报 MISMATCH（形状冲突）", "torch-same", "burn-same"),
        Matches("explicit-matches", "每侧 dilation·(k−1)/2 的 Explicit padding 在 atol 1e-6 下和 PyTorch 一致", "torch-same", "burn-explicit"),
        Accepts("torch-residual-runs", "PyTorch 的残差 `x + conv(x)` 正常运行", "torch", "residual"),
        Panics("burn-residual-panics", "burn 的残差 `x + conv(x)` 因为输出变短而 panic", "burn", "residual",
               "incompatible shapes"),
        Panics("guard-rejects-same", "`check_same_padding` 在构造层之前拦下带 dilation 的 Same",
               "burn", "guard", "PaddingConfig1d::Same ignores dilation"),
    ),
)
