"""p29d: burn's DataLoader has no `drop_last`: the last short batch of N mod B samples reaches
BatchNorm's running statistics and the epoch's gradient, which PyTorch's `drop_last=True` drops."""

from dataclasses import dataclass

import numpy as np

from pita_lab.experiment import (
    Accepts,
    Experiment,
    Matches,
    Mismatches,
    OnlyTensorsDiffer,
    PairClaim,
    SideClaim,
    SourceRef,
)


def full_and_short(metadata) -> tuple[int, int, int]:
    """(batch size, number of full batches, size of the short last batch) from a dump's metadata."""
    n, b = int(metadata["n_samples"]), int(metadata["batch_size"])
    return b, n // b, n % b


@dataclass(frozen=True)
class BatchSizes(SideClaim):
    """The batch sizes a run recorded under `key` (what the loader yielded, or what reached the
    model) are N // B full batches of B, followed by one of N mod B when `short` (N and B from
    the run's metadata)."""

    key: str
    short: bool

    def observe(self, record, out):
        meta = record.program(self.side, self.variant).metadata
        b, full, rest = full_and_short(meta)
        wanted = [b] * full + ([rest] if self.short and rest else [])
        found = [int(size) for size in meta[self.key].split(",")]
        return f"{self.key} = {wanted}", f"{self.key} = {found}", found == wanted


@dataclass(frozen=True)
class ShortBatchWeight(PairClaim):
    """`sample_weight` (each sample's weight in the epoch's summed gradient): every sample of the
    full batches weighs 1/B on both sides; the last N mod B samples weigh 0 in `reference`
    (dropped) and 1/(N mod B) in `candidate`, B/(N mod B) times a full batch's sample."""

    rtol: float = 1e-6

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        b, full, rest = full_and_short(reference.metadata)
        ref, cand = (d.tensors["sample_weight"].astype(np.float64) for d in (reference, candidate))
        cut = full * b
        ok = (np.allclose(ref[:cut], 1 / b, rtol=self.rtol, atol=0) and np.allclose(cand[:cut], 1 / b, rtol=self.rtol, atol=0)
              and np.all(ref[cut:] == 0) and np.allclose(cand[cut:], 1 / rest, rtol=self.rtol, atol=0))
        expected = f"samples {cut}.. weigh 0 in {self.reference}, 1/{rest} = {b}/{rest}×(1/{b}) in {self.candidate}; the rest 1/{b}"
        observed = (f"{self.reference}: {ref[:cut].max():g} then {ref[cut:].tolist()}; "
                    f"{self.candidate}: {cand[:cut].max():g} then {cand[cut:].tolist()}")
        return expected, observed, bool(ok)


@dataclass(frozen=True)
class OneMoreUpdate(PairClaim):
    """`candidate`'s BatchNorm running statistics are `reference`'s after one more momentum
    update with the short last batch: (1-m)·running + m·(its mean, its unbiased variance), the
    batch read from the reference dump's `x` (its last N mod B rows), m from the metadata."""

    atol: float = 1e-6

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        _, _, rest = full_and_short(reference.metadata)
        m = float(reference.metadata["momentum"])
        short = reference.tensors["x"].astype(np.float64)[-rest:]
        stats = {"running_mean": short.mean(axis=0), "running_var": short.var(axis=0, ddof=1)}
        worst = 0.0
        for name, batch in stats.items():
            wanted = (1 - m) * reference.tensors[name].astype(np.float64) + m * batch
            worst = max(worst, float(np.abs(candidate.tensors[name] - wanted).max()))
        expected = f"running_mean/var = (1-m)·{self.reference} + m·(mean, unbiased var of the last {rest} rows) ±{self.atol:g}"
        return expected, f"max|diff| {worst:.2e}", worst <= self.atol


def magnitude(record) -> str:
    b, _, rest = full_and_short(record.program("burn", "port").metadata)
    return f"短 batch 的 {rest} 个样本在 epoch 梯度里的权重是其他样本的 {b / rest:g} 倍（PyTorch 丢掉它们），BatchNorm 多更新一次"


EXPERIMENT = Experiment(
    id="p29d",
    title="DataLoader 没有 drop_last，不满的短 batch 进了 BatchNorm 和梯度",
    mainline="train/eval",
    kind="silent",
    symptoms=("slow-drift", "eval-wrong"),
    related=("p26", "p27", "p29a"),
    related_reports=("tracel-ai/burn#2373",),  # a question about num_workers, not this pitfall
    torch_variants=("ref", "keep"),
    burn_variants=("port", "fixed", "trimmed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-trimmed"), ("torch-ref", "burn-port"),
                 ("torch-keep", "burn-port")),
    sources=(
        SourceRef("burn-core", "src/data/dataloader/builder.rs", "DataLoaderBuilder::batch_size",
                  "self.strategy = Some(Box::new(FixBatchStrategy::new(batch_size)));"),
        SourceRef("burn-core", "src/data/dataloader/batch.rs", "BatchDataloaderIterator::next",
                  "if let Some(items) = self.strategy.batch(true) {"),
        SourceRef("burn-core", "src/data/dataloader/strategy.rs", "FixBatchStrategy::batch",
                  "if self.items.len() < self.batch_size && !force {"),
        # With workers: whole batches per worker, the short one in the last share; batches arrive as they are ready.
        SourceRef("burn-dataset", "src/transform/partial.rs", "PartialDataset::split_chunks",
                  "let end_index = core::cmp::min(end_batch * batch_size, total_items);"),
        SourceRef("burn-core", "src/data/dataloader/multithread.rs", "MultiThreadsDataloaderIterator::next",
                  "Ok(Message::Batch(index, item, progress)) => {"),
    ),
    magnitude=magnitude,
    claims=(
        BatchSizes("torch-drops-last", "PyTorch `drop_last=True`：loader 只给 N // B 个满 batch",
                   "torch", "ref", "loader_batch_sizes", short=False),
        BatchSizes("torch-default-keeps", "PyTorch 默认 `drop_last=False`：最后多一个 N mod B 的短 batch",
                   "torch", "keep", "loader_batch_sizes", short=True),
        Accepts("burn-port-runs", "burn 的 DataLoader 跑完一个 epoch，不报错", "burn", "port"),
        BatchSizes("burn-short-batch", "burn 的 DataLoader：满 batch 之后还有一个 N mod B 的短 batch",
                   "burn", "port", "loader_batch_sizes", short=True),
        ShortBatchWeight("short-batch-weight", "短 batch 的样本在 epoch 梯度里的权重是 1/(N mod B)，PyTorch 是 0",
                         "torch-ref", "burn-port"),
        OneMoreUpdate("batchnorm-one-more-update", "burn 的 running_mean/var 比 PyTorch 多一次用短 batch 的更新",
                      "torch-ref", "burn-port"),
        OnlyTensorsDiffer("what-differs", "输入相同；样本权重、running 统计量和 epoch 梯度都不同",
                          "torch-ref", "burn-port",
                          ("fc.bias.grad", "fc.weight.grad", "running_mean", "running_var", "sample_weight")),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("port-is-torch-keep", "burn-port 和 PyTorch 默认的 `drop_last=False` 一致：差别只在最后那个短 batch",
                "torch-keep", "burn-port"),
        BatchSizes("fixed-skips", "burn-fixed：loader 照样给出短 batch，循环跳过它，进模型的只有满 batch",
                   "burn", "fixed", "trained_batch_sizes", short=False),
        Matches("fix-matches", "burn-fixed（跳过短 batch）和 torch-ref 一致", "torch-ref", "burn-fixed"),
        BatchSizes("trimmed-loader", "burn-trimmed：数据集截到 B 的整数倍，loader 只给满 batch",
                   "burn", "trimmed", "loader_batch_sizes", short=False),
        Matches("trim-matches", "burn-trimmed（`PartialDataset` 截短数据集）和 torch-ref 一致", "torch-ref", "burn-trimmed"),
    ),
)
