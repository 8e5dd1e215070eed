"""Alignment: two dumps become a sorted list of name pairs, after the explicit mappings of a
rules file (renames, layout adapters, per-tensor tolerances), plus the names found on one side
only. Every mapping applied is reported: none is silent.

A rules file is TOML:

    [[rename]]                 # regex on one side's names (default: the candidate's)
    side = "candidate"
    pattern = '^(.*)\\.gamma$'
    replace = '\\1.weight'

    [[transpose]]              # layout adapter on a candidate tensor, after renaming
    name = "fc.weight"         # burn Linear [in, out] against torch [out, in]
    axes = [1, 0]              # default: reverse every axis

    [tolerance."*.bias"]       # per-tensor override; glob on the (reference) name
    atol = 1e-5
    rtol = 0.0
    ulp = 4
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pita.errors import UsageError

SIDES = ("reference", "candidate")
TOLERANCE_KEYS = {"atol": float, "rtol": float, "ulp": int, "equal_nan": bool}


@dataclass(frozen=True)
class Alignment:
    pairs: list[str]
    missing: list[str]  # in the reference, not in the candidate
    extra: list[str]  # in the candidate, not in the reference


def align(reference_names, candidate_names) -> Alignment:
    reference_names, candidate_names = set(reference_names), set(candidate_names)
    return Alignment(
        pairs=sorted(reference_names & candidate_names),
        missing=sorted(reference_names - candidate_names),
        extra=sorted(candidate_names - reference_names),
    )


@dataclass(frozen=True)
class Rename:
    side: str
    pattern: str
    replace: str


@dataclass(frozen=True)
class Transpose:
    name: str
    axes: tuple[int, ...] | None


@dataclass
class Rules:
    renames: list[Rename] = field(default_factory=list)
    transposes: list[Transpose] = field(default_factory=list)
    tolerances: dict[str, dict] = field(default_factory=dict)  # glob -> overrides

    def tolerance_for(self, name: str, default):
        """The default tolerance with every matching override applied, in file order."""
        for glob, overrides in self.tolerances.items():
            if fnmatch.fnmatchcase(name, glob):
                default = replace(default, **overrides)
        return default

    def apply(self, tensors: dict[str, np.ndarray], side: str) -> tuple[dict[str, np.ndarray], list[str]]:
        """`tensors` renamed (and, for the candidate, transposed), with a line per mapping."""
        applied, out = [], dict(tensors)
        for rule in (r for r in self.renames if r.side == side):
            renamed = {}
            for name, value in out.items():
                new = re.sub(rule.pattern, rule.replace, name)
                if new in renamed:
                    raise UsageError(f"rename {rule.pattern!r} maps two {side} tensors to {new!r}")
                if new != name:
                    applied.append(f"{side} {name} -> {new} (rename {rule.pattern!r})")
                renamed[new] = value
            out = renamed
        if side == "candidate":
            for rule in self.transposes:
                if rule.name not in out:
                    raise UsageError(f"transpose rule names {rule.name!r}, which the candidate does not have")
                value = out[rule.name]
                axes = rule.axes or tuple(reversed(range(value.ndim)))
                if sorted(axes) != list(range(value.ndim)):
                    raise UsageError(f"transpose rule for {rule.name!r}: axes {list(axes)} do not fit a {value.ndim}-D tensor")
                out[rule.name] = np.transpose(value, axes)
                applied.append(f"candidate {rule.name} transposed {list(value.shape)} -> {list(out[rule.name].shape)} (axes {list(axes)})")
        return out, applied


def load_rules(path: str | Path) -> Rules:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such rules file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: not valid TOML ({error})") from None
    unknown = set(data) - {"rename", "transpose", "tolerance"}
    if unknown:
        raise UsageError(f"{path}: unknown section(s) {', '.join(sorted(unknown))} (expected rename, transpose, tolerance)")
    try:
        return Rules(
            renames=[_rename(entry) for entry in data.get("rename", [])],
            transposes=[Transpose(str(e["name"]), tuple(e["axes"]) if "axes" in e else None) for e in data.get("transpose", [])],
            tolerances={str(glob): _overrides(glob, values) for glob, values in data.get("tolerance", {}).items()},
        )
    except (KeyError, TypeError, ValueError, re.error) as error:
        raise UsageError(f"{path}: bad rule ({error})") from None


def _rename(entry: dict) -> Rename:
    side = entry.get("side", "candidate")
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    re.compile(entry["pattern"])
    return Rename(side, entry["pattern"], entry["replace"])


def _overrides(glob: str, values: dict) -> dict:
    unknown = set(values) - set(TOLERANCE_KEYS)
    if unknown:
        raise ValueError(f"tolerance {glob!r}: unknown key(s) {', '.join(sorted(unknown))}")
    return {key: TOLERANCE_KEYS[key](value) for key, value in values.items()}
