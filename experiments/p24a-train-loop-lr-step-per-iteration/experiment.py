"""p24a: burn-train's Learner advances the LR scheduler once per optimizer step; a PyTorch schedule
stepped once per epoch, ported with its epoch counts, decays iterations-per-epoch times too fast.
Under gradient accumulation the schedule advances once per update, not per micro-batch."""

from dataclasses import dataclass

import numpy as np

from pita_lab.experiment import Accepts, CountsMultiply, Experiment, Matches, Mismatches, PairClaim, SourceRef


@dataclass(frozen=True)
class ReachesEpochValueEachStep(PairClaim):
    """The candidate's `lr` at optimizer step k is the reference's at step k × n, n being the
    reference's iterations per epoch (its metadata): the candidate reaches epoch k's learning rate
    after k iterations. Exact: both sides compute 0.1 × 0.5^k, powers of two apart."""

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        n = int(reference.metadata["iterations_per_epoch"])
        per_epoch = reference.tensors["lr"][::n]
        early = candidate.tensors["lr"][:len(per_epoch)]
        expected = f"{self.candidate}.lr[k] = {self.reference}.lr[k×{n}] for k < {len(per_epoch)}"
        observed = f"{self.reference} per epoch {_show(per_epoch)}; {self.candidate} first steps {_show(early)}"
        return expected, observed, early.shape == per_epoch.shape and bool(np.array_equal(early, per_epoch))


def _show(values) -> str:
    return "[" + ", ".join(f"{v:.9g}" for v in values) + "]"


def magnitude(record) -> str:
    torch_run, port_run = record.program("torch", "epoch"), record.program("burn", "port")
    return (f"按 epoch 写的调度快了 {torch_run.metadata['iterations_per_epoch']} 倍（每个 epoch 的迭代数）："
            f"最后一步的学习率 {port_run.tensors['lr'][-1]:.3g}，PyTorch 是 {torch_run.tensors['lr'][-1]:.3g}")


EXPERIMENT = Experiment(
    id="p24a",
    title="burn-train 每次优化器更新走一步学习率调度：按 epoch 写的调度照搬，衰减快了每个 epoch 的迭代数倍",
    mainline="schedule",
    kind="silent",
    symptoms=("update-differs", "slow-drift"),
    related=("p24", "p18", "p18a"),
    reports=("tracel-ai/burn#5695",),
    torch_variants=("epoch", "epoch-accum"),
    burn_variants=("port", "fixed", "accum", "accum-micro"),
    comparisons=(
        ("torch-epoch", "burn-port"),
        ("torch-epoch", "burn-fixed"),
        ("torch-epoch-accum", "burn-accum"),
        ("torch-epoch-accum", "burn-accum-micro"),
    ),
    sources=(
        SourceRef("burn-train", "src/learner/supervised/strategies/single/epoch.rs", "SingleDeviceTrainEpoch",
                  "let item = learner.train_step(item);"),
        SourceRef("burn-train", "src/learner/supervised/strategies/single/epoch.rs", "SingleDeviceTrainEpoch",
                  "if accumulation <= accumulation_current || progress.is_completed() {"),
        SourceRef("burn-train", "src/learner/supervised/strategies/single/epoch.rs", "SingleDeviceTrainEpoch",
                  "learner.lr_step();"),
        SourceRef("burn-train", "src/learner/supervised/strategies/single/epoch.rs", "SingleDeviceTrainEpoch",
                  "learner.optimizer_step(item.grads);"),
        SourceRef("burn-train", "src/learner/base.rs", "Learner::lr_step", "self.lr_module = self.lr_scheduler.step();"),
        SourceRef("burn-train", "src/learner/base.rs", "Learner::optimizer_step",
                  ".optimize(&mut self.optim, self.lr_module.clone(), grads);"),
        SourceRef("burn-optim", "src/lr_scheduler/step.rs", "StepLrSchedulerConfig",
                  "// The number of iterations over which the learning rate remains unchanged before the next"),
        SourceRef("burn-optim", "src/lr_scheduler/step.rs", "StepLrScheduler::step",
                  ".powi((self.iter_idx as usize / self.step_size) as i32)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-trains", "PyTorch 的训练循环每个 epoch 调一次 `scheduler.step()`", "torch", "epoch"),
        Accepts("burn-port-trains", "burn-train 的 `Learner` 用同样的 `step_size` 正常训练，没有警告", "burn", "port"),
        CountsMultiply("torch-steps-per-epoch", "PyTorch：微批数 = 调度步数 × 每个 epoch 的迭代数",
                       "torch", "epoch", "micro_batches", ("scheduler_steps", "iterations_per_epoch")),
        CountsMultiply("burn-steps-per-iteration", "burn-train：没有累积时，调度器每个迭代走一步（调度步数 = 微批数）",
                       "burn", "port", "micro_batches", ("scheduler_steps",)),
        Mismatches("negative-control", "按 epoch 数照搬的 burn-port 对 torch-epoch 报 MISMATCH（学习率和训练后的权重）",
                   "torch-epoch", "burn-port"),
        ReachesEpochValueEachStep("port-epoch-value-per-step",
                                  "burn-port 第 k 步的学习率就是 PyTorch 第 k 个 epoch 的学习率",
                                  "torch-epoch", "burn-port"),
        Matches("fix-matches", "把 `step_size` 乘以每个 epoch 的迭代数后，学习率和权重在 atol 1e-6 下和 PyTorch 一致",
                "torch-epoch", "burn-fixed"),
        CountsMultiply("burn-accum-steps-per-update", "梯度累积时，调度器每次更新走一步，不是每个微批（微批数 = 调度步数 × 累积数）",
                       "burn", "accum", "micro_batches", ("scheduler_steps", "accumulation")),
        Matches("accum-matches", "累积时按每个 epoch 的更新次数换算 `step_size`，和 PyTorch 一致", "torch-epoch-accum", "burn-accum"),
        Mismatches("accum-micro-mismatches", "累积时按微批数换算 `step_size` 报 MISMATCH：0.22.1 不按微批走调度",
                   "torch-epoch-accum", "burn-accum-micro"),
    ),
)
