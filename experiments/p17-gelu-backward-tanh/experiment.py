"""p17: GELU's forward is exact everywhere, but its gradient is a backend op. The trait's
default is the derivative of the tanh approximation; NdArray, the CubeCL backends (wgpu, CUDA,
ROCm, cubecl CPU) and the Fusion wrapper inherit it, Flex and LibTorch override it with the exact
derivative. NdArray and Flex are run; the other backends are read in their locked sources."""


from pita_lab.experiment import (
    Accepts,
    BlockDefines,
    Experiment,
    Matches,
    Mismatches,
    OnlyTensorsDiffer,
    Panics,
    SourceRef,
)

ACTIVATION_OPS = "src/ops/activation.rs"
DEFAULT_IS_TANH = "Derivative of the approximate gelu implementation based on tanh"


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-exact", "burn-ndarray").tensors if t.name == "x.grad")
    return f"梯度差 {row.max_abs_diff:.2e}（相对 {row.max_rel_diff:.1%}，NdArray 实测；CubeCL/Fusion 后端源码同此）"


EXPERIMENT = Experiment(
    id="p17",
    title="GELU 的梯度在 NdArray 和 CubeCL（GPU）后端上是 tanh 近似的导数",
    mainline="backward",
    kind="silent",
    symptoms=("grad-differs",),
    related=("p09",),
    torch_variants=("exact", "tanh-grad"),
    burn_variants=("flex", "ndarray-erf", "ndarray-guard", "ndarray"),
    comparisons=(
        ("torch-exact", "burn-ndarray"),
        ("torch-tanh-grad", "burn-ndarray"),
        ("torch-exact", "burn-ndarray-erf"),
        ("torch-exact", "burn-flex"),
    ),
    sources=(
        SourceRef("burn-backend", "src/backend/ops/activation.rs", "ActivationOps::gelu_backward", DEFAULT_IS_TANH),
        SourceRef("burn-autodiff", ACTIVATION_OPS, "ActivationOps::gelu", "B::gelu_backward(input, grad)"),
        SourceRef("burn-flex", ACTIVATION_OPS, "ActivationOps::gelu_backward", "let cdf ="),
        SourceRef("burn-tch", ACTIVATION_OPS, "ActivationOps::gelu_backward", 'gelu_backward(&grad.tensor, "none")'),
        SourceRef("burn-ndarray", ACTIVATION_OPS, "ActivationOps", "impl ActivationOps<Self> for NdArray {"),
        SourceRef("burn-cubecl", ACTIVATION_OPS, "ActivationOps", "impl ActivationOps<Self> for CubeBackend {}"),
        SourceRef("burn-fusion", ACTIVATION_OPS, "ActivationOps", "ActivationOps<Self> for Fusion<B> {}"),
        SourceRef("burn-dispatch", ACTIVATION_OPS, "ActivationOps::gelu_backward", "B::gelu_backward(x, grad)"),
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
        # Which backends inherit the default, read in the locked sources (the run only has CPUs).
        BlockDefines("default-is-tanh", "`ActivationOps` 里 `gelu_backward` 的默认实现是 tanh 近似的导数",
                     "burn-backend", "src/backend/ops/activation.rs", "pub trait ActivationOps", "gelu_backward",
                     contains="B::float_tanh("),
        BlockDefines("ndarray-inherits", "NdArray 的 `ActivationOps` 没有重写 `gelu_backward`，用默认实现",
                     "burn-ndarray", ACTIVATION_OPS, "impl ActivationOps<Self> for NdArray", "gelu_backward", defines=False),
        BlockDefines("cubecl-inherits", "CubeCL 后端（wgpu、CUDA、ROCm、cubecl CPU）的 `ActivationOps` 没有重写 `gelu_backward`",
                     "burn-cubecl", ACTIVATION_OPS, "impl ActivationOps<Self> for CubeBackend", "gelu_backward", defines=False),
        BlockDefines("fusion-inherits", "`fusion` 特性打开时套在 CubeCL 后端外面的 Fusion，它的 `ActivationOps` 也没有重写 `gelu_backward`",
                     "burn-fusion", ACTIVATION_OPS, "ActivationOps<Self> for Fusion<B>", "gelu_backward", defines=False),
        BlockDefines("flex-overrides", "Flex 重写了 `gelu_backward`，按 erf 的精确导数算",
                     "burn-flex", ACTIVATION_OPS, "impl ActivationOps<Flex> for Flex", "gelu_backward", contains="erf_f32("),
        BlockDefines("tch-overrides", "LibTorch 重写了 `gelu_backward`，交给 libtorch 的精确版本",
                     "burn-tch", ACTIVATION_OPS, "impl ActivationOps<Self> for LibTorch", "gelu_backward", contains='"none"'),
        BlockDefines("dispatch-forwards", "`Device` 背后的 Dispatch 后端把 `gelu_backward` 原样转给所选的后端",
                     "burn-dispatch", ACTIVATION_OPS, "impl ActivationOps<Self> for Dispatch", "gelu_backward",
                     contains="B::gelu_backward(x, grad)"),
    ),
)
