"""p13: clamp, relu6 and hardtanh at inputs lying exactly on a bound: burn passes the gradient
(1), PyTorch blocks it (0)."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita.experiment import Accepts, Claim, Experiment, Matches, Mismatches, Panics, SourceRef


@dataclass(frozen=True)
class DiffersOnlyAtKinks(Claim):
    """For each op, the candidate's `<op>.grad` differs from the reference's (beyond `atol`)
    exactly at the elements whose input `<op>.x` equals one of the kinks the reference dump
    records under `<op>.kinks`, and `<op>.out` agrees bit for bit everywhere."""

    id: str
    text: str
    reference: str
    candidate: str
    ops: tuple[str, ...]
    atol: float = 1e-6

    def observe(self, record, out):
        reference = read_dump(out / f"{self.reference}.safetensors")
        candidate = read_dump(out / f"{self.candidate}.safetensors")
        expected, observed, ok = [], [], True
        for op in self.ops:
            kinks = reference.metadata[f"{op}.kinks"]
            x = reference.tensors[f"{op}.x"]
            on_kink = np.isin(x, np.array([float(k) for k in kinks.split(",")], dtype=x.dtype))
            diff = np.abs(candidate.tensors[f"{op}.grad"].astype(np.float64) - reference.tensors[f"{op}.grad"])
            differs = diff > self.atol
            same_out = np.array_equal(reference.tensors[f"{op}.out"], candidate.tensors[f"{op}.out"])
            ok = ok and bool(np.array_equal(differs, on_kink)) and same_out
            expected.append(f"{op}: grad differs only at x in {{{kinks}}}, out equal")
            observed.append(f"{op}: grad differs at x={[float(v) for v in x[differs]]}, out {'equal' if same_out else 'DIFFERS'}")
        return "; ".join(expected), "; ".join(observed), ok


@dataclass(frozen=True)
class TensorsAgree(Claim):
    """`pita compare reference candidate` passes on each of `tensors` (while others may fail)."""

    id: str
    text: str
    reference: str
    candidate: str
    tensors: tuple[str, ...]

    def observe(self, record, out):
        rows = {t["name"]: t for t in record.comparison(self.reference, self.candidate).result["tensors"]}
        found = [f"{name} {'OK' if rows[name]['ok'] else 'MISMATCH'}" if name in rows else f"{name} missing" for name in self.tensors]
        ok = all(name in rows and rows[name]["ok"] for name in self.tensors)
        return ", ".join(f"{name} OK" for name in self.tensors), ", ".join(found), ok


def magnitude(record) -> str:
    rows = [t for t in record.comparison("torch-ref", "burn-port").result["tensors"] if not t["ok"]]
    count = sum(t["mismatched"] for t in rows)
    return f"边界上梯度 {rows[0]['worst_candidate']:g} 对 {rows[0]['worst_reference']:g}（{count} 处）"


EXPERIMENT = Experiment(
    id="p13",
    title="输入正好在 clamp 的边界上：burn 传梯度，PyTorch 不传",
    mainline="backward",
    kind="silent",
    torch_script="experiments/pytorch/p13_clamp_bounds.py",
    burn_binary="p13",
    torch_variants=("ref",),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    compile_fail=(),
    sources=(
        SourceRef("burn-backend", "src/backend/ops/tensor.rs", "FloatTensorOps::float_clamp", "Self::float_clamp_min(Self::float_clamp_max("),
        SourceRef("burn-backend", "src/backend/ops/tensor.rs", "FloatTensorOps::float_clamp_min", "float_lower_elem("),
        SourceRef("burn-backend", "src/backend/ops/tensor.rs", "FloatTensorOps::float_clamp_max", "float_greater_elem("),
        SourceRef("burn-autodiff", "src/ops/tensor.rs", "FloatTensorOps::float_mask_fill", "B::float_mask_fill(grad, ops.state, 0f32.into())"),
        SourceRef("burn-tensor", "src/tensor/activation/base.rs", "relu6", "tensor.clamp(0.0, 6.0)"),
        SourceRef("burn-tensor", "src/tensor/activation/base.rs", "hardtanh", "tensor.clamp(min_val, max_val)"),
        SourceRef("burn-autodiff", "src/ops/activation.rs", "ActivationOps::relu", "B::relu_backward(state, grad)"),
        SourceRef("burn-flex", "src/ops/activation.rs", "ActivationOps::relu_backward", "out > 0.0 { g } else { 0.0 }"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch computes clamp, relu6 and hardtanh and their gradients", "torch", "ref"),
        Accepts("burn-port-runs", "the direct burn port runs without a warning", "burn", "port"),
        DiffersOnlyAtKinks("differs-only-on-bounds", "forwards agree; the gradients differ exactly where x lies on a bound",
                           "torch-ref", "burn-port", ("clamp", "relu6", "hardtanh")),
        TensorsAgree("relu-agrees", "relu, which has its own backward, agrees at 0 on both sides",
                     "torch-ref", "burn-port", ("relu.out", "relu.grad")),
        Mismatches("negative-control", "burn-port against torch-ref is a MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "clamp_like_torch matches torch-ref at atol 1e-6", "torch-ref", "burn-fixed"),
        Panics("guard-panics-on-bound", "assert_off_kinks rejects an input lying on a clamp bound",
               "burn", "guard", "input lies exactly on a kink: burn and PyTorch pick different gradients there"),
    ),
)
