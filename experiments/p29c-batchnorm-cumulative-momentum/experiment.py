"""p29c: PyTorch's BatchNorm with momentum=None keeps a cumulative moving average of the batch
statistics; burn's momentum is a fixed number, and the port falls back to 0.1."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import (
    Accepts,
    Claim,
    CompileFails,
    Experiment,
    Mapped,
    Matches,
    Mismatches,
    SourceRef,
    TensorsCompare,
)


@dataclass(frozen=True)
class CumulativeAverage(Claim):
    """In dump `dump`, tensor `running` is the plain mean over the batches (axis 0) of tensor
    `per_batch`, element by element within relative `rtol`: the cumulative moving average,
    whose first factor 1 wiped out the start (running_mean 0, running_var 1). With `biased`,
    that mean times (n - 1) / n, n the dump's `batch_size`: unbiased batch variances averaged
    as biased ones."""

    id: str
    text: str
    dump: str
    running: str
    per_batch: str
    biased: bool = False
    rtol: float = 1e-5

    def observe(self, record, out):
        dump = read_dump(out / f"{self.dump}.safetensors")
        per_batch = dump.tensors[self.per_batch].astype(np.float64)
        n = float(dump.metadata["batch_size"])
        factor = (n - 1) / n if self.biased else 1.0
        wanted = per_batch.mean(axis=0) * factor
        running = dump.tensors[self.running].astype(np.float64)
        worst = float(np.max(np.abs(running - wanted) / np.abs(wanted)))
        scaled = f" × (batch_size-1)/batch_size={factor:g}" if self.biased else ""
        expected = (f"{self.dump}.{self.running} = mean over {per_batch.shape[0]} batches of {self.per_batch}{scaled}"
                    f" ±{self.rtol:g} (relative)")
        observed = f"mean = {[round(float(v), 9) for v in wanted]}; {self.running} = {[round(float(v), 9) for v in running]}; rel diff {worst:.2e}"
        return expected, observed, worst <= self.rtol


def magnitude(record) -> str:
    steps = record.program("torch", "ref").metadata["steps"]
    rows = {t.name: t for t in record.comparison("torch-ref", "burn-port").tensors}
    return (f"{steps} 个 batch 后 running_mean 差 {rows['running_mean'].max_abs_diff:.2g}，"
            f"eval 输出差 {rows['out.eval'].max_abs_diff:.2g}")


EXPERIMENT = Experiment(
    id="p29c",
    title="BatchNorm 的 momentum=None（累积平均）没有对应：burn 用固定的 momentum 0.1",
    mainline="train/eval",
    kind="silent",
    symptoms=("eval-wrong",),
    related=("p27", "p26", "p29a", "p29b"),
    also=("p27",),
    settings=(Mapped("BatchNorm1d|BatchNorm2d|BatchNorm3d.momentum", "BatchNorm.momentum", 0.1, 0.1),),
    torch_variants=("ref", "ema"),
    burn_variants=("port", "momentum", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-ema", "burn-port"),
                 ("torch-ref", "burn-momentum")),
    sources=(
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNormConfig", "pub momentum: f64,"),
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm::forward_train", ".add(result.mean.detach().mul_scalar(self.momentum));"),
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm", "pub momentum: f64,"),
    ),
    magnitude=magnitude,
    claims=(
        CompileFails("ce29c-not-an-option", "`BatchNormConfig` 的 momentum 是 `f64`，不是 `Option`：照写 `None` 编译不过",
                     "ce29c", "E0308", "expected `f64`, found `Option<_>`"),
        Accepts("burn-port-runs", "删掉 `None` 后，burn 训练和评估不报错", "burn", "port"),
        CumulativeAverage("torch-mean-cumulative", "PyTorch `momentum=None`：`running_mean` 就是各 batch 均值的平均",
                          "torch-ref", "running_mean", "batch_mean"),
        CumulativeAverage("torch-var-cumulative", "PyTorch `momentum=None`：`running_var` 就是各 batch 无偏方差的平均",
                          "torch-ref", "running_var", "batch_var"),
        TensorsCompare("batch-stats-same", "每个 batch 的均值和方差两边一致：只有累积的方式不同",
                       "torch-ref", "burn-port", ("batch_mean", "batch_var")),
        TensorsCompare("running-stats-differ", "running 统计量和 eval 输出都不同",
                       "torch-ref", "burn-port", ("running_mean", "running_var", "out.eval"), ok=False),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        TensorsCompare("port-is-torch-ema", "burn 的 `running_mean` 就是 PyTorch 默认 momentum 0.1 的滑动平均",
                       "torch-ema", "burn-port", ("running_mean",)),
        TensorsCompare("momentum-fixes-mean", "每个 batch 前把 momentum 设成 1/t（burn-momentum）：`running_mean` 对上了",
                       "torch-ref", "burn-momentum", ("running_mean",)),
        TensorsCompare("momentum-leaves-var", "只改 momentum，`running_var` 仍然不同（burn 用有偏方差更新）",
                       "torch-ref", "burn-momentum", ("running_var",), ok=False),
        CumulativeAverage("momentum-var-biased", "只改 momentum 时，`running_var` 是各 batch 无偏方差平均的 (n-1)/n：有偏方差的累积平均",
                          "burn-momentum", "running_var", "batch_var", biased=True),
        Matches("fix-matches", "burn-fixed（momentum 1/t，再把方差项改成无偏的）和 torch-ref 一致", "torch-ref", "burn-fixed"),
        CumulativeAverage("burn-fixed-cumulative", "burn-fixed 的 `running_var` 也是各 batch 无偏方差的平均",
                          "burn-fixed", "running_var", "batch_var"),
    ),
)
