"""p07: a square PyTorch Linear weight copied into burn without a transpose computes x·W, not x·Wᵀ."""

from pita.experiment import (
    Accepts, CompileFails, Diagnosed, Experiment, Matches, Mismatches, Panics, SourceRef,
)


def magnitude(record) -> str:
    rows = record.comparison("torch-ref", "burn-port").result["tensors"]
    out = next(t for t in rows if t["name"] == "out")
    return f"输出差 {out['max_abs_diff']:.2g}"


EXPERIMENT = Experiment(
    id="p07",
    title="方阵 Linear 权重照抄不转置，算的是 x·W",
    mainline="init and weight layout",
    kind="silent",
    torch_script="experiments/pytorch/p07_linear_layout.py",
    burn_binary="p07",
    torch_variants=("ref",),
    burn_variants=("port", "fixed", "nonsquare"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    compile_fail=("ce07",),
    sources=(
        SourceRef("burn-nn", "src/modules/linear.rs", "LinearConfig::init", "let shape = [self.d_input, self.d_output];"),
        SourceRef("burn-nn", "src/modules/linear.rs", "Linear::forward", "assert_shape!(input, [.., d_input]);"),
        SourceRef("burn-store", "src/safetensors/store.rs", "SafetensorsStore::from_file", "from_adapter: Box::new(IdentityAdapter),"),
        SourceRef("burn-store", "src/adapter.rs", "adapt_pytorch_tensor", "module_type == module_names::LINEAR && param == \"weight\""),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch's Linear(2, 2) runs with the [out, in] weight", "torch", "ref"),
        Accepts("burn-accepts-square-copy", "burn accepts the square weight copied without a transpose", "burn", "port"),
        Mismatches("negative-control", "burn-port against torch-ref is a MISMATCH", "torch-ref", "burn-port"),
        Diagnosed("compare-names-the-transpose", "compare finds burn-port's weight is torch-ref's transposed",
                  "torch-ref", "burn-port", "transpose", tensors=("weight",)),
        Matches("fix-matches", "burn-fixed (transposed on copy) matches torch-ref at atol 1e-6", "torch-ref", "burn-fixed"),
        Panics("nonsquare-panics", "a non-square weight copied without a transpose panics in Linear::forward",
               "burn", "nonsquare", "assert_shape!(input, [.., d_input])"),
        CompileFails("ce07-rejects-torch-layout", "a TorchLinearWeight cannot be passed where burn's [in, out] tensor is expected",
                     "ce07", "E0308", "expected `Tensor<2>`, found `TorchLinearWeight`"),
    ),
)
