"""p13: clamp, relu6 and hardtanh at inputs lying exactly on a bound: burn passes the gradient
(1), PyTorch blocks it (0) — with scalar bounds. With tensor bounds PyTorch splits the gradient
evenly between x and the bound (1/2 each); burn's `max_pair`/`min_pair` still give x all of it."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import (
    Accepts,
    DiffersOnlyAtKinks,
    Experiment,
    Matches,
    Mismatches,
    Panics,
    SideClaim,
    SourceRef,
    TensorsCompare,
)


@dataclass(frozen=True)
class TieGradient(SideClaim):
    """`<op>` clamps `<op>.x` by the tensors `<op>.min` and `<op>.max`, and the dump holds the
    three gradients. Where x equals a bound, the gradient arriving there (what x, min and max
    receive together) is split evenly between x and that bound (`split=True`) or goes to x
    alone (`split=False`); elsewhere exactly one of the three receives it. Exact: the shares
    are the arriving gradient or its half."""

    op: str
    split: bool

    def observe(self, record, out):
        dump = read_dump(out / f"{self.side}-{self.variant}.safetensors")
        x, low, high = (dump.tensors[f"{self.op}.{name}"].astype(np.float64) for name in ("x", "min", "max"))
        gx, glow, ghigh = (dump.tensors[f"{self.op}.{name}"].astype(np.float64) for name in ("grad", "min.grad", "max.grad"))
        on_low, on_high = x == low, x == high
        bound = np.where(on_low, glow, ghigh)
        other = np.where(on_low, ghigh, glow)  # the bound x does not touch gets nothing
        tie = on_low | on_high
        total = gx + glow + ghigh
        if self.split:
            at_ties = np.array_equal(gx[tie], bound[tie]) and np.array_equal(gx[tie] + bound[tie], total[tie])
        else:
            at_ties = np.array_equal(gx[tie], total[tie]) and not np.any(bound[tie])
        one_taker = bool(np.all(np.count_nonzero(np.stack([gx, glow, ghigh])[:, ~tie], axis=0) == 1))
        ok = bool(tie.any()) and at_ties and not np.any(other[tie]) and one_taker
        share = "split evenly between x and the bound" if self.split else "all to x, none to the bound"
        observed = (f"at x={x[tie].tolist()}: x.grad {gx[tie].tolist()}, bound grad {bound[tie].tolist()}; "
                    f"elsewhere one of x/min/max takes it: {'yes' if one_taker else 'no'}")
        return f"on the bounds: {share}; elsewhere one taker", observed, ok


def magnitude(record) -> str:
    rows = [t for t in record.comparison("torch-ref", "burn-port").tensors if not t.ok]
    count = sum(t.mismatched for t in rows)
    return f"边界上梯度 {rows[0].worst_candidate:g} 对 {rows[0].worst_reference:g}（{count} 处）"


EXPERIMENT = Experiment(
    id="p13",
    title="输入正好在 clamp 的边界上：burn 传梯度，PyTorch 不传或只传一半",
    mainline="backward",
    kind="silent",
    symptoms=("grad-at-kinks",),
    related=("p14", "p15"),
    torch_variants=("ref", "tensor-bounds"),
    burn_variants=("port", "fixed", "guard", "tensor-bounds", "tensor-bounds-fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"),
                 ("torch-tensor-bounds", "burn-tensor-bounds-fixed"), ("torch-tensor-bounds", "burn-tensor-bounds")),
    sources=(
        SourceRef("burn-backend", "src/backend/ops/tensor.rs", "FloatTensorOps::float_clamp", "Self::float_clamp_min(Self::float_clamp_max("),
        SourceRef("burn-backend", "src/backend/ops/tensor.rs", "FloatTensorOps::float_clamp_min", "float_lower_elem("),
        SourceRef("burn-backend", "src/backend/ops/tensor.rs", "FloatTensorOps::float_clamp_max", "float_greater_elem("),
        SourceRef("burn-autodiff", "src/ops/tensor.rs", "FloatTensorOps::float_mask_fill", "B::float_mask_fill(grad, ops.state, 0f32.into())"),
        SourceRef("burn-tensor", "src/tensor/activation/base.rs", "relu6", "tensor.clamp(0.0, 6.0)"),
        SourceRef("burn-tensor", "src/tensor/activation/base.rs", "hardtanh", "tensor.clamp(min_val, max_val)"),
        SourceRef("burn-autodiff", "src/ops/activation.rs", "ActivationOps::relu", "B::relu_backward(state, grad)"),
        SourceRef("burn-flex", "src/ops/activation.rs", "ActivationOps::relu_backward", "out > 0.0 { g } else { 0.0 }"),
        SourceRef("burn-tensor", "src/tensor/api/orderable.rs", "max_pair", "let mask = self.clone().lower(other.clone());"),
        SourceRef("burn-tensor", "src/tensor/api/orderable.rs", "min_pair", "let mask = other.clone().lower(self.clone());"),
        SourceRef("burn-autodiff", "src/ops/tensor.rs", "FloatTensorOps::float_mask_where",
                  "let grad = B::float_mask_where(grad, mask_4lhs.unwrap(), zeros);"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 计算 clamp、relu6 和 hardtanh 及其梯度", "torch", "ref"),
        Accepts("burn-port-runs", "burn 的直接移植正常运行，没有警告", "burn", "port"),
        DiffersOnlyAtKinks("differs-only-on-bounds", "前向一致；梯度不同的位置恰好就是 x 落在边界上的位置",
                           "torch-ref", "burn-port", ("clamp", "relu6", "hardtanh")),
        TensorsCompare("relu-agrees", "relu 有自己的反向，两边在 0 处一致",
                     "torch-ref", "burn-port", ("relu.out", "relu.grad")),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "`clamp_like_torch` 在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
        Panics("guard-panics-on-bound", "`assert_off_kinks` 拦下落在 clamp 边界上的输入",
               "burn", "guard", "input lies exactly on a kink: burn and PyTorch pick different gradients there"),
        Accepts("torch-tensor-bounds-runs", "PyTorch 计算边界是张量的 clamp 及其梯度", "torch", "tensor-bounds"),
        TieGradient("torch-tensor-bounds-split", "边界是张量时，PyTorch 把边界上的梯度在 x 和边界张量之间平分",
                    "torch", "tensor-bounds", "tclamp", split=True),
        TieGradient("burn-tensor-bounds-to-x", "burn 的 `max_pair`/`min_pair` 在边界上把梯度全给 x，边界张量拿不到",
                    "burn", "tensor-bounds", "tclamp", split=False),
        DiffersOnlyAtKinks("tensor-bounds-differ-only-on-bounds", "边界是张量时，前向一致，梯度也只在 x 等于边界处不同",
                           "torch-tensor-bounds", "burn-tensor-bounds", ("tclamp",)),
        Mismatches("tensor-bounds-negative-control", "burn-tensor-bounds 对 torch-tensor-bounds 报 MISMATCH",
                   "torch-tensor-bounds", "burn-tensor-bounds"),
        Matches("tensor-bounds-fix-matches", "`clamp_tensors_like_torch` 和 torch-tensor-bounds 一致（x 和两个边界的梯度都一致）",
                "torch-tensor-bounds", "burn-tensor-bounds-fixed"),
    ),
)
