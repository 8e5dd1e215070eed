"""Settings: what each recorder wrote of the optimizer (metadata `optimizer`, docs/recording.md),
read into PyTorch's names and compared before any tensor, so that "epsilon 1e-08 against 1e-05"
is said once, by name, instead of being inferred from steps that differ.

PyTorch records `{"framework": "torch", "name": "AdamW", "groups": [param_group without params]}`;
burn records `{"framework": "burn", "name": "AdamWConfig", "lr": ..., "config": <the config's
serde form>}`. `BURN_OPTIMIZERS` maps each burn config to the PyTorch optimizer it ports and its
fields to PyTorch's keys, with the value burn's `None` stands for. Keys one side has and the
other cannot express (PyTorch's `foreach`, burn's `grad_clipping`) are listed as not compared.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

# burn config -> (the PyTorch optimizer, {PyTorch key: (path into burn's config, value of a None)})
BURN_OPTIMIZERS = {
    "AdamConfig": ("Adam", {"betas": (("beta_1", "beta_2"), None), "eps": ("epsilon", None), "amsgrad": ("amsgrad", None),
                            "weight_decay": ("weight_decay.penalty", 0.0)}),
    "AdamWConfig": ("AdamW", {"betas": (("beta_1", "beta_2"), None), "eps": ("epsilon", None), "amsgrad": ("amsgrad", None),
                              "weight_decay": ("weight_decay", None)}),
    "SgdConfig": ("SGD", {"momentum": ("momentum.momentum", 0.0), "dampening": ("momentum.dampening", 0.0),
                          "nesterov": ("momentum.nesterov", False), "weight_decay": ("weight_decay.penalty", 0.0)}),
}
# PyTorch keys that say how the step is computed, not what it computes
IMPLEMENTATION_KEYS = frozenset({"foreach", "fused", "capturable", "differentiable", "initial_lr", "decoupled_weight_decay"})
BURN_ONLY_KEYS = ("grad_clipping", "gradient_clipping", "cautious_weight_decay")  # no PyTorch optimizer key holds them
RELATIVE = 1e-6  # burn keeps its settings in f32: 1e-8 reads back as 9.99999993922529e-09


@dataclass(frozen=True)
class Setting:
    """One setting as both sides have it, in PyTorch's name; `differs` says whether they disagree."""

    name: str
    reference: object
    candidate: object

    @property
    def differs(self) -> bool:
        return not _same(self.reference, self.candidate)

    def text(self) -> str:
        return f"{self.name}: {_shown(self.reference)} against {_shown(self.candidate)}"

    def to_dict(self) -> dict:
        return {"name": self.name, "reference": self.reference, "candidate": self.candidate}


@dataclass
class SettingsComparison:
    """The optimizer settings of both recordings: every setting compared, and what was not."""

    settings: list[Setting]
    not_compared: list[str]

    @property
    def differences(self) -> list[Setting]:
        return [s for s in self.settings if s.differs]

    def to_dict(self) -> dict:
        return {"differences": [s.to_dict() for s in self.differences], "compared": len(self.settings),
                "names": [s.name for s in self.settings], "not_compared": self.not_compared}


def optimizer_settings(metadata: dict) -> tuple[str, dict, list[str]] | None:
    """The optimizer a recording's metadata names, in PyTorch's name and keys, and the keys that
    could not be read into them; None without (or with unreadable) `optimizer` metadata."""
    try:
        recorded = json.loads(metadata.get("optimizer") or "null")
    except (ValueError, RecursionError):
        return None
    if not isinstance(recorded, dict):
        return None
    if recorded.get("framework") == "burn":
        return _burn_settings(recorded)
    groups = recorded.get("groups")
    if not isinstance(groups, list) or not groups or not all(isinstance(g, dict) for g in groups):
        return None
    first = groups[0]
    settings = {key: value for key, value in first.items() if key not in IMPLEMENTATION_KEYS}
    unread = [f"groups 2..{len(groups)} (each compared as the first would be)"] if any(g != first for g in groups[1:]) else []
    return str(recorded.get("name")), settings, unread


def _burn_settings(recorded: dict) -> tuple[str, dict, list[str]]:
    name, config = str(recorded.get("name")), recorded.get("config")
    config = config if isinstance(config, dict) else {}
    torch_name, fields = BURN_OPTIMIZERS.get(name, (name, {}))
    settings = {"lr": recorded.get("lr")}
    for key, (path, when_none) in fields.items():
        if isinstance(path, tuple):
            settings[key] = [_at(config, part, when_none) for part in path]
        else:
            settings[key] = _at(config, path, when_none)
    unread = [f"{key} (burn only)" for key in BURN_ONLY_KEYS if config.get(key) not in (None, False)]
    if name not in BURN_OPTIMIZERS:
        unread.append(f"{name}: no mapping to a PyTorch optimizer's keys")
    return torch_name, settings, unread


def _at(config: dict, path: str, when_none):
    """The value at a dotted path in burn's config; `when_none` where an optional part is None."""
    value = config
    for part in path.split("."):
        if value is None:
            return when_none
        value = value.get(part) if isinstance(value, dict) else None
    return when_none if value is None else value


def compare_settings(reference: dict, candidate: dict) -> SettingsComparison | None:
    """The optimizer settings of two recordings' metadata compared, or None when either side
    recorded none."""
    ours, theirs = optimizer_settings(reference), optimizer_settings(candidate)
    if ours is None or theirs is None:
        return None
    (our_name, our_settings, our_unread), (their_name, their_settings, their_unread) = ours, theirs
    settings = [Setting("optimizer", our_name, their_name)]
    shared = [key for key in our_settings if key in their_settings]
    settings += [Setting(key, our_settings[key], their_settings[key]) for key in shared]
    one_sided = [f"{key} (reference only)" for key in our_settings if key not in their_settings and our_settings[key] not in (False, None)]
    one_sided += [f"{key} (candidate only)" for key in their_settings if key not in our_settings]
    return SettingsComparison(settings, one_sided + our_unread + their_unread)


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=0.0)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _shown(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return "(" + ", ".join(_shown(v) for v in value) + ")"
    return str(value)
