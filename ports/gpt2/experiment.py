"""The second tutorial: the GPT-2 port (README.md), a model pita ships nothing for, traced with
default options. The lab runs the PyTorch side once and the burn port as written and with one
planted mistake at a time, and `pita trace` on each."""

from pita_lab.experiment import Accepts, Experiment, SourceRef, Traced

# variant -> its `--plant` (burn-<variant>.safetensors is what the port writes for it)
PLANTS = {
    "port": "none",
    "conv1d-through-adapter": "conv1d-through-adapter",
    "no-mask-replay": "no-mask-replay",
    "layer-norm-eps": "layer-norm-eps",
    "gelu-exact": "gelu-exact",
    "no-causal-mask": "no-causal-mask",
    "loss-no-shift": "loss-no-shift",
    "adamw-defaults": "adamw-defaults",
}


def traced(claim_id: str, text: str, variant: str, **finding) -> Traced:
    return Traced(claim_id, text, "torch-record", f"burn-{variant}", **finding)


EXPERIMENT = Experiment(
    id="port-gpt2",
    title="移植一个 pita 没有现成支持的模型：GPT-2 从 transformers 到 burn",
    mainline="",
    kind="tutorial",
    symptoms=("wrong-after-load", "forward-wrong", "loss-wrong", "update-differs"),
    related=("port-encoder", "p20", "p21", "p30", "p25a"),
    also=("p07", "p30", "p10l", "p20", "p21", "p25a"),  # the catalog's signatures that fire on its planted mistakes, rightly (pita_lab.signatures)
    torch_variants=("record",),
    burn_variants=tuple(PLANTS),
    comparisons=(),
    traces=tuple(("torch-record", f"burn-{variant}") for variant in PLANTS),
    arguments=(("torch-record", ("--out", "{out}")),
               *((f"burn-{variant}", ("--out", "{out}", "--plant", plant)) for variant, plant in PLANTS.items())),
    sources=(
        SourceRef("burn-store", "src/adapter.rs", "adapt_pytorch_tensor", 'if module_type == module_names::LINEAR && param == "weight"'),
        SourceRef("burn-nn", "src/modules/dropout.rs", "forward", "let random = input.random_like(Distribution::Bernoulli(prob_keep));"),
        SourceRef("burn-optim", "src/optim/adamw.rs", "AdamWConfig", "#[config(default = 1e-5)]"),
    ),
    claims=(
        Accepts("torch-records", "PyTorch 侧训练两步，写下权重、数据、记录和它的 float64 版本", "torch", "record"),
        Accepts("burn-port-runs", "burn 侧的移植加载同一份权重，重放 dropout 掩码，训练两步", "burn", "port"),
        traced("port-matches", "正确的移植，默认选项：每个阶段都一致", "port"),
        traced("adapter-transposes", "权重经 PyTorch 适配器加载：第一处分歧在加载后的参数，诊断为转置",
               "conv1d-through-adapter", phase="parameters", name="param/transformer.h.0.attn.c_proj.weight", kind="transpose"),
        traced("masks-not-replayed", "不重放 dropout 掩码：第一处分歧在前向的第一个 dropout，trace 认出是随机掩码不同",
               "no-mask-replay", phase="forward", name="act/transformer.drop", random_masks=True),
        traced("layer-norm-eps-first", "LayerNorm 的 eps 抄成了 BERT 的 1e-12：trace 先在 settings 里按名字报出两边的 eps，数值上第一处分歧在第一个 LayerNorm",
               "layer-norm-eps", phase="forward", name="act/transformer.h.0.ln_1", kind="slice_scale", settings=("eps",)),
        traced("gelu-exact-at-act", "精确 GELU 代替 tanh 近似：第一处分歧在 MLP 的激活模块",
               "gelu-exact", phase="forward", name="act/transformer.h.0.mlp.act"),
        traced("no-mask-after-core", "注意力不加因果掩码：第一处分歧在注意力核心之后第一个有记录的模块 c_proj",
               "no-causal-mask", phase="forward", name="act/transformer.h.0.attn.c_proj"),
        traced("loss-not-shifted", "标签没有错开一位：前向一致，第一处分歧在 loss",
               "loss-no-shift", phase="loss", name="loss/1"),
        traced("adamw-settings", "AdamW 用 burn 的默认值：前向、loss、反向都一致，第一处分歧在这一步，trace 指出 eps 不同",
               "adamw-defaults", phase="step", name="step1/", settings=("eps", "weight_decay")),
    ),
)
