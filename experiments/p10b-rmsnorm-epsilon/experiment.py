"""p10b: burn's RmsNorm defaults to epsilon 1e-5; PyTorch's RMSNorm (eps=None) uses the dtype's machine epsilon."""

from dataclasses import dataclass

import numpy as np

from pita.likely import Signature
from pita_lab.experiment import Accepts, DefaultsDiffer, Diagnosed, Experiment, Matches, Mismatches, PairClaim, SourceRef


@dataclass(frozen=True)
class EpsilonScale(PairClaim):
    """The scale compare finds on `tensor` equals what the two dumps' `epsilon` metadata predict for
    an RMS norm of the input `x`: √((mean(x²) + eps_ref) / (mean(x²) + eps_cand)), within `rtol`."""

    tensor: str
    x: str
    rtol: float = 1e-4

    def observe(self, record, out):
        ref, cand = self.dumps(out)
        ms = float(np.mean(ref.tensors[self.x].astype(np.float64) ** 2))
        eps_ref, eps_cand = float(ref.metadata["epsilon"]), float(cand.metadata["epsilon"])
        predicted = float(np.sqrt((ms + eps_ref) / (ms + eps_cand)))
        row = next(t for t in record.comparison(self.reference, self.candidate).tensors if t.name == self.tensor)
        factors = [d.params["factor"] for d in row.diagnosis if d.kind == "scale"]
        ok = bool(factors) and abs(factors[0] - predicted) <= self.rtol * predicted
        observed = f"scale {factors[0]:.6g}" if factors else "no scale diagnosis"
        return f"scale √((ms+{eps_ref:g})/(ms+{eps_cand:g})) = {predicted:.6g} ±{self.rtol:g}", observed, ok


def magnitude(record) -> str:
    rows = record.comparison("torch-ref", "burn-port").tensors
    small = next(t for t in rows if t.name == "out.small")
    factor = next(d.params["factor"] for d in small.diagnosis if d.kind == "scale")
    return f"小激活输出 ×{factor:.2f}"


EXPERIMENT = Experiment(
    id="p10b",
    title="RmsNorm 默认 epsilon 比 PyTorch 大，小激活被压小",
    fix="norm 的配置写上 PyTorch 模型的 eps：`RmsNormConfig::new(d).with_epsilon(…)`（`nn.RMSNorm` 默认 `torch.finfo(dtype).eps`）",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p10a", "p20", "p10l"),
    signature=(Signature("setting", settings=("RMSNorm.eps",)),
               Signature("diagnosis", diagnosis="slice_scale", factor="near_one", module_kind=("RMSNorm",)),
               Signature("diagnosis", diagnosis="scale", factor="near_one", module_kind=("RMSNorm",))),
    torch_variants=("ref",),
    burn_variants=("port", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/modules/norm/rms.rs", "RmsNorm::forward", "square().mean_dim(D - 1) + self.epsilon).sqrt();"),
        SourceRef("burn-nn", "src/modules/norm/rms.rs", "RmsNormConfig::init", "epsilon: self.epsilon,"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 `nn.RMSNorm(4)` 以 `eps=None` 正常运行", "torch", "ref"),
        Accepts("burn-port-runs", "burn 默认配置的 `RmsNorm` 正常运行", "burn", "port"),
        DefaultsDiffer("epsilon-differs", "默认的 epsilon 两边不同（PyTorch 的 `eps=None` 按 `torch.finfo` 取值）", "torch-ref", "burn-port",
                       "epsilon", "RMSNorm 的 epsilon（`RmsNormConfig` / `nn.RMSNorm`；PyTorch 的 `eps=None` 取 `torch.finfo(float32).eps`）",
                       maps=("RMSNorm.eps", "RmsNorm.epsilon")),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Diagnosed("compare-finds-scale", "compare 在小激活的输出上诊断出 scale",
                  "torch-ref", "burn-port", "scale", tensors=("out.small",)),
        EpsilonScale("scale-is-epsilon", "这个 scale 正是两边记录的 epsilon 对 `x.small` 的 `mean(x²)` 推算出的值",
                     "torch-ref", "burn-port", "out.small", "x.small"),
        Matches("fix-matches", "burn-fixed（epsilon 为 `f32::EPSILON`）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
    ),
)
