"""p02: an Int mean truncates (accuracy 0.6 becomes 0), and burn-flex's default Int dtype is I32,
so a product past 2^31 wraps around. PyTorch refuses the integer mean and computes in int64."""

from pita.experiment import Accepts, Experiment, Matches, Mismatches, Raises, Relates, SourceRef


def magnitude(record) -> str:
    ref, port = record.program("torch", "ref").tensors, record.program("burn", "port").tensors
    return f"准确率 {ref['accuracy'][0]:.3g} → {port['accuracy'][0]:g}；乘积 {ref['product'][-1]:.0f} → {port['product'][-1]:.0f}"


EXPERIMENT = Experiment(
    id="p02",
    title="整数 mean 截断成 0，Flex 的 I32 乘法悄悄溢出",
    mainline="tensors and shapes",
    kind="silent",
    torch_script="experiments/pytorch/p02_intmean.py",
    burn_binary="p02",
    torch_variants=("intmean", "ref"),
    burn_variants=("port", "port-ndarray", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-ref", "burn-port-ndarray")),
    compile_fail=(),
    sources=(
        SourceRef("burn-flex", "src/ops/int.rs", "IntTensorOps::int_mean", "data[0] as i64 / n as i64"),
        SourceRef("burn-flex", "src/backend.rs", "DeviceOps::defaults", "DType::I32"),
        SourceRef("burn-flex", "src/ops/binary.rs", "int_binary_op", "op(a as i64, b as i64) as i32"),
    ),
    magnitude=magnitude,
    claims=(
        Raises("torch-rejects-int-mean", "PyTorch refuses mean() on an integer tensor", "torch", "intmean",
               "NotImplementedError", "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Int"),
        Accepts("burn-accepts-int-mean", "burn takes mean() of the Int mask and multiplies without complaint", "burn", "port"),
        Relates("int-mean-truncates", "burn's Int mean is the float accuracy truncated toward zero",
                "torch-ref", "burn-port", "accuracy", "trunc"),
        Relates("flex-i32-wraps", "on Flex the product is the int64 product wrapped to int32",
                "torch-ref", "burn-port", "product", "wrap_int32"),
        Relates("ndarray-int-mean-truncates", "the Int mean truncates on NdArray too",
                "torch-ref", "burn-port-ndarray", "accuracy", "trunc"),
        Relates("ndarray-i64-no-wrap", "on NdArray (I64 by default) the product equals PyTorch's",
                "torch-ref", "burn-port-ndarray", "product", "identity"),
        Mismatches("negative-control", "the direct port on Flex against PyTorch is a MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "float().mean() on a device configured for I64 matches PyTorch", "torch-ref", "burn-fixed"),
    ),
)
