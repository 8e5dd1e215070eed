"""Likely causes: the catalog's pitfalls matched to what compare and trace found.

Each pitfall of the catalog that leaves a distinctive finding declares a `Signature` (in its
experiment.py, `signature=`); the lab writes them, with the pitfall's id, title, chapter and
one-line fix, to `pita/catalog/signatures.json`, which this module reads (the library never
imports the lab). A finding is one failing tensor (its name, phase, module, compare's diagnosis),
a setting that differs (trace's `settings`, docs/recording.md) or random masks drawn on each side.

A signature is a likely cause when every condition it gives holds for one finding; the result
names the pitfall and what matched, in the measured figures ("bias.grad = 4 × the reference, and
4 is the batch size recorded in the dumps"). A passing result has no likely cause. Where several
pitfalls fit, each is named, the one that matched more conditions first.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from pathlib import Path

from pita.diagnose.base import Diagnosis, format_factor
from pita.errors import UsageError
from pita.recording import parse
from pita.settings import recorded_modules

CATALOG = Path(__file__).parent / "catalog" / "signatures.json"
SIGNATURES_FORMAT = "pita-signatures/1"

# What a scale factor must be (`Signature.factor`); each checked against the measured factor.
FACTORS = ("batch_size", "elements", "count", "biased_variance", "near_one")
NEAR_ONE = 0.05  # |factor - 1| at most this: a small change of a formula (an epsilon), not a wrong one
NOT_ONE = 1e-6  # |factor - 1| below this is float32 rounding (pita.diagnose.scale's bound)
COUNT_PRECISION = 1e-4  # a factor this close (relative) to an integer is that integer
FINDINGS = ("diagnosis", "setting", "masks")


@dataclass(frozen=True)
class Signature:
    """What a finding must look like for a pitfall to be a likely cause; every condition given
    must hold for one finding.

    finding: `diagnosis` (a failing tensor diagnosed as `diagnosis`), `setting` (one of
    `settings` differs, each `Kind.name` in PyTorch's names, `|` joining kinds alike:
    `InstanceNorm1d|InstanceNorm2d.affine`) or `masks` (the reference recorded random masks and
    the candidate drew its own). For a diagnosis: `phase` (`parameters`, `forward`, `loss`,
    `backward`, `step`), `module_kind` (PyTorch's type names; the reference's recorded `modules`
    must name the tensor's module one of them), `tensor` (the name's last part: `weight`,
    `running_var`), `rank`, `params` (parameters the diagnosis must have: `axes`), `factor` (a
    scale's factor: `batch_size`, `elements` (the tensor's element count), `count` (an integer of
    at least 2 other than the batch size), `biased_variance` (between (n−1)/n and 1 for the batch
    size n), `near_one`), `matched` (a tensor named like this one but with this last part that
    compared equal: `running_mean`)."""

    finding: str
    phase: str = ""
    module_kind: tuple[str, ...] = ()
    tensor: str = ""
    rank: int = 0
    diagnosis: str = ""
    params: tuple[str, ...] = ()
    factor: str = ""
    matched: str = ""
    settings: tuple[str, ...] = ()

    def __post_init__(self):
        if self.finding not in FINDINGS:
            raise ValueError(f"signature finding {self.finding!r} is not one of {FINDINGS}")
        if self.factor and self.factor not in FACTORS:
            raise ValueError(f"signature factor {self.factor!r} is not one of {FACTORS}")
        if (self.finding == "setting") != bool(self.settings):
            raise ValueError("a setting signature names its settings (`Kind.name`), and only it does")
        if self.finding == "diagnosis" and not self.diagnosis:
            raise ValueError("a diagnosis signature names the diagnosis kind")
        malformed = [s for s in self.settings if s.count(".") != 1 or not all(s.split("."))]
        if malformed:
            raise ValueError(f"a setting is named `Kind.name`, not {', '.join(map(repr, malformed))}")

    def to_dict(self) -> dict:
        """Only the conditions given (the JSON stays short and reads as the declaration)."""
        return {f.name: list(v) if isinstance(v, tuple) else v for f in fields(self) if (v := getattr(self, f.name)) != f.default
                or f.name == "finding"}

    @classmethod
    def from_dict(cls, data: dict) -> Signature:
        return cls(**{key: tuple(value) if isinstance(value, list) else value for key, value in data.items()})

    def text(self) -> str:
        """The signature in a few words, for the book."""
        if self.finding == "setting":
            return "setting differs: " + ", ".join(self.settings)
        if self.finding == "masks":
            return "random masks: the reference recorded its masks, the candidate drew its own"
        parts = [self.diagnosis + (f" ({', '.join(self.params)})" if self.params else "")]
        parts += [f"factor {self.factor}"] if self.factor else []
        parts += [f"phase {self.phase}"] if self.phase else []
        parts += [f"in {'|'.join(self.module_kind)}"] if self.module_kind else []
        parts += [f"tensor {self.tensor}"] if self.tensor else []
        parts += [f"rank {self.rank}"] if self.rank else []
        parts += [f"while {self.matched} matches"] if self.matched else []
        return ", ".join(parts)


@dataclass(frozen=True)
class Entry:
    """A pitfall of the catalog with its signatures."""

    id: str
    title: str
    chapter: str
    fix: str
    signatures: tuple[Signature, ...]

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "chapter": self.chapter, "fix": self.fix,
                "signatures": [s.to_dict() for s in self.signatures]}

    @classmethod
    def from_dict(cls, data: dict) -> Entry:
        return cls(data["id"], data["title"], data["chapter"], data["fix"], tuple(Signature.from_dict(s) for s in data["signatures"]))


@cache
def catalog(path: Path = CATALOG) -> tuple[Entry, ...]:
    """The catalog's signatures, as the lab generated them."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != SIGNATURES_FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {SIGNATURES_FORMAT!r}")
        return tuple(Entry.from_dict(entry) for entry in data["entries"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UsageError(f"the catalog's signatures {path} cannot be read ({error}): reinstall pita, or run `pita book build` in a checkout") from None


@dataclass
class Facts:
    """What the dumps say beside their tensors: the batch sizes recorded, the reference's module
    kinds by path (metadata `modules`), the settings that differ (trace's `settings` differences)."""

    batch_sizes: set[int] = field(default_factory=set)
    modules: dict[str, str] = field(default_factory=dict)
    settings: list[dict] = field(default_factory=list)


def facts_of(reference, candidate, settings: dict | None = None) -> Facts:
    """The facts of two dumps (`pita.dump.Dump`), with the settings comparison's JSON form if made."""
    return Facts(batch_sizes={b for b in (reference.batch_size, candidate.batch_size) if b},
                 modules=module_kinds(reference.metadata), settings=list((settings or {}).get("differences", [])))


def module_kinds(metadata: dict) -> dict[str, str]:
    """Module path -> kind, from metadata `modules` as the settings phase reads it (docs/recording.md);
    none where it is absent or unreadable."""
    return {path: entry["kind"] for path, entry in (recorded_modules(metadata) or {}).items()}


@dataclass(frozen=True)
class Finding:
    """A failing tensor as signatures see it."""

    name: str
    phase: str
    module: str
    shape: tuple[int, ...]
    n: int
    diagnosis: tuple[Diagnosis, ...]
    matched: frozenset[str] = frozenset()  # names of the tensors that compared equal


@dataclass(frozen=True)
class Cause:
    """A pitfall that fits, and what matched (measured figures)."""

    id: str
    title: str
    chapter: str
    fix: str
    evidence: str
    strength: int = 0

    def to_dict(self) -> dict:
        return {key: value for key, value in asdict(self).items() if key != "strength"}

    def line(self) -> str:
        """`likely cause: p12 <title> (book/p12.md); fix: <fix>`, then what matched, indented."""
        fix = f"; fix: {self.fix}" if self.fix else ""
        return f"likely cause: {self.id} {self.title} ({self.chapter}){fix}\n  evidence: {self.evidence}"


# --- findings ----------------------------------------------------------------------------------

NAME_PARTS = re.compile(r"[./]")
STEP_PARTS = re.compile(r"^(step\d*|update|final|optim\d*|lr)$")
BUFFERS = ("running_mean", "running_var", "num_batches_tracked")


def phase_of(name: str) -> str:
    """A tensor's phase: a recording's name says it (docs/recording.md); any other name by its
    parts (`grad.w` and `w.grad` are gradients, `loss` a loss, `w.step2` and a norm's running
    statistics a step, `weight` and `bias` parameters as loaded, anything else forward)."""
    recorded = parse(name)
    if recorded is not None and recorded.phase:
        return recorded.phase
    parts = NAME_PARTS.split(name)
    if "grad" in parts:
        return "backward"
    if "loss" in parts:
        return "loss"
    if any(STEP_PARTS.match(part) for part in parts) or parts[-1] in BUFFERS:
        return "step"
    if parts[-1] in ("weight", "bias"):
        return "parameters"
    return "forward"


def module_of(name: str) -> str:
    """The module path a tensor comes from: `act/M#2` -> M; `grad/M.weight` -> M; `fc.weight` -> fc."""
    recorded = parse(name)
    if recorded is not None and recorded.kind == "act":
        return recorded.module
    path = recorded.path if recorded is not None and recorded.path else name
    return path.rpartition(".")[0]


def last_part(name: str) -> str:
    recorded = parse(name)
    path = (recorded.path or recorded.module or name) if recorded is not None else name
    return NAME_PARTS.split(path)[-1].split("#")[0]


def sibling(name: str, part: str) -> str:
    """`name` with its last part replaced: `step1/bn.running_var` -> `step1/bn.running_mean`."""
    return name[: len(name) - len(last_part(name))] + part if name.endswith(last_part(name)) else ""


def tensor_finding(tensor, matched: frozenset[str] = frozenset()) -> Finding:
    """A failing `TensorResult` as a finding."""
    return Finding(tensor.name, phase_of(tensor.name), module_of(tensor.name), tuple(tensor.shape), tensor.n, tuple(tensor.diagnosis), matched)


# --- matching ----------------------------------------------------------------------------------


def matches(signature: Signature, finding: Finding, facts: Facts) -> list[tuple[str, int]]:
    """The evidence (text, how many conditions it rests on) for each of the finding's diagnoses that fits."""
    if signature.finding != "diagnosis":
        return []
    if signature.phase and finding.phase != signature.phase:
        return []
    if signature.tensor and last_part(finding.name) != signature.tensor:
        return []
    if signature.rank and len(finding.shape) != signature.rank:
        return []
    kind = facts.modules.get(finding.module)
    if signature.module_kind and kind not in signature.module_kind:
        return []
    if signature.matched and sibling(finding.name, signature.matched) not in finding.matched:
        return []
    found = []
    for d in finding.diagnosis:
        if d.kind != signature.diagnosis or not all(p in d.params for p in signature.params):
            continue
        factor = _factor_evidence(signature.factor, d, finding, facts)
        if factor is None:
            continue
        where = f" in {finding.module} ({kind})" if kind else ""
        text = f"{finding.name}{where}: {_finding_text(d)}" + (f", {factor}" if factor else "")
        if signature.matched:
            text += f", while {sibling(finding.name, signature.matched)} matches"
        strength = sum(bool(v) for v in (signature.phase, signature.module_kind, signature.tensor, signature.rank, signature.params,
                                         signature.factor, signature.matched)) + 1
        found.append((text, strength))
    return found


def _finding_text(d: Diagnosis) -> str:
    """The diagnosis in its measured figures."""
    if d.kind == "scale":
        return f"candidate = {format_factor(d.params['factor'])} × reference"
    if d.kind == "slice_scale":
        return (f"candidate = s × reference, one factor per slice, s from {format_factor(d.params['min_factor'])} "
                f"to {format_factor(d.params['max_factor'])}")
    return f"{d.kind}: {d.message.split(' (')[0]}"


def _factors(d: Diagnosis) -> list[float]:
    if d.kind == "scale":
        return [d.params["factor"]]
    if d.kind == "slice_scale":
        return [d.params["min_factor"], d.params["max_factor"]]
    return []


def _count(value: float) -> int | None:
    nearest = round(value)
    return nearest if nearest >= 2 and abs(value - nearest) <= COUNT_PRECISION * value else None


def _factor_evidence(rule: str, d: Diagnosis, finding: Finding, facts: Facts) -> str | None:
    """'' when no factor is asked for; the factor's evidence when it fits `rule`; None when not."""
    if not rule:
        return ""
    factors = _factors(d)
    if not factors or not all(isinstance(f, float | int) and math.isfinite(f) and f > 0 for f in factors):
        return None
    f = factors[0]
    shown = format_factor(f)
    if rule == "near_one":
        worst = max(factors, key=lambda x: abs(x - 1))
        if NOT_ONE <= abs(worst - 1) <= NEAR_ONE:
            return f"within {abs(worst - 1):.2g} of 1 (a changed constant in the formula, such as an epsilon)"
        return None
    counts = [c for c in (_count(f), _count(1 / f)) if c]
    if rule == "batch_size":
        batch = next((b for b in sorted(facts.batch_sizes) if b in counts), None)
        return None if batch is None else f"and {batch} is the batch size recorded in the dumps"
    if rule == "elements":
        return f"and {finding.n} is the tensor's element count" if finding.n in counts else None
    if rule == "count":
        count = next((c for c in counts if c not in facts.batch_sizes), None)
        batch = f" (the batch size is {', '.join(map(str, sorted(facts.batch_sizes)))})" if facts.batch_sizes else ""
        return None if count is None else f"{shown} is an integer count other than the batch size{batch}"
    for n in sorted(facts.batch_sizes):  # biased_variance
        if n >= 2 and (n - 1) / n * (1 - COUNT_PRECISION) <= f <= 1 - NOT_ONE:
            return f"between (n−1)/n = {format_factor((n - 1) / n)} and 1 for the batch size n = {n} (a biased variance)"
    return None


def setting_evidence(signature: Signature, difference: dict) -> tuple[str, str] | None:
    """The difference's text when it is one of the signature's settings, and the module it is in ('' for none)."""
    for named in signature.settings:
        kinds, name = named.split(".")
        if difference.get("kind") in kinds.split("|") and difference.get("name") == name:
            module = difference.get("module")
            text = f"{difference['kind']} {name} {_value(difference.get('reference'))} against {_value(difference.get('candidate'))}"
            return text, module if module and module not in ("optimizer", "loss_fn") else ""
    return None


def _grouped(found: list[tuple[str, str]]) -> list[str]:
    """One text per difference, its modules named: `LayerNorm eps 1e-12 against 1e-05 in a.LayerNorm and 11 more`."""
    modules: dict[str, list[str]] = {}
    for text, module in found:
        modules.setdefault(text, []).append(module)
    return [text + (f" in {where[0]}" if where[0] else "") + (f" and {len(where) - 1} more" if len(where) > 1 else "")
            for text, where in modules.items()]


def _value(value) -> str:
    return f"{value:g}" if isinstance(value, float) else json.dumps(value)


def likely_causes(findings: list[Finding], facts: Facts, masks: dict | None = None, entries: tuple[Entry, ...] | None = None) -> list[Cause]:
    """Every catalog entry a finding, a setting that differs or random masks fit, the strongest
    match first (then in catalog order); each with the evidence of its strongest match."""
    entries = catalog() if entries is None else entries
    causes = []
    for order, entry in enumerate(entries):
        best = None
        for signature in entry.signatures:
            for text, strength in _evidence(signature, findings, facts, masks):
                if best is None or strength > best[1]:
                    best = (text, strength)
        if best is not None:
            causes.append((-best[1], order, Cause(entry.id, entry.title, entry.chapter, entry.fix, best[0], best[1])))
    return [cause for _, _, cause in sorted(causes, key=lambda c: c[:2])]


def _evidence(signature: Signature, findings: list[Finding], facts: Facts, masks: dict | None) -> list[tuple[str, int]]:
    if signature.finding == "setting":
        texts = [t for d in facts.settings if (t := setting_evidence(signature, d))]
        return [("; ".join(_grouped(texts)), 2 + len(set(texts)))] if texts else []
    if signature.finding == "masks":
        if masks and not masks.get("replayed"):
            return [(f"the reference recorded {masks['reference']} random mask(s) (first {masks['first']}) and the candidate drew its own", 2)]
        return []
    return [m for finding in findings for m in matches(signature, finding, facts)]


def matched_names(tensors) -> frozenset[str]:
    """The names of the `TensorResult`s that compared equal (a signature's `matched` neighbour)."""
    return frozenset(t.name for t in tensors if t.ok)


def comparison_causes(result, facts: Facts, entries: tuple[Entry, ...] | None = None) -> list[Cause]:
    """The likely causes of a `ComparisonResult`: each failing tensor's diagnosis, and the
    settings that differ where the dumps recorded them. None for a passing comparison."""
    if result.ok:
        return []
    matched = matched_names(result.tensors)
    findings = [tensor_finding(t, matched) for t in result.tensors if not t.ok]
    return likely_causes(findings, facts, None, entries)


def trace_causes(result, facts: Facts, matched: frozenset[str] = frozenset(), entries: tuple[Entry, ...] | None = None) -> list[Cause]:
    """The likely causes of a `TraceResult`: its first divergence (a compared tensor with its
    diagnosis), its settings that differ, its random masks; `matched`: the names that compared
    equal. A trace that is OK has none of these."""
    facts = Facts(facts.batch_sizes, facts.modules, list(result.setting_differences))
    divergence = result.first_divergence
    findings = [tensor_finding(divergence.tensor, matched)] if divergence is not None and divergence.tensor is not None else []
    return likely_causes(findings, facts, result.random_masks, entries)


def likely_lines(likely: list[dict]) -> list[str]:
    """The text report's lines for a result's `likely` (its JSON form)."""
    return [line for data in likely for line in Cause(**data).line().split("\n")]
