"""Alignment: two sets of tensor names become a sorted list of name pairs, plus the names found
on one side only. The explicit mappings applied before (renames, splits, layout adapters) come
from a rules file (`pita.rules`); every one is reported, none is silent (`mapping_summary` shortens
a long list). Where no rule pairs the names, `suggest_renames` infers the `[[rename]]` a common
prefix or suffix difference needs.

Shapes pair as `shape_relation` says: the same, the same elements in another arrangement of size-1
axes (compared flat), one broadcasting to the other (compared after `expanded` repeats the smaller
side), or a conflict.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from dataclasses import dataclass

import numpy as np

from pita.diagnose.base import differ_only_in_size_one_axes
from pita.errors import UsageError
from pita.recording import parse
from pita.rules import Rules, mapping_kind, rename_entry


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


# --- shapes --------------------------------------------------------------------------------------

SAME, FLAT, BROADCAST, CONFLICT = "same", "flat", "broadcast", "conflict"
# The largest tensor a broadcast pair is expanded to: the smaller side is read whole and repeated
# in memory (float64: 128 MiB). A larger pair stays a shape conflict, with a note saying why.
MAX_BROADCAST_ELEMENTS = 1 << 24


def broadcast_side(reference_shape, candidate_shape) -> str | None:
    """`reference` or `candidate`: the side whose shape broadcasts to the other's by numpy's rules
    (axes aligned from the last; a size-1 or absent axis repeats), with more than one element of
    its own and the other side not empty; None where neither does. A single value against many
    (an unreduced loss) is a conflict, not a broadcast."""
    reference_shape, candidate_shape = tuple(reference_shape), tuple(candidate_shape)
    for side, small, large in (("candidate", candidate_shape, reference_shape), ("reference", reference_shape, candidate_shape)):
        if small != large and math.prod(small) > 1 and math.prod(large) > 0 and _broadcasts(small, large):
            return side
    return None


def _broadcasts(small: tuple, large: tuple) -> bool:
    return len(small) <= len(large) and all(s in (1, t) for s, t in zip(reversed(small), reversed(large), strict=False))


def shape_relation(reference_shape, candidate_shape) -> str:
    """SAME; FLAT (the same elements in the same flat order: the shapes differ only in size-1 axes);
    BROADCAST (one side broadcasts to the other, `broadcast_side`, within MAX_BROADCAST_ELEMENTS);
    or CONFLICT."""
    reference_shape, candidate_shape = list(reference_shape), list(candidate_shape)
    if reference_shape == candidate_shape:
        return SAME
    if differ_only_in_size_one_axes(reference_shape, candidate_shape):
        return FLAT
    if broadcast_side(reference_shape, candidate_shape) and max(map(math.prod, (reference_shape, candidate_shape))) <= MAX_BROADCAST_ELEMENTS:
        return BROADCAST
    return CONFLICT


def shape_note(reference_shape, candidate_shape) -> str | None:
    """What a report says about how a pair's shapes were paired, or None when there is nothing to say."""
    reference_shape, candidate_shape = list(reference_shape), list(candidate_shape)
    relation = shape_relation(reference_shape, candidate_shape)
    if relation == FLAT:
        return f"shapes {reference_shape} (reference) and {candidate_shape} (candidate) differ only in size-1 axes: compared flat"
    side = broadcast_side(reference_shape, candidate_shape)
    if side is None:
        return None
    small, large = (candidate_shape, reference_shape) if side == "candidate" else (reference_shape, candidate_shape)
    other = "reference" if side == "candidate" else "candidate"
    if relation == BROADCAST:
        return f"{side} {small} broadcast to the {other}'s {large}: compared after expansion"
    return (f"{side} {small} would broadcast to the {other}'s {large}, but the expansion would hold {math.prod(large)} elements "
            f"in memory (at most {MAX_BROADCAST_ELEMENTS}): not compared")


def expanded(reference, candidate) -> tuple:
    """The pair as compare measures it: for a BROADCAST pair, the smaller side read whole (an array
    or a `FileTensor`) and repeated to the other's shape, in memory; any other pair unchanged."""
    if shape_relation(reference.shape, candidate.shape) != BROADCAST:
        return reference, candidate
    if broadcast_side(reference.shape, candidate.shape) == "candidate":
        return reference, np.ascontiguousarray(np.broadcast_to(np.asarray(candidate), tuple(reference.shape)))
    return np.ascontiguousarray(np.broadcast_to(np.asarray(reference), tuple(candidate.shape))), candidate


# --- mappings in a report ------------------------------------------------------------------------


def mapping_summary(mappings: list[str], verbose: bool, shown: int = 3) -> list[str]:
    """The text report's `mapping:` lines: every mapping with `verbose` or where listing them all
    costs at most one line more; otherwise a count by kind and the first `shown`."""
    if verbose or len(mappings) <= shown + 1:
        return [f"mapping: {mapping}" for mapping in mappings]
    kinds = Counter(mapping_kind(mapping) for mapping in mappings)
    counts = ", ".join(f"{count} {kind}{'s' if count > 1 else ''}" for kind, count in kinds.items())
    return ([f"mapping: {len(mappings)} applied by the rules file ({counts}); the first {shown} (all with --verbose):"]
            + [f"mapping: {mapping}" for mapping in mappings[:shown]])


# --- rename suggestions --------------------------------------------------------------------------

MAX_SUGGESTIONS = 5
MIN_PAIRED = 2  # a suggestion pairs at least this many names: one name alone is no common difference
MAX_MATCHES = 8  # reference names read per candidate name when looking for differences
MAX_TRIED = 20  # differences checked per suggestion, the most common first: each check renames every name
MAX_LISTED_COMPONENTS = 16  # a prefix rule that adds a prefix names the components it applies to, at most this many
_KIND_PATTERNS = {"param": "param", "grad": "grad", "init": "init", "act": "act", "step": r"step\d+", "optim": r"optim\d+", "mask": r"mask\d+"}
_EVERY_KIND = "(?:" + "|".join(_KIND_PATTERNS.values()) + ")"  # a recorded name's prefix, without its slash
_COMPONENT_END = "(?=[.#/]|$)"  # what follows a path component in a recorded name: a dot, a call number, an optimizer state, the end
_TAIL = r"(?=(?:#\d+|/[^/]+)?$)"  # what may follow a path: `#n` (act/, mask<k>/) or `/<state>` (optim<k>/)


@dataclass(frozen=True)
class _Parts:
    """A recorded name as suggestions read it: the prefix (`step2/`, '' outside the convention),
    its kind's pattern (`step\\d+`), the parameter or module path, and what follows (`#2`, `/exp_avg`)."""

    prefix: str
    kind: str
    path: str
    tail: str

    @classmethod
    def of(cls, name: str) -> _Parts | None:
        recorded = parse(name)
        if recorded is None:
            return cls("", "", name, "")
        path = recorded.path if recorded.path is not None else recorded.module
        if path is None:  # loss/<k>: no path to differ
            return None
        tail = f"/{recorded.state}" if recorded.state is not None else f"#{recorded.call}" if (recorded.call or 1) > 1 else ""
        return cls(name[:len(name) - len(path) - len(tail)], _KIND_PATTERNS[recorded.kind], path, tail)


@dataclass(frozen=True)
class _Difference:
    """The candidate's paths differ from the reference's by `theirs` against `ours` at the start
    (`at_start`, `'' -> 'bert.'`) or at the end (`'gamma' -> 'weight'`)."""

    at_start: bool
    theirs: str
    ours: str


def suggest_renames(missing: list[str], extra: list[str], paired: list[str] | tuple = ()) -> list[str]:
    """`[[rename]]` TOML lines, ready to paste into a rules file, for the common prefix or suffix
    differences that pair the names found on one side only: `missing` (the reference's) and `extra`
    (the candidate's), as a comparison reports them. Recording prefixes (`param/`, `act/`,
    `step<k>/`, ...) are read apart from the paths, so one rule covers every phase. Each rule is
    checked before it is suggested: its lines load as a rules file's do and, applied after the
    rules before it, pair at least MIN_PAIRED names and rename none of the candidate's `paired`
    names (when given; names a rule pairs count as paired for the rules after it). Where the names
    cannot tell which rename is meant (`gamma` could become `weight` or `bias`), none is suggested.
    At most MAX_SUGGESTIONS rules; [] when nothing is found."""
    missing, extra, paired = set(missing), list(extra), list(paired)
    lines = []
    for _ in range(MAX_SUGGESTIONS):
        found = _next_rule(missing, extra, paired)
        if found is None:
            break
        rule_lines, renamed = found
        lines.extend(rule_lines)
        extra = [renamed.get(name, name) for name in extra]
        now_paired = {name for name in extra if name in missing}
        missing.difference_update(now_paired)
        paired.extend(now_paired)
        extra = [name for name in extra if name not in now_paired]
    return lines


def _next_rule(missing: set[str], extra: list[str], paired: list[str]) -> tuple[list[str], dict[str, str]] | None:
    """The best checked rule for the names still unpaired: its lines and the candidate's names it renames (old -> new)."""
    ours = [parts for name in sorted(missing) if (parts := _Parts.of(name))]  # sorted: the same suggestions on every run
    theirs = [parts for name in extra if (parts := _Parts.of(name))]
    found = _differences(ours, theirs)
    alike = Counter((difference.at_start, difference.theirs, count) for difference, count in found.items())
    for difference, count in found.most_common(MAX_TRIED):
        if count < MIN_PAIRED:
            break
        if alike[difference.at_start, difference.theirs, count] > 1:
            continue  # another rename of the same text pairs as many names: the names alone cannot tell which is meant
        covered = [parts for parts in theirs if _pairs(difference, parts, missing)]
        for pattern, replacement in _rules_for(difference, covered):
            checked = _checked(pattern, replacement, missing, extra, paired)
            if checked is not None:
                return checked
    return None


def _differences(ours: list[_Parts], theirs: list[_Parts]) -> Counter:
    """Every prefix or suffix difference between a candidate's name and a reference's name of the
    same prefix and tail, from their longest common part, with how many candidate names show it."""
    starts, ends = {}, {}
    for parts in ours:
        for head, rest in _splits(parts.path):
            starts.setdefault((parts.prefix, parts.tail, rest), []).append(head)
            if head:
                ends.setdefault((parts.prefix, parts.tail, head), []).append(rest)
    found = Counter()
    for parts in theirs:
        seen = set()
        splits = _splits(parts.path)
        for at_start, index, order in ((True, starts, splits), (False, ends, splits[::-1])):
            for head, rest in order:
                common, differing = (rest, head) if at_start else (head, rest)
                matches = index.get((parts.prefix, parts.tail, common)) if common else None
                if matches:
                    seen.update(_Difference(at_start, differing, other) for other in matches[:MAX_MATCHES] if other != differing)
                    break
        found.update(sorted(seen, key=lambda d: (not d.at_start, d.theirs, d.ours)))
    return found


def _splits(path: str) -> list[tuple[str, str]]:
    """`a.b.c` -> ('', 'a.b.c'), ('a.', 'b.c'), ('a.b.', 'c'): at every component boundary, the longest rest first."""
    cuts = [0] + [i + 1 for i, c in enumerate(path) if c == "."]
    return [(path[:cut], path[cut:]) for cut in cuts if cut < len(path)]


def _pairs(difference: _Difference, parts: _Parts, missing: set[str]) -> bool:
    """Whether the difference turns this candidate name into one of the reference's."""
    path, theirs = parts.path, difference.theirs
    if difference.at_start:
        new = difference.ours + path[len(theirs):] if path.startswith(theirs) else None
    else:
        kept = path[:len(path) - len(theirs)]
        new = kept + difference.ours if path.endswith(theirs) and kept.endswith(".") else None
    return new is not None and parts.prefix + new + parts.tail in missing


def _rules_for(difference: _Difference, covered: list[_Parts]) -> list[tuple[str, str]]:
    """(pattern, replacement) of a difference: at the end, one; at the start, the bare prefix
    (where there is one to match) and then the prefix followed by the components it applies to."""
    ours, theirs = difference.ours, re.escape(difference.theirs)
    if not difference.at_start:
        return [(r"\." + theirs + (_TAIL if any(parts.tail for parts in covered) else "$"), "." + ours)]
    kinds = {parts.kind for parts in covered}
    if kinds != {""}:  # every phase, and a name outside the convention too where one is covered
        lead, kept, group = f"^({_EVERY_KIND}/)" + ("?" if "" in kinds else ""), _reference(1, ours), 2
    else:
        lead, kept, group = "^", "", 1
    forms = [(lead + theirs, kept + ours)] if theirs else []
    components = list(dict.fromkeys(parts.path[len(difference.theirs):].split(".")[0] for parts in covered))
    if len(components) <= MAX_LISTED_COMPONENTS:
        listed = "|".join(map(re.escape, components))
        forms.append((f"{lead}{theirs}({listed}){_COMPONENT_END}", kept + ours + _reference(group, "")))
    return forms


def _reference(group: int, following: str) -> str:
    """A replacement's reference to `group`: `\\1`, or `\\g<1>` where a digit follows (`\\10` would be group 10)."""
    return f"\\g<{group}>" if following[:1].isdigit() else f"\\{group}"


def _checked(pattern: str, replacement: str, missing: set[str], extra: list[str], paired: list[str]) -> tuple[list[str], dict[str, str]] | None:
    """The rule's TOML lines and the candidate's names it renames (old -> new), if the lines load
    as a rules file's do and, applied to the candidate's names, pair at least MIN_PAIRED of them
    and leave `paired` alone."""
    text = f"[[rename]]\npattern = {_toml_string(pattern)}\nreplace = {_toml_string(replacement)}\n"
    try:
        rules = Rules(renames=[rename_entry("a suggestion", tomllib.loads(text)["rename"][0])])
        after, _ = rules.apply({name: name for name in extra + paired}, "candidate")
    except (ValueError, UsageError):  # a pattern too long or too costly, names too long for rules, two names made one
        return None
    renamed = {old: new for new, old in after.items() if new != old}
    pairs = sorted(old for old, new in renamed.items() if new in missing)
    if len(pairs) < MIN_PAIRED or any(name in renamed for name in paired):
        return None
    lines = text.splitlines()
    lines[0] += f"  # pairs {len(pairs)} name(s), e.g. {ascii(pairs[0])} -> {ascii(renamed[pairs[0]])}"
    return lines, renamed


def _toml_string(value: str) -> str:
    """A TOML string holding `value`: a literal one ('...', backslashes as written) where it can be."""
    if "'" not in value and value.isprintable():
        return f"'{value}'"
    escaped = "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
                      for c in value)
    return f'"{escaped}"'
