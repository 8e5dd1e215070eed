"""p21: burn's AdamW defaults to weight decay 1e-4 (PyTorch 1e-2): the decoupled decay is 100 times
weaker, and epsilon is 1e-5 (PyTorch 1e-8) on top."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pita.likely import Signature
from pita_lab.claims import ratios_match
from pita_lab.experiment import (
    Accepts,
    DefaultsDiffer,
    Diagnosed,
    Experiment,
    Matches,
    Mismatches,
    PairClaim,
    Panics,
    SameHparam,
    SourceRef,
    TensorsCompare,
)


@dataclass(frozen=True)
class DecayRatio(PairClaim):
    """For a parameter with zero gradient only the decoupled decay acts, `w·(1 − lr·λ)` per step.
    Every element of `tensor` in `candidate` over `reference` must equal
    `((1 − lr·λ_candidate) / (1 − lr·λ_reference)) ** steps`, with lr, λ (`weight_decay`) and steps
    read from each dump's metadata."""

    tensor: str
    rtol: float = 1e-6

    def observe(self, record, out):
        ref, cand = self.dumps(out)

        def per_run(dump):
            meta = dump.metadata
            return (1 - float(meta["lr"]) * float(meta["weight_decay"])) ** int(meta["steps"])

        expected = per_run(cand) / per_run(ref)
        ratios = cand.tensors[self.tensor].astype(np.float64).ravel() / ref.tensors[self.tensor].astype(np.float64).ravel()
        observed, ok = ratios_match(ratios, expected, self.rtol)
        return f"ratio ((1-lr·λ_c)/(1-lr·λ_r))^steps = {expected:.9g} ±{self.rtol:g}", observed, ok


def _shrink(record, side, variant):
    run = record.program(side, variant)
    return [1 - end / start for end, start in zip(run.tensors["idle"], run.tensors["idle.start"])]


def magnitude(record) -> str:
    torch_shrink, burn_shrink = _shrink(record, "torch", "adamw"), _shrink(record, "burn", "adamw-port")
    return f"零梯度参数的衰减弱 {torch_shrink[0] / burn_shrink[0]:.3g} 倍"


EXPERIMENT = Experiment(
    id="p21",
    title="AdamW 的权重衰减默认值比 PyTorch 小，正则化几乎没了",
    fix="`AdamWConfig::new().with_weight_decay(0.01)`",
    mainline="optimizer",
    kind="silent",
    symptoms=("slow-drift", "update-differs"),
    related=("p20", "p22"),
    signature=Signature("setting", settings=("AdamW.weight_decay", "AdamW.eps")),
    also=("p20",),  # AdamW's epsilon is p20's default too
    torch_variants=("adamw",),
    burn_variants=("adamw-port", "adamw-decay", "adamw-fixed", "guard"),
    comparisons=(
        ("torch-adamw", "burn-adamw-fixed"), ("torch-adamw", "burn-adamw-port"), ("torch-adamw", "burn-adamw-decay"),
    ),
    sources=(
        SourceRef("burn-optim", "src/optim/adamw.rs", "AdamW::step", "let decay_rate = lr * (self.weight_decay as f64);"),
        SourceRef("burn-optim", "src/optim/adamw.rs", "AdamW::step", "tensor.clone().mul_scalar(1.0 - decay_rate)"),
        SourceRef("burn-optim", "src/optim/adamw.rs", "AdamWConfig::build", "weight_decay: self.weight_decay,"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-adamw-runs", "PyTorch AdamW 跑完这几步", "torch", "adamw"),
        Accepts("burn-port-runs", "burn `AdamWConfig::new()` 跑完同样的几步（exit 0）", "burn", "adamw-port"),
        DefaultsDiffer("weight-decay-differs", "`AdamWConfig::new()` 用的权重衰减和 `torch.optim.AdamW` 不同",
                       "torch-adamw", "burn-adamw-port", "weight_decay", "AdamW 的权重衰减 `weight_decay`（`AdamWConfig` / `torch.optim.AdamW`）",
                       maps=("AdamW.weight_decay", "AdamWConfig.weight_decay")),
        DefaultsDiffer("epsilon-differs", "`AdamWConfig::new()` 用的 epsilon 也不同",
                       "torch-adamw", "burn-adamw-port", "epsilon", "AdamW 的 epsilon（`AdamWConfig` / `torch.optim.AdamW`）",
                       maps=("AdamW.eps", "AdamWConfig.epsilon")),
        DecayRatio("idle-ratio-is-the-decay", "零梯度参数两边之比恰好等于两种权重衰减各自衰减因子之比",
                   "torch-adamw", "burn-adamw-port", "idle"),
        Diagnosed("compare-sees-a-scale", "compare 把零梯度参数诊断为一个统一的 scale",
                  "torch-adamw", "burn-adamw-port", "scale", tensors=("idle",)),
        Mismatches("negative-control", "burn `AdamWConfig::new()` 对 torch AdamW 报 MISMATCH", "torch-adamw", "burn-adamw-port"),
        TensorsCompare("decay-only-fixes-idle", "只改 `with_weight_decay(0.01)`：零梯度参数一致",
                      "torch-adamw", "burn-adamw-decay", ("idle",)),
        TensorsCompare("decay-only-leaves-epsilon", "只改 `with_weight_decay(0.01)`：有梯度的参数仍然不同（epsilon）",
                      "torch-adamw", "burn-adamw-decay", ("w",), ok=False),
        SameHparam("fixed-weight-decay-same", "改好的配置用的是 PyTorch 的权重衰减", "torch-adamw", "burn-adamw-fixed", "weight_decay"),
        SameHparam("fixed-epsilon-same", "改好的配置用的是 PyTorch 的 epsilon", "torch-adamw", "burn-adamw-fixed", "epsilon"),
        Matches("fix-matches", "burn `with_weight_decay(0.01).with_epsilon(1e-8)` 在 atol 1e-6 下和 torch AdamW 一致",
                "torch-adamw", "burn-adamw-fixed"),
        Panics("guard-panics-on-default-decay", "`assert_torch_hparams` 对照 PyTorch 的取值，拦下 `AdamWConfig::new()`",
               "burn", "guard", "optimizer hyper-parameter differs from PyTorch: AdamWConfig.weight_decay"),
    ),
)
