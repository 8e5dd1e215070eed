"""p07: a square PyTorch Linear weight copied into burn without a transpose computes x·W, not x·Wᵀ."""

from pita.likely import Signature
from pita_lab.experiment import (
    Accepts,
    CompileFails,
    Diagnosed,
    Experiment,
    Matches,
    Mismatches,
    Panics,
    SourceRef,
)


def magnitude(record) -> str:
    rows = record.comparison("torch-ref", "burn-port").tensors
    out = next(t for t in rows if t.name == "out")
    return f"输出差 {out.max_abs_diff:.2g}"


EXPERIMENT = Experiment(
    id="p07",
    title="方阵 Linear 权重照抄不转置，算的是 x·W",
    mainline="init and weight layout",
    kind="silent",
    symptoms=("wrong-after-load", "panic"),
    related=("p30", "p31", "port-encoder"),
    signature=Signature("diagnosis", diagnosis="transpose", tensor="weight", rank=2, phase="parameters"),
    also=("p30",),
    fix="PyTorch 的 `[out, in]` 权重转置成 burn 的 `[in, out]` 再装进 `Linear`：`weight.transpose()`",
    torch_variants=("ref",),
    burn_variants=("port", "fixed", "nonsquare"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/modules/linear.rs", "LinearConfig::init", "let shape = [self.d_input, self.d_output];"),
        SourceRef("burn-nn", "src/modules/linear.rs", "Linear::forward", "assert_shape!(input, [.., d_input]);"),
        SourceRef("burn-store", "src/safetensors/store.rs", "SafetensorsStore::from_file", "from_adapter: Box::new(IdentityAdapter),"),
        SourceRef("burn-store", "src/adapter.rs", "adapt_pytorch_tensor", "module_type == module_names::LINEAR && param == \"weight\""),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 Linear(2, 2) 用 `[out, in]` 的权重正常运行", "torch", "ref"),
        Accepts("burn-accepts-square-copy", "burn 接受不经转置照抄的方阵权重", "burn", "port"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Diagnosed("compare-names-the-transpose", "compare 发现 burn-port 的权重是 torch-ref 权重的转置",
                  "torch-ref", "burn-port", "transpose", tensors=("weight",)),
        Matches("fix-matches", "burn-fixed（拷贝时转置）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
        Panics("nonsquare-panics", "不经转置照抄的非方阵权重在 `Linear::forward` 里 panic",
               "burn", "nonsquare", "assert_shape!(input, [.., d_input])"),
        CompileFails("ce07-rejects-torch-layout", "需要 burn 的 `[in, out]` 张量的地方，传不进 `TorchLinearWeight`",
                     "ce07", "E0308", "expected `Tensor<2>`, found `TorchLinearWeight`"),
    ),
)
