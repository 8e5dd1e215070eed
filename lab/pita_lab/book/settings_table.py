"""The settings table (pita/catalog/settings.json, read by pita/settings.py): PyTorch's (kind,
setting) against burn's, with both defaults, a converter by name where the two spell a value
differently, and the chapter that documents the setting.

Two sources, one list of rows: every `DefaultsDiffer` claim with `maps` (its defaults as the
committed record measured them, its experiment as the chapter), then `DECLARED`, the settings
whose defaults agree (or that no experiment measures), declared here. A name is `Kind.name`;
`|` joins kinds one row maps alike (`BatchNorm1d|BatchNorm2d.eps`), an empty name is a setting
that framework does not have (burn's BatchNorm is always affine: its default is what it does).
Kinds and names are those the recorders write: PyTorch's classes and attributes
(pita/torch.py), burn's types and the fields its Display and config spell (crates/pita's
recorder). An optimizer's burn kind is its config (`AdamWConfig`), its name a dotted path
into the config's serde form, a comma joining the paths of one PyTorch list (betas).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from pita_lab import catalog
from pita_lab.book.defaults import defaults_rows
from pita_lab.experiment import LOSS_FN, MODULE, OPTIMIZER, Mapped
from pita_lab.store import RecordStore

PATH = Path("pita") / "catalog" / "settings.json"


def _conv(dims: int) -> list[Mapped]:
    kind = f"Conv{dims}d"
    one = "one_shape" if dims == 1 else None  # burn's Conv1d keeps kernel_size, stride, dilation as one number
    return [Mapped(f"{kind}.in_channels", f"{kind}.ch_in"), Mapped(f"{kind}.out_channels", f"{kind}.ch_out"),
            Mapped(f"{kind}.kernel_size", f"{kind}.kernel_size", convert=one),
            Mapped(f"{kind}.stride", f"{kind}.stride", [1] * dims, 1 if dims == 1 else [1] * dims, one),
            Mapped(f"{kind}.dilation", f"{kind}.dilation", [1] * dims, 1 if dims == 1 else [1] * dims, one),
            Mapped(f"{kind}.groups", f"{kind}.groups", 1, 1),
            Mapped(f"{kind}.padding", f"{kind}.padding", [0] * dims, "Valid", "padding"),
            Mapped(f"{kind}.bias", f"{kind}.bias", True, True)]


BATCH_NORMS = "BatchNorm1d|BatchNorm2d|BatchNorm3d"
INSTANCE_NORMS = "InstanceNorm1d|InstanceNorm2d|InstanceNorm3d"
LINEARS = "Linear|NonDynamicallyQuantizableLinear"  # the latter: MultiheadAttention's out_proj

# The rows no DefaultsDiffer measures and no chapter declares (`Experiment.settings`). Defaults:
# PyTorch's signature, burn's config (0.22.1).
DECLARED = [
    Mapped("LayerNorm.normalized_shape", "LayerNorm.d_model", convert="one_shape"),
    Mapped("LayerNorm.elementwise_affine", "LayerNorm.", True, True),
    Mapped("LayerNorm.bias", "LayerNorm.bias", True, True),
    Mapped(f"{BATCH_NORMS}.eps", "BatchNorm.epsilon", 1e-05, 1e-05),
    Mapped(f"{BATCH_NORMS}.num_features", "BatchNorm.num_features"),
    Mapped(f"{INSTANCE_NORMS}.eps", "InstanceNorm.epsilon", 1e-05, 1e-05),
    Mapped(f"{INSTANCE_NORMS}.num_features", "InstanceNorm.num_channels"),
    Mapped(f"{INSTANCE_NORMS}.track_running_stats", "InstanceNorm.", False, False),
    Mapped("GroupNorm.num_groups", "GroupNorm.num_groups"),
    Mapped("GroupNorm.num_channels", "GroupNorm.num_channels"),
    Mapped("GroupNorm.eps", "GroupNorm.epsilon", 1e-05, 1e-05),
    Mapped("GroupNorm.affine", "GroupNorm.affine", True, True),
    Mapped("RMSNorm.normalized_shape", "RmsNorm.d_model", convert="one_shape"),
    Mapped("RMSNorm.elementwise_affine", "RmsNorm.", True, True),
    Mapped("Dropout.p", "Dropout.prob", 0.5, 0.5),
    Mapped("GELU.approximate", "Gelu.approximate", "none", False, "gelu_approximate"),
    Mapped(f"{LINEARS}.in_features", "Linear.d_input"),
    Mapped(f"{LINEARS}.out_features", "Linear.d_output"),
    Mapped(f"{LINEARS}.bias", "Linear.bias", True, True),
    *_conv(1), *_conv(2), *_conv(3),
    Mapped("Embedding.num_embeddings", "Embedding.n_embedding"),
    Mapped("Embedding.embedding_dim", "Embedding.d_model"),
    Mapped("Embedding.max_norm", "Embedding.", None, None),
    Mapped("Embedding.scale_grad_by_freq", "Embedding.", False, False),  # burn's gradient is never scaled by frequency
    Mapped("MultiheadAttention.embed_dim", "MultiHeadAttention.d_model"),
    Mapped("MultiheadAttention.num_heads", "MultiHeadAttention.n_heads"),
    Mapped("MultiheadAttention.add_bias_kv", "MultiHeadAttention.", False, False),
    Mapped("MultiheadAttention.add_zero_attn", "MultiHeadAttention.", False, False),
    Mapped("MultiheadAttention.", "MultiHeadAttention.quiet_softmax", False, False),
    Mapped("LSTM.input_size", "Lstm.d_input"),
    Mapped("LSTM.hidden_size", "Lstm.d_hidden"),
    Mapped("LSTM.bias", "Lstm.bias", True, True),
    Mapped("LSTM.num_layers", "Lstm.", 1, 1),
    Mapped("LSTM.bidirectional", "Lstm.", False, False),
    Mapped("GRU.input_size", "Gru.d_input"),
    Mapped("GRU.hidden_size", "Gru.d_hidden"),
    Mapped("GRU.bias", "Gru.bias", True, True),
    Mapped("GRU.num_layers", "Gru.", 1, 1),
    Mapped("GRU.bidirectional", "Gru.", False, False),
    Mapped("GRU.", "Gru.reset_after", True, True),
    Mapped("Upsample.mode", "Interpolate2d.mode", "nearest", "Nearest", "word"),
    Mapped("CrossEntropyLoss.label_smoothing", "CrossEntropyLoss.smoothing", 0.0, None, "zero_is_none", scope=LOSS_FN),
    Mapped("CrossEntropyLoss.weight", "CrossEntropyLoss.weights", None, None, scope=LOSS_FN),
    Mapped("CrossEntropyLoss.", "CrossEntropyLoss.logits", True, True, scope=LOSS_FN),
    Mapped("BCEWithLogitsLoss.weight", "BinaryCrossEntropyLoss.weights", None, None, scope=LOSS_FN),
    Mapped("BCELoss.weight", "BinaryCrossEntropyLoss.weights", None, None, scope=LOSS_FN),
    Mapped("Adam.betas", "AdamConfig.beta_1,beta_2", [0.9, 0.999], [0.9, 0.999], scope=OPTIMIZER),
    Mapped("Adam.amsgrad", "AdamConfig.amsgrad", False, False, scope=OPTIMIZER),
    Mapped("Adam.weight_decay", "AdamConfig.weight_decay.penalty", 0.0, None, scope=OPTIMIZER),
    Mapped("AdamW.betas", "AdamWConfig.beta_1,beta_2", [0.9, 0.999], [0.9, 0.999], scope=OPTIMIZER),
    Mapped("AdamW.amsgrad", "AdamWConfig.amsgrad", False, False, scope=OPTIMIZER),
    Mapped("SGD.momentum", "SgdConfig.momentum.momentum", 0.0, None, scope=OPTIMIZER),
    Mapped("SGD.nesterov", "SgdConfig.momentum.nesterov", False, None, scope=OPTIMIZER),
    Mapped("SGD.weight_decay", "SgdConfig.weight_decay.penalty", 0.0, None, scope=OPTIMIZER),
    Mapped("RMSprop.alpha", "RmsPropConfig.alpha", 0.99, 0.99, scope=OPTIMIZER),
    Mapped("RMSprop.centered", "RmsPropConfig.centered", False, False, scope=OPTIMIZER),
    Mapped("RMSprop.weight_decay", "RmsPropConfig.weight_decay.penalty", 0.0, None, scope=OPTIMIZER),
    Mapped("Adagrad.lr_decay", "AdaGradConfig.lr_decay", 0.0, 0.0, scope=OPTIMIZER),
    Mapped("Adagrad.weight_decay", "AdaGradConfig.weight_decay.penalty", 0.0, None, scope=OPTIMIZER),
]
# A claim's row that needs a converter: by PyTorch's `Kind.name` as its `maps` spells it.
CLAIM_CONVERTERS = {"RMSNorm.eps": "eps_none_is_finfo", "Upsample.align_corners": "none_is_false", "TransformerEncoderLayer.activation": "word"}
# The PyTorch value an optimizer's optional part left out (None in burn's config) stands for.
BURN_NONE = {"SgdConfig.momentum.momentum": 0.0, "SgdConfig.momentum.dampening": 0.0, "SgdConfig.momentum.nesterov": False,
             "SgdConfig.weight_decay.penalty": 0.0, "AdamConfig.weight_decay.penalty": 0.0, "RmsPropConfig.weight_decay.penalty": 0.0,
             "AdaGradConfig.weight_decay.penalty": 0.0}


def settings_rows(root: Path) -> list[dict]:
    """Every row of the table: the measured ones (the defaults page's rows that a claim `maps`,
    along the main line), then those the chapters declare, then the central ones."""
    store, rows = RecordStore(root), []
    for experiment_id in catalog.ids():
        record = store.committed(experiment_id)
        if record is None:
            continue
        for found in defaults_rows(catalog.get(experiment_id), record):
            if found["maps"]:
                torch, burn = found["maps"]
                scope = OPTIMIZER if burn.partition(".")[0].endswith("Config") else MODULE
                mapping = Mapped(torch, burn, found["torch_value"], found["burn_value"], CLAIM_CONVERTERS.get(torch), experiment_id, scope)
                rows += _rows(mapping, found["setting"])
    for experiment_id in catalog.ids():
        rows += [row for mapping in catalog.get(experiment_id).settings for row in _rows(replace(mapping, chapter=experiment_id), None)]
    for mapping in DECLARED:
        rows += _rows(mapping, None)
    return rows


def _rows(mapping: Mapped, setting: str | None) -> list[dict]:
    """The table's rows of one mapping, one per PyTorch kind it names."""
    torch_kinds, torch_name = _split(mapping.torch)
    [burn_kind], burn_name = _split(mapping.burn)
    experiment = catalog.get(mapping.chapter) if mapping.chapter else None
    return [{"scope": mapping.scope, "torch_kind": kind, "torch_name": torch_name, "torch_default": mapping.torch_default,
             "burn_kind": burn_kind, "burn_name": burn_name, "burn_default": mapping.burn_default, "convert": mapping.convert,
             "burn_none": BURN_NONE.get(f"{burn_kind}.{burn_name}"),
             "id": mapping.chapter, "title": experiment.title if experiment else None,
             "chapter": f"book/{mapping.chapter}.md" if mapping.chapter else None,
             "fix": (getattr(experiment, "fix", "") or None) if experiment else None,
             "setting": setting}
            for kind in torch_kinds]


def _split(name: str) -> tuple[list[str], str | None]:
    kinds, _, setting = name.partition(".")
    return kinds.split("|"), setting or None


def render_settings_table(root: Path) -> dict[Path, str]:
    """pita/catalog/settings.json, from the catalog and its committed records."""
    data = {"about": "Generated by `pita book build` (lab/pita_lab/book/settings_table.py) from the catalog's DefaultsDiffer claims "
                     "and the rows declared beside them; read by pita/settings.py. Do not edit.",
            "rows": settings_rows(root)}
    return {root / PATH: json.dumps(data, ensure_ascii=False, indent=1) + "\n"}
