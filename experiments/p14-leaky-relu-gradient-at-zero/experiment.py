"""p14: LeakyReLU and PReLU at an input of exactly 0: burn's gradient is that of the positive
branch, PyTorch's is the negative slope."""

from pita_lab.experiment import Accepts, DiffersOnlyAtKinks, Experiment, Matches, Mismatches, Panics, SourceRef, TensorsCompare


def magnitude(record) -> str:
    run = record.comparison("torch-ref", "burn-port").tensors
    row = next(t for t in run if t.name == "leaky_relu.grad")
    return f"0 处梯度 {row.worst_candidate:g} 对 {row.worst_reference:.3g}（{sum(t.mismatched for t in run)} 处）"


EXPERIMENT = Experiment(
    id="p14",
    title="leaky_relu 和 prelu 在 0 处：burn 取正半边的梯度，PyTorch 取斜率",
    mainline="backward",
    kind="silent",
    symptoms=("grad-at-kinks",),
    related=("p13", "p15"),
    torch_variants=("ref",),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/activation/leaky_relu.rs", "LeakyRelu::forward", "leaky_relu(input, self.negative_slope)"),
        SourceRef("burn-nn", "src/activation/prelu.rs", "PRelu::forward", "prelu(input, self.alpha.val())"),
        SourceRef("burn-backend", "src/backend/ops/activation.rs", "ActivationOps::leaky_relu", "float_lower_elem(tensor.clone(), 0f32.into()"),
        SourceRef("burn-backend", "src/backend/ops/activation.rs", "ActivationOps::prelu", "float_lower_elem(tensor.clone(), 0f32.into()"),
        SourceRef("burn-autodiff", "src/ops/tensor.rs", "FloatTensorOps::float_mask_where", "B::float_mask_where(grad, mask_4lhs.unwrap(), zeros)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 计算 LeakyReLU 和 PReLU 及其梯度", "torch", "ref"),
        Accepts("burn-port-runs", "burn 的直接移植正常运行，没有警告", "burn", "port"),
        DiffersOnlyAtKinks("differs-only-at-zero", "前向一致；输入梯度不同的位置恰好就是 x 为 0 的位置",
                           "torch-ref", "burn-port", ("leaky_relu", "prelu")),
        TensorsCompare("weight-grad-agrees", "PReLU 的权重梯度一致（0 处的元素不论按哪种约定都只加 0·grad）",
                     "torch-ref", "burn-port", ("prelu.weight.grad",)),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "用 `<= 0` 的掩码在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
        Panics("guard-panics-at-zero", "`assert_off_kinks` 拦下恰好为 0 的输入",
               "burn", "guard", "input lies exactly on a kink: burn and PyTorch pick different gradients there"),
    ),
)
