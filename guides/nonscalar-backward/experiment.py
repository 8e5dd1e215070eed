"""Guide 「backward 与梯度的「非标量输出」」: PyTorch's `y.backward(v)` and
`torch.autograd.grad(y, x, v)`, and how each is written in burn, where `backward()` seeds the
root with ones whatever its shape."""

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, Raises, Relates, SourceRef

EXPERIMENT = Experiment(
    id="nonscalar-backward",
    title="backward 与梯度的「非标量输出」",
    mainline="loss → backward",
    kind="guide",
    torch_variants=("backward-v", "autograd-grad", "backward-ones", "plain"),
    burn_variants=("weighted", "weighted-nosum", "plain"),
    comparisons=(
        ("torch-backward-v", "burn-weighted"),
        ("torch-backward-v", "burn-plain"),
        ("torch-backward-v", "torch-autograd-grad"),
        ("torch-backward-ones", "burn-plain"),
        ("burn-weighted", "burn-weighted-nosum"),
    ),
    sources=(
        SourceRef("burn-autodiff", "src/grads.rs", "Gradients::new_with_hook", "float_ones("),
        SourceRef("burn-autodiff", "src/ops/tensor.rs", "float_sum", "B::float_ones(ops.state"),
        SourceRef("burn-tensor", "src/tensor/api/autodiff.rs", "grad", "grad_impl(&self.primitive, grads)"),
        SourceRef("burn-autodiff", "src/grads.rs", "Gradients::new", "Self::new_with_hook::<B>(root_node, root_tensor, None)"),
    ),
    claims=(
        Raises("torch-plain-raises", "PyTorch 拒绝对非标量 `y` 执行不带参数的 `y.backward()`",
               "torch", "plain", "RuntimeError", "grad can be implicitly created only for scalar outputs"),
        Accepts("burn-plain-runs", "burn 对非标量 `y` 执行 `y.backward()`，不报错", "burn", "plain"),
        Matches("weighted-matches-backward-v", "burn 的 `(y * v).sum().backward()` 和 PyTorch 的 `y.backward(v)` 一致",
                "torch-backward-v", "burn-weighted"),
        Mismatches("negative-control", "不带 v 的 burn `y.backward()` 对 PyTorch 的 `y.backward(v)` 报 MISMATCH",
                   "torch-backward-v", "burn-plain"),
        Matches("autograd-grad-matches-backward", "`torch.autograd.grad(y, (x, w), v)` 和 `y.backward(v)` 之后的 `.grad` 一致",
                "torch-backward-v", "torch-autograd-grad"),
        Relates("autograd-grad-same-bits", "两种写法算的是同一串运算：`x.grad` 逐位相同",
                "torch-backward-v", "torch-autograd-grad", "x.grad", "identity"),
        Matches("plain-is-backward-ones", "burn 的 `y.backward()` 和 PyTorch 的 `y.backward(torch.ones_like(y))` 一致",
                "torch-backward-ones", "burn-plain"),
        Matches("sum-not-needed", "`(y * v).backward()` 和 `(y * v).sum().backward()` 一致：种子本来就是全 1",
                "burn-weighted", "burn-weighted-nosum"),
        Relates("sum-not-needed-same-bits", "不加 `.sum()`，`x.grad` 也逐位相同",
                "burn-weighted", "burn-weighted-nosum", "x.grad", "identity"),
    ),
)
