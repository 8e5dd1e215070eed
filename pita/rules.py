"""Rules files: the explicit mappings alignment applies before pairing names (renames, layout
adapters) and per-tensor tolerances. A rules file is TOML:

    [[rename]]                 # regex on one side's names (default: the candidate's)
    side = "candidate"
    pattern = '^(.*)\\.gamma$'
    replace = '\\1.weight'

    [[transpose]]              # layout adapter on a candidate tensor, after renaming
    name = "fc.weight"         # burn Linear [in, out] against torch [out, in]
    axes = [1, 0]              # default: reverse every axis

    [tolerance."*.bias"]       # per-tensor override; glob on the (reference) name
    atol = 1e-5                # finite, not negative (checked as `Tolerance` checks it)
    rtol = 0.0
    ulp = 4                    # an integer, not negative
    equal_nan = true           # a TOML boolean

Every value is type-checked (a string "false" is not a boolean), and every regex is bounded
before it runs (see `pita.regex_bound`).
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from reprlib import repr as brief

import numpy as np

from pita import tolerance
from pita.errors import UsageError
from pita.files import read_regular_file, shown
from pita.regex_bound import PATHS_CAP, regex_paths

SIDES = ("reference", "candidate")
MAX_RULES_BYTES = 1 << 20
MAX_PATTERN_CHARS = 256  # a rename pattern or replacement, a tolerance glob
RULE_NAME_CHARS = 256  # the longest tensor name a rename or tolerance rule is matched against
MAX_REGEX_PATHS = 1 << 25  # the most ways a pattern may try to match one name (see `pita.regex_bound`)


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
        if self.tolerances:
            _check_name_lengths(tensors, side)
        applied, out = [], dict(tensors)
        for rule in (r for r in self.renames if r.side == side):
            _check_name_lengths(out, side)  # again after each rename: a replacement may lengthen names
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
                    raise UsageError(f"transpose rule for {rule.name!r}: axes {brief(list(axes))} do not fit a {value.ndim}-D tensor")
                out[rule.name] = np.transpose(value, axes)
                applied.append(f"candidate {rule.name} transposed {list(value.shape)} -> {list(out[rule.name].shape)} (axes {list(axes)})")
        return out, applied


def _check_name_lengths(tensors, side: str) -> None:
    longest = max(tensors, key=len, default="")
    if len(longest) > RULE_NAME_CHARS:
        raise UsageError(f"{side} tensor {longest[:40]!r}… has a name of {len(longest)} characters; rename and "
                         f"tolerance rules match names of at most {RULE_NAME_CHARS}")


def load_rules(path: str | Path) -> Rules:
    path = Path(path)
    raw = read_regular_file(path, MAX_RULES_BYTES, "a rules file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as error:  # TOMLDecodeError is a ValueError
        raise UsageError(f"{shown(path)}: not valid TOML ({' '.join(str(error).split())[:200]})") from None
    unknown = set(data) - {"rename", "transpose", "tolerance"}
    if unknown:
        raise UsageError(f"{shown(path)}: unknown section(s) {', '.join(map(brief, sorted(unknown)))} (expected rename, transpose, tolerance)")
    try:
        return Rules(
            renames=[_rename(f"[[rename]] #{number}", entry)
                     for number, entry in enumerate(_tables(data, "rename", {"side", "pattern", "replace"}), 1)],
            transposes=_transposes(_tables(data, "transpose", {"name", "axes"})),
            tolerances=_tolerances(data.get("tolerance", {})),
        )
    except ValueError as error:
        raise UsageError(f"{shown(path)}: {error}") from None


def _tables(data: dict, section: str, keys: set[str]) -> list[dict]:
    """The entries of an array of tables (`[[section]]`), each holding only `keys`."""
    entries = data.get(section, [])
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise ValueError(f"{section} must be an array of tables ([[{section}]])")
    for number, entry in enumerate(entries, 1):
        unknown = set(entry) - keys
        if unknown:
            raise ValueError(f"[[{section}]] #{number}: unknown key(s) {', '.join(map(brief, sorted(unknown)))} (expected {', '.join(sorted(keys))})")
    return entries


def _string(entry: dict, key: str, where: str, default: str | None = None) -> str:
    value = entry.get(key, default)
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key} must be a string, got {brief(value)}" if key in entry else f"{where}: {key} is missing")
    if len(value) > MAX_PATTERN_CHARS:
        raise ValueError(f"{where}: {key} has {len(value)} characters, more than {MAX_PATTERN_CHARS}")
    return value


def _rename(where: str, entry: dict) -> Rename:
    side = _string(entry, "side", where, "candidate")
    if side not in SIDES:
        raise ValueError(f"{where}: side must be one of {', '.join(SIDES)}, got {brief(side)}")
    pattern, template = _string(entry, "pattern", where), _string(entry, "replace", where)
    if not template.isprintable():  # a renamed name is printed on one report line
        raise ValueError(f"{where}: replace holds characters that cannot be printed on one line")
    try:
        compiled = re.compile(pattern)
        compiled.sub(template, "")  # checks the replacement's group references
    except re.error as error:
        raise ValueError(f"{where}: {error}") from None
    paths = regex_paths(pattern, RULE_NAME_CHARS)
    if paths > MAX_REGEX_PATHS:
        raise ValueError(f"{where}: the pattern could try {'more than 2**64' if paths >= PATHS_CAP else paths} ways to match "
                         f"one name (at most {MAX_REGEX_PATHS}): avoid a repeat inside a repeat, a repeated alternation "
                         "and many unanchored repeats")
    return Rename(side, pattern, template)


def _transposes(entries: list[dict]) -> list[Transpose]:
    transposes = []
    for number, entry in enumerate(entries, 1):
        where = f"[[transpose]] #{number}"
        name = _string(entry, "name", where)
        axes = entry.get("axes")
        if axes is not None and not (isinstance(axes, list) and axes and all(type(a) is int for a in axes)):
            raise ValueError(f"{where}: axes must be a non-empty list of integers, got {brief(axes)}")
        if any(t.name == name for t in transposes):
            raise ValueError(f"{where}: {brief(name)} is transposed twice")
        transposes.append(Transpose(name, tuple(axes) if axes is not None else None))
    return transposes


def _tolerances(section) -> dict[str, dict]:
    if not isinstance(section, dict) or not all(isinstance(v, dict) for v in section.values()):
        raise ValueError('tolerance must be a table of tables ([tolerance."glob"])')
    tolerances = {}
    for glob, values in section.items():
        if len(glob) > MAX_PATTERN_CHARS:
            raise ValueError(f"tolerance glob of {len(glob)} characters, more than {MAX_PATTERN_CHARS}")
        unknown = set(values) - set(tolerance.FIELDS)
        if unknown:
            raise ValueError(f"tolerance {brief(glob)}: unknown key(s) {', '.join(map(brief, sorted(unknown)))} (expected {', '.join(tolerance.FIELDS)})")
        try:
            tolerances[glob] = {key: tolerance.checked(key, value) for key, value in values.items()}
        except UsageError as error:
            raise ValueError(f"tolerance {brief(glob)}: {error}") from None
    return tolerances
