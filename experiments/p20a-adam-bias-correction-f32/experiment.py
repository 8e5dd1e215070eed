"""p20a: with PyTorch's lr, betas and epsilon, burn's Adam still drifts from torch.optim.Adam, because
burn computes the bias corrections `1 - β^t` in f32 while PyTorch computes them in Python floats."""

from __future__ import annotations

from dataclasses import dataclass

from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, PairClaim, Relates, SameHparam, SourceRef


def _w_row(record, reference, candidate):
    return next(t for t in record.comparison(reference, candidate).tensors if t.name == "w")


@dataclass(frozen=True)
class OffsetFitsBetter(PairClaim):
    """compare's diagnosis of `tensor` holds both readings, a common offset and a common factor,
    and the offset leaves the smaller residual: the drift is an offset, the factor near 1 only
    approximates it."""

    tensor: str

    def observe(self, record, out):
        row = next(t for t in record.comparison(self.reference, self.candidate).tensors if t.name == self.tensor)
        found = {d.kind: d.residual for d in row.diagnosis}
        observed = ", ".join(f"{kind} residual {residual:.2e}" for kind, residual in found.items()) or "no diagnosis"
        ok = {"offset", "scale"} <= found.keys() and found["offset"] < found["scale"]
        return f"{self.tensor}: offset residual < scale residual", observed, ok


def magnitude(record) -> str:
    row = _w_row(record, "torch-adam", "burn-port")
    steps = record.program("torch", "adam").metadata["steps"]
    return f"{steps} 步后参数差 {row.max_abs_diff:.2g}（{row.max_ulp} ulp）"


EXPERIMENT = Experiment(
    id="p20a",
    title="超参数全对齐，Adam 仍然漂移：偏差修正在 f32 里算",
    mainline="optimizer",
    kind="silent",
    symptoms=("slow-drift",),
    related=("p20",),
    reports=('tracel-ai/burn#614',),
    torch_variants=("adam", "f32-bias", "f64-bias"),
    burn_variants=("port", "fixed"),
    comparisons=(
        ("torch-adam", "burn-port"),
        ("torch-f32-bias", "burn-port"),
        ("torch-adam", "torch-f32-bias"),
        ("torch-adam", "torch-f64-bias"),
        ("torch-adam", "burn-fixed"),
        ("torch-f64-bias", "burn-fixed"),
    ),
    sources=(
        SourceRef("burn-optim", "src/optim/adam.rs", "AdamConfig", "beta_2: f32,"),
        SourceRef("burn-optim", "src/optim/adam.rs", "AdaptiveMomentum::transform",
                  "let bias_correction2_sqrt = (1.0 - self.beta_2.powi(time)).sqrt();"),
        SourceRef("burn-optim", "src/optim/adam.rs", "AdaptiveMomentum::transform",
                  "let combined_factor = bias_correction2_sqrt / (1.0 - self.beta_1.powi(time));"),
        SourceRef("burn-optim", "src/optim/adam.rs", "AdaptiveMomentum::transform",
                  ".add_scalar(self.epsilon * bias_correction2_sqrt)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-adam-runs", "PyTorch 的 Adam 走完全部步数", "torch", "adam"),
        Accepts("burn-port-runs", "burn 的 Adam 用 PyTorch 的超参数走同样的步数（退出码 0）", "burn", "port"),
        SameHparam("same-beta-1", "burn 的 `AdamConfig` 用的 beta_1 和 PyTorch 相同（按 f32 比）", "torch-adam", "burn-port", "beta_1"),
        SameHparam("same-beta-2", "burn 的 `AdamConfig` 用的 beta_2 和 PyTorch 相同（按 f32 比）", "torch-adam", "burn-port", "beta_2"),
        SameHparam("same-epsilon", "burn 的 `AdamConfig` 用的 epsilon 和 PyTorch 相同（按 f32 比）", "torch-adam", "burn-port", "epsilon"),
        SameHparam("same-lr", "两边用同一个学习率", "torch-adam", "burn-port", "lr"),
        Mismatches("negative-control", "burn 的 Adam 对 `torch.optim.Adam` 在 atol 1e-6 下报 MISMATCH", "torch-adam", "burn-port"),
        Diagnosed("drift-is-an-offset", "compare 诊断出一个共同的偏移：每个参数都短了差不多一样多",
                  "torch-adam", "burn-port", "offset", tensors=("w",)),
        OffsetFitsBetter("offset-fits-better", "compare 的两种读法里，减掉共同偏移后剩下的差比除掉共同倍数后更小",
                         "torch-adam", "burn-port", "w"),
        Mismatches("f32-bias-reproduces-drift", "PyTorch 侧手写、偏差修正用 f32 的 Adam 对 `torch.optim.Adam` 报 MISMATCH",
                   "torch-adam", "torch-f32-bias"),
        Relates("f32-bias-is-burn", "burn 的 Adam 和手写的 f32 偏差修正版本相差不超过 2 个 ulp（两边是同一串 IEEE 运算）",
                "torch-f32-bias", "burn-port", "w", "identity", ulps=2),
        Matches("f64-bias-matches-torch", "同样手写、偏差修正改用 f64 的一步和 `torch.optim.Adam` 一致",
                "torch-adam", "torch-f64-bias"),
        Matches("fix-matches", "burn 侧手写、偏差修正用 f64 的 Adam 在 atol 1e-6 下和 `torch.optim.Adam` 一致", "torch-adam", "burn-fixed"),
        Relates("fix-is-f64-bias", "burn 的改法和 PyTorch 侧手写的 f64 偏差修正版本相差不超过 2 个 ulp（两边是同一串 IEEE 运算）",
                "torch-f64-bias", "burn-fixed", "w", "identity", ulps=2),
    ),
)
