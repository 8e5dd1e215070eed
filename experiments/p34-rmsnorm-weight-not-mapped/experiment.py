"""p34: a PyTorch RMSNorm's `weight` loaded into burn with burn-store's PyTorchToBurnAdapter. The
adapter renames `weight`/`bias` to burn's `gamma`/`beta` only in the norm modules it knows by
struct name; burn 0.22.1 lists `RmsNorm` among them, so burn's own RmsNorm loads. A port's own
norm module under another struct name, with a `gamma`, is not renamed: the strict load fails, and
with allow_partial(true) its scale silently stays at ones, as burn's RmsNorm did before the
adapter knew it (tracel-ai/burn#5023, #5159)."""

from dataclasses import dataclass

from pita_lab.experiment import (
    Accepts,
    Claim,
    Experiment,
    KeptInitial,
    Loaded,
    Matches,
    Mismatches,
    OnlyTensorsDiffer,
    Panics,
    SourceRef,
)


@dataclass(frozen=True)
class KeptOnly(Claim):
    """The parameters a burn variant's load left at their initial values (its dump's metadata
    `kept_initial`, bytes compared before and after the load) are exactly `paths`."""

    id: str
    text: str
    variant: str
    paths: tuple[str, ...]

    def observe(self, record, out):
        kept = sorted(p for p in record.program("burn", self.variant).metadata.get("kept_initial", "").split(",") if p)
        return f"left at initial values: {', '.join(sorted(self.paths))}", f"left at initial values: {', '.join(kept) or 'none'}", kept == sorted(self.paths)


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-ref", "burn-own-partial").tensors if t.name == "rms")
    return f"burn 的 RmsNorm 加载正常；自写的 RMSNorm 的 gamma 留在 1，输出差 {row.max_abs_diff:.3g}"


EXPERIMENT = Experiment(
    id="p34",
    title="PyTorch 的 RMSNorm 权重经适配器加载：burn 的 RmsNorm 能改名，自写的归一化模块不能",
    mainline="save/load PyTorch weights",
    kind="same",
    symptoms=("wrong-after-load", "panic"),
    related=("p30", "p31", "p10b"),
    reports=("tracel-ai/burn#5159", "tracel-ai/burn#5023"),
    torch_variants=("ref",),
    burn_variants=("port", "own", "own-partial", "guard", "own-fixed"),
    comparisons=(("torch-ref", "burn-port"), ("torch-ref", "burn-own-partial"), ("torch-ref", "burn-own-fixed")),
    sources=(
        SourceRef("burn-store", "src/adapter.rs", "is_normalization_layer", "| module_names::RMS_NORM"),
        SourceRef("burn-store", "src/adapter.rs", "pytorch_norm_param_to_burn", '"weight" => Some("gamma"),'),
        SourceRef("burn-store", "src/adapter.rs", "ModuleContext", '.find(|ct| ct.starts_with("Struct:") || ct.starts_with("Enum:"))'),
        SourceRef("burn-store", "src/applier.rs", "apply_tensor", "adapter.get_alternative_param_name(param_name, module_type)"),
        SourceRef("burn-nn", "src/modules/norm/rms.rs", "RmsNorm", "pub gamma: Param<Tensor<1>>,"),
        SourceRef("burn-store", "src/safetensors/store.rs", "SafetensorsStore::apply_to",
                  "if !self.get_allow_partial() && !result.missing.is_empty() {"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-saves", "PyTorch 用 `save_file` 把 LayerNorm 和 RMSNorm 的 state_dict 存成 safetensors，并运行模型", "torch", "ref"),
        Accepts("burn-port-runs", "burn 的 `RmsNorm` 经 `PyTorchToBurnAdapter` 严格加载，不报错", "burn", "port"),
        Loaded("port-loads-everything", "每个参数都加载上了：`rms.weight` 改名成了 `rms.gamma`，文件里没有用不上的张量", "port"),
        KeptInitial("port-replaces-every-parameter", "加载换掉了每一个参数，`rms.gamma` 不再是初始的 1", "port", kept=False),
        Matches("port-matches", "burn-port 的 LayerNorm 和 RmsNorm 输出在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-port"),
        Panics("own-load-fails", "自写的 `RMSNorm`（字段叫 `gamma`）严格加载失败：适配器不认这个结构体名，不改名",
               "burn", "own", "Tensor not found"),
        Accepts("own-partial-runs", "`allow_partial(true)` 后加载「成功」，模型能运行", "burn", "own-partial"),
        KeptOnly("own-partial-keeps-gamma", "`allow_partial(true)`：只有 `rms.gamma` 留在初始值，LayerNorm 照常加载",
                 "own-partial", ("rms.gamma",)),
        Mismatches("negative-control", "burn-own-partial 对 torch-ref 报 MISMATCH", "torch-ref", "burn-own-partial"),
        OnlyTensorsDiffer("only-rms-differs", "只有 RMSNorm 的输出不同，LayerNorm 的输出一致", "torch-ref", "burn-own-partial", ("rms",)),
        Loaded("own-fixed-loads-everything", "自写模块的缩放参数改叫 `weight` 后，严格加载每个参数都对上，不需要改名", "own-fixed"),
        Matches("own-fixed-matches", "burn-own-fixed 和 torch-ref 一致", "torch-ref", "burn-own-fixed"),
        Panics("guard-panics", "`assert_fully_loaded` 拦下部分加载，指出 `rms.gamma` 和没用上的 `rms.weight`",
               "burn", "guard", "parameters were not loaded and keep their initial values"),
    ),
)
