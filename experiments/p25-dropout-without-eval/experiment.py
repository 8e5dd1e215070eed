"""p25: an evaluation pass on the training (autodiff) device keeps Dropout on; burn has no eval()."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import (
    Accepts,
    CompileFails,
    Experiment,
    Matches,
    Mismatches,
    PairClaim,
    Panics,
    SourceRef,
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
class DroppedOrScaled(PairClaim):
    """Every element of `candidate` is 0 or `reference / (1 - p)`, with p stored under `key` in the
    reference dump's metadata, and at least one element is zeroed: dropout was applied."""

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
    symptoms=("eval-wrong",),
    related=("p26", "p28"),
    reports=('tracel-ai/burn#2652',),
    torch_variants=("eval", "nograd"),
    burn_variants=("port", "valid", "mixed", "guard"),
    comparisons=(
        ("torch-eval", "burn-valid"),
        ("torch-eval", "burn-port"),
        ("torch-eval", "burn-mixed"),
        ("torch-eval", "torch-nograd"),
    ),
    sources=(
        SourceRef("burn-nn", "src/modules/dropout.rs", "Dropout::forward", "!input.device().is_autodiff()"),
        SourceRef("burn-nn", "src/modules/dropout.rs", "Dropout::forward", "Distribution::Bernoulli(prob_keep)"),
        SourceRef("burn-core", "src/module/param/flag.rs", "Param<Flag>::valid", "Flag::new(false)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("burn-port-runs", "burn 在训练模型上跑评估，不报错", "burn", "port"),
        DroppedOrScaled("burn-port-drops", "burn-port：每个输出都是 0 或评估输出 ×1/(1-p)：dropout 开着",
                        "torch-eval", "burn-port", "dropout"),
        Mismatches("negative-control", "burn-port 对 torch-eval 报 MISMATCH", "torch-eval", "burn-port"),
        Matches("fix-matches", "burn-valid（`model.valid()`，输入在 `device.inner()` 上）和 torch-eval 一致", "torch-eval", "burn-valid"),
        Matches("valid-alone-matches", "burn-mixed（`model.valid()`，输入仍在 autodiff 设备上）和 torch-eval 一致",
                "torch-eval", "burn-mixed"),
        DroppedOrScaled("torch-nograd-drops", "PyTorch 在 `no_grad()` 下、训练模式中同样丢弃：`no_grad` 不等于 `eval()`",
                        "torch-eval", "torch-nograd", "dropout"),
        Mismatches("torch-nograd-differs", "torch-nograd 对 torch-eval 报 MISMATCH", "torch-eval", "torch-nograd"),
        CompileFails("ce25-rejects-training-model", "`evaluate(&Inference<M>)` 函数在编译期拒绝训练模型",
                     "ce25", "E0308", "expected `&Inference<Dropout>`, found `&Dropout`"),
        Panics("guard-panics", "输入在 autodiff 设备上时，`assert_inference` 拦下训练模型",
               "burn", "guard", "evaluation would run in training mode: `drop.training` is enabled"),
    ),
)
