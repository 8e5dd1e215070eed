"""p10a: burn's HardSigmoid defaults to alpha 0.2 (ONNX); PyTorch's Hardsigmoid uses 1/6."""

from pita.experiment import Accepts, Experiment, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    rows = record.comparison("torch-ref", "burn-port").result["tensors"]
    out = next(t for t in rows if t["name"] == "out")
    return f"输出差 {out['max_abs_diff']:.2g}"


EXPERIMENT = Experiment(
    id="p10a",
    title="HardSigmoid 的默认参数是 ONNX 的，不是 PyTorch 的",
    mainline="forward",
    kind="silent",
    torch_script="experiments/pytorch/p10a_hardsigmoid.py",
    burn_binary="p10a",
    torch_variants=("ref",),
    burn_variants=("port", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    compile_fail=(),
    sources=(
        SourceRef("burn-nn", "src/activation/hard_sigmoid.rs", "HardSigmoid::forward", "hard_sigmoid(input, self.alpha, self.beta)"),
        SourceRef("burn-flex", "src/ops/activation.rs", "hard_sigmoid", "(alpha32 * x + beta32).clamp(0.0, 1.0)"),
        SourceRef("burn-tensor", "src/tensor/activation/base.rs", "hard_swish", "hard_sigmoid(tensor, 1.0 / 6.0, 0.5)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch's nn.Hardsigmoid runs", "torch", "ref"),
        Accepts("burn-port-runs", "burn's HardSigmoid with the default config runs", "burn", "port"),
        Mismatches("negative-control", "burn-port against torch-ref is a MISMATCH (out; hard_swish agrees)", "torch-ref", "burn-port"),
        Matches("fix-matches", "burn-fixed (alpha 1/6) matches torch-ref at atol 1e-6", "torch-ref", "burn-fixed"),
    ),
)
