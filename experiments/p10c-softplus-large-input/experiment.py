"""p10c: Softplus on large inputs. burn 0.22.1's Softplus has PyTorch's threshold: both sides agree;
a hand-written log(1 + exp(x)) overflows to inf with NaN gradients."""

from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, Panics, SourceRef


def magnitude(record) -> str:
    port = record.comparison("torch-ref", "burn-port").result.worst
    naive = record.program("burn", "naive").tensors["x.grad"]
    nans = sum(1 for v in naive if v != v)
    return f"Softplus 差 {port:.2g}；手写公式 {nans} 个 NaN 梯度"


EXPERIMENT = Experiment(
    id="p10c",
    title="Softplus 遇到大输入：burn 的阈值和 PyTorch 一致，手写公式才出 inf/NaN",
    mainline="forward",
    kind="same",
    symptoms=("nan", "forward-wrong"),
    related=("p10f", "p11"),
    torch_variants=("ref",),
    burn_variants=("port", "naive", "guard"),
    comparisons=(("torch-ref", "burn-port"), ("torch-ref", "burn-naive")),
    sources=(
        SourceRef("burn-tensor", "src/tensor/activation/base.rs", "softplus_with_threshold", "let mask = scaled.clone().greater_elem(threshold);"),
        SourceRef("burn-tensor", "src/tensor/activation/base.rs", "softplus_with_threshold", ".mask_fill(mask.clone(), threshold)"),
        SourceRef("burn-tensor", "src/tensor/activation/base.rs", "softplus", "softplus_with_threshold(tensor, beta, DEFAULT_SOFTPLUS_THRESHOLD)"),
        SourceRef("burn-nn", "src/activation/softplus.rs", "Softplus::forward", "softplus_with_threshold(input, self.beta, self.threshold)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 Softplus 前向、反向都正常运行", "torch", "ref"),
        Accepts("burn-runs", "burn 的 Softplus 前向、反向都正常运行", "burn", "port"),
        Matches("port-matches", "burn 的 Softplus 在 atol 1e-6 下和 PyTorch 一致，输出和梯度都是", "torch-ref", "burn-port"),
        Mismatches("naive-mismatches", "手写的 `log(1 + exp(x))` 对 PyTorch 报 MISMATCH", "torch-ref", "burn-naive"),
        Diagnosed("naive-grad-nan", "compare 在手写公式的梯度里发现 NaN，PyTorch 的梯度里没有",
                  "torch-ref", "burn-naive", "nan", params=(("side", "candidate"),), tensors=("x.grad",)),
        Panics("guard-stops-inf", "`assert_finite` 在手写公式输出 inf 的地方拦下它",
               "burn", "guard", "y holds non-finite values"),
    ),
)
