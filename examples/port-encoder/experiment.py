"""The tutorial: a worked port traced phase by phase. The lab runs the PyTorch side once and the
burn port four times, each time with one mistake fewer, and `pita trace` on each."""

from pita_lab.experiment import Accepts, Experiment, SourceRef, Traced

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
        Traced("fix2-is-the-step", "再修好 loss，前向、loss、反向都一致，第一处分歧在优化器这一步",
               "torch-record", "burn-fix2", phase="step", name="step1/", settings=("eps",)),
        Traced("fixed-matches", "三处都修好，每个阶段都一致", "torch-record", "burn-fixed"),
    ),
)
