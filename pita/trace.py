"""Trace: two recordings of a training run (docs/recording.md) walked in the order the run
computed them, to find the first tensor where the candidate departs from the reference.

A stage after compare: the pair of recordings goes through `compare_pairs` once (rules, the
input-hash check, per-tensor tolerances, measure, diagnose, corroborate), and trace orders its
`TensorResult`s into phases:

1. parameters: the load audit (parameters missing from the candidate, parameters the reference
   does not have, candidate parameters still equal to their `init/` value), then `param/*`;
2. forward: `act/*` in the reference's `execution_order`;
3. loss: `loss/1`;
4. backward: `grad/*`, the parameters of the module whose activation ends last first;
5. step: `step1/*`, `optim1/*`, `loss/2`, `step2/*`, ...
   (tensors outside the convention, if any, are walked last, in a phase `other`).

A divergence is a compared tensor that mismatches, or, in the parameters phase, a parameter
recorded on one side only. Other one-sided names (an activation one side did not record) are
gaps: they make the trace fail, but are not divergences, since nothing says what they held.

Each divergence is **introduced** when every tensor it may depend on, earlier in the walk,
matched, and **inherited** otherwise, from the earliest such tensor that diverged
(`inherited_from`). What a tensor may depend on:

- `param/P`: nothing (it was loaded);
- `act/M` (the module M's call ending at position p of the execution order): every earlier
  activation; the parameters of every module whose first call ended at or before p (M's own and
  its submodules' included), of M's enclosing modules, and those owned by no recorded module;
- `step1/P` and `optim1/P/<state>`: `param/P` and `grad/P` (optimizers update each parameter from
  its own gradient and state);
- everything else (`loss/*`, `grad/*`, later steps): every tensor before it in the walk.

The first divergence is therefore always introduced (nothing before it diverged); each later
phase's first divergence says whether it is inherited, so a forward mismatch caused by a wrong
parameter reads `inherited from param/...`, and one of its own reads `introduced`.

A parameter `P` belongs to the longest recorded module path that prefixes it (`encoder.fc1` for
`encoder.fc1.weight`), by the reference's activations.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from pita.align import mapping_summary, suggest_renames
from pita.budget import BUDGET_FACTOR, update_share
from pita.compare import (
    AppliedTolerance,
    ComparisonResult,
    PlatformFields,
    TensorResult,
    check_format,
    compare_pairs,
    shown_tolerance,
    tolerance_from_dict,
    tolerance_text,
    tolerance_to_dict,
    without_unwalked,
)
from pita.diagnose.base import Diagnosis
from pita.dump import Dump
from pita.errors import UsageError
from pita.likely import facts_of, likely_lines, matched_names, trace_causes
from pita.recording import ACT, INIT, OTHER, PARAM, PHASES, RECORDING, init_name, looks_recorded, param_name, parse
from pita.report import json_text, tensor_lines
from pita.rules import Rules
from pita.settings import OPTIMIZER, Setting, compare_settings
from pita.stats import measure
from pita.strict_json import unspelt
from pita.text import printable
from pita.tolerance import Tolerance

SHOWN_NAMES = 5  # names listed per kind on one text line
EXACT = Tolerance(atol=0.0, rtol=0.0, equal_nan=True)  # "still equal to its init/ value"


TRACE_FORMAT = "pita-trace/1"  # the JSON form of a TraceResult


def origin(introduced: bool | None, inherited_from: str | None) -> str:
    return "introduced" if introduced else f"inherited from {inherited_from}"


@dataclass
class Entry:
    """One name in the walk: compared (`ok` or `mismatch`) or recorded on one side only
    (`missing` from the candidate, `extra` in it). The walk's working state; the result keeps
    what `Phase`, `Mismatch` and `Divergence` say of it."""

    name: str
    phase: str
    status: str
    result: TensorResult | None = None
    index: int = 0  # position in the walk
    introduced: bool | None = None  # set for divergences
    inherited_from: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def diverged(self) -> bool:
        return self.status == "mismatch" or (self.phase == "parameters" and self.status in ("missing", "extra"))


@dataclass
class Mismatch:
    """A mismatching tensor of a phase, in brief."""

    name: str
    status: str
    introduced: bool | None
    inherited_from: str | None
    max_abs_diff: float | None
    mismatched: int | None
    n: int | None
    kinds: list[str]

    @classmethod
    def of(cls, entry: Entry) -> Mismatch:
        tensor = entry.result
        return cls(entry.name, entry.status, entry.introduced, entry.inherited_from, tensor.max_abs_diff if tensor else None,
                   tensor.mismatched if tensor else None, tensor.n if tensor else None, [d.kind for d in tensor.diagnosis] if tensor else [])

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Mismatch:
        return cls(**{**data, "max_abs_diff": unspelt(data["max_abs_diff"])})


@dataclass
class Phase:
    """One phase of the walk: how many tensors it compared, its first divergence, its one-sided names."""

    phase: str
    compared: int
    mismatched: int
    first: str | None  # the phase's first divergence (the load audit's findings come first in parameters)
    introduced: bool | None
    inherited_from: str | None
    missing: list[str]
    extra: list[str]
    mismatches: list[Mismatch]

    @classmethod
    def of(cls, name: str, entries: list[Entry]) -> Phase:
        first = next((e for e in entries if e.diverged), None)
        mismatches = [Mismatch.of(e) for e in entries if e.status == "mismatch"]
        return cls(name, compared=sum(e.result is not None for e in entries), mismatched=len(mismatches),
                   first=first.name if first else None, introduced=first.introduced if first else None,
                   inherited_from=first.inherited_from if first else None,
                   missing=[e.name for e in entries if e.status == "missing"], extra=[e.name for e in entries if e.status == "extra"],
                   mismatches=mismatches)

    @property
    def recorded(self) -> bool:
        return bool(self.compared or self.missing or self.extra)

    def to_dict(self) -> dict:
        return {**asdict(self), "mismatches": [m.to_dict() for m in self.mismatches]}

    @classmethod
    def from_dict(cls, data: dict) -> Phase:
        return cls(**{**data, "mismatches": [Mismatch.from_dict(m) for m in data["mismatches"]]})


@dataclass
class ModuleParameter:
    """A parameter of the module the first divergence came from, and how it compared."""

    name: str
    status: str
    max_abs_diff: float | None
    diagnosis: list[Diagnosis]

    @classmethod
    def of(cls, entry: Entry) -> ModuleParameter:
        tensor = entry.result
        return cls(entry.name, entry.status, tensor.max_abs_diff if tensor else None, tensor.diagnosis if tensor else [])

    def to_dict(self) -> dict:
        return {"name": self.name, "status": self.status, "max_abs_diff": self.max_abs_diff, "diagnosis": [d.to_dict() for d in self.diagnosis]}

    @classmethod
    def from_dict(cls, data: dict) -> ModuleParameter:
        return cls(data["name"], data["status"], unspelt(data["max_abs_diff"]), [Diagnosis.from_dict(d) for d in data["diagnosis"]])


@dataclass
class Divergence:
    """The first divergence, with compare's result for it (diagnosis included) and its module's parameters."""

    phase: str
    name: str
    status: str
    introduced: bool
    inherited_from: str | None
    module_parameters: list[ModuleParameter]
    notes: list[str]
    tensor: TensorResult | None

    @classmethod
    def of(cls, entry: Entry, module_parameters: list[Entry]) -> Divergence:
        return cls(entry.phase, entry.name, entry.status, bool(entry.introduced), entry.inherited_from,
                   [ModuleParameter.of(p) for p in module_parameters], entry.notes, entry.result)

    @property
    def diagnosis(self) -> list[Diagnosis]:
        return self.tensor.diagnosis if self.tensor else []

    @property
    def description(self) -> str:
        """What went wrong, in a few words."""
        if self.status == "missing":
            return "missing from the candidate"
        if self.status == "extra":
            return "only in the candidate (the reference has no such tensor)"
        tensor = self.tensor
        if tensor.diagnosis:
            return f"{tensor.diagnosis[0].kind}: {tensor.diagnosis[0].message}"
        if tensor.shape_conflict:
            return f"shape conflict: reference {tensor.shape}, candidate {tensor.candidate_shape}"
        return f"max|diff|={tensor.max_abs_diff:.2e}, {tensor.mismatched}/{tensor.n} elements mismatch"

    def to_dict(self) -> dict:
        return {"phase": self.phase, "name": self.name, "status": self.status, "introduced": self.introduced,
                "inherited_from": self.inherited_from, "description": self.description,
                "diagnosis": [d.to_dict() for d in self.diagnosis],
                "module_parameters": [p.to_dict() for p in self.module_parameters],
                "notes": self.notes, "tensor": self.tensor.to_dict() if self.tensor else None}

    @classmethod
    def from_dict(cls, data: dict) -> Divergence:
        """`description` and `diagnosis` are derived again (from `status` and `tensor`)."""
        tensor = TensorResult.from_dict(data["tensor"]) if data["tensor"] is not None else None
        return cls(data["phase"], data["name"], data["status"], data["introduced"], data["inherited_from"],
                   [ModuleParameter.from_dict(p) for p in data["module_parameters"]], data["notes"], tensor)


@dataclass
class LoadAudit:
    missing: list[str]  # parameters missing from the candidate
    unused: list[str]  # parameters only the candidate has
    still_initial: list[str]  # mismatching parameters the load never reached


@dataclass(frozen=True)
class Walked:
    """One name of the walk as the HTML page draws it: its phase, how it compared, its largest
    |diff| and, judged by a float64 run, the most its budget allowed."""

    name: str
    phase: str
    status: str  # ok, mismatch, missing, extra
    max_abs_diff: float | None
    allowed: float | None

    @classmethod
    def of(cls, entry: Entry) -> Walked:
        tensor = entry.result
        allowed = tensor.float64["allowed"] if tensor is not None and tensor.float64 else None
        return cls(entry.name, entry.phase, entry.status, tensor.max_abs_diff if tensor is not None else None, allowed)

    @property
    def ratio(self) -> float | None:
        """|diff| as a share of the budget (1: at its edge); None without a budget."""
        return share_of_budget(self.max_abs_diff, self.allowed)


def share_of_budget(max_abs_diff: float | None, allowed: float | None) -> float | None:
    """`max_abs_diff / allowed`, the error relative to the float64 budget; None without a budget
    (or a difference); inf for a difference where the budget allows none, or a NaN."""
    if allowed is None or max_abs_diff is None:
        return None
    if math.isnan(max_abs_diff):
        return math.inf
    if allowed == 0:
        return 0.0 if max_abs_diff == 0 else math.inf
    return max_abs_diff / allowed


@dataclass
class StepError:
    """One kind of tensor at one step of a long run (the loss, the gradient norms, the parameters
    at a checkpoint): the one furthest from the reference relative to its budget (by |diff|
    without a float64 run), and how many of the kind left their budget."""

    name: str
    max_abs_diff: float
    allowed: float | None  # the float64 budget's bound for `name`; None when judged by the tolerance
    compared: int
    beyond: int  # how many of the kind at this step are beyond their budget (or tolerance)
    reference: float | None = None  # the loss's value on each side (None for the other kinds)
    candidate: float | None = None

    @property
    def ratio(self) -> float | None:
        return share_of_budget(self.max_abs_diff, self.allowed)

    def to_dict(self) -> dict:
        return {**asdict(self), "ratio": self.ratio}

    @classmethod
    def from_dict(cls, data: dict) -> StepError:
        values = {key: data[key] for key in ("name", "compared", "beyond")}
        return cls(**values, **{key: unspelt(data[key]) for key in ("max_abs_diff", "allowed", "reference", "candidate")})


@dataclass
class StepRow:
    """One recorded step of a long run: the loss, the largest gradient-norm difference and, at a
    checkpoint (a step whose parameters were recorded), the parameters' and buffers'."""

    step: int
    loss: StepError | None
    gradnorm: StepError | None
    params: StepError | None

    @property
    def within_budget(self) -> bool:
        return all(part.beyond == 0 for _, part in self.parts() if part is not None)

    def to_dict(self) -> dict:
        return {"step": self.step, **{kind: part.to_dict() if part is not None else None for kind, part in self.parts()},
                "within_budget": self.within_budget}

    @classmethod
    def from_dict(cls, data: dict) -> StepRow:
        return cls(data["step"], *(StepError.from_dict(data[kind]) if data[kind] is not None else None for kind in STEP_KINDS))

    def parts(self) -> list[tuple[str, StepError | None]]:
        return [(kind, getattr(self, kind)) for kind in STEP_KINDS]


STEP_KINDS = ("loss", "gradnorm", "params")


@dataclass
class TraceResult:
    PLATFORM = PlatformFields(free=frozenset({"mismatched"}))  # how many tensors mismatch at rounding level; its tensor: TensorResult's

    verdict: str
    first_divergence: Divergence | None
    phases: list[Phase]
    load_audit: LoadAudit
    reference: str
    candidate: str
    tolerance: Tolerance
    mappings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    applied: list[AppliedTolerance] = field(default_factory=list)  # compare's: the tolerances applied, per dtype pair
    judged_by: str = "tolerance"  # or "float64 budget": each float tensor against a float64 run of the reference (pita.budget)
    strict: bool = False  # an activation recorded on one side only fails the trace
    settings: dict | None = None  # the settings phase: modules, loss and optimizer compared (pita.settings), None where none was recorded
    random_masks: dict | None = None  # the reference's dropout masks, where the candidate drew its own
    noise_gradients: list[str] = field(default_factory=list)  # the first step divergence's gradients that are float32 noise
    rule_tolerances: list[str] = field(default_factory=list)  # the rules file's tolerance entries, with how many tensors each matched
    suggested_renames: list[str] = field(default_factory=list)  # [[rename]] lines that would pair the one-sided names
    buffers: list[str] = field(default_factory=list)  # the reference's buffer paths (metadata `buffers`)
    previous_activation: str | None = None  # the activation compared just before a forward first divergence, if any
    likely: list[dict] = field(default_factory=list)  # the catalog's pitfalls that fit (pita.likely): {id, title, chapter, fix, evidence}
    steps: list[StepRow] = field(default_factory=list)  # a long run's steps section (a light recording, metadata `every`); else none
    every: int | None = None  # the reference's `every`: parameters recorded every so many steps
    verbose: bool = False  # the text lists every mapping (not part of the JSON)
    walked: list[Walked] = field(default_factory=list)  # every name of the walk, in its order, for the HTML page (not part of the JSON)

    @property
    def ok(self) -> bool:
        """Nothing diverged, no gap, the settings agree, and something beyond the
        parameters was compared: loaded parameters alone say nothing of what the candidate
        computes, and nothing compared is never OK."""
        return self.clean and self.checked and not self.setting_differences  # a step beyond its budget is a mismatch: not clean

    @property
    def first_step_beyond_budget(self) -> int | None:
        """A long run's first step at which a tensor leaves its float64 budget (or the tolerance,
        without a float64 run); None when none does, or for a recording without a steps section."""
        return next((row.step for row in self.steps if not row.within_budget), None)

    @property
    def clean(self) -> bool:
        """No tensor mismatched and none is recorded on one side only (but activations the
        candidate did not tap, unless `strict`: they are unobserved, not wrong)."""
        return all(not (p.mismatched or p.extra or p.missing) or (p.phase == "forward" and not p.mismatched and not self.strict)
                   for p in self.phases)

    @property
    def unobserved(self) -> list[str]:
        """Activations recorded on one side only, which do not fail the trace (not `strict`)."""
        return [] if self.strict else [name for p in self.phases if p.phase == "forward" for name in p.missing + p.extra]

    @property
    def setting_differences(self) -> list[dict]:
        return self.settings["differences"] if self.settings else []

    @property
    def checked(self) -> bool:
        return any(p.compared for p in self.phases if p.phase != "parameters")

    @property
    def unchecked(self) -> list[str]:
        """The convention's phases in which nothing was compared."""
        return [p.phase for p in self.phases if p.phase in PHASES and not p.compared]

    def to_dict(self) -> dict:
        return {
            "format": TRACE_FORMAT,
            "ok": self.ok,
            "verdict": self.verdict,
            "first_divergence": self.first_divergence.to_dict() if self.first_divergence else None,
            "phases": [p.to_dict() for p in self.phases],
            "load_audit": asdict(self.load_audit),
            "reference": self.reference,
            "candidate": self.candidate,
            "tolerance": tolerance_to_dict(self.tolerance),
            "mappings": self.mappings,
            "notes": self.notes,
            **({"applied": [a.to_dict() for a in self.applied]} if self.applied else {}),  # none: nothing compared
            "judged_by": self.judged_by,
            "strict": self.strict,
            "unobserved": self.unobserved,
            "settings": self.settings,
            "random_masks": self.random_masks,
            "noise_gradients": self.noise_gradients,
            "rule_tolerances": self.rule_tolerances,
            "suggested_renames": self.suggested_renames,
            "buffers": self.buffers,
            "previous_activation": self.previous_activation,
            "likely": self.likely,
            # a long run's only, so that the JSON of a recording without `every` stays what it was
            **({"every": self.every, "steps": [row.to_dict() for row in self.steps],
                "first_step_beyond_budget": self.first_step_beyond_budget} if self.steps else {}),
        }

    @classmethod
    def from_dict(cls, data: dict) -> TraceResult:
        """A trace from its JSON form (`to_dict`, or `pita trace --json`'s file read back); `ok`
        is derived again. Raises `UsageError` for another format or none."""
        check_format(data, TRACE_FORMAT, "pita trace result")
        divergence = data["first_divergence"]
        return cls(verdict=data["verdict"], first_divergence=Divergence.from_dict(divergence) if divergence is not None else None,
                   phases=[Phase.from_dict(p) for p in data["phases"]], load_audit=LoadAudit(**data["load_audit"]),
                   reference=data["reference"], candidate=data["candidate"], tolerance=tolerance_from_dict(data["tolerance"]),
                   mappings=data["mappings"], notes=data["notes"],
                   applied=[AppliedTolerance.from_dict(a) for a in data.get("applied", [])],
                   judged_by=data.get("judged_by", "tolerance"), strict=data.get("strict", False), settings=data.get("settings"),
                   random_masks=data.get("random_masks"), noise_gradients=data.get("noise_gradients", []),
                   rule_tolerances=data.get("rule_tolerances", []), suggested_renames=data.get("suggested_renames", []),
                   buffers=data.get("buffers", []), previous_activation=data.get("previous_activation"),
                   likely=data.get("likely", []), steps=[StepRow.from_dict(row) for row in data.get("steps", [])],
                   every=data.get("every"))


def trace_dumps(reference: Dump, candidate: Dump, tolerance: Tolerance | None = None, rules: Rules | None = None, *,
                allow_input_mismatch: bool = False, reference64: Dump | None = None, strict: bool = False,
                verbose: bool = False) -> TraceResult:
    """The two recordings walked phase by phase (see the module's docstring). With `reference64`
    (a float64 run of the reference), each float tensor is judged by the float64 budget
    (pita.budget); without it, by `tolerance`. `strict`: an activation recorded on one side only
    fails the trace (by default it is listed as unobserved). Raises `UsageError` for a dump that
    is not a recording, or whatever `compare_pairs` refuses."""
    tolerance = Tolerance.from_options() if tolerance is None else tolerance
    rules = rules or Rules()
    for side, dump in (("reference", reference), ("candidate", candidate)):
        _check_recording(side, dump)
    notes = []
    if any(name.startswith(INIT) for name in reference.tensors):
        notes.append("reference: init/ tensors are not compared (the load audit reads the candidate's)")
    masks = {name for name in reference.tensors if (recorded := parse(name)) is not None and recorded.kind == "mask"}
    every = _every(reference)
    comparison = compare_pairs(_walked(reference), _walked(candidate), tolerance,
                               allow_input_mismatch=allow_input_mismatch, rules=rules,
                               reference64=_walked(reference64) if reference64 is not None else None, progress="trace")
    notes += comparison.notes + _dtype_note(comparison)
    if every is not None and reference64 is not None:
        _allow_drift(comparison.tensors, reference, reference64)
    order, order_notes = _execution_order(reference, rules, comparison)
    notes += order_notes
    walk = _Walk(order, _buffer_paths(reference))
    entries = [Entry(t.name, "", "ok" if t.ok else "mismatch", t) for t in comparison.tensors]
    entries += [Entry(name, "", "missing") for name in comparison.missing]
    entries += [Entry(name, "", "extra") for name in comparison.extra]
    for entry in entries:
        entry.phase = walk.phase_of(entry.name)
    entries.sort(key=walk.key)
    for index, entry in enumerate(entries):
        entry.index = index
    still_initial = _still_initial(candidate, rules, entries)
    _decide_origins(entries, walk)
    phase_names = PHASES + ((OTHER,) if any(e.phase == OTHER for e in entries) else ())
    by_phase = {name: [e for e in entries if e.phase == name] for name in phase_names}
    first = next((e for e in entries if e.diverged), None)
    if first is not None:
        gaps = [e.name for e in entries[: first.index] if not e.diverged and e.status != "ok"]
        if gaps:
            first.notes.append(f"{len(gaps)} tensor(s) before it are recorded on one side only (first {gaps[0]}): "
                               "one of them may have diverged unseen")
        _hint_renames(first, by_phase["parameters"])
    phases = [Phase.of(name, members) for name, members in by_phase.items()]
    audit = LoadAudit(missing=phases[0].missing, unused=phases[0].extra, still_initial=still_initial)
    settings = compare_settings(reference.metadata, candidate.metadata)
    result = TraceResult(verdict="", first_divergence=Divergence.of(first, _module_parameters(first, entries)) if first else None,
                         phases=phases, load_audit=audit, reference=comparison.reference, candidate=comparison.candidate,
                         tolerance=comparison.tolerance, mappings=comparison.mappings, notes=notes, applied=comparison.applied,
                         judged_by="float64 budget" if reference64 is not None else "tolerance", strict=strict,
                         settings=settings.to_dict() if settings is not None else None, verbose=verbose,
                         rule_tolerances=rules.tolerance_texts([t.name for t in comparison.tensors]),
                         suggested_renames=suggest_renames(comparison.missing, comparison.extra, [t.name for t in comparison.tensors]),
                         buffers=walk.buffers, walked=[Walked.of(e) for e in entries])
    result.every = every
    if every is not None:
        result.steps = _steps(entries, reference, candidate)
    if first is not None:
        _explain_first(result, first, entries, masks, reference, candidate)
        if first.phase == "forward":
            earlier = [e for e in by_phase["forward"] if e.index < first.index and e.result is not None]
            result.previous_activation = earlier[-1].name if earlier else None
    if reference64 is None:
        result.notes.append(_absolute_tolerance_note(result))
    result.verdict = _verdict(result)
    result.likely = [c.to_dict() for c in trace_causes(result, facts_of(reference, candidate), matched_names(comparison.tensors))]
    return result


# --- long runs ---------------------------------------------------------------------------------


def _allow_drift(tensors: list[TensorResult], reference: Dump, reference64: Dump) -> None:
    """A long run's loss and gradient norms after step 1, judged with the drift its optimizer's
    float32 settings leave (pita.budget's `update_share`: burn holds beta_2 = 0.999 as
    0.99900001287, which moves every update by 1.3e-5 of itself): each scalar's floor is at least
    that share of the truth's total variation so far (the sum of |value_j - value_j-1| over the
    recorded steps j <= k). One scalar's own error against the float64 run is one sample, often far
    below what the run's float32 noise makes of it; the parameters keep their own floor (the update
    since the last checkpoint). On the GRU port over 100 steps of AdamW, the correct port's worst
    scalar is then 0.12x its budget (12x without), and a learning rate one step late is 28x beyond
    it at the first step it shows."""
    share = update_share(reference.metadata)
    variation = _variation(reference64)
    for tensor in tensors:
        figures = tensor.float64
        if tensor.name not in variation or not figures or not (tensor.tolerance or "").startswith("float64 budget") or tensor.n != 1:
            continue
        floor = max(figures["floor"], share * variation[tensor.name])
        allowed = BUDGET_FACTOR * max(figures["reference_error"], floor)
        if allowed <= figures["allowed"]:
            continue
        figures.update(floor=floor, allowed=allowed)
        tensor.tolerance = f"float64 budget: atol={allowed:.3g}"
        if not tensor.ok and tensor.max_abs_diff <= allowed:
            tensor.ok, tensor.mismatched, tensor.would_pass, tensor.diagnosis = True, 0, "", []
            tensor.notes.append(f"within the drift of a long run: the optimizer's float32 settings move each update by {share:.2g} of "
                                f"itself, {share * variation[tensor.name]:.3g} over this value's course so far")


def _variation(reference64: Dump) -> dict[str, float]:
    """For each `loss/<k>` and `gradnorm<k>/<path>` (k >= 2) of the float64 run: the total
    variation of its series (the loss, or one parameter's gradient norm) up to step k."""
    series: dict[tuple, list[tuple[int, str]]] = {}
    for name in reference64.tensors:
        recorded = parse(name)
        if recorded is not None and recorded.kind in ("loss", "gradnorm"):
            series.setdefault((recorded.kind, recorded.path), []).append((recorded.step, name))
    variation = {}
    for members in series.values():
        total, previous = 0.0, None
        for _, name in sorted(members):
            value = _scalar(reference64.tensors[name])
            if value is None:
                break
            if previous is not None:
                total += abs(value - previous)
                variation[name] = total
            previous = value
    return variation


def _every(reference: Dump) -> int | None:
    """The reference's metadata `every` (a light recording of a long run records its parameters
    every so many steps), or None for a recording of every tensor at every step."""
    raw = reference.metadata.get("every")
    if raw is None:
        return None
    if not (isinstance(raw, str) and raw.isascii() and raw.isdigit() and raw[0] != "0" and len(raw) <= 9):
        raise UsageError(f"reference {reference.source or 'dump'}: metadata every {printable(raw)[:40]!r} is not a step count (1, 2, …)")
    return int(raw)


def _steps(entries: list[Entry], reference: Dump, candidate: Dump) -> list[StepRow]:
    """The steps section: per recorded step, the loss, the gradient norms and (at a checkpoint)
    the parameters and buffers, each kind's worst tensor against its budget."""
    by_step: dict[int, dict[str, list[Entry]]] = {}
    for entry in entries:
        recorded = parse(entry.name)
        kind = {"loss": "loss", "gradnorm": "gradnorm", "step": "params"}.get(recorded.kind) if recorded is not None else None
        if kind is not None and entry.result is not None:
            by_step.setdefault(recorded.step, {}).setdefault(kind, []).append(entry)
    return [StepRow(k, *(_step_error(by_step[k].get(kind, []), (reference, candidate) if kind == "loss" else None) for kind in STEP_KINDS))
            for k in sorted(by_step)]


def _step_error(entries: list[Entry], sides: tuple[Dump, Dump] | None) -> StepError | None:
    """The kind's worst tensor: one beyond its budget first, then the largest share of its budget
    (the largest |diff| without a float64 run); with `sides`, its value on each side (a loss)."""
    if not entries:
        return None

    def badness(entry: Entry) -> tuple[bool, float]:
        walked = Walked.of(entry)
        ratio = walked.ratio
        diff = entry.result.max_abs_diff
        return (not entry.result.ok, ratio if ratio is not None else math.inf if math.isnan(diff) else diff)

    worst = max(entries, key=badness)
    values = [_scalar(dump.tensors.get(worst.name)) for dump in sides] if sides else [None, None]
    return StepError(worst.name, worst.result.max_abs_diff, Walked.of(worst).allowed, compared=len(entries),
                     beyond=sum(not e.result.ok for e in entries), reference=values[0], candidate=values[1])


def _scalar(tensor) -> float | None:
    """A one-element tensor's value (a loss), or None."""
    if tensor is None or tensor.size != 1:
        return None
    return float(np.asarray(tensor, dtype=np.float64).ravel()[0])


NOISE_DISAGREEMENT = 0.1  # a gradient element whose two sides differ by this share of it holds float32 noise, not signal
SMALL_GRADIENT = 1e-3  # an element this small beside its tensor's largest carries the tensor's rounding as a large share of itself
NOISE_ULPS = 64  # rounding at a tensor's scale, in float32 ULPs of its largest value (the rounding diagnosis' bound)


def _explain_first(result: TraceResult, first: Entry, entries: list[Entry], masks: set[str], reference: Dump, candidate: Dump) -> None:
    """What the numbers alone cannot say of the first divergence: random masks drawn on each side,
    or a step that differs only where the gradient is float32 noise."""
    replayed = candidate.metadata.get("masks_replayed")
    drawn = sorted(name for name in masks if parse(name).step == 1)
    if drawn and not replayed and first.phase != "parameters":
        result.random_masks = {"reference": len(masks), "first": drawn[0], "replayed": 0}
        first.notes.append(f"the reference recorded {len(masks)} random mask(s) (first {drawn[0]}) and the candidate drew its own: "
                           "dropout masks differ across frameworks (their generators differ; seeding cannot align them)")
    if first.phase == "step":
        path = parameter_of(first.name)
        grads = {e.name: e for e in entries if e.phase == "backward"}
        grad = grads.get(f"grad/{path}") if path else None
        step = (reference.tensors.get(first.name), candidate.tensors.get(first.name))
        gradients = (reference.tensors.get(f"grad/{path}"), candidate.tensors.get(f"grad/{path}"))
        if grad is not None and grad.status == "ok" and _moved_on_noise(step, gradients, result.tolerance):
            result.noise_gradients = [grad.name]


def _moved_on_noise(step: tuple, gradients: tuple, tolerance: Tolerance) -> bool:
    """Whether every element of a step beyond the tolerance has a gradient that float32 noise
    decides: its two sides disagree by a large share of it (NOISE_DISAGREEMENT) or it is zero on a
    side; or it is small beside the tensor's largest (SMALL_GRADIENT) and the sides differ there by
    rounding at the tensor's scale (NOISE_ULPS), which Adam's division by each element's own root
    mean square blows up. An optimizer that computes otherwise moves large elements too."""
    if any(t is None for t in step + gradients) or len({t.size for t in step + gradients}) != 1:
        return False
    ours, theirs = (np.asarray(t, dtype=np.float64).ravel() for t in step)
    beyond = np.abs(theirs - ours) > tolerance.atol + tolerance.rtol * np.abs(ours)
    g_all = np.asarray(gradients[0], dtype=np.float64).ravel()
    scale = float(np.abs(g_all).max()) if g_all.size else 0.0
    g, h = g_all[beyond], np.asarray(gradients[1], dtype=np.float64).ravel()[beyond]
    disagree = np.abs(g - h) > NOISE_DISAGREEMENT * np.maximum(np.abs(g), np.abs(h))
    rounding = (np.abs(g) <= SMALL_GRADIENT * scale) & (np.abs(g - h) <= NOISE_ULPS * 2.0**-23 * scale)
    return bool(beyond.any() and np.all(disagree | rounding | (g == 0) | (h == 0)))


def _absolute_tolerance_note(result: TraceResult) -> str:
    note = ("judged by the tolerance alone (absolute: it cannot tell float32 noise, which grows with depth and scale, from a "
            "mistake); a float64 run of the reference judges each tensor against PyTorch's own float32 error (pita.torch.record "
            "writes one beside the recording, float64=True)")
    divergence = result.first_divergence
    if divergence is not None and divergence.tensor is not None and divergence.tensor.diagnosis:
        if any(d.kind == "rounding" for d in divergence.tensor.diagnosis):
            note += f"; the first divergence, {divergence.name}, is at rounding level: record a float64 run before looking for a mistake there"
    return note


def _walked(dump: Dump) -> Dump:
    """The recording without what trace does not walk (`init/` values: the load audit reads the
    candidate's; random masks: read to explain random ops)."""
    return without_unwalked(dump)[0]


def _dtype_note(comparison: ComparisonResult) -> list[str]:
    """A note when some tensors have another dtype on each side (compare notes it per tensor)."""
    differ = [t for t in comparison.tensors if t.dtype != t.candidate_dtype]
    if not differ:
        return []
    first = differ[0]
    return [f"{len(differ)} tensor(s) have different dtypes on the two sides (first {first.name}: reference {first.dtype}, "
            f"candidate {first.candidate_dtype}); each dtype pair is judged by its own tolerance (the tolerance line below)"]


# --- what a recording is -----------------------------------------------------------------------


def _check_recording(side: str, dump: Dump) -> None:
    version = dump.metadata.get("recording")
    if version is not None and version != RECORDING:
        raise UsageError(f"{side} {dump.source or 'dump'}: recording format {version[:40]!r}, pita trace reads {RECORDING!r}")
    if version is None and not any(looks_recorded(name) for name in dump.tensors):
        raise UsageError(f"{side} {dump.source or 'dump'} is not a recording: no 'recording' metadata and no param/, act/ or "
                         "loss/ tensors (record a run with pita.torch.record or pita::record::Recorder, docs/recording.md)")


def _execution_order(reference: Dump, rules: Rules, comparison: ComparisonResult) -> tuple[list[str], list[str]]:
    """The activations in the order their calls ended: the reference's `execution_order` (renamed
    as the reference's tensors are), then any activation it does not list, in name order."""
    names = [t.name for t in comparison.tensors] + comparison.missing + comparison.extra
    acts = sorted(name for name in names if name.startswith(ACT))
    raw = reference.metadata.get("execution_order")
    notes, listed = [], []
    if raw is None:
        if acts:
            notes.append("the reference has no execution_order metadata: activations are walked in name order")
        return acts, notes
    try:
        order = json.loads(raw)
    except (ValueError, RecursionError):
        order = None
    if not isinstance(order, list) or not all(isinstance(name, str) for name in order):
        notes.append("the reference's execution_order is not a JSON list of names: activations are walked in name order")
        return acts, notes
    renamed = rules.names_after([n for n in order if n in reference.tensors], "reference")
    known, seen = set(acts), set()
    for name in order:
        for new in renamed.get(name, []):
            if new in known and new not in seen:
                listed.append(new)
                seen.add(new)
    unlisted = [name for name in acts if name not in seen]
    if unlisted:
        notes.append(f"{len(unlisted)} activation(s) are not in the reference's execution_order (first {unlisted[0]}): "
                     "walked after it, in name order")
    return listed + unlisted, notes


def _buffer_paths(reference: Dump) -> list[str]:
    """The buffer paths the reference's recorder listed (metadata `buffers`), or none."""
    try:
        listed = json.loads(reference.metadata.get("buffers") or "[]")
    except (ValueError, RecursionError):
        return []
    return [path for path in listed if isinstance(path, str)] if isinstance(listed, list) else []


class _Walk:
    """The walk's order, from the execution order of the activations."""

    def __init__(self, order: list[str], buffers: list[str] = ()):
        self.buffers = list(buffers)
        self.buffer_set = set(buffers)
        self.position = {name: i for i, name in enumerate(order)}
        self.first_call: dict[str, int] = {}
        self.last_call: dict[str, int] = {}
        for i, name in enumerate(order):
            module = module_of_act(name)
            self.first_call.setdefault(module, i)
            self.last_call[module] = i
        self.owners: dict[str, str | None] = {}

    def phase_of(self, name: str) -> str:
        recorded = parse(name)
        return recorded.phase if recorded is not None and recorded.phase in PHASES else OTHER

    def owner(self, path: str) -> str | None:
        """The recorded module a parameter path belongs to: the longest one that prefixes it."""
        if path not in self.owners:
            parts = path.split(".")
            self.owners[path] = next((m for m in (".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1))
                                      if m in self.first_call), None)
        return self.owners[path]

    def parameter_key(self, path: str) -> tuple:
        owner = self.owner(path)
        return (0, self.first_call[owner], path) if owner is not None else (1, 0, path)

    def key(self, entry: Entry) -> tuple:
        name, phase = entry.name, entry.phase
        rank = (PHASES + (OTHER,)).index(phase)
        if phase == OTHER:
            return (rank, 0, name)
        recorded = parse(name)
        if phase == "parameters":
            audit = {"missing": 0, "extra": 1}.get(entry.status, 2)  # the load audit first
            return (rank, audit, self.parameter_key(recorded.path))
        if phase == "forward":
            return (rank, self.position.get(name, len(self.position)), name)
        if phase == "backward":
            owner = self.owner(recorded.path)
            return (rank, (0, -self.last_call[owner], recorded.path) if owner is not None else (1, 0, recorded.path))
        if recorded.kind == "loss":  # loss/<k>, k >= 2: after step k - 1
            return (rank, recorded.step - 1, 2, (), "")
        if recorded.kind == "gradnorm":  # step k's gradients: after loss/<k>, before step<k>/
            return (rank, recorded.step - 1, 3, self.parameter_key(recorded.path), "")
        return (rank, recorded.step, 0 if recorded.kind == "step" else 1, self.parameter_key(recorded.path), recorded.state or "")


def module_of_act(name: str) -> str:
    """`act/encoder.fc1#2` -> `encoder.fc1`."""
    return parse(name).module


def parameter_of(name: str) -> str | None:
    """The parameter path a `param/`, `grad/`, `step<k>/` or `optim<k>/.../<state>` name is about."""
    recorded = parse(name)
    return recorded.path if recorded is not None and recorded.kind != "init" else None


# --- the load audit ----------------------------------------------------------------------------


def _still_initial(candidate: Dump, rules: Rules, entries: list[Entry]) -> list[str]:
    """Mismatching parameters whose candidate value is bit for bit its `init/` value: the load
    never reached them. (A parameter loaded with its initial value, a norm's ones, matches the
    reference and is not flagged.)"""
    by_name = {e.name: e for e in entries if e.status == "mismatch" and e.phase == "parameters"}
    raw_params = [name for name in candidate.tensors if name.startswith(PARAM)]
    renamed = rules.names_after(raw_params, "candidate")
    found = []
    for raw in raw_params:
        after = renamed[raw]
        entry = by_name.get(after[0]) if len(after) == 1 else None  # a split parameter's blocks: not audited against init/
        initial = candidate.tensors.get(init_name(parameter_of(raw)))
        if entry is None or initial is None:
            continue
        value = candidate.tensors[raw]
        if tuple(initial.shape) == tuple(value.shape) and measure(initial, value, EXACT).mismatched == 0:
            entry.notes.append(f"the candidate's value is its init/ value: the load never reached {entry.name}")
            found.append(entry.name)
    return sorted(found, key=lambda name: by_name[name].index)


def _hint_renames(first: Entry, parameters: list[Entry]) -> None:
    """A missing parameter with an unused one of the same module beside it: perhaps one name for both."""
    if first.status != "missing" or first.phase != "parameters":
        return
    module = first.name.rpartition(".")[0]
    alike = [e.name for e in parameters if e.status == "extra" and e.name.rpartition(".")[0] == module]
    if alike:
        first.notes.append(f"the candidate has {', '.join(alike[:SHOWN_NAMES])} in the same module, which the reference "
                           "does not: if it is the same parameter, a [[rename]] rule (--rules) maps the name")


# --- introduced or inherited -------------------------------------------------------------------


def _decide_origins(entries: list[Entry], walk: _Walk) -> None:
    """Sets `introduced` and `inherited_from` on every divergence (module docstring)."""
    diverged = [e for e in entries if e.diverged]
    first_overall = diverged[0] if diverged else None
    parameters = [e for e in diverged if e.phase == "parameters"]
    by_parameter = {("param", parameter_of(e.name)): e for e in parameters}
    by_parameter.update({("grad", parameter_of(e.name)): e for e in diverged if e.phase == "backward"})
    owned = sorted((walk.first_call[walk.owner(parameter_of(e.name))], e.index, e)
                   for e in parameters if walk.owner(parameter_of(e.name)) is not None)
    owned_calls = [call for call, _, _ in owned]
    earliest_owned = []  # earliest_owned[i]: the earliest-walked of owned[:i + 1]
    for _, _, e in owned:
        earliest_owned.append(e if not earliest_owned or e.index < earliest_owned[-1].index else earliest_owned[-1])
    unowned = next((e for e in parameters if walk.owner(parameter_of(e.name)) is None), None)
    by_owner: dict[str, Entry] = {}
    for e in parameters:
        owner = walk.owner(parameter_of(e.name))
        if owner is not None and (owner not in by_owner or e.index < by_owner[owner].index):
            by_owner[owner] = e
    first_act = next((e for e in diverged if e.phase == "forward"), None)

    for entry in diverged:
        candidates: list[Entry | None] = []
        if entry.phase == "parameters":
            pass
        elif entry.phase == "forward" and entry.name in walk.position:
            call = walk.position[entry.name]
            module = module_of_act(entry.name)
            upto = bisect.bisect_right(owned_calls, call)
            candidates.append(earliest_owned[upto - 1] if upto else None)
            candidates.append(unowned)
            parts = module.split(".")
            candidates += [by_owner.get(".".join(parts[:i])) for i in range(1, len(parts))]  # enclosing modules
            candidates.append(first_act if first_act is not None and walk.position.get(first_act.name, call) < call else None)
        elif (entry.phase == "step" and (recorded := parse(entry.name)).kind in ("step", "optim") and recorded.step == 1
              and recorded.path not in walk.buffer_set):  # a buffer depends on the forward pass, not on a gradient
            candidates += [by_parameter.get(("param", recorded.path)), by_parameter.get(("grad", recorded.path))]
        else:
            candidates.append(first_overall)
        upstream = [c for c in candidates if c is not None and c.index < entry.index]
        source = min(upstream, key=lambda c: c.index, default=None)
        entry.introduced = source is None
        entry.inherited_from = source.name if source else None


def _module_parameters(entry: Entry, entries: list[Entry]) -> list[Entry]:
    """The parameters (`param/<module>.*`) of the module a tensor came from: for `act/M`, M's; for
    a parameter's tensor, the module holding the parameter; none for a loss."""
    if entry.name.startswith(ACT):
        module = module_of_act(entry.name)
    else:
        path = parameter_of(entry.name)
        if path is None:
            return []
        module = path.rpartition(".")[0]
        if not module:
            return [e for e in entries if e.name == param_name(path)]
    prefix = param_name(f"{module}.")
    return [e for e in entries if e.phase == "parameters" and e.name.startswith(prefix)]


# --- the verdict -------------------------------------------------------------------------------


def _verdict(result: TraceResult) -> str:
    """The numbers' verdict, after the module and loss settings that differ, which come first: a
    setting named is the cause said, where the numbers only show its effect."""
    verdict = _numbers_verdict(result)
    said = "settings differ" in verdict  # the optimizer's, by the step's verdict
    differences = _module_differences(result) if said else result.setting_differences
    if differences and not verdict.startswith("every tensor matched"):
        return f"the settings differ: {_settings_text(differences)}; and in the numbers: {verdict}"
    return verdict


def _module_differences(result: TraceResult) -> list[dict]:
    """The setting differences of the modules and the loss (the optimizer's are the step's verdict)."""
    return [d for d in result.setting_differences if d.get("module", OPTIMIZER) != OPTIMIZER]


def _numbers_verdict(result: TraceResult) -> str:
    if result.clean and not any(p.compared for p in result.phases):
        return ("nothing compared: the recordings hold no tensor (record a run with pita.torch.record or "
                "pita::record::Recorder, docs/recording.md)")
    if result.clean and not result.checked:
        return ("only the parameters were recorded, and they match: nothing says what the candidate computes "
                "(record activations, the loss, gradients or steps, docs/recording.md)")
    if result.ok and result.unchecked:
        checked = [p.phase for p in result.phases if p.compared]
        return (f"every phase recorded matched ({', '.join(checked)}); nothing was recorded in {', '.join(result.unchecked)}, "
                "so the candidate is not checked there" + _unobserved_text(result))
    if result.ok:
        return "every phase matched: the candidate computes what the reference computes" + _unobserved_text(result)
    divergence = result.first_divergence
    if divergence is None and result.setting_differences and result.clean:
        if _module_differences(result):
            return (f"every tensor matched, but the settings differ: {_settings_text(result.setting_differences)} "
                    "(the tensors recorded do not show it: too few, or too small for it to matter at this tolerance)")
        return (f"every tensor matched, but the optimizer's settings differ: {_settings_text(result.setting_differences)} "
                "(too few steps were recorded for it to show in the numbers)")
    if divergence is None:
        gaps = [name for phase in result.phases for name in phase.missing + phase.extra]
        return (f"every tensor compared matched, but {len(gaps)} are recorded on one side only (first {gaps[0]}): "
                "record the same tensors on both sides")
    entry = divergence
    if entry.phase == "parameters":
        if entry.status == "missing":
            return f"the candidate has no {entry.name}: the port lacks a parameter the reference has, or names it differently"
        if entry.status == "extra":
            return f"the candidate has {entry.name}, which the reference does not: the port has a parameter too many, or names it differently"
        if entry.name in result.load_audit.still_initial:
            return f"{entry.name} was never loaded: the candidate still holds its initial value"
        return "the parameters differ as loaded: the weights were loaded or laid out differently (later phases inherit it)"
    if result.random_masks and entry.phase in ("forward", "loss", "backward", "step"):
        masks = result.random_masks
        return (f"random masks differ (expected across frameworks): the forward departs at or after the first random op, and the "
                f"reference recorded its {masks['reference']} dropout mask(s) (first {masks['first']}) while the candidate drew its own; "
                "replay them in the port with pita::replay (docs/recording.md, 'Random ops'), then trace again")
    if entry.phase == "forward":
        return _forward_verdict(result, entry)
    if entry.phase == "loss":
        return "the forward pass matched and the loss differs: the loss function or its reduction differs"
    if entry.phase == "backward":
        return ("the forward pass and the loss matched and the gradients differ: the backward pass differs "
                "(the loss's reduction, a detached tensor, a custom backward)")
    if entry.phase == "step" and parameter_of(entry.name) in result.buffers:
        return (f"parameters, forward, loss and backward match and the buffer {entry.name} differs: the port's "
                f"{parameter_of(entry.name).rpartition('.')[0] or 'module'} updates its running statistics differently "
                "(its momentum, or the variance it keeps: biased or unbiased)")
    if entry.phase == "step":
        return _step_verdict(result)
    return f"{entry.name}, outside the recording convention, differs"


def _forward_verdict(result: TraceResult, entry) -> str:
    """A module's output departs while its parameters matched: the module, or code no module
    records between the last activation that matched and it (a model's own forward, an
    attention core written inline), computes differently."""
    module = module_of_act(entry.name)
    before = result.previous_activation
    verdict = (f"the forward pass departs at {entry.name} while the parameters it uses matched: "
               f"the port's {module or 'module'} computes differently")
    if before is None:
        return verdict + ", or the code before it that computes its input (no activation before it is recorded)"
    enclosing = _common_module(module, module_of_act(before))
    where = f" in {enclosing}'s forward" if enclosing else ""
    return verdict + f", or code{where} between {before} (which matched) and it that no module records computes its input differently"


def _common_module(a: str, b: str) -> str:
    """The deepest module path enclosing both (`h.0.attn` for `h.0.attn.c_proj` and `h.0.attn.c_attn`)."""
    common = []
    for x, y in zip(a.split("."), b.split(".")):
        if x != y:
            break
        common.append(x)
    return ".".join(common[: len(a.split(".")) - 1])


def _step_verdict(result: TraceResult) -> str:
    unchecked = [p.phase for p in result.phases[:4] if p.compared == 0]
    caveat = f" (nothing was recorded in: {', '.join(unchecked)})" if unchecked else ""
    lead = f"parameters, forward, loss and backward match and the step differs{caveat}"
    departs = parse(result.first_divergence.name).step if result.steps else None
    if departs is not None and departs >= 2:
        lead = f"step 1 matches in every phase and the run departs from the reference at step {departs} ({result.first_divergence.name}){caveat}"
    if result.setting_differences:
        return f"{lead}: the optimizer's settings differ: {_settings_text(result.setting_differences)}"
    if result.noise_gradients:
        return (f"{lead} only where float32 noise decides the gradient ({result.noise_gradients[0]}: where the step differs, its "
                f"two sides disagree by more than {NOISE_DISAGREEMENT:g} of their value, as a gradient zero in exact arithmetic "
                "does, or the elements are tiny beside the tensor's largest and differ by its rounding); "
                "Adam-type optimizers divide by its root mean square and turn noise into steps of about lr, differently on each "
                f"side: both can be right. {_noise_advice(result)}")
    if result.settings is not None:
        return (f"{lead} although the optimizer's recorded settings match ({result.settings['compared']} compared): its update "
                "differs (the algorithm: bias correction, where weight decay applies), or a setting not recorded")
    return f"{lead}: the optimizer or its hyper-parameters differ (record them: the recorders write the optimizer's settings)"


def _noise_advice(result: TraceResult) -> str:
    """How to judge a step that noise decides: by a float64 run where the trace had none; where it
    had one, why its budget can still be exceeded (it scales the reference's own error, not the noise's
    amplification)."""
    if result.judged_by != "float64 budget":
        return "Judge by a float64 run (pita.torch.record writes one) instead of a tolerance"
    return (f"The float64 run's budget allows each tensor {BUDGET_FACTOR:g}× the reference's own error, which such noise, "
            "amplified differently by each side's optimizer, can exceed")


def _settings_text(differences: list[dict]) -> str:
    """The differences, those of one kind, setting and values grouped: `encoder.layer.0.attention.output.LayerNorm
    and 11 more LayerNorm (×12) eps: 1e-12 against 1e-05 (book/p10b.md)`."""
    groups: dict[tuple, list[str]] = {}
    for d in differences:
        key = (d.get("kind", ""), d["name"], json.dumps(d["reference"]), json.dumps(d["candidate"]), d.get("chapter"))
        groups.setdefault(key, []).append(d.get("module", OPTIMIZER))
    texts = []
    for (kind, name, reference, candidate, chapter), modules in groups.items():
        setting = Setting(name, json.loads(reference), json.loads(candidate)).text()
        where = "" if modules[0] == OPTIMIZER else f"{modules[0]} "
        if len(modules) > 1:
            where += f"and {len(modules) - 1} more {kind} (×{len(modules)}) "
        texts.append(where + setting + (f" (book/{chapter}.md)" if chapter else ""))
    return "; ".join(texts)


def _unobserved_text(result: TraceResult) -> str:
    unobserved = result.unobserved
    if not unobserved:
        return ""
    return (f" ({len(unobserved)} activation(s) recorded on one side only were not observed, first {unobserved[0]}: "
            "tap them to check them, --strict to fail on them)")


# --- rendering ---------------------------------------------------------------------------------


def render_trace_text(result: TraceResult) -> str:
    """The first divergence first (headline, compare's lines for it, its module's parameters),
    the verdict, one line per phase, then notes and the tolerance."""
    lines = []
    divergence = result.first_divergence
    if divergence is None:
        lines.append("first divergence: none" + ("" if not result.ok else " (every phase recorded matched)" if result.unchecked
                                                 else " (every phase matched)"))
    else:
        origin_text = origin(divergence.introduced, divergence.inherited_from)
        lines.append(f"first divergence: {divergence.phase} {divergence.name} ({origin_text}): {divergence.description}")
        if divergence.tensor is not None:
            lines.extend(f"  {line}" for line in tensor_lines(divergence.tensor))
        lines.extend(f"  note: {note}" for note in divergence.notes)
        if divergence.module_parameters and divergence.phase != "parameters":
            shown = [f"{p.name} {_status(p)}" for p in divergence.module_parameters[:2 * SHOWN_NAMES]]
            more = len(divergence.module_parameters) - len(shown)
            lines.append("  its module's parameters: " + ", ".join(shown) + (f" and {more} more" if more > 0 else ""))
    lines.append(f"verdict: {result.verdict}")
    lines.extend(likely_lines(result.likely))
    if result.setting_differences:  # the settings phase found the cause: it heads the report
        lines.insert(0, _settings_line(result))
    else:
        lines.append(_settings_line(result))
    for phase in result.phases:
        lines.append(_phase_line(phase, result))
    lines.extend(steps_lines(result))
    lines.extend(mapping_summary(result.mappings, result.verbose))
    lines.extend(f"tolerance from the rules file: {text}" for text in result.rule_tolerances)
    if result.suggested_renames:
        lines.append("suggested rules (the names on one side only differ by a common prefix or suffix; paste into a rules file, --rules):")
        lines.extend(f"  {line}" for line in result.suggested_renames)
    lines.extend(f"note: {note}" for note in result.notes)
    status = "OK" if result.ok else "NOT CHECKED" if result.clean and not result.setting_differences else "MISMATCH"
    lines.append(f"tolerance: {tolerance_text(result.tolerance, result.applied)}")
    lines.append(f"tol={shown_tolerance(result.tolerance, result.applied)} {status}")
    return "\n".join(map(printable, lines)) + "\n"  # values from files on one line, without control characters


SHOWN_STEPS = 20  # rows of the steps section's text: past it, one per decade


def steps_lines(result: TraceResult) -> list[str]:
    """A long run's steps section: how many steps, the first beyond the budget, then how error
    grows: one row at step 1, at each checkpoint (one per decade where there are more than
    SHOWN_STEPS), at the first step beyond the budget and at the last."""
    if not result.steps:
        return []
    budget = result.judged_by == "float64 budget"
    edge = "budget" if budget else "tolerance"
    checkpoints = [row.step for row in result.steps if row.params is not None]
    lines = [f"steps: {len(result.steps)} recorded (loss and gradient norms at each; parameters and buffers at {_steps_text(checkpoints)}), "
             f"judged by the {'float64 budget' if budget else 'tolerance (no float64 run)'}"]
    first = result.first_step_beyond_budget
    if first is None:
        lines.append(f"first step beyond {edge}: none")
    else:
        row = next(r for r in result.steps if r.step == first)
        lines.append(f"first step beyond {edge}: {first} ({'; '.join(_part_text(kind, part, budget) for kind, part in row.parts() if part and part.beyond)})")
    lines.append("how error grows (each kind's largest |diff|" + (", as a share of its budget: 1 is its edge)" if budget else ")"))
    for row in _shown_rows(result.steps, checkpoints, first):
        parts = [_part_text(kind, part, budget) for kind, part in row.parts() if part is not None]
        lines.append(f"  step {row.step}: {', '.join(parts)} {'within' if row.within_budget else 'BEYOND'}")
    return lines


def _steps_text(steps: list[int]) -> str:
    if not steps:
        return "no step"
    if len(steps) <= SHOWN_NAMES:
        return ", ".join(map(str, steps))
    return f"{', '.join(map(str, steps[:3]))}, …, {steps[-1]} ({len(steps)} steps)"


def _part_text(kind: str, part: StepError, budget: bool) -> str:
    """`loss 0.031×`, `gradnorm 2.4× (fc1.weight)`, `params 4.1e-06 (fc1.weight, 2 of 4 beyond)`."""
    ratio = part.ratio
    figure = f"{ratio:.2g}×" if budget and ratio is not None else f"|diff|={part.max_abs_diff:.2e}"
    where = [] if kind == "loss" else [parameter_of(part.name) or part.name]
    if part.beyond and part.compared > 1:
        where.append(f"{part.beyond} of {part.compared} beyond")
    return f"{kind} {figure}" + (f" ({', '.join(where)})" if where else "")


def _shown_rows(rows: list[StepRow], checkpoints: list[int], first: int | None) -> list[StepRow]:
    marked = set(checkpoints)
    if len(marked) + 3 > SHOWN_STEPS:
        marked = {row.step for row in rows if _is_decade(row.step)}
    marked |= {rows[0].step, rows[-1].step} | ({first} if first is not None else set())
    return [row for row in rows if row.step in marked]


def _is_decade(step: int) -> bool:
    """1, 10, 100, …"""
    return str(step).rstrip("0") == "1"


def _settings_line(result: TraceResult) -> str:
    """The settings phase: every difference with both values, module path and chapter; how many
    settings matched; and what was not compared (a count and the first names: the JSON has all)."""
    settings = result.settings
    if settings is None:
        return "settings: none recorded on both sides (modules, loss, optimizer), so none compared"
    differ = settings["differences"]
    if differ:
        line = f"settings: {len(differ)} difference{'s' if len(differ) > 1 else ''}: {_settings_text(differ)}; {settings['compared']} compared"
    else:
        names = settings.get("names", [])
        shown = ", ".join(names[:SHOWN_NAMES]) + (f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")
        line = f"settings: the {settings['compared']} settings compared match ({shown})"
    unread = settings["not_compared"]
    if unread:
        line += f"; {len(unread)} not compared: " + ", ".join(unread[:SHOWN_NAMES]) + (" …" if len(unread) > SHOWN_NAMES else "")
    return line


def render_trace_json(result: TraceResult) -> str:
    return json_text(result.to_dict())


def _status(parameter: ModuleParameter) -> str:
    if parameter.status == "mismatch" and parameter.diagnosis:
        return f"MISMATCH ({', '.join(d.kind for d in parameter.diagnosis)})"
    return {"ok": "OK", "mismatch": "MISMATCH", "missing": "missing from the candidate", "extra": "only in the candidate"}[parameter.status]


def _phase_line(phase: Phase, result: TraceResult) -> str:
    if not phase.recorded:
        return f"{phase.phase}: nothing recorded"
    line = f"{phase.phase}: {phase.compared} compared, {phase.mismatched} mismatched"
    if phase.first is not None:
        line += f", first {phase.first} ({origin(phase.introduced, phase.inherited_from)})"
    names = lambda listed: ", ".join(listed[:SHOWN_NAMES]) + (f" and {len(listed) - SHOWN_NAMES} more" if len(listed) > SHOWN_NAMES else "")
    if phase.phase == "parameters":
        audit = result.load_audit
        parts = [f"{len(listed)} {label}: {names(listed)}"
                 for listed, label in ((audit.missing, "missing from the candidate"), (audit.unused, "unused, in the candidate only"),
                                       (audit.still_initial, "still initial")) if listed]
        return line + "; load audit: " + ("; ".join(parts) if parts else "clean")
    if phase.missing:
        line += f"; recorded only in the reference: {names(phase.missing)}"
    if phase.extra:
        line += f"; recorded only in the candidate: {names(phase.extra)}"
    return line
