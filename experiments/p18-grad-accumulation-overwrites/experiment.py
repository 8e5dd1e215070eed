"""p18: gradient accumulation. PyTorch's .grad sums across backward() calls until zero_grad();
burn's backward() returns a fresh Gradients, so a direct micro-batch port steps with the last
micro-batch's gradient only."""

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    """The catalog's figure, which the chapter's summary quotes too: each figure names its tensor."""
    rows = {t.name: t for t in record.comparison("torch-accumulate", "burn-port").tensors}
    micro = record.program("torch", "accumulate").metadata["micro_batches"]
    return (f"只用了 {micro} 个微批中的最后一个：`weight.grad` 差 {rows['weight.grad'].max_abs_diff:.3g}，"
            f"更新后的 `weight`（`weight.step1`）差 {rows['weight.step1'].max_abs_diff:.3g}")


EXPERIMENT = Experiment(
    id="p18",
    title="微批梯度累积：burn 的 backward 不累加，直接移植只用了最后一个微批",
    fix="用 `GradientsAccumulator`：每个 micro-batch `accumulator.accumulate(&model, grads)`，最后 `accumulator.grads()`",
    mainline="clipping and accumulation",
    kind="silent",
    symptoms=("grad-differs",),
    related=("p16", "p19"),
    torch_variants=("accumulate", "zero-each"),
    burn_variants=("port", "fixed"),
    comparisons=(
        ("torch-accumulate", "burn-fixed"),
        ("torch-accumulate", "burn-port"),
        ("torch-zero-each", "burn-port"),
    ),
    sources=(
        SourceRef("burn-autodiff", "src/grads.rs", "Gradients::new_with_hook", "container: TensorContainer::new()"),
        SourceRef("burn-optim", "src/optim/grads.rs", "GradientsParams::from_grads", "Self::from_module(&mut grads, module)"),
        SourceRef("burn-optim", "src/optim/grad_accum.rs", "ModuleGradsAccumulator::visit_float", "Some(grad) => grad.add(new)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-accumulates", "PyTorch 在各个微批上累加 `.grad`，只更新一次", "torch", "accumulate"),
        Accepts("burn-port-runs", "burn 的直接移植正常运行，没有警告", "burn", "port"),
        Mismatches("negative-control", "burn-port 对 torch-accumulate 报 MISMATCH（梯度和更新后的权重）",
                   "torch-accumulate", "burn-port"),
        Matches("port-is-last-micro-batch", "burn-port 和把 `zero_grad()` 放在循环里的 PyTorch 一致：只有最后一个微批起作用",
                "torch-zero-each", "burn-port"),
        Matches("fix-matches", "`GradientsAccumulator` 在 atol 1e-6 下和 torch-accumulate 一致", "torch-accumulate", "burn-fixed"),
    ),
)
