"""p26: BatchNorm evaluated on the training (autodiff) device uses batch statistics and updates
its running statistics on every call; burn has no eval()."""


from pita_lab.experiment import (
    Accepts,
    Experiment,
    Matches,
    Mismatches,
    Panics,
    SourceRef,
    TensorsCompare,
)


def magnitude(record) -> str:
    rows = {t.name: t for t in record.comparison("torch-eval", "burn-port").tensors}
    before = record.program("torch", "eval").tensors["running_var"][0]
    after = record.program("burn", "port").tensors["running_var"][0]
    return f"输出差 {rows['out'].max_abs_diff:.2g}，running_var {before:g}→{after:.4g}"


EXPERIMENT = Experiment(
    id="p26",
    title="评估时没有 eval()：BatchNorm 用 batch 统计量，还改写 running 统计量",
    mainline="train/eval",
    kind="silent",
    symptoms=("eval-wrong",),
    related=("p25", "p27", "p29"),
    reports=('tracel-ai/burn#2652', 'tracel-ai/burn#5537',),
    also=("p27",),
    torch_variants=("eval", "train"),
    burn_variants=("valid", "port", "guard"),
    comparisons=(
        ("torch-eval", "burn-valid"),
        ("torch-eval", "burn-port"),
        ("torch-train", "burn-port"),
    ),
    sources=(
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm::forward", "input.device().is_autodiff() && self.training.is_enabled()"),
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm::forward_train", "self.running_mean.update("),
        SourceRef("burn-core", "src/module/param/running.rs", "RunningState<Tensor<D>>::valid", "value.without_autodiff()"),
        SourceRef("burn-core", "src/module/param/running.rs", "RunningState::value_sync", "self.update_value(&mut map)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("burn-port-runs", "burn 在训练模型上跑评估的几批数据，不报错", "burn", "port"),
        Mismatches("negative-control", "burn-port 对 torch-eval 报 MISMATCH", "torch-eval", "burn-port"),
        TensorsCompare("running-stats-changed", "没有 `valid()` 时：输出、`running_mean` 和 `running_var` 都和 torch-eval 不同",
                       "torch-eval", "burn-port", ("out", "running_mean", "running_var"), ok=False),
        TensorsCompare("port-is-train-mode", "burn-port 的输出和 running mean 就是 PyTorch 训练模式（torch-train）的结果",
                       "torch-train", "burn-port", ("out", "running_mean")),
        Matches("fix-matches", "burn-valid（`model.valid()`，输入在 `device.inner()` 上）和 torch-eval 一致", "torch-eval", "burn-valid"),
        Panics("guard-panics", "输入在 autodiff 设备上时，`assert_inference` 拦下训练模型",
               "burn", "guard", "evaluation would run in training mode: `norm.training` is enabled"),
    ),
)
