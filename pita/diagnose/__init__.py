"""Diagnosis: why two tensors differ. Each rule is a module with a docstring in fixed sections
(what it detects, why it happens in a port, example, remedy), a `KIND` and a `detect` function.
A new rule is its module, its test, and its place in RULES; docs/diagnosis.md is generated from
the docstrings (`parse_rule_doc`)."""

from __future__ import annotations

import importlib
import math
import re
from functools import cache

import numpy as np

from pita.diagnose.base import SAMPLE, Context, Diagnosis, Pair

# Checked in this order; every rule that fits is reported, but a finding that another one already
# says is left out (a rule's SUPERSEDES: the kinds its finding makes redundant). Rules that can
# explain a shape conflict (an axis order) set SHAPES_MAY_DIFFER. The rules' modules are imported
# when first asked for (`RULES`, `explain`): a comparison where nothing fails never loads them,
# and `pita compare` starts faster (bench/recording.py).
RULE_MODULES = ("nan", "scale", "slice_scale", "sign", "offset", "transpose", "block_permutation", "block_transpose", "permutation", "rows",
                "rounding")

@cache
def _rules() -> tuple:
    return tuple(importlib.import_module(f"{__name__}.{name}") for name in RULE_MODULES)


@cache
def _supersedes() -> dict[str, tuple[str, ...]]:
    return {rule.KIND: tuple(getattr(rule, "SUPERSEDES", ())) for rule in _rules()}


def __getattr__(name: str):
    """`RULES` (the rules' modules, in order) and `SUPERSEDES` (kind -> the kinds its finding makes
    redundant), made on first use."""
    if name == "RULES":
        return _rules()
    if name == "SUPERSEDES":
        return _supersedes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Context", "Diagnosis", "RULES", "corroborate", "explain", "parse_rule_doc", "reference_page"]
SECTIONS = ("What it detects", "Why it happens in a port", "Example", "Remedy")
SAME_PARAMETER = 1e-6  # relative agreement of two findings' parameters beyond their data's rounding


def explain(reference, candidate, tolerance, context: Context, stats=None, name: str = "") -> list[Diagnosis]:
    """Every rule's explanation of a failing tensor pair that fits. The tensors may be arrays or
    `FileTensor`s of any size: rules read a bounded sample (`Pair`), and a finding that rests on a
    sample says so and how big. `stats` is what `measure` found for the pair, if known; `name`,
    the tensor's name as compared, lets a rule name what the tensor packs (GRU gates, say)."""
    pair = Pair(reference, candidate, tolerance, context, stats, name)
    if not pair.comparable:
        return []
    rounding = importlib.import_module(f"{__name__}.rounding")
    rules = [rule for rule in _rules() if pair.same_shape or getattr(rule, "SHAPES_MAY_DIFFER", False)]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # float64 extremes overflow in differences
        found = [d for d in (rule.detect(pair) for rule in rules) if d is not None]
    superseded = {kind for d in found for kind in _supersedes()[d.kind]}
    found = [d for d in found if d.kind not in superseded]
    # Rounding is the explanation of last resort: a consistent scale of 0.99996 also looks like
    # float16-sized noise, and then the scale is the true story.
    if any(d.kind != rounding.KIND for d in found):
        found = [d for d in found if d.kind != rounding.KIND]
    if pair.sampled:
        for d in found:
            d.sample = int(pair.positions.size)
            d.message += f" (on a sample of {d.sample} of {pair.size} elements)"
    return found


def corroborate(per_tensor: list[list[Diagnosis]]) -> None:
    """Keeps a tentative finding (say, a factor read off a single element) only where a firm
    finding of the same kind and parameters stands on another tensor; drops it otherwise."""
    firm = [d for found in per_tensor for d in found if not d.tentative]
    for found in per_tensor:
        kept = [d for d in found if not d.tentative or any(same_finding(d, other) for other in firm)]
        for d in kept:
            if d.tentative:
                d.message += " (one element; the same finding fits the other tensors)"
        found[:] = kept


def same_finding(a: Diagnosis, b: Diagnosis) -> bool:
    """Same kind, and every numeric parameter equal to within SAME_PARAMETER relative, or within
    what the rounding of either finding's data leaves uncertain: offsets of 0.00012 and 0.00014
    are two findings (rounding to 4 decimals would make them one), factors of 4 and 4.0000001
    read off float32 values one."""
    numbers = lambda d: {k: v for k, v in d.params.items() if isinstance(v, float)}
    ours, theirs = numbers(a), numbers(b)
    return a.kind == b.kind and ours.keys() == theirs.keys() and all(
        math.isclose(ours[k], theirs[k], rel_tol=SAME_PARAMETER, abs_tol=max(a.precision, b.precision)) for k in ours)


def reference_page() -> str:
    """docs/diagnosis.md, generated from the rules' docstrings (`pita book build` writes it)."""
    lines = [
        "<!-- Generated by `pita book build` from the docstrings in pita/diagnose/; edit those. -->",
        "# Diagnosis rules",
        "",
        "When a tensor fails, `pita compare` tries every rule below and reports each that fits, with",
        "the error left after applying it (`--format json`: `diagnosis`, a list of `{kind, ...params}`).",
        "A rule fits only when it leaves at most 1% of the original error (or less than atol).",
        f"Tensors of more than {SAMPLE} elements are diagnosed on a seeded sample of {SAMPLE} (every rule,",
        "axis orders included: candidate elements are set against the reference elements they would come",
        "from); such a finding ends with `(on a sample of k of n elements)`, and `sample` in the JSON.",
        f"A finding that another one already says is left out: {superseded_text()}, and `rounding` when any other finding remains.",
        "",
    ]
    for rule in _rules():
        summary, sections = parse_rule_doc(rule.__doc__, SECTIONS)
        lines += [f"## `{rule.KIND}`", "", summary[:1].upper() + summary[1:], ""]
        for title in SECTIONS:
            lines += [f"**{title}.** " + " ".join(sections[title]), ""]
    return "\n".join(lines).rstrip() + "\n"


def superseded_text() -> str:
    """'`rows` when `permutation` or `rounding` fits', for every kind some rule supersedes."""
    by = {}
    for kind, others in _supersedes().items():
        for other in others:
            by.setdefault(other, []).append(f"`{kind}`")
    either = lambda kinds: kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]
    return ", ".join(f"`{other}` when {either(kinds)} fits" for other, kinds in by.items())


def parse_rule_doc(doc: str | None, sections: tuple[str, ...]) -> tuple[str, dict[str, list[str]]]:
    """A rule's doc in the fixed layout, in any language: `kind: summary` on the first line (a
    full-width `：` too), then each title of `sections` on a line of its own, its text indented
    below. The summary and each section's lines, stripped; `ValueError` names what is missing."""
    head, *body = (doc or "").strip().splitlines() or [""]
    kind_and_summary = re.match("[^:：]*[:：](.*)", head)
    summary = kind_and_summary.group(1).strip() if kind_and_summary else ""
    found, current = {title: [] for title in sections}, None
    for line in body:
        if line.strip() in found:
            current = line.strip()
        elif current and line.strip():
            found[current].append(line.strip())
    missing = ([] if summary else ["its summary after 'kind:'"]) + [title for title, text in found.items() if not text]
    if missing:
        raise ValueError(f"lacks {', '.join(missing)}: {head!r}")
    return summary, found
