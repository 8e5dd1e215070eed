"""p29a: PyTorch's BatchNorm with track_running_stats=False normalises with batch statistics in
eval too; burn has no such option, and its evaluation uses the running statistics."""

from pita_lab.experiment import Accepts, CompileFails, Experiment, Mapped, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    control = record.comparison("torch-ref", "burn-port").result
    return f"eval 输出差 {control.worst:.2g}（用了 running 统计量的初值）"


EXPERIMENT = Experiment(
    id="p29a",
    title="BatchNorm 的 track_running_stats=False 没有对应：burn 评估时用 running 统计量",
    mainline="train/eval",
    kind="silent",
    symptoms=("eval-wrong",),
    related=("p26", "p27", "p29b", "p29c"),
    settings=(Mapped("BatchNorm1d|BatchNorm2d|BatchNorm3d.track_running_stats", "BatchNorm.", True, True),),
    torch_variants=("ref", "tracked"),
    burn_variants=("port", "fixed", "train-mode"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-tracked", "burn-port"),
                 ("torch-ref", "burn-train-mode")),
    sources=(
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm::forward", "input.device().is_autodiff() && self.training.is_enabled()"),
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm::forward_inference", "let mean = self.running_mean.value().to_device(&device);"),
        SourceRef("burn-tensor", "src/tensor/module.rs", "batch_norm_train", "let result = Dispatch::batch_norm_train("),
    ),
    magnitude=magnitude,
    claims=(
        CompileFails("ce29a-no-option", "`BatchNormConfig` 没有 `with_track_running_stats`：直接照写编译不过",
                     "ce29a", "E0599", "no method named `with_track_running_stats` found"),
        Accepts("burn-port-runs", "删掉这个选项后，burn 评估不报错", "burn", "port"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("port-is-torch-tracked", "burn 的评估就是 PyTorch 默认 `track_running_stats=True` 的评估（用 running 统计量）",
                "torch-tracked", "burn-port"),
        Matches("fix-matches", "burn-fixed（推理设备上用 `batch_norm_train` 手算 batch 统计量）和 torch-ref 一致",
                "torch-ref", "burn-fixed"),
        Matches("train-mode-matches", "burn-train-mode（在训练设备上走训练路径）的输出也和 torch-ref 一致",
                "torch-ref", "burn-train-mode"),
    ),
)
