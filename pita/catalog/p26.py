"""p26: BatchNorm evaluated on the training (autodiff) device uses batch statistics and updates
its running statistics on every call; burn has no eval()."""


from pita.experiment import (
    Accepts, Experiment, Matches, Mismatches, Panics, SourceRef, TensorsCompare,
)


def magnitude(record) -> str:
    rows = {t["name"]: t for t in record.comparison("torch-eval", "burn-port").result["tensors"]}
    before = record.program("torch", "eval").tensors["running_var"][0]
    after = record.program("burn", "port").tensors["running_var"][0]
    return f"输出差 {rows['out']['max_abs_diff']:.2g}，running_var {before:g}→{after:.4g}"


EXPERIMENT = Experiment(
    id="p26",
    title="评估时没有 eval()：BatchNorm 用 batch 统计量，还改写 running 统计量",
    mainline="train/eval",
    kind="silent",
    torch_script="experiments/pytorch/p26_batchnorm_eval.py",
    burn_binary="p26",
    torch_variants=("eval", "train"),
    burn_variants=("valid", "port", "guard"),
    comparisons=(
        ("torch-eval", "burn-valid"),
        ("torch-eval", "burn-port"),
        ("torch-train", "burn-port"),
    ),
    compile_fail=(),
    sources=(
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm::forward", "input.device().is_autodiff() && self.training.is_enabled()"),
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm::forward_train", "self.running_mean.update("),
        SourceRef("burn-core", "src/module/param/running.rs", "RunningState<Tensor<D>>::valid", "value.without_autodiff()"),
        SourceRef("burn-core", "src/module/param/running.rs", "RunningState::value_sync", "self.update_value(&mut map)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("burn-port-runs", "burn runs the evaluation batches on the training model without complaint", "burn", "port"),
        Mismatches("negative-control", "burn-port against torch-eval is a MISMATCH", "torch-eval", "burn-port"),
        TensorsCompare("running-stats-changed", "without valid(): output, running_mean and running_var all differ from torch-eval",
                       "torch-eval", "burn-port", ("out", "running_mean", "running_var"), ok=False),
        TensorsCompare("port-is-train-mode", "burn-port's output and running mean are PyTorch's training mode (torch-train)",
                       "torch-train", "burn-port", ("out", "running_mean")),
        Matches("fix-matches", "burn-valid (model.valid(), inputs on device.inner()) matches torch-eval", "torch-eval", "burn-valid"),
        Panics("guard-panics", "assert_inference rejects the training model on an autodiff input",
               "burn", "guard", "evaluation would run in training mode: `norm.training` is enabled"),
    ),
)
