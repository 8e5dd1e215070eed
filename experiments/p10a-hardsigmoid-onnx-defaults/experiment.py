"""p10a: burn's HardSigmoid defaults to alpha 0.2 (ONNX); PyTorch's Hardsigmoid uses 1/6."""

from pita_lab.experiment import Accepts, DefaultsDiffer, Experiment, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    rows = record.comparison("torch-ref", "burn-port").tensors
    out = next(t for t in rows if t.name == "out")
    return f"输出差 {out.max_abs_diff:.2g}"


EXPERIMENT = Experiment(
    id="p10a",
    title="HardSigmoid 的默认参数是 ONNX 的，不是 PyTorch 的",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p10", "p10b"),
    torch_variants=("ref",),
    burn_variants=("port", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/activation/hard_sigmoid.rs", "HardSigmoid::forward", "hard_sigmoid(input, self.alpha, self.beta)"),
        SourceRef("burn-flex", "src/ops/activation.rs", "hard_sigmoid", "(alpha32 * x + beta32).clamp(0.0, 1.0)"),
        SourceRef("burn-tensor", "src/tensor/activation/base.rs", "hard_swish", "hard_sigmoid(tensor, 1.0 / 6.0, 0.5)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 `nn.Hardsigmoid` 正常运行", "torch", "ref"),
        Accepts("burn-port-runs", "burn 默认配置的 `HardSigmoid` 正常运行", "burn", "port"),
        DefaultsDiffer("alpha-differs", "默认的斜率 alpha 两边不同（PyTorch 取 `nn.Hardsigmoid` 在 0 处的导数）",
                       "torch-ref", "burn-port", "alpha",
                       "HardSigmoid 的斜率 α（`HardSigmoidConfig`；`nn.Hardsigmoid` 没有这个参数，取它在 0 处的导数）",
                       maps=("Hardsigmoid.", "HardSigmoid.alpha")),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH（`out` 不一致；`hard_swish` 一致）", "torch-ref", "burn-port"),
        Matches("fix-matches", "burn-fixed（alpha 1/6）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
    ),
)
