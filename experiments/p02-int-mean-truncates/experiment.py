"""p02: an Int mean truncates (accuracy 0.6 becomes 0), and burn-flex's default Int dtype is I32,
so a product past 2^31 wraps around. PyTorch refuses the integer mean and computes in int64."""

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, Raises, Relates, SourceRef


def magnitude(record) -> str:
    ref, port = record.program("torch", "ref").tensors, record.program("burn", "port").tensors
    return f"准确率 {ref['accuracy'][0]:.3g} → {port['accuracy'][0]:g}；乘积 {ref['product'][-1]:.0f} → {port['product'][-1]:.0f}"


EXPERIMENT = Experiment(
    id="p02",
    title="整数 mean 截断成 0，Flex 的 I32 乘法悄悄溢出",
    mainline="tensors and shapes",
    kind="silent",
    symptoms=("integer-wrong",),
    related=("p01",),
    torch_variants=("intmean", "ref"),
    burn_variants=("port", "port-ndarray", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-ref", "burn-port-ndarray")),
    sources=(
        SourceRef("burn-flex", "src/ops/int.rs", "IntTensorOps::int_mean", "data[0] as i64 / n as i64"),
        SourceRef("burn-flex", "src/backend.rs", "DeviceOps::defaults", "DType::I32"),
        SourceRef("burn-flex", "src/ops/binary.rs", "int_binary_op", "op(a as i64, b as i64) as i32"),
    ),
    magnitude=magnitude,
    claims=(
        Raises("torch-rejects-int-mean", "PyTorch 拒绝对整数张量求 `mean()`", "torch", "intmean",
               "NotImplementedError", "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Int"),
        Accepts("burn-accepts-int-mean", "burn 对 Int 掩码求 `mean()` 再相乘，不报错", "burn", "port"),
        Relates("int-mean-truncates", "burn 的 Int mean 是浮点准确率向零取整的结果",
                "torch-ref", "burn-port", "accuracy", "trunc"),
        Relates("flex-i32-wraps", "在 Flex 上，乘积是 int64 乘积回绕到 int32 的结果",
                "torch-ref", "burn-port", "product", "wrap_int32"),
        Relates("ndarray-int-mean-truncates", "在 NdArray 上 Int mean 同样向零取整",
                "torch-ref", "burn-port-ndarray", "accuracy", "trunc"),
        Relates("ndarray-i64-no-wrap", "在 NdArray 上（默认 I64），乘积和 PyTorch 的相等",
                "torch-ref", "burn-port-ndarray", "product", "identity"),
        Mismatches("negative-control", "Flex 上的直接移植对 PyTorch 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "在配置为 I64 的设备上用 `float().mean()`，和 PyTorch 一致", "torch-ref", "burn-fixed"),
    ),
)
