"""p17: GELU's forward is exact everywhere, but its gradient is a backend op; NdArray uses the
default, the derivative of the tanh approximation, while Flex has the exact derivative."""


from pita.experiment import (
    Accepts, Experiment, Matches, Mismatches, OnlyTensorsDiffer, Panics, SourceRef,
)


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-exact", "burn-ndarray").result["tensors"] if t["name"] == "x.grad")
    return f"梯度差 {row['max_abs_diff']:.2e}（相对 {row['max_rel_diff']:.1%}，仅 NdArray）"


EXPERIMENT = Experiment(
    id="p17",
    title="GELU 的梯度在 NdArray 上是 tanh 近似的导数",
    mainline="backward",
    kind="silent",
    torch_script="experiments/pytorch/p17_gelu_grad.py",
    burn_binary="p17",
    torch_variants=("exact", "tanh-grad"),
    burn_variants=("flex", "ndarray-erf", "ndarray-guard", "ndarray"),
    comparisons=(
        ("torch-exact", "burn-ndarray"),
        ("torch-tanh-grad", "burn-ndarray"),
        ("torch-exact", "burn-ndarray-erf"),
        ("torch-exact", "burn-flex"),
    ),
    compile_fail=(),
    sources=(
        SourceRef("burn-backend", "src/backend/ops/activation.rs", "ActivationOps::gelu_backward",
                  "Derivative of the approximate gelu implementation based on tanh"),
        SourceRef("burn-autodiff", "src/ops/activation.rs", "ActivationOps::gelu", "B::gelu_backward(input, grad)"),
        SourceRef("burn-flex", "src/ops/activation.rs", "ActivationOps::gelu_backward", "let cdf ="),
        SourceRef("burn-tch", "src/ops/activation.rs", "ActivationOps::gelu_backward", 'gelu_backward(&grad.tensor, "none")'),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-exact-runs", "PyTorch computes gelu and its exact gradient", "torch", "exact"),
        Accepts("burn-ndarray-runs", "burn on NdArray runs the same code without a warning", "burn", "ndarray"),
        Mismatches("negative-control", "burn-ndarray against torch-exact is a MISMATCH", "torch-exact", "burn-ndarray"),
        OnlyTensorsDiffer("forward-exact-gradient-not", "on NdArray the forward agrees with PyTorch, only the gradient differs",
                          "torch-exact", "burn-ndarray", ("x.grad",)),
        Matches("ndarray-is-tanh-derivative", "burn-ndarray matches PyTorch's exact forward paired with the tanh-approximation gradient",
                "torch-tanh-grad", "burn-ndarray"),
        Matches("flex-is-exact", "the same code on Flex matches torch-exact", "torch-exact", "burn-flex"),
        Matches("fix-matches", "gelu written with erf on NdArray matches torch-exact", "torch-exact", "burn-ndarray-erf"),
        Panics("guard-panics-on-ndarray", "assert_exact_gelu_backward rejects the NdArray device at run time",
               "burn", "ndarray-guard", "this backend's gelu_backward is not the exact GELU derivative"),
    ),
)
