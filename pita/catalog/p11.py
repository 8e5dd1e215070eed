"""p11: BCEWithLogitsLoss ported as burn's BinaryCrossEntropyLoss with its default `logits = false`."""

from dataclasses import dataclass

import numpy as np

from pita.experiment import Accepts, Claim, Diagnosed, Experiment, Matches, Mismatches, Panics, Raises, SourceRef, TensorsCompare
from pita.dump import read_dump


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
    mainline="loss",
    kind="silent",
    torch_script="experiments/pytorch/p11_bce_logits.py",
    burn_binary="p11",
    torch_variants=("ref", "bceloss"),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-bceloss", "burn-port")),
    compile_fail=(),
    sources=(
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward", "let mut loss = if self.logits"),
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward", "logits.log().clamp_min(-100.0)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-ref-runs", "PyTorch's BCEWithLogitsLoss takes both batches of logits", "torch", "ref"),
        Raises("torch-bceloss-rejects-logits", "PyTorch's BCELoss refuses the batch with negative logits",
               "torch", "bceloss", "RuntimeError", "all elements of input should be between 0 and 1"),
        Accepts("burn-port-runs", "burn's default BinaryCrossEntropyLoss takes both batches without complaint", "burn", "port"),
        TensorsCompare("port-is-bceloss", "on logits inside (0, 1), the burn port computes PyTorch's BCELoss, not BCEWithLogitsLoss",
                  "torch-bceloss", "burn-port", ("inside.loss", "inside.logits.grad")),
        AllFinite("port-inside-is-finite", "on logits inside (0, 1), the wrong loss and gradients are ordinary finite numbers",
                  "burn-port", ("inside.loss", "inside.logits.grad")),
        Mismatches("negative-control", "burn-port against torch-ref is a MISMATCH", "torch-ref", "burn-port"),
        Diagnosed("compare-finds-the-nan", "compare reports the NaN the negative logits produce in burn-port",
                  "torch-ref", "burn-port", "nan", params=(("side", "candidate"),), tensors=("mixed.loss", "mixed.logits.grad")),
        Matches("fix-matches", "burn-fixed (with_logits(true)) matches torch-ref at atol 1e-6", "torch-ref", "burn-fixed"),
        Panics("guard-panics-on-logits", "the range guard stops the mixed batch at run time",
               "burn", "guard", "expects probabilities in [0, 1]; raw logits need .with_logits(true)"),
    ),
)
