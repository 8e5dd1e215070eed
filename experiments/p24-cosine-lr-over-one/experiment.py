"""p24: burn's cosine-annealing scheduler refuses an initial lr above 1 (an Err from `init`, a panic
at the usual `unwrap`); PyTorch's CosineAnnealingLR takes any lr. For a valid lr the two agree."""

from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, Panics, SourceRef


def magnitude(record) -> str:
    torch_lr = record.program("torch", "cosine-big").tensors["lr"][0]
    clamped_lr = record.program("burn", "cosine-big-clamped").tensors["lr"][0]
    return f"lr > 1 时 panic；改成 1.0 则学习率 ×{clamped_lr / torch_lr:.3g}"


EXPERIMENT = Experiment(
    id="p24",
    title="余弦退火调度不收大于 1 的初始学习率，PyTorch 照收",
    mainline="schedule",
    kind="panic",
    symptoms=("panic", "update-differs"),
    related=("p20",),
    reports=('tracel-ai/burn#5128',),
    torch_variants=("cosine-big", "cosine"),
    burn_variants=("cosine-big-port", "cosine-big-clamped", "cosine-big-fixed", "cosine", "cosine-shifted"),
    comparisons=(
        ("torch-cosine-big", "burn-cosine-big-fixed"), ("torch-cosine-big", "burn-cosine-big-clamped"),
        ("torch-cosine", "burn-cosine"), ("torch-cosine", "burn-cosine-shifted"),
    ),
    sources=(
        SourceRef("burn-optim", "src/lr_scheduler/cosine.rs", "CosineAnnealingLrSchedulerConfig::build",
                  "if self.initial_lr <= 0. || self.initial_lr > 1. {"),
        SourceRef("burn-optim", "src/lr_scheduler/cosine.rs", "CosineAnnealingLrSchedulerConfig::build",
                  'return Err("Initial learning rate must be greater than 0 and at most 1".into());'),
        SourceRef("burn-optim", "src/lr_scheduler/cosine.rs", "CosineAnnealingLrScheduler::step",
                  "self.current_iter = self.current_iter.wrapping_add(1);"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-accepts-big-lr", "PyTorch `CosineAnnealingLR` 在初始 lr 大于 1 时正常运行", "torch", "cosine-big"),
        Panics("burn-rejects-big-lr", "burn 的 `CosineAnnealingLrSchedulerConfig::init` 对此返回 `Err`；`unwrap` 时 panic",
               "burn", "cosine-big-port", "Initial learning rate must be greater than 0 and at most 1"),
        Mismatches("clamping-is-not-a-fix", "把初始 lr 压到 1 能跑，但报 MISMATCH", "torch-cosine-big", "burn-cosine-big-clamped"),
        Diagnosed("clamping-is-a-scale", "compare 把压过的调度诊断为一个统一的 scale",
                  "torch-cosine-big", "burn-cosine-big-clamped", "scale"),
        Matches("fix-matches", "从 1 开始调度因子、再乘以 lr，在 atol 1e-6 下和 PyTorch 一致",
                "torch-cosine-big", "burn-cosine-big-fixed"),
        Matches("valid-lr-same", "lr 在 (0, 1] 内时，直接移植和 PyTorch 的调度一致", "torch-cosine", "burn-cosine"),
        Mismatches("shifted-negative-control", "在循环前多调一次 `step()` 会报 MISMATCH（说明这个比较能失败）",
                   "torch-cosine", "burn-cosine-shifted"),
    ),
)
