"""p20b (checked: both right): a bias in front of a batch normalisation has a gradient that is zero
in exact arithmetic. Its float32 noise differs between PyTorch and burn, and AdamW's division by
each gradient's own root mean square turns it into steps of about lr that differ between the two.
Judged by the tolerance the step mismatches there alone; judged by PyTorch's own float32 error
(the float64 run) it matches, as it does without the bias."""

import json
from dataclasses import dataclass

import numpy as np

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, OnlyTensorsDiffer, PairClaim, PlatformTolerance, SourceRef, Traced

NOISE_ULPS = 64  # a gradient this many float32 ULPs of the weight gradient's largest element, or less, is rounding noise
BIAS, WEIGHT = "fc.bias", "fc.weight"


def adamw_settings(dump) -> tuple[float, float]:
    """(lr, weight_decay) of PyTorch's recorded AdamW (metadata `optimizer`, its first group)."""
    group = json.loads(dump.metadata["optimizer"])["groups"][0]
    return float(group["lr"]), float(group["weight_decay"])


@dataclass(frozen=True)
class NoiseBecomesStep(PairClaim):
    """On both recordings, the bias gradient is noise (at most NOISE_ULPS float32 ULPs of the weight
    gradient's largest element) and yet AdamW moves the bias, beyond its weight decay, by at least
    lr/4 and at most lr (lr and weight decay: the reference's recorded AdamW)."""

    def observe(self, record, out):
        ref, cand = self.dumps(out)
        lr, decay = adamw_settings(ref)
        shown, ok = [], True
        for name, dump in ((self.reference, ref), (self.candidate, cand)):
            t = {k: dump.tensors[k].astype(np.float64) for k in (f"grad/{BIAS}", f"grad/{WEIGHT}", f"param/{BIAS}", f"step1/{BIAS}")}
            noise = float(np.max(np.abs(t[f"grad/{BIAS}"]))) <= NOISE_ULPS * 2.0**-23 * float(np.max(np.abs(t[f"grad/{WEIGHT}"])))
            step = float(np.max(np.abs(t[f"step1/{BIAS}"] - t[f"param/{BIAS}"] * (1 - lr * decay))))
            moved = lr / 4 <= step <= lr * (1 + 1e-3)
            ok = ok and noise and moved
            # Verdicts, not the figures: noise decides them, and they move from one machine to the next.
            shown.append(f"{name}: grad {'within' if noise else 'beyond'} {NOISE_ULPS} ULPs, step {'in' if moved else 'outside'} [lr/4, lr]")
        return f"grad within {NOISE_ULPS} ULPs, step in [lr/4, lr] on both sides", "; ".join(shown), ok


@dataclass(frozen=True)
class TraceSaysNoise(PairClaim):
    """`pita trace` finds the first divergence in the step of `tensor`, and says the gradient there
    is float32 noise (its `noise_gradients`)."""

    tensor: str = BIAS

    def observe(self, record, out):
        run = record.trace(self.reference, self.candidate)
        first, noise = run.result.first_divergence, run.result.noise_gradients
        observed = (f"first divergence {first.phase} {first.name}" if first else "no divergence") + f"; noise gradients: {', '.join(noise) or 'none'}"
        ok = first is not None and first.name == f"step1/{self.tensor}" and noise == [f"grad/{self.tensor}"]
        return f"first divergence step step1/{self.tensor}; noise gradients: grad/{self.tensor}", observed, ok


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-ref", "burn-port").tensors if t.name == f"step1/{BIAS}")
    return f"查过：两边都对；按容差比，只有 bias 这一步差 {row.max_abs_diff:.2e}"


EXPERIMENT = Experiment(
    id="p20b",
    title="BatchNorm 前面的 bias：梯度只是噪声，AdamW 把它放大成约 lr 的一步，两边不同（查过：两边都对）",
    mainline="optimizer",
    kind="same",
    symptoms=("update-differs",),
    related=("p20", "p20a", "p21"),
    also=("p21",),  # the broken variant leaves AdamW's weight decay at burn's default, which p21's signature names, rightly
    torch_variants=("ref", "budget", "nobias"),
    burn_variants=("port", "nobias", "decay-default"),
    comparisons=(
        ("torch-ref", "burn-port"),
        ("torch-budget", "burn-port"),
        ("torch-nobias", "burn-nobias"),
        ("torch-budget", "burn-decay-default"),
    ),
    traces=(("torch-ref", "burn-port"), ("torch-budget", "burn-port")),
    sources=(
        SourceRef("burn-optim", "src/optim/adamw.rs", "AdaptiveMomentumW::transform",
                  "moment_1_corrected.div(moment_2_corrected.sqrt().add_scalar(self.epsilon));"),
    ),
    magnitude=magnitude,
    # The bias step is float32 noise amplified to about lr: another machine's summation order gives
    # other noise, and the step (and each figure derived from it) may move by up to 2 lr = 2e-3. The
    # claims' verdicts pin the outcome; 20000 ULPs of 1 is 2.4e-3.
    platform_tolerance=PlatformTolerance(ulps=20000),
    claims=(
        Accepts("torch-runs", "PyTorch：Linear、BatchNorm（批内统计量）、MSE、一步 AdamW，`pita.torch.record` 记录", "torch", "ref"),
        Accepts("burn-port-runs", "burn 照 PyTorch 移植的同一个模型、同样设置的 AdamW，`pita::record` 记录", "burn", "port"),
        Mismatches("negative-control", "只按容差（atol 1e-6）比：burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        OnlyTensorsDiffer("only-bias-step", "而且只在 bias 这一步之后的值上：前向、loss、梯度、权重那一步都一致",
                          "torch-ref", "burn-port", (f"step1/{BIAS}",)),
        NoiseBecomesStep("noise-becomes-step", "两边 bias 的梯度都只是舍入噪声，AdamW 却让 bias 走了 lr/4 到 lr 的一步（除去权重衰减）",
                         "torch-ref", "burn-port"),
        TraceSaysNoise("trace-says-noise", "`pita trace` 找到第一处分歧在 bias 这一步，并指出那里的梯度是 float32 噪声",
                       "torch-ref", "burn-port"),
        Matches("budget-matches", "用 PyTorch 自己的 float64 运行定预算（它自己的 float32 误差）来比：burn-port 一致", "torch-budget", "burn-port"),
        Traced("trace-budget-matches", "`pita trace` 用同样的预算：每个阶段都一致", "torch-budget", "burn-port"),
        Matches("nobias-matches", "bias=False（BatchNorm 前面本来就不需要 bias）：只按容差比也一致", "torch-nobias", "burn-nobias"),
        Mismatches("budget-catches-decay", "预算不是放水：burn-decay-default（AdamW 的权重衰减留成 burn 的默认值）在同样的预算下报 MISMATCH",
                   "torch-budget", "burn-decay-default"),
    ),
)
