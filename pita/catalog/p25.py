"""p25: an evaluation pass on the training (autodiff) device keeps Dropout on; burn has no eval()."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita.experiment import (
    Accepts, Claim, CompileFails, Experiment, Matches, Mismatches, Panics, SourceRef,
)


def dropout_pattern(record_or_out, reference: str, candidate: str, key: str):
    """(zeroed, kept, kept ratios, keep scale) of `candidate` against the undropped `reference`."""
    ref = read_dump(record_or_out / f"{reference}.safetensors")
    cand = read_dump(record_or_out / f"{candidate}.safetensors")
    r = ref.tensors["out"].astype(np.float64).ravel()
    c = cand.tensors["out"].astype(np.float64).ravel()
    scale = 1.0 / (1.0 - float(ref.metadata[key]))
    zeroed = c == 0
    ratios = c[~zeroed] / r[~zeroed]
    return int(zeroed.sum()), int((~zeroed).sum()), ratios, scale


@dataclass(frozen=True)
class DroppedOrScaled(Claim):
    """Every element of `candidate` is 0 or `reference / (1 - p)`, with p stored under `key` in the
    reference dump's metadata, and at least one element is zeroed: dropout was applied."""

    id: str
    text: str
    reference: str
    candidate: str
    key: str
    rtol: float = 1e-5

    def observe(self, record, out):
        zeroed, kept, ratios, scale = dropout_pattern(out, self.reference, self.candidate, self.key)
        ok = zeroed > 0 and bool(np.all(np.abs(ratios - scale) <= self.rtol * scale))
        low, high = (float(ratios.min()), float(ratios.max())) if kept else (float("nan"),) * 2
        expected = f"some zeros, the rest ×1/(1-{self.key})={scale:g} ±{self.rtol:g}"
        observed = f"{zeroed} of {zeroed + kept} zeroed, the rest ×[{low:.9g}, {high:.9g}]"
        return expected, observed, ok


def magnitude(record) -> str:
    out = record.program("burn", "port").tensors["out"]
    reference = record.program("torch", "eval").tensors["out"]
    zeroed = sum(1 for v in out if v == 0)
    kept = [c / r for c, r in zip(out, reference) if c != 0]
    return f"{len(out)} 个输出 {zeroed} 个置零，其余 ×{sum(kept) / len(kept):.4g}"


EXPERIMENT = Experiment(
    id="p25",
    title="评估时没有 eval()：在 autodiff 设备上 Dropout 照样丢",
    mainline="train/eval",
    kind="silent",
    torch_script="experiments/pytorch/p25_dropout_eval.py",
    burn_binary="p25",
    torch_variants=("eval", "nograd"),
    burn_variants=("port", "valid", "mixed", "guard"),
    comparisons=(
        ("torch-eval", "burn-valid"),
        ("torch-eval", "burn-port"),
        ("torch-eval", "burn-mixed"),
        ("torch-eval", "torch-nograd"),
    ),
    compile_fail=("ce25",),
    sources=(
        SourceRef("burn-nn", "src/modules/dropout.rs", "Dropout::forward", "!input.device().is_autodiff()"),
        SourceRef("burn-nn", "src/modules/dropout.rs", "Dropout::forward", "Distribution::Bernoulli(prob_keep)"),
        SourceRef("burn-core", "src/module/param/flag.rs", "Param<Flag>::valid", "Flag::new(false)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("burn-port-runs", "burn runs the evaluation pass on the training model without complaint", "burn", "port"),
        DroppedOrScaled("burn-port-drops", "burn-port: every output is 0 or the eval output ×1/(1-p): dropout is on",
                        "torch-eval", "burn-port", "dropout"),
        Mismatches("negative-control", "burn-port against torch-eval is a MISMATCH", "torch-eval", "burn-port"),
        Matches("fix-matches", "burn-valid (model.valid(), inputs on device.inner()) matches torch-eval", "torch-eval", "burn-valid"),
        Matches("valid-alone-matches", "burn-mixed (model.valid(), inputs still on the autodiff device) matches torch-eval",
                "torch-eval", "burn-mixed"),
        DroppedOrScaled("torch-nograd-drops", "PyTorch under no_grad() but in training mode drops too: no_grad is not eval()",
                        "torch-eval", "torch-nograd", "dropout"),
        Mismatches("torch-nograd-differs", "torch-nograd against torch-eval is a MISMATCH", "torch-eval", "torch-nograd"),
        CompileFails("ce25-rejects-training-model", "an evaluate(&Inference<M>) function refuses the training model at compile time",
                     "ce25", "E0308", "expected `&Inference<Dropout>`, found `&Dropout`"),
        Panics("guard-panics", "assert_inference rejects the training model on an autodiff input",
               "burn", "guard", "evaluation would run in training mode: `drop.training` is enabled"),
    ),
)
