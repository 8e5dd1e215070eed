"""p01: burn's Int `/` truncates toward zero; PyTorch's `//` floors. Negative quotients differ by one."""

from __future__ import annotations

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, Relates, SourceRef


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-floordiv", "burn-port").tensors if t.name == "quotient")
    return f"商差 {row.max_abs_diff:g}（{row.mismatched}/{row.n} 个元素）"


EXPERIMENT = Experiment(
    id="p01",
    title="整数除法向零取整，PyTorch 的 // 向下取整",
    mainline="tensors and shapes",
    kind="silent",
    symptoms=("integer-wrong",),
    related=("p02",),
    torch_variants=("floordiv", "truediv", "trunc"),
    burn_variants=("port", "port-ndarray", "fixed"),
    comparisons=(
        ("torch-floordiv", "burn-fixed"),
        ("torch-floordiv", "burn-port"),
        ("torch-trunc", "burn-port"),
    ),
    sources=(
        SourceRef("burn-flex", "src/ops/int.rs", "IntTensorOps::int_div", "int_binary_op(lhs, rhs, |a, b| a / b)"),
        SourceRef("burn-flex", "src/ops/int.rs", "IntTensorOps::int_remainder", "int_binary_op(lhs, rhs, remainder_int)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-floordiv-runs", "PyTorch 计算 `a // b` 和 `a % b`", "torch", "floordiv"),
        Accepts("burn-port-runs", "burn 计算 `a / b` 和 `a.remainder(b)`，不报错", "burn", "port"),
        Relates("torch-floors", "PyTorch 的 `a // b` 是真商 `a / b` 向下取整",
                "torch-truediv", "torch-floordiv", "quotient", "floor"),
        Relates("burn-truncates", "burn 的 Int `a / b` 是真商向零取整",
                "torch-truediv", "burn-port", "quotient", "trunc"),
        Relates("ndarray-truncates", "在 NdArray 后端上，burn 的 Int `a / b` 同样向零取整",
                "torch-truediv", "burn-port-ndarray", "quotient", "trunc"),
        Matches("port-is-torch-trunc", "burn 的 `a / b` 和 `torch.div(a, b, rounding_mode='trunc')` 一致",
                "torch-trunc", "burn-port"),
        Mismatches("negative-control", "burn 的 `a / b` 对 torch 的 `a // b` 报 MISMATCH", "torch-floordiv", "burn-port"),
        Matches("fix-matches", "`(a - a.remainder(b)) / b` 和 torch 的 `a // b` 一致", "torch-floordiv", "burn-fixed"),
    ),
)
