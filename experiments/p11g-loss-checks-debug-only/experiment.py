"""p11g: loss inputs PyTorch refuses. PyTorch's BCELoss raises on a target outside [0, 1] and
GaussianNLLLoss on a negative variance; burn 0.22.1 checks neither value (a target of -1 computes,
a negative variance is clamped to eps), in debug and release builds alike. burn 0.23.0-pre.1 adds
these checks as `debug_assert!`: a debug build panics, a release build still computes."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import Accepts, Claim, Experiment, Matches, Mismatches, Panics, Raises, SourceRef


@dataclass(frozen=True)
class VarianceClamped(Claim):
    """`dump`'s `gnll.loss` is PyTorch's Gaussian NLL formula, mean(0.5·(log v + (mean − target)²/v)),
    evaluated in float64 on that dump's `gnll.mean`, `gnll.target` and `gnll.var` with v = max(var,
    eps) (eps from its metadata `gnll_eps`), within `rtol`; and at least one `gnll.var` is negative,
    so the clamp is what made the loss finite."""

    id: str
    text: str
    dump: str
    rtol: float = 1e-5

    def observe(self, record, out):
        dump = read_dump(out / f"{self.dump}.safetensors")
        mean, target, var = (dump.tensors[k].astype(np.float64) for k in ("gnll.mean", "gnll.target", "gnll.var"))
        clamped = np.maximum(var, float(dump.metadata["gnll_eps"]))
        expected = float(np.mean(0.5 * (np.log(clamped) + (mean - target) ** 2 / clamped)))
        loss = float(dump.tensors["gnll.loss"][0])
        negative = int(np.count_nonzero(var < 0))
        ok = negative > 0 and abs(loss - expected) <= self.rtol * abs(expected)
        return (f"gnll.loss = formula with var clamped to eps (rtol {self.rtol:g}), some var < 0",
                f"gnll.loss {loss:.9g}, formula {expected:.9g}, {negative} negative var", ok)


def magnitude(record) -> str:
    port = record.program("burn", "port").tensors
    ref = record.program("torch", "ref").tensors
    bce = f"BCE loss {port['bce.loss'][0]:.4g}（应为 {ref['bce.loss'][0]:.4g}）"
    return f"PyTorch 报错的输入照算：{bce}，GaussianNLL {port['gnll.loss'][0]:.4g}（应为 {ref['gnll.loss'][0]:.4g}）"


EXPERIMENT = Experiment(
    id="p11g",
    title="PyTorch 拒收的 loss 输入 burn 照算：0.22.1 不查，0.23 只在 debug 构建里查",
    mainline="loss",
    kind="silent",
    symptoms=("loss-wrong",),
    related=("p11", "p11e"),
    torch_variants=("ref", "direct-bce", "direct-bce-logits", "direct-gnll"),
    burn_variants=("port", "fixed", "checked", "checked-var"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::assertions",
                  '"Shape of targets ({targets_dims:?}) should correspond to outer shape of logits ({logits_dims:?})."'),
        SourceRef("burn-nn", "src/loss/binary_cross_entropy.rs", "BinaryCrossEntropyLoss::forward",
                  "(targets_float.clone() - 1) * logits.clone().neg().log1p().clamp_min(-100.0)"),
        SourceRef("burn-nn", "src/loss/gaussian_nll.rs", "GaussianNLLLoss::forward_no_reduction", "let var = var.clamp_min(self.eps);"),
        SourceRef("burn-nn", "src/loss/ctc.rs", "length_assertions", "#[cfg(debug_assertions)]"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-ref-runs", "PyTorch 的参考：标签映射到 {0, 1}、方差过 softplus，两个 loss 照常计算", "torch", "ref"),
        Raises("torch-bce-rejects-labels", "PyTorch 的 `BCELoss` 拒绝 -1 的目标", "torch", "direct-bce",
               "RuntimeError", "all elements of target should be between 0 and 1"),
        Accepts("torch-bce-logits-computes", "PyTorch 的 `BCEWithLogitsLoss` 不查目标范围：-1 的目标照算", "torch", "direct-bce-logits"),
        Raises("torch-gnll-rejects-negative-var", "PyTorch 的 `GaussianNLLLoss` 拒绝负的方差", "torch", "direct-gnll",
               "ValueError", "var has negative entry/entries"),
        Accepts("burn-port-runs", "burn 的移植拿同样的输入照算，不报错：目标 -1、负的方差都收下", "burn", "port"),
        VarianceClamped("burn-clamps-negative-var", "burn 把负的方差截到 eps 再算：GaussianNLL 的 loss 等于把方差截到 eps 的公式值", "burn-port"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "burn-fixed（标签映射到 {0, 1}、方差过 softplus）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
        Panics("checked-rejects-labels", "用 `assert!` 写的目标检查在运行期拦下 -1 的目标", "burn", "checked",
               "BCE targets must be in [0, 1]"),
        Panics("checked-rejects-negative-var", "用 `assert!` 写的方差检查在运行期拦下负的方差", "burn", "checked-var",
               "GaussianNLL variance must be non-negative"),
    ),
)
