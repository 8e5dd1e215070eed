"""The tutorial: a worked port traced phase by phase. The lab runs the PyTorch side once and the
burn port four times, each time with one mistake fewer, and `pita trace` on each."""

from dataclasses import dataclass

from pita_lab.experiment import Accepts, Experiment, PairClaim, SourceRef, Traced

# How far trace's scale factor may sit from the batch size: a few float32 ULPs of it (the sum and
# the mean round differently; one machine measured 3.9999997 for a batch of 4).
FACTOR_RTOL = 8 * 2.0 ** -23


@dataclass(frozen=True)
class TraceFactorIsBatch(PairClaim):
    """trace's scale factor at the first divergence of `candidate` is the batch size the dumps
    recorded, within `FACTOR_RTOL`: the chapter prints the factor as measured and names the batch.
    The fixed port's trace has no such factor (its loss matches), which `fixed-matches` shows."""

    def observe(self, record, out):
        factor = record.trace(self.reference, self.candidate).result.first_divergence.diagnosis[0].params["factor"]
        batch = int(record.program("burn", self.candidate.removeprefix("burn-")).metadata["batch_size"])
        ok = abs(factor - batch) <= FACTOR_RTOL * batch
        return f"倍数 = batch_size，相对差 ≤ {FACTOR_RTOL:.2e}", f"倍数 {factor!r}，batch_size {batch}", ok

MISTAKES = {"broken": "layout,loss,eps", "fix1": "loss,eps", "fix2": "eps", "fixed": "none"}

EXPERIMENT = Experiment(
    id="port-encoder",
    title="追查一次移植：Transformer 编码器从 PyTorch 到 burn",
    mainline="",
    kind="tutorial",
    symptoms=("wrong-after-load", "grad-scaled", "update-differs"),
    related=("p07", "p12", "p20", "p30"),
    also=("p07", "p30", "p12", "p20"),  # the catalog's signatures that fire on its planted mistakes, rightly (pita_lab.signatures)
    torch_variants=("record",),
    burn_variants=tuple(MISTAKES),
    comparisons=(),
    traces=tuple(("torch-record", f"burn-{variant}") for variant in MISTAKES),
    arguments=(("torch-record", ("--out", "{out}")),
               *((f"burn-{variant}", ("--out", "{out}", "--mistakes", mistakes)) for variant, mistakes in MISTAKES.items())),
    sources=(
        SourceRef("burn-store", "src/safetensors/store.rs", "SafetensorsStore::from_file", "from_adapter: Box::new(IdentityAdapter),"),
        SourceRef("burn-optim", "src/optim/adam.rs", "AdamConfig", "#[config(default = 1e-5)]"),
    ),
    claims=(
        Accepts("torch-records", "PyTorch 侧训练两步，写下权重、数据和记录", "torch", "record"),
        Accepts("burn-broken-runs", "带着三个错误的移植照样跑完两步，不报错", "burn", "broken"),
        Traced("broken-is-the-layout", "trace 找到的第一处分歧：加载后的参数，诊断为转置",
               "torch-record", "burn-broken", phase="parameters", name="param/", kind="transpose"),
        Traced("fix1-is-the-loss", "修好布局后，第一处分歧在 loss，诊断为 batch 倍的缩放",
               "torch-record", "burn-fix1", phase="loss", name="loss/1", kind="scale"),
        TraceFactorIsBatch("fix1-factor-is-batch", "loss 的倍数（照实测的位数）在几个 float32 ulp 内等于 dump 里记录的 batch 大小",
                           "torch-record", "burn-fix1"),
        Traced("fix2-is-the-step", "再修好 loss，前向、loss、反向都一致，第一处分歧在优化器这一步",
               "torch-record", "burn-fix2", phase="step", name="step1/", settings=("eps",)),
        Traced("fixed-matches", "三处都修好，每个阶段都一致", "torch-record", "burn-fixed"),
    ),
)
