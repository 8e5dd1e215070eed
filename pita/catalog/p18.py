"""p18: gradient accumulation. PyTorch's .grad sums across backward() calls until zero_grad();
burn's backward() returns a fresh Gradients, so a direct micro-batch port steps with the last
micro-batch's gradient only."""

from pita.experiment import Accepts, Experiment, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    rows = {t["name"]: t for t in record.comparison("torch-accumulate", "burn-port").result["tensors"]}
    micro = record.program("torch", "accumulate").metadata["micro_batches"]
    return f"只用了 {micro} 个微批中的最后一个：梯度差 {rows['weight.grad']['max_abs_diff']:.3g}，更新后权重差 {rows['weight.step1']['max_abs_diff']:.3g}"


EXPERIMENT = Experiment(
    id="p18",
    title="微批梯度累积：burn 的 backward 不累加，直接移植只用了最后一个微批",
    mainline="clipping and accumulation",
    kind="silent",
    torch_script="experiments/pytorch/p18_grad_accum.py",
    burn_binary="p18",
    torch_variants=("accumulate", "zero-each"),
    burn_variants=("port", "fixed"),
    comparisons=(
        ("torch-accumulate", "burn-fixed"),
        ("torch-accumulate", "burn-port"),
        ("torch-zero-each", "burn-port"),
    ),
    compile_fail=(),
    sources=(
        SourceRef("burn-autodiff", "src/grads.rs", "Gradients::new_with_hook", "container: TensorContainer::new()"),
        SourceRef("burn-optim", "src/optim/grads.rs", "GradientsParams::from_grads", "Self::from_module(&mut grads, module)"),
        SourceRef("burn-optim", "src/optim/grad_accum.rs", "ModuleGradsAccumulator::visit_float", "Some(grad) => grad.add(new)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-accumulates", "PyTorch accumulates .grad over the micro-batches and steps once", "torch", "accumulate"),
        Accepts("burn-port-runs", "the direct burn port runs without a warning", "burn", "port"),
        Mismatches("negative-control", "burn-port against torch-accumulate is a MISMATCH (gradients and the updated weights)",
                   "torch-accumulate", "burn-port"),
        Matches("port-is-last-micro-batch", "burn-port matches PyTorch with zero_grad() inside the loop: only the last micro-batch counts",
                "torch-zero-each", "burn-port"),
        Matches("fix-matches", "GradientsAccumulator matches torch-accumulate at atol 1e-6", "torch-accumulate", "burn-fixed"),
    ),
)
