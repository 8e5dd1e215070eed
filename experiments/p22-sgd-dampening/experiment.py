"""p22: burn's `MomentumConfig::new()` has dampening 0.1 (PyTorch SGD: 0); every momentum step after
the first is shorter."""

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
class TwoStepRatio(PairClaim):
    """From w = 0 with a constant gradient g, two momentum steps move w by −lr·g·(1 + m + (1 − d)):
    the first velocity is g undamped, the second m·g + (1 − d)·g. So `tensor` of `candidate` over
    `reference` must be (2 + m − d_candidate) / (2 + m − d_reference), with m and d read from each
    dump's metadata."""

    tensor: str
    rtol: float = 1e-6

    def observe(self, record, out):
        ref, cand = self.dumps(out)

        def path(dump):
            return 2 + float(dump.metadata["momentum"]) - float(dump.metadata["dampening"])

        expected = path(cand) / path(ref)
        ratios = cand.tensors[self.tensor].astype(np.float64).ravel() / ref.tensors[self.tensor].astype(np.float64).ravel()
        observed, ok = ratios_match(ratios, expected, self.rtol)
        return f"ratio (2+m-d_c)/(2+m-d_r) = {expected:.9g} ±{self.rtol:g}", observed, ok


def magnitude(record) -> str:
    steps = record.program("torch", "sgd").metadata["steps"]
    torch_w = record.program("torch", "sgd").tensors[f"w.step{steps}"][0]
    burn_w = record.program("burn", "sgd-port").tensors[f"w.step{steps}"][0]
    return f"{steps} 步后位移少 {(1 - burn_w / torch_w) * 100:.3g}%"


EXPERIMENT = Experiment(
    id="p22",
    title="SGD 动量的 dampening 默认不是 0，第二步起步长变短",
    fix="`MomentumConfig::new().with_dampening(0.0)`",
    mainline="optimizer",
    kind="silent",
    symptoms=("slow-drift",),
    related=("p21", "p23"),
    signature=Signature("setting", settings=("SGD.dampening",)),
    torch_variants=("sgd",),
    burn_variants=("sgd-port", "sgd-fixed", "guard"),
    comparisons=(("torch-sgd", "burn-sgd-fixed"), ("torch-sgd", "burn-sgd-port")),
    sources=(
        SourceRef("burn-optim", "src/optim/momentum.rs", "Momentum::transform", ".mul_scalar(1.0 - self.dampening)"),
        SourceRef("burn-optim", "src/optim/momentum.rs", "Momentum::transform", ".add(state.velocity.mul_scalar(self.momentum))"),
        SourceRef("burn-optim", "src/optim/momentum.rs", "Momentum::new", "dampening: config.dampening,"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-sgd-runs", "PyTorch `SGD(momentum=0.9)` 跑完这几步", "torch", "sgd"),
        Accepts("burn-port-runs", "burn `MomentumConfig::new().with_momentum(0.9)` 跑完同样的几步（exit 0）", "burn", "sgd-port"),
        SameHparam("momentum-same", "两边的动量相同", "torch-sgd", "burn-sgd-port", "momentum"),
        DefaultsDiffer("dampening-differs", "`MomentumConfig::new()` 用的 dampening 和 torch SGD 不同", "torch-sgd", "burn-sgd-port",
                       "dampening", "SGD 动量的 `dampening`（`MomentumConfig` / `torch.optim.SGD`）",
                       maps=("SGD.dampening", "SgdConfig.momentum.dampening")),
        TensorsCompare("first-step-same", "第一步两边相同（第一次的速度不做 dampening）",
                      "torch-sgd", "burn-sgd-port", ("w.step1",)),
        TwoStepRatio("second-step-ratio", "两步之后 burn/torch = (2 + m − d_burn) / (2 + m − d_torch)，逐元素成立",
                     "torch-sgd", "burn-sgd-port", "w.step2"),
        Diagnosed("compare-sees-a-scale", "compare 把之后的每一步都诊断为一个统一的 scale", "torch-sgd", "burn-sgd-port", "scale"),
        Mismatches("negative-control", "burn 的移植对 torch SGD 报 MISMATCH", "torch-sgd", "burn-sgd-port"),
        SameHparam("fixed-dampening-same", "`with_dampening(0.0)` 用的是 PyTorch 的 dampening", "torch-sgd", "burn-sgd-fixed", "dampening"),
        Matches("fix-matches", "burn `with_dampening(0.0)` 在 atol 1e-6 下和 torch SGD 一致", "torch-sgd", "burn-sgd-fixed"),
        Panics("guard-panics-on-dampening", "`assert_torch_hparams` 拦下默认的 dampening",
               "burn", "guard", "optimizer hyper-parameter differs from PyTorch: SgdConfig.momentum.dampening"),
    ),
)
