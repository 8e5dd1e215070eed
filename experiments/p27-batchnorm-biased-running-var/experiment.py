"""p27: BatchNorm updates running_var with the biased batch variance (PyTorch: unbiased)."""

from dataclasses import dataclass

import numpy as np

from pita_lab.claims import ratios_match
from pita_lab.experiment import (
    Accepts,
    Diagnosed,
    Experiment,
    Matches,
    Mismatches,
    PairClaim,
    SourceRef,
    TensorsCompare,
)


def batch_term(dump) -> np.ndarray:
    """What one update added to running_var: `running_var - (1 - m)·running_var.before`."""
    m = float(dump.metadata["momentum"])
    after = dump.tensors["running_var"].astype(np.float64)
    before = dump.tensors["running_var.before"].astype(np.float64)
    return after - (1 - m) * before


@dataclass(frozen=True)
class BatchTermRatio(PairClaim):
    """The running_var update's batch term in `candidate` is the one in `reference` times
    (n - 1) / n, n read from the metadata under `key`: biased against unbiased batch variance."""

    key: str
    rtol: float = 1e-4

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        n = float(reference.metadata[self.key])
        wanted = (n - 1) / n
        ratios = batch_term(candidate) / batch_term(reference)
        observed, ok = ratios_match(ratios, wanted, self.rtol)
        return f"ratio ({self.key}-1)/{self.key}={wanted:.9g} ±{self.rtol:g}", observed, ok


def _term(run) -> float:
    m = float(run.metadata["momentum"])
    return run.tensors["running_var"][0] - (1 - m) * run.tensors["running_var.before"][0]


def magnitude(record) -> str:
    ref, port = record.program("torch", "ref"), record.program("burn", "port")
    factor = record.comparison("torch-ref", "burn-port").result["tensors"]
    scale = next(d["factor"] for t in factor if t["name"] == "out.eval" for d in t["diagnosis"] if d["kind"] == "scale")
    return f"running_var 的 batch 项 ×{_term(port) / _term(ref):.4g}，eval 输出 ×{scale:.6g}"


EXPERIMENT = Experiment(
    id="p27",
    title="BatchNorm 的 running_var 用有偏方差更新，eval 输出跟着偏",
    mainline="train/eval",
    kind="silent",
    torch_variants=("ref",),
    burn_variants=("fixed", "port"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/modules/norm/batch.rs", "BatchNorm::forward_train", ".add(result.variance.detach().mul_scalar(self.momentum));"),
        SourceRef("burn-backend", "src/backend/ops/modules/base.rs", "ModuleOps::batch_norm_train", "let variance = B::float_mean_dim("),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("burn-port-runs", "burn 跑完训练步和评估，不报错", "burn", "port"),
        BatchTermRatio("batch-term-biased", "burn 更新 `running_var` 时加上的是 PyTorch batch 项的 (n-1)/n",
                       "torch-ref", "burn-port", "batch_size"),
        TensorsCompare("mean-is-the-same", "`running_mean` 一致：只有方差的更新不同",
                       "torch-ref", "burn-port", ("running_var.before", "running_mean")),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Diagnosed("eval-out-scaled", "compare 把评估输出诊断为 scale（方差之比的 1/√）",
                  "torch-ref", "burn-port", "scale", tensors=("out.eval",)),
        Matches("fix-matches", "burn-fixed（batch 项放大 n/(n-1)）和 torch-ref 一致", "torch-ref", "burn-fixed"),
    ),
)
