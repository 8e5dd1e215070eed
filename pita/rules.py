"""Rules files: the explicit mappings alignment applies before pairing names (renames, splits of
packed tensors, layout adapters) and per-tensor tolerances. docs/rules.md lists every key. A rules
file is TOML:

    [[rename]]                 # regex on one side's names (default: the candidate's)
    side = "candidate"
    pattern = '^(.*)\\.gamma$'
    replace = '\\1.weight'

    [[split]]                  # one packed tensor against several: the side given one name is cut
    reference = "param/gru.weight_ih_l0"       # into blocks along `axis`, named as the other
    candidate = ["param/gru.r.weight", "param/gru.z.weight", "param/gru.n.weight"]
    axis = 0                   # default 0; `sizes = [..]` for unequal blocks; `regex = true`
                               # makes the one name a pattern and the others its replacements

    [[transpose]]              # layout adapter on a candidate tensor, after renaming and splitting
    name = "fc.weight"         # burn Linear [in, out] against torch [out, in]
    axes = [1, 0]              # default: reverse every axis

    [tolerance."*.bias"]       # per-tensor override; glob on the (reference) name
    atol = 1e-5                # finite, not negative (checked as `Tolerance` checks it)
    rtol = 0.0
    ulp = 4                    # an integer, not negative
    equal_nan = true           # a TOML boolean

Order on each side: renames, then splits, then (candidate) transposes. A split's name under
`param/` stands for that parameter in every phase (`grad/`, `step<k>/`, `optim<k>/.../<state>`,
`init/`). Every value is type-checked (a string "false" is not a boolean), and every regex is
bounded before it runs (see `pita.regex_bound`).
"""

from __future__ import annotations

import fnmatch
import math
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from reprlib import repr as brief

import numpy as np

from pita import tolerance
from pita.errors import UsageError
from pita.files import read_regular_file, shown
from pita.filetensor import FileTensor
from pita.recording import PARAM, parse
from pita.regex_bound import PATHS_CAP, regex_paths

SIDES = ("reference", "candidate")
MAX_RULES_BYTES = 1 << 20
MAX_PATTERN_CHARS = 256  # a rename pattern or replacement, a split's name, a tolerance glob
RULE_NAME_CHARS = 256  # the longest tensor name a rename, split or tolerance rule is matched against
MAX_REGEX_PATHS = 1 << 25  # the most ways a pattern may try to match one name (see `pita.regex_bound`)
MAX_SPLIT_PARTS = 64
MAX_SPLIT_READ_BYTES = 1 << 28  # a split whose blocks are not one run of a file reads the tensor whole, up to this


@dataclass(frozen=True)
class Rename:
    side: str
    pattern: str
    replace: str


@dataclass(frozen=True)
class Split:
    """A packed tensor on `side` compared as blocks along `axis` (equal ones, or of `sizes`), each
    named as a tensor of the other side (`parts`). With `regex`, `packed` is a pattern and each
    part its replacement, as a rename's. `number`: the entry's place in the file (`[[split]] #n`)."""

    side: str
    packed: str
    parts: tuple[str, ...]
    axis: int = 0
    sizes: tuple[int, ...] | None = None
    regex: bool = False
    number: int = 0

    @property
    def where(self) -> str:
        return f"[[split]] #{self.number}" if self.number else "[[split]]"


@dataclass(frozen=True)
class Transpose:
    name: str
    axes: tuple[int, ...] | None


@dataclass
class Rules:
    renames: list[Rename] = field(default_factory=list)
    transposes: list[Transpose] = field(default_factory=list)
    tolerances: dict[str, dict] = field(default_factory=dict)  # glob -> overrides
    splits: list[Split] = field(default_factory=list)

    def tolerance_for(self, name: str, default):
        """The default tolerance with every matching override applied, in file order."""
        for glob, overrides in self.tolerances.items():
            if fnmatch.fnmatchcase(name, glob):
                default = replace(default, **overrides)
        return default

    def tolerance_texts(self, names: Iterable[str] | None = None) -> list[str]:
        """Each tolerance entry as a short text, in file order: `'*.bias' → atol=1e-05 ulp=4`
        (the fields it sets; the others are the comparison's). Given the compared `names`, each
        text ends with how many of them the glob matches (a glob matching none is a typo)."""
        names = None if names is None else list(names)
        texts = []
        for glob, overrides in self.tolerances.items():
            text = f"{glob!r} → " + " ".join(f"{key}={_setting(value)}" for key, value in overrides.items())
            if names is not None:
                text += f" ({sum(fnmatch.fnmatchcase(name, glob) for name in names)} tensor(s))"
            texts.append(text)
        return texts

    def apply(self, tensors: dict, side: str) -> tuple[dict, list[str]]:
        """`tensors` renamed, split (and, for the candidate, transposed), with a line per mapping."""
        if self.tolerances:
            _check_name_lengths(tensors, side)
        applied = []
        out = self._renamed(tensors, side, applied)
        for split, name, parts in self._split_plan(out, side):
            value = out.pop(name)
            out.update(zip(parts, _blocks(value, split, name, side), strict=True))
            applied.append(f"{side} {name} {list(value.shape)} split along axis {split.axis} into {', '.join(parts)} ({split.where})")
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

    def names_after(self, names: Iterable[str], side: str) -> dict[str, list[str]]:
        """What each of `names` becomes on `side` once renamed and split, without any tensor: one
        name, or a split's blocks in order (trace orders a split activation's blocks where the
        packed one was called)."""
        renamed = self._renamed({name: name for name in names}, side, [])
        after = {original: [new] for new, original in renamed.items()}
        for _, name, parts in self._split_plan(renamed, side):
            after[renamed[name]] = list(parts)
        return after

    def _renamed(self, tensors: dict, side: str, applied: list[str]) -> dict:
        out = dict(tensors)
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
        return out

    def _split_plan(self, names: Iterable[str], side: str) -> list[tuple[Split, str, tuple[str, ...]]]:
        """(split, packed name, block names) for every tensor on `side` a split applies to, in order;
        refused where a block's name is taken, or a literal split finds nothing to split."""
        splits = [s for s in self.splits if s.side == side]
        if not splits:
            return []
        names = list(names)
        if any(s.regex for s in splits):
            _check_name_lengths(names, side)
        plan, taken, consumed = [], set(names), set()
        for split in splits:
            found = [(name, parts) for name in names if name not in consumed and (parts := _parts(split, name)) is not None]
            if not found and not split.regex:
                raise UsageError(f"{split.where}: the {side} has no tensor {split.packed!r}"
                                 + (" (nor the same parameter under grad/, step<k>/, optim<k>/ or init/)" if split.packed.startswith(PARAM) else ""))
            for name, parts in found:
                for part in parts:
                    if part in taken and part not in consumed | {name}:
                        raise UsageError(f"{split.where}: a block of {side} {name!r} would be named {part!r}, which names another {side} tensor")
                taken.update(parts)
                consumed.add(name)
                plan.append((split, name, parts))
        return plan


def mapping_kind(line: str) -> str:
    """Which kind of rule a mapping line of `Rules.apply` comes from: `rename`, `split` or `transpose`."""
    if re.search(r" \(\[\[split\]\](?: #\d+)?\)$", line):
        return "split"
    if re.search(r" \(axes \[[-\d, ]*\]\)$", line):
        return "transpose"
    return "rename"


def _setting(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)


def _phase_form(name: str) -> tuple[str, str, str] | None:
    """(prefix, path, suffix) of a name about a parameter (`grad/fc.w` -> ('grad/', 'fc.w', ''),
    `optim1/fc.w/exp_avg` -> ('optim1/', 'fc.w', '/exp_avg')), or None for any other name."""
    recorded = parse(name)
    if recorded is None or recorded.path is None:
        return None
    suffix = f"/{recorded.state}" if recorded.state is not None else ""
    return name[:len(name) - len(recorded.path) - len(suffix)], recorded.path, suffix


def _parts(split: Split, name: str) -> tuple[str, ...] | None:
    """The names of `name`'s blocks under `split`, or None where it does not apply. A parameter
    in any phase is matched as `param/<path>` too, and its blocks keep its phase."""
    if not split.regex and split.packed == name:
        return split.parts
    form = _phase_form(name)
    key = PARAM + form[1] if form else name
    if split.regex and re.search(split.packed, key) is not None:
        parts = tuple(re.sub(split.packed, part, key) for part in split.parts)
    elif not split.regex and split.packed == key:
        parts = split.parts
    else:
        return None
    if form is None:
        return parts
    outside = [part for part in parts if not part.startswith(PARAM)]
    if outside:
        raise UsageError(f"{split.where}: {name!r} is a parameter's tensor, so its blocks must be named param/...; got {outside[0]!r}")
    prefix, _, suffix = form
    return tuple(prefix + part[len(PARAM):] + suffix for part in parts)


def _blocks(value, split: Split, name: str, side: str) -> list:
    """`value` cut along the split's axis. Blocks of a tensor left in its file stay there where
    each is one run of bytes (every axis before the split's has size 1); otherwise the tensor is
    read whole, up to MAX_SPLIT_READ_BYTES."""
    what = f"{split.where}: {side} {name!r} of shape {list(value.shape)}"
    if not -value.ndim <= split.axis < value.ndim:
        raise UsageError(f"{what} has no axis {split.axis}")
    axis = split.axis % value.ndim
    length, count = value.shape[axis], len(split.parts)
    if split.sizes is None and length % count:
        raise UsageError(f"{what}: axis {split.axis} of length {length} does not split into {count} equal blocks (give sizes)")
    sizes = split.sizes or (length // count,) * count
    if sum(sizes) != length:
        raise UsageError(f"{what}: sizes {list(sizes)} add up to {sum(sizes)}, not axis {split.axis}'s length {length}")
    starts = np.cumsum((0,) + tuple(sizes))[:-1]
    if isinstance(value, FileTensor):
        if math.prod(value.shape[:axis]) == 1:
            step = math.prod(value.shape[axis + 1:]) * value.dtype.itemsize
            return [FileTensor(value.path, value.offset + int(start) * step, value.dtype,
                               value.shape[:axis] + (size,) + value.shape[axis + 1:], value.identity)
                    for start, size in zip(starts, sizes, strict=True)]
        if value.nbytes > MAX_SPLIT_READ_BYTES:
            raise UsageError(f"{what}: splitting along axis {split.axis} would read all {value.nbytes} bytes into memory "
                             f"(at most {MAX_SPLIT_READ_BYTES}); split a layout whose blocks lie along its first axis")
        value = np.asarray(value)
    leading = (slice(None),) * axis
    return [value[leading + (slice(int(start), int(start) + size),)] for start, size in zip(starts, sizes, strict=True)]


def _check_name_lengths(tensors, side: str) -> None:
    longest = max(tensors, key=len, default="")
    if len(longest) > RULE_NAME_CHARS:
        raise UsageError(f"{side} tensor {longest[:40]!r}… has a name of {len(longest)} characters; rename, split and "
                         f"tolerance rules match names of at most {RULE_NAME_CHARS}")


def load_rules(path: str | Path) -> Rules:
    path = Path(path)
    raw = read_regular_file(path, MAX_RULES_BYTES, "a rules file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as error:  # TOMLDecodeError is a ValueError
        raise UsageError(f"{shown(path)}: not valid TOML ({' '.join(str(error).split())[:200]})") from None
    unknown = set(data) - {"rename", "split", "transpose", "tolerance"}
    if unknown:
        raise UsageError(f"{shown(path)}: unknown section(s) {', '.join(map(brief, sorted(unknown)))} (expected rename, split, transpose, tolerance)")
    try:
        return Rules(
            renames=[rename_entry(f"[[rename]] #{number}", entry)
                     for number, entry in enumerate(_tables(data, "rename", {"side", "pattern", "replace"}), 1)],
            splits=[_split(number, entry)
                    for number, entry in enumerate(_tables(data, "split", {"reference", "candidate", "axis", "sizes", "regex"}), 1)],
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


def _string(entry: dict, key: str, where: str, default: str | None = None, printed: bool = False) -> str:
    """`entry[key]`, a string of at most MAX_PATTERN_CHARS; with `printed`, one that prints on one
    line (a name made from it is printed on one report line)."""
    value = entry.get(key, default)
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key} must be a string, got {brief(value)}" if key in entry else f"{where}: {key} is missing")
    if len(value) > MAX_PATTERN_CHARS:
        raise ValueError(f"{where}: {key} has {len(value)} characters, more than {MAX_PATTERN_CHARS}")
    if printed and not value.isprintable():
        raise ValueError(f"{where}: {key} holds characters that cannot be printed on one line")
    return value


def rename_entry(where: str, entry: dict) -> Rename:
    side = _string(entry, "side", where, "candidate")
    if side not in SIDES:
        raise ValueError(f"{where}: side must be one of {', '.join(SIDES)}, got {brief(side)}")
    pattern, template = _string(entry, "pattern", where), _string(entry, "replace", where, printed=True)
    _check_regex(where, pattern, [template])
    return Rename(side, pattern, template)


def _check_regex(where: str, pattern: str, templates: list[str]) -> None:
    """Refuses a pattern that does not compile, a replacement with a bad group reference, and a
    pattern that could backtrack too long (`pita.regex_bound`)."""
    try:
        compiled = re.compile(pattern)
        for template in templates:
            compiled.sub(template, "")  # checks the replacement's group references
    except re.error as error:
        raise ValueError(f"{where}: {error}") from None
    paths = regex_paths(pattern, RULE_NAME_CHARS)
    if paths > MAX_REGEX_PATHS:
        raise ValueError(f"{where}: the pattern could try {'more than 2**64' if paths >= PATHS_CAP else paths} ways to match "
                         f"one name (at most {MAX_REGEX_PATHS}): avoid a repeat inside a repeat, a repeated alternation "
                         "and many unanchored repeats")


def _split(number: int, entry: dict) -> Split:
    where = f"[[split]] #{number}"
    one = [side for side in SIDES if isinstance(entry.get(side), str)]
    many = [side for side in SIDES if isinstance(entry.get(side), list)]
    if len(one) != 1 or len(many) != 1:
        raise ValueError(f"{where}: give reference and candidate, one a name (the packed tensor) and the other a list of names (its blocks)")
    side, other = one[0], many[0]
    packed, parts = _string(entry, side, where), entry[other]
    if not all(isinstance(part, str) for part in parts) or not 2 <= len(parts) <= MAX_SPLIT_PARTS:
        raise ValueError(f"{where}: {other} must be a list of 2 to {MAX_SPLIT_PARTS} names, got {brief(parts)}")
    parts = tuple(_string({other: part}, other, where, printed=True) for part in parts)
    axis = entry.get("axis", 0)
    if type(axis) is not int:
        raise ValueError(f"{where}: axis must be an integer, got {brief(axis)}")
    sizes = entry.get("sizes")
    if sizes is not None and not (isinstance(sizes, list) and len(sizes) == len(parts) and all(type(s) is int and s > 0 for s in sizes)):
        raise ValueError(f"{where}: sizes must be a list of {len(parts)} positive integers (one per block), got {brief(sizes)}")
    regex = entry.get("regex", False)
    if not isinstance(regex, bool):
        raise ValueError(f"{where}: regex must be true or false, got {brief(regex)}")
    if regex:
        _check_regex(where, packed, list(parts))
    else:
        if len(set(parts)) != len(parts) or packed in parts:
            raise ValueError(f"{where}: the names of {packed!r} and of its blocks must all differ")
        if packed.startswith(PARAM) and not all(part.startswith(PARAM) for part in parts):
            raise ValueError(f"{where}: {packed!r} is a parameter, so its blocks must be named param/... too")
    return Split(side, packed, parts, axis, tuple(sizes) if sizes is not None else None, regex, number)


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
