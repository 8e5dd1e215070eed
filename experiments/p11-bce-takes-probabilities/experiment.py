"""p11: BCEWithLogitsLoss ported as burn's BinaryCrossEntropyLoss with its default `logits = false`."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import LOSS_FN, Accepts, Claim, Diagnosed, Experiment, Mapped, Matches, Mismatches, Panics, Raises, SourceRef, TensorsCompare


@dataclass(frozen=True)
class AllFinite(Claim):
    """Every element of the named tensors in a dump is a finite number (no NaN, no infinity)."""

    id: str
    text: str
    dump: str
    tensors: tuple[str, ...]

    def observe(self, record, out):
        tensors = read_dump(out / f"{self.dump}.safetensors").tensors
        found = [f"{name}: {int(np.count_nonzero(~np.isfinite(tensors[name])))} non-finite" if name in tensors else f"{name}: missing"
                 for name in self.tensors]
        ok = all(name in tensors and np.all(np.isfinite(tensors[name])) for name in self.tensors)
        return f"all finite in {', '.join(self.tensors)}", "; ".join(found), bool(ok)


def magnitude(record) -> str:
    port = record.program("burn", "port").tensors
    ref = record.program("torch", "ref").tensors
    nan = int(np.count_nonzero(np.isnan(port["mixed.logits.grad"])))
    return (f"logits 落在 (0,1)：loss {port['inside.loss'][0]:.4g}（应为 {ref['inside.loss'][0]:.4g}）；"
            f"有负 logit：loss NaN，{nan} 个梯度 NaN")


EXPERIMENT = Experiment(
    id="p11",
    title="BCEWithLogitsLoss 搬成 BinaryCrossEntropyLoss，默认把 logits 当概率",
    fix="输入是 logits 时写 `BinaryCrossEntropyLossConfig::new().with_logits(true)`",
    mainline="loss",
    kind="silent",
    symptoms=("nan", "loss-wrong"),
    related=("p10c", "p11a"),
    reports=('tracel-ai/burn#2739',),
    settings=(
        Mapped("BCEWithLogitsLoss.", "BinaryCrossEntropyLoss.logits", True, False, scope=LOSS_FN),
        Mapped("BCELoss.", "BinaryCrossEntropyLoss.logits", False, False, scope=LOSS_FN),
    ),
    torch_variants=("ref", "bceloss"),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-bceloss", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward", "let mut loss = if self.logits"),
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward", "logits.log().clamp_min(-100.0)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-ref-runs", "PyTorch 的 `BCEWithLogitsLoss` 接受两批 logits", "torch", "ref"),
        Raises("torch-bceloss-rejects-logits", "PyTorch 的 `BCELoss` 拒绝带负 logit 的那一批",
               "torch", "bceloss", "RuntimeError", "all elements of input should be between 0 and 1"),
        Accepts("burn-port-runs", "burn 默认的 `BinaryCrossEntropyLoss` 接受两批数据，不报错", "burn", "port"),
        TensorsCompare("port-is-bceloss", "logits 都在 (0, 1) 内时，burn 的移植算的是 PyTorch 的 `BCELoss`，不是 `BCEWithLogitsLoss`",
                  "torch-bceloss", "burn-port", ("inside.loss", "inside.logits.grad")),
        AllFinite("port-inside-is-finite", "logits 都在 (0, 1) 内时，算错的 loss 和梯度都是普通的有限数",
                  "burn-port", ("inside.loss", "inside.logits.grad")),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Diagnosed("compare-finds-the-nan", "compare 报出负 logit 在 burn-port 里产生的 NaN",
                  "torch-ref", "burn-port", "nan", params=(("side", "candidate"),), tensors=("mixed.loss", "mixed.logits.grad")),
        Matches("fix-matches", "burn-fixed（`with_logits(true)`）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
        Panics("guard-panics-on-logits", "取值范围守卫在运行期拦下混合的那一批",
               "burn", "guard", "expects probabilities in [0, 1]; raw logits need .with_logits(true)"),
    ),
)
