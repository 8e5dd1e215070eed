"""p13: clamp, relu6 and hardtanh at inputs lying exactly on a bound: burn passes the gradient
(1), PyTorch blocks it (0)."""


from pita_lab.experiment import Accepts, DiffersOnlyAtKinks, Experiment, Matches, Mismatches, Panics, SourceRef, TensorsCompare


def magnitude(record) -> str:
    rows = [t for t in record.comparison("torch-ref", "burn-port").result["tensors"] if not t["ok"]]
    count = sum(t["mismatched"] for t in rows)
    return f"边界上梯度 {rows[0]['worst_candidate']:g} 对 {rows[0]['worst_reference']:g}（{count} 处）"


EXPERIMENT = Experiment(
    id="p13",
    title="输入正好在 clamp 的边界上：burn 传梯度，PyTorch 不传",
    mainline="backward",
    kind="silent",
    torch_variants=("ref",),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
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
    ),
)
