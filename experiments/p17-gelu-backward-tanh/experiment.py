"""p17: GELU's forward is exact everywhere, but its gradient is a backend op; NdArray uses the
default, the derivative of the tanh approximation, while Flex has the exact derivative."""


from pita_lab.experiment import (
    Accepts,
    Experiment,
    Matches,
    Mismatches,
    OnlyTensorsDiffer,
    Panics,
    SourceRef,
)


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-exact", "burn-ndarray").result["tensors"] if t["name"] == "x.grad")
    return f"梯度差 {row['max_abs_diff']:.2e}（相对 {row['max_rel_diff']:.1%}，仅 NdArray）"


EXPERIMENT = Experiment(
    id="p17",
    title="GELU 的梯度在 NdArray 上是 tanh 近似的导数",
    mainline="backward",
    kind="silent",
    torch_variants=("exact", "tanh-grad"),
    burn_variants=("flex", "ndarray-erf", "ndarray-guard", "ndarray"),
    comparisons=(
        ("torch-exact", "burn-ndarray"),
        ("torch-tanh-grad", "burn-ndarray"),
        ("torch-exact", "burn-ndarray-erf"),
        ("torch-exact", "burn-flex"),
    ),
    sources=(
        SourceRef("burn-backend", "src/backend/ops/activation.rs", "ActivationOps::gelu_backward",
                  "Derivative of the approximate gelu implementation based on tanh"),
        SourceRef("burn-autodiff", "src/ops/activation.rs", "ActivationOps::gelu", "B::gelu_backward(input, grad)"),
        SourceRef("burn-flex", "src/ops/activation.rs", "ActivationOps::gelu_backward", "let cdf ="),
        SourceRef("burn-tch", "src/ops/activation.rs", "ActivationOps::gelu_backward", 'gelu_backward(&grad.tensor, "none")'),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-exact-runs", "PyTorch 计算 gelu 及其精确梯度", "torch", "exact"),
        Accepts("burn-ndarray-runs", "NdArray 上的 burn 运行同样的代码，没有警告", "burn", "ndarray"),
        Mismatches("negative-control", "burn-ndarray 对 torch-exact 报 MISMATCH", "torch-exact", "burn-ndarray"),
        OnlyTensorsDiffer("forward-exact-gradient-not", "在 NdArray 上前向和 PyTorch 一致，只有梯度不同",
                          "torch-exact", "burn-ndarray", ("x.grad",)),
        Matches("ndarray-is-tanh-derivative", "burn-ndarray 和 PyTorch 精确前向配 tanh 近似梯度的组合一致",
                "torch-tanh-grad", "burn-ndarray"),
        Matches("flex-is-exact", "同样的代码在 Flex 上和 torch-exact 一致", "torch-exact", "burn-flex"),
        Matches("fix-matches", "NdArray 上用 erf 写的 gelu 和 torch-exact 一致", "torch-exact", "burn-ndarray-erf"),
        Panics("guard-panics-on-ndarray", "`assert_exact_gelu_backward` 在运行期拦下 NdArray 设备",
               "burn", "ndarray-guard", "this backend's gelu_backward is not the exact GELU derivative"),
    ),
)
