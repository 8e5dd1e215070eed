"""p27: BatchNorm updates running_var with the biased batch variance (PyTorch: unbiased)."""

from dataclasses import dataclass

import numpy as np

from pita.likely import Signature
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


@dataclass(frozen=True)
class ConvergedRatio(PairClaim):
    """After many updates, every element of `tensor` in `candidate` is the one in `reference`
    times (n / (n - 1))^power, n read from the metadata under `key`, within relative `rtol`:
    running_var has forgotten its start, so the two sides hold the unbiased and the biased
    batch variance (power -1), and eval divides by their square roots (out.eval: power 1/2)."""

    tensor: str
    key: str
    power: float
    rtol: float

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        n = float(reference.metadata[self.key])
        wanted = (n / (n - 1)) ** self.power
        ratios = candidate.tensors[self.tensor].astype(np.float64).ravel() / reference.tensors[self.tensor].astype(np.float64).ravel()
        observed, ok = ratios_match(ratios, wanted, self.rtol)
        steps = {name: dump.metadata.get("steps") for name, dump in ((self.reference, reference), (self.candidate, candidate))}
        expected = f"{self.tensor}: ratio ({self.key}/({self.key}-1))^{self.power:g}={wanted:.9g} ±{self.rtol:g}"
        return expected, f"{observed} after {'/'.join(str(v) for v in steps.values())} steps", ok


def _term(run) -> float:
    m = float(run.metadata["momentum"])
    return run.tensors["running_var"][0] - (1 - m) * run.tensors["running_var.before"][0]


def _eval_scale(record, reference: str, candidate: str) -> float:
    rows = record.comparison(reference, candidate).tensors
    return next(d.params["factor"] for t in rows if t.name == "out.eval" for d in t.diagnosis if d.kind == "scale")


def magnitude(record) -> str:
    ref, port = record.program("torch", "ref"), record.program("burn", "port")
    steps = record.program("torch", "long").metadata["steps"]
    return (f"running_var 的 batch 项 ×{_term(port) / _term(ref):.4g}；训练 {steps} 步后 eval 输出 "
            f"×{_eval_scale(record, 'torch-long', 'burn-port-long'):.6g}")


EXPERIMENT = Experiment(
    id="p27",
    title="BatchNorm 的 running_var 用有偏方差更新，eval 输出跟着偏",
    mainline="train/eval",
    kind="silent",
    symptoms=("eval-wrong", "slow-drift"),
    related=("p26",),
    signature=Signature("diagnosis", diagnosis="scale", factor="biased_variance", tensor="running_var", matched="running_mean"),
    fix="每次训练前向后把 running_var 换成无偏更新：`(1 - m) · var_old + m · var_batch · n/(n-1)`（或加载 PyTorch 的统计量）",
    torch_variants=("ref", "long"),
    burn_variants=("fixed", "port", "fixed-long", "port-long"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"),
                 ("torch-long", "burn-fixed-long"), ("torch-long", "burn-port-long")),
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
        # Many steps: running_var converges to each side's batch variance. 200 steps of momentum
        # 0.1 leave 0.9^200 < 1e-9 of the start; float32 rounding is far inside 1e-4. ε = 1e-5 in
        # the eval denominator against a variance of 0.05 moves the output ratio by about 3e-5.
        Mismatches("long-negative-control", "训练 200 步后 burn-port-long 对 torch-long 报 MISMATCH",
                   "torch-long", "burn-port-long"),
        ConvergedRatio("long-var-ratio", "训练多步后 burn 的 `running_var` 是 PyTorch 的 (n-1)/n：有偏方差对无偏方差",
                       "torch-long", "burn-port-long", "running_var", "batch_size", power=-1, rtol=1e-4),
        ConvergedRatio("long-eval-ratio", "训练多步后 burn 的 eval 输出是 PyTorch 的 √(n/(n-1)) 倍",
                       "torch-long", "burn-port-long", "out.eval", "batch_size", power=0.5, rtol=1e-4),
        Diagnosed("long-eval-scaled", "compare 把多步之后的评估输出诊断为 scale",
                  "torch-long", "burn-port-long", "scale", tensors=("out.eval",)),
        Matches("long-fix-matches", "每一步都放大 batch 项的 burn-fixed-long 和 torch-long 一致",
                "torch-long", "burn-fixed-long"),
    ),
)
