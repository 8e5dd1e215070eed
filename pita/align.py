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
    atol = 1e-5                # finite, not negative
    rtol = 0.0
    ulp = 4                    # an integer, not negative
    equal_nan = true           # a TOML boolean

Every value is type-checked (a string "false" is not a boolean), and every regex is bounded
before it runs (see `_regex_paths`).
"""

from __future__ import annotations

import fnmatch
import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from re import _constants as _sre  # the parse tree re itself builds (sre_parse)
from re import _parser as _sre_parser
from reprlib import repr as brief

import numpy as np

from pita.errors import UsageError
from pita.files import read_regular_file, shown

SIDES = ("reference", "candidate")
TOLERANCE_KEYS = ("atol", "rtol", "ulp", "equal_nan")
ULP_MAX = 2**63 - 1  # ULP distances are counted in 64 bits
MAX_RULES_BYTES = 1 << 20
MAX_PATTERN_CHARS = 256  # a rename pattern or replacement, a tolerance glob
RULE_NAME_CHARS = 256  # the longest tensor name a rename or tolerance rule is matched against
MAX_REGEX_PATHS = 1 << 25  # the most ways a pattern may try to match one name (see `_regex_paths`)


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
    paths = _regex_paths(_sre_parser.parse(pattern), RULE_NAME_CHARS)
    if paths > MAX_REGEX_PATHS:
        raise ValueError(f"{where}: the pattern could try {'more than 2**64' if paths >= _PATHS_CAP else paths} ways to match "
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
        unknown = set(values) - set(TOLERANCE_KEYS)
        if unknown:
            raise ValueError(f"tolerance {brief(glob)}: unknown key(s) {', '.join(map(brief, sorted(unknown)))} (expected {', '.join(TOLERANCE_KEYS)})")
        try:
            tolerances[glob] = {key: checked_tolerance(key, value) for key, value in values.items()}
        except ValueError as error:
            raise ValueError(f"tolerance {brief(glob)}: {error}") from None
    return tolerances


def checked_tolerance(key: str, value):
    """`value` as the `key` field of a `Tolerance`, or `ValueError` saying why it cannot be:
    atol and rtol are finite non-negative numbers, ulp a non-negative integer, equal_nan a bool."""
    if key == "equal_nan":
        if type(value) is not bool:
            raise ValueError(f"equal_nan must be true or false, got {brief(value)}")
        return value
    if key == "ulp":
        if type(value) is not int or not 0 <= value <= ULP_MAX:
            raise ValueError(f"ulp must be an integer from 0 to {ULP_MAX}, got {brief(value)}")
        return value
    try:
        number = float(value) if type(value) in (int, float) else math.nan
    except OverflowError:  # an integer beyond float64
        number = math.inf
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{key} must be a finite number, not negative, got {brief(value)}")
    return number


# --- bounding regexes --------------------------------------------------------------------------
#
# Python's re backtracks and has no timeout: `^(a+)+$` against "aaa…a!" tries 2**n ways. Running
# patterns in a subprocess with a timeout would cost more than the comparison, so each pattern is
# bounded before it runs, on the parse tree re itself builds: `_regex_paths` counts (as an upper
# bound) the ways the engine can try to match a name of `RULE_NAME_CHARS` characters, and names
# are no longer than that. A repeat inside a repeat or a repeated alternation has exponentially
# many ways and is refused; a few repeats side by side cost a power of the name length. An
# alternation whose branches start with different characters (`(weight|bias)`) has one way.
# Ways re takes longer over are weighted, as measured against a repeat of one character (`.*`,
# `\\d+`): a repeat of more than one character (`(?:ab)*`, `(a)*`, `(?:a?b?){3}`) by 16, an
# alternation whose branches can match the same text (`(a|ab)`) by 32. Over 1.2 million random
# accepted patterns, the slowest took ~0.1 s on a hostile 256-character name.

_PATHS_CAP = 1 << 64
_GROUP_REPEAT_WEIGHT = 16
_AMBIGUOUS_WEIGHT = 32
_ONE_CHARACTER = (_sre.LITERAL, _sre.NOT_LITERAL, _sre.IN, _sre.ANY, _sre.CATEGORY)
_REPEATS = (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT)
_ANCHORS = ((_sre.AT, _sre.AT_BEGINNING), (_sre.AT, _sre.AT_BEGINNING_STRING))


def _regex_paths(tree, length: int) -> int:
    """An upper bound on the ways `re` can try to match the parsed pattern `tree` in a name of
    `length` characters, from every start position unless the pattern is anchored with ^ or \\A."""
    items = list(tree)
    starts = 1 if items and items[0] in _ANCHORS else length + 1
    return min(starts * _sequence_paths(items, length), _PATHS_CAP)


def _sequence_paths(items, length: int) -> int:
    total = 1
    for op, arg in items:
        total = min(total * _item_paths(op, arg, length), _PATHS_CAP)
    return total


def _item_paths(op, arg, length: int) -> int:
    if op in _REPEATS:
        low, high, body = arg
        inner = _sequence_paths(body, length)
        if inner == 1:  # one way per iteration: the choice is where the repeat stops
            stops = min(high - low, length) + 1
            one_character = len(body) == 1 and body[0][0] in _ONE_CHARACTER
            return stops if one_character else stops * _GROUP_REPEAT_WEIGHT
        if high > 64:  # a repeat of something ambiguous: exponential
            return _PATHS_CAP
        return min(inner**high * (high - low + 1) * _GROUP_REPEAT_WEIGHT, _PATHS_CAP)
    if op is _sre.BRANCH:
        ways = [_sequence_paths(alternative, length) for alternative in arg[1]]
        return max(ways) if _start_apart(arg[1]) else min(_AMBIGUOUS_WEIGHT * sum(ways), _PATHS_CAP)
    if op is _sre.GROUPREF_EXISTS:  # the group decides which branch runs
        _, yes, no = arg
        return max(_sequence_paths(yes, length), _sequence_paths(no, length) if no else 1)
    if op is _sre.SUBPATTERN:
        return _sequence_paths(arg[3], length)
    if op in (_sre.ASSERT, _sre.ASSERT_NOT):
        return _sequence_paths(arg[1], length)
    if op is _sre.ATOMIC_GROUP:
        return _sequence_paths(arg, length)
    return 1  # a literal, a set, an anchor, a back reference: one way


def _start_apart(alternatives) -> bool:
    """Whether the alternatives start with literal characters no two of which are alike in any
    case (so even under IGNORECASE at most one of them can match at a position)."""
    firsts = [_first_literal(alternative) for alternative in alternatives]
    if None in firsts:
        return False
    cases = [{c, c.lower(), c.upper(), c.casefold()} for c in firsts]
    return all(a.isdisjoint(b) for i, a in enumerate(cases) for b in cases[i + 1:])


def _first_literal(items) -> str | None:
    items = list(items)
    if not items:
        return None
    op, arg = items[0]
    if op is _sre.LITERAL:
        return chr(arg)
    return _first_literal(arg[3]) if op is _sre.SUBPATTERN else None
