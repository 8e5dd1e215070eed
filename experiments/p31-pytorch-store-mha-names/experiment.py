"""p31: a PyTorch state_dict with MultiheadAttention, InstanceNorm1d and PReLU read with burn's
PytorchStore: PyTorchToBurnAdapter does not map packed or renamed parameters. The load fails, or,
with allow_partial(true), every such parameter silently keeps its initial value."""

from pita_lab.experiment import (
    Accepts,
    Experiment,
    Loaded,
    Matches,
    Mismatches,
    Panics,
    SourceRef,
)


def magnitude(record) -> str:
    worst = record.comparison("torch-ref", "burn-partial").result.worst
    return f"默认加载报错；allow_partial 时输出差 {worst:.2g}"


EXPERIMENT = Experiment(
    id="p31",
    title="PytorchStore 不认 MHA 的 in_proj、InstanceNorm 和 PReLU 的参数名",
    mainline="save/load PyTorch weights",
    kind="panic",
    symptoms=("wrong-after-load", "panic"),
    related=("p07", "p29", "p30"),
    reports=('tracel-ai/burn#4043',),
    torch_variants=("ref",),
    burn_variants=("port", "partial", "guard", "fixed"),
    comparisons=(("torch-ref", "burn-partial"), ("torch-ref", "burn-fixed")),
    sources=(
        SourceRef("burn-store", "src/pytorch/store.rs", "PytorchStore::apply_to", "Some(Box::new(PyTorchToBurnAdapter)),"),
        SourceRef("burn-store", "src/adapter.rs", "adapt_pytorch_tensor", 'if module_type == module_names::LINEAR && param == "weight"'),
        SourceRef("burn-store", "src/adapter.rs", "is_normalization_layer", "module_names::BATCH_NORM"),
        SourceRef("burn-store", "src/pytorch/store.rs", "PytorchStore::apply_to", "if !self.allow_partial && !result.missing.is_empty() {"),
        SourceRef("burn-nn", "src/modules/attention/mha.rs", "MultiHeadAttentionConfig::init", "query: linear_cfg.clone()"),
        SourceRef("burn-nn", "src/activation/prelu.rs", "PReluConfig::init", "alpha: Initializer::Constant"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-saves", "PyTorch 用 `torch.save` 保存 state_dict，并运行模型", "torch", "ref"),
        Panics("default-load-fails", "`PytorchStore` 默认的加载失败：文件里没有 burn 的参数名",
               "burn", "port", "Tensor not found"),
        Accepts("partial-load-runs", "`allow_partial(true)` 后加载成功，模型能运行", "burn", "partial"),
        Loaded("partial-loads-nothing", "`allow_partial(true)`：什么都没应用上，burn 的参数名全部缺失，PyTorch 的张量全部没用上",
               "partial", everything=False),
        Mismatches("negative-control", "burn-partial 对 torch-ref 报 MISMATCH", "torch-ref", "burn-partial"),
        Panics("guard-panics", "`assert_fully_loaded` 拦下部分加载",
               "burn", "guard", "parameters were not loaded and keep their initial values"),
        Loaded("fix-loads-everything", "拆开 `in_proj` 并改名后，每个参数都能加载", "fixed"),
        Matches("fix-matches", "burn-fixed 和 torch-ref 一致", "torch-ref", "burn-fixed"),
    ),
)
