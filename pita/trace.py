"""Trace: two recordings of a training run (docs/recording.md) walked in the order the run
computed them, to find the first tensor where the candidate departs from the reference.

A stage after compare: the pair of recordings goes through `compare_dumps` once (rules, the
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
import re
from dataclasses import asdict, dataclass, field

from pita.align import Rules
from pita.compare import ComparisonResult, TensorResult, Tolerance, compare_dumps, without_init
from pita.dump import Dump
from pita.errors import UsageError
from pita.report import json_text, tensor_lines
from pita.stats import measure

RECORDING = "pita-record/1"
PHASES = ("parameters", "forward", "loss", "backward", "step")
OTHER = "other"
SHOWN_NAMES = 5  # names listed per kind on one text line
MAX_STEP = 10**9  # k in step<k>/, optim<k>/, loss/<k> has at most 9 digits

_STEP = re.compile(r"step([1-9][0-9]{0,8})/(.+)", re.DOTALL)
_OPTIM = re.compile(r"optim([1-9][0-9]{0,8})/(.+)/([^/]+)", re.DOTALL)
_LOSS = re.compile(r"loss/([1-9][0-9]{0,8})")
_CALL = re.compile(r"#([2-9]|[1-9][0-9]+)$")
_CONVENTION = re.compile(r"(param|act|loss|grad|init|step[0-9]+|optim[0-9]+)/")
EXACT = Tolerance(atol=0.0, rtol=0.0, equal_nan=True)  # "still equal to its init/ value"


@dataclass
class Entry:
    """One name in the walk: compared (`ok` or `mismatch`) or recorded on one side only
    (`missing` from the candidate, `extra` in it)."""

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

    def describe(self) -> str:
        """What went wrong, in a few words."""
        if self.status == "missing":
            return "missing from the candidate"
        if self.status == "extra":
            return "only in the candidate (the reference has no such tensor)"
        tensor = self.result
        if tensor.diagnosis:
            return f"{tensor.diagnosis[0].kind}: {tensor.diagnosis[0].message}"
        if tensor.shape_conflict:
            return f"shape conflict: reference {tensor.shape}, candidate {tensor.candidate_shape}"
        return f"max|diff|={tensor.max_abs_diff:.2e}, {tensor.mismatched}/{tensor.n} elements mismatch"

    def origin(self) -> str:
        return "introduced" if self.introduced else f"inherited from {self.inherited_from}"

    def summary(self) -> dict:
        tensor = self.result
        return {"name": self.name, "status": self.status, "introduced": self.introduced, "inherited_from": self.inherited_from,
                "max_abs_diff": tensor.max_abs_diff if tensor else None, "mismatched": tensor.mismatched if tensor else None,
                "n": tensor.n if tensor else None, "kinds": [d.kind for d in tensor.diagnosis] if tensor else []}


@dataclass
class Phase:
    phase: str
    entries: list[Entry]

    @property
    def compared(self) -> int:
        return sum(e.result is not None for e in self.entries)

    @property
    def mismatches(self) -> list[Entry]:
        return [e for e in self.entries if e.status == "mismatch"]

    @property
    def first(self) -> Entry | None:
        """The phase's first divergence (the load audit's findings come first in parameters)."""
        return next((e for e in self.entries if e.diverged), None)

    @property
    def missing(self) -> list[str]:
        return [e.name for e in self.entries if e.status == "missing"]

    @property
    def extra(self) -> list[str]:
        return [e.name for e in self.entries if e.status == "extra"]

    def to_dict(self) -> dict:
        first = self.first
        return {"phase": self.phase, "compared": self.compared, "mismatched": len(self.mismatches),
                "first": first.name if first else None, "introduced": first.introduced if first else None,
                "inherited_from": first.inherited_from if first else None, "missing": self.missing, "extra": self.extra,
                "mismatches": [e.summary() for e in self.mismatches]}


@dataclass
class Divergence:
    """The first divergence, with compare's diagnosis of it and of its module's parameters."""

    entry: Entry
    module_parameters: list[Entry]

    @property
    def phase(self) -> str:
        return self.entry.phase

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def introduced(self) -> bool:
        return bool(self.entry.introduced)

    def to_dict(self) -> dict:
        entry = self.entry
        tensor = entry.result
        return {"phase": entry.phase, "name": entry.name, "status": entry.status, "introduced": self.introduced,
                "inherited_from": entry.inherited_from, "description": entry.describe(),
                "diagnosis": [d.to_dict() for d in tensor.diagnosis] if tensor else [],
                "module_parameters": [{"name": p.name, "status": p.status,
                                       "max_abs_diff": p.result.max_abs_diff if p.result else None,
                                       "diagnosis": [d.to_dict() for d in p.result.diagnosis] if p.result else []}
                                      for p in self.module_parameters],
                "notes": entry.notes, "tensor": tensor.to_dict() if tensor else None}


@dataclass
class TraceResult:
    phases: list[Phase]
    first_divergence: Divergence | None
    verdict: str
    comparison: ComparisonResult  # what compare found, tensor by tensor
    still_initial: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(e.status == "ok" for phase in self.phases for e in phase.entries)

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.phase == name), None)

    @property
    def load_audit(self) -> dict:
        parameters = self.phase("parameters")
        return {"missing": parameters.missing, "unused": parameters.extra, "still_initial": self.still_initial}

    def to_dict(self) -> dict:
        comparison = self.comparison
        return {
            "ok": self.ok,
            "verdict": self.verdict,
            "first_divergence": self.first_divergence.to_dict() if self.first_divergence else None,
            "phases": [p.to_dict() for p in self.phases],
            "load_audit": self.load_audit,
            "reference": comparison.reference,
            "candidate": comparison.candidate,
            "tolerance": {**asdict(comparison.tolerance), "formula": comparison.tolerance.formula()},
            "mappings": comparison.mappings,
            "notes": self.notes,
        }


def trace_dumps(reference: Dump, candidate: Dump, tolerance: Tolerance | None = None, rules: Rules | None = None, *,
                allow_input_mismatch: bool = False) -> TraceResult:
    """The two recordings walked phase by phase (see the module's docstring). Raises `UsageError`
    for a dump that is not a recording, or whatever `compare_dumps` refuses."""
    tolerance = Tolerance.from_options() if tolerance is None else tolerance
    rules = rules or Rules()
    for side, dump in (("reference", reference), ("candidate", candidate)):
        _check_recording(side, dump)
    notes = []
    if any(name.startswith("init/") for name in reference.tensors):
        notes.append("reference: init/ tensors are not compared (the load audit reads the candidate's)")
    comparison = compare_dumps(without_init(reference)[0], without_init(candidate)[0], tolerance,
                               allow_input_mismatch=allow_input_mismatch, rules=rules)
    notes += comparison.notes
    order, order_notes = _execution_order(reference, rules, comparison)
    notes += order_notes
    walk = _Walk(order)
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
    phases = [Phase(name, [e for e in entries if e.phase == name]) for name in phase_names]
    first = next((e for e in entries if e.diverged), None)
    if first is not None:
        gaps = [e.name for e in entries[: first.index] if not e.diverged and e.status != "ok"]
        if gaps:
            first.notes.append(f"{len(gaps)} tensor(s) before it are recorded on one side only (first {gaps[0]}): "
                               "one of them may have diverged unseen")
        _hint_renames(first, phases[0])
    divergence = Divergence(first, _module_parameters(first, entries)) if first else None
    result = TraceResult(phases=phases, first_divergence=divergence, verdict="", comparison=comparison,
                         still_initial=still_initial, notes=notes)
    result.verdict = _verdict(result)
    return result


# --- what a recording is -----------------------------------------------------------------------


def _check_recording(side: str, dump: Dump) -> None:
    version = dump.metadata.get("recording")
    if version is not None and version != RECORDING:
        raise UsageError(f"{side} {dump.source or 'dump'}: recording format {version[:40]!r}, pita trace reads {RECORDING!r}")
    if version is None and not any(_CONVENTION.match(name) for name in dump.tensors):
        raise UsageError(f"{side} {dump.source or 'dump'} is not a recording: no 'recording' metadata and no param/, act/ or "
                         "loss/ tensors (record a run with pita.torch.record or pita::record::Recorder, docs/recording.md)")


def _renamed(rules: Rules, names, side: str) -> dict[str, str]:
    """Each name as the rules file's renames on `side` leave it (the names compare pairs)."""
    out, _ = Rules(renames=rules.renames).apply({name: name for name in names}, side)
    return {original: new for new, original in out.items()}


def _execution_order(reference: Dump, rules: Rules, comparison: ComparisonResult) -> tuple[list[str], list[str]]:
    """The activations in the order their calls ended: the reference's `execution_order` (renamed
    as the reference's tensors are), then any activation it does not list, in name order."""
    names = [t.name for t in comparison.tensors] + comparison.missing + comparison.extra
    acts = sorted(name for name in names if name.startswith("act/"))
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
    renamed = _renamed(rules, [n for n in order if n in reference.tensors], "reference")
    known, seen = set(acts), set()
    for name in order:
        new = renamed.get(name)
        if new in known and new not in seen:
            listed.append(new)
            seen.add(new)
    unlisted = [name for name in acts if name not in seen]
    if unlisted:
        notes.append(f"{len(unlisted)} activation(s) are not in the reference's execution_order (first {unlisted[0]}): "
                     "walked after it, in name order")
    return listed + unlisted, notes


class _Walk:
    """The walk's order, from the execution order of the activations."""

    def __init__(self, order: list[str]):
        self.position = {name: i for i, name in enumerate(order)}
        self.first_call: dict[str, int] = {}
        self.last_call: dict[str, int] = {}
        for i, name in enumerate(order):
            module = module_of_act(name)
            self.first_call.setdefault(module, i)
            self.last_call[module] = i
        self.owners: dict[str, str | None] = {}

    def phase_of(self, name: str) -> str:
        if name.startswith("param/"):
            return "parameters"
        if name.startswith("act/"):
            return "forward"
        if name == "loss/1":
            return "loss"
        if name.startswith("grad/"):
            return "backward"
        if _STEP.fullmatch(name) or _OPTIM.fullmatch(name) or _LOSS.fullmatch(name):
            return "step"
        return OTHER

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
        if phase == "parameters":
            audit = {"missing": 0, "extra": 1}.get(entry.status, 2)  # the load audit first
            return (rank, audit, self.parameter_key(name[len("param/"):]))
        if phase == "forward":
            return (rank, self.position.get(name, len(self.position)), name)
        if phase == "backward":
            path = name[len("grad/"):]
            owner = self.owner(path)
            return (rank, (0, -self.last_call[owner], path) if owner is not None else (1, 0, path))
        if phase == "step":
            if found := _STEP.fullmatch(name):
                return (rank, int(found[1]), 0, self.parameter_key(found[2]), "")
            if found := _OPTIM.fullmatch(name):
                return (rank, int(found[1]), 1, self.parameter_key(found[2]), found[3])
            return (rank, int(_LOSS.fullmatch(name)[1]) - 1, 2, (), "")
        return (rank, 0, name)


def module_of_act(name: str) -> str:
    """`act/encoder.fc1#2` -> `encoder.fc1`."""
    return _CALL.sub("", name[len("act/"):])


def parameter_of(name: str) -> str | None:
    """The parameter path a `param/`, `grad/`, `step<k>/` or `optim<k>/.../<state>` name is about."""
    for prefix in ("param/", "grad/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    found = _STEP.fullmatch(name) or _OPTIM.fullmatch(name)
    return found[2] if found else None


# --- the load audit ----------------------------------------------------------------------------


def _still_initial(candidate: Dump, rules: Rules, entries: list[Entry]) -> list[str]:
    """Mismatching parameters whose candidate value is bit for bit its `init/` value: the load
    never reached them. (A parameter loaded with its initial value, a norm's ones, matches the
    reference and is not flagged.)"""
    by_name = {e.name: e for e in entries if e.status == "mismatch" and e.phase == "parameters"}
    raw_params = [name for name in candidate.tensors if name.startswith("param/")]
    renamed = _renamed(rules, raw_params, "candidate")
    found = []
    for raw in raw_params:
        entry = by_name.get(renamed[raw])
        initial = candidate.tensors.get("init/" + raw[len("param/"):])
        if entry is None or initial is None:
            continue
        value = candidate.tensors[raw]
        if tuple(initial.shape) == tuple(value.shape) and measure(initial, value, EXACT).mismatched == 0:
            entry.notes.append(f"the candidate's value is its init/ value: the load never reached {entry.name}")
            found.append(entry.name)
    return sorted(found, key=lambda name: by_name[name].index)


def _hint_renames(first: Entry, parameters: Phase) -> None:
    """A missing parameter with an unused one of the same module beside it: perhaps one name for both."""
    if first.status != "missing" or first.phase != "parameters":
        return
    module = first.name.rpartition(".")[0]
    alike = [name for name in parameters.extra if name.rpartition(".")[0] == module]
    if alike:
        first.notes.append(f"the candidate has {', '.join(alike[:SHOWN_NAMES])} in the same module, which the reference "
                           "does not: if it is the same parameter, a [[rename]] rule (--rules) maps the name")


# --- introduced or inherited -------------------------------------------------------------------


def _decide_origins(entries: list[Entry], walk: _Walk) -> None:
    """Sets `introduced` and `inherited_from` on every divergence (module docstring)."""
    diverged = [e for e in entries if e.diverged]
    first_overall = diverged[0] if diverged else None
    parameters = [e for e in diverged if e.phase == "parameters"]
    by_parameter = {("param", e.name[len("param/"):]): e for e in parameters}
    by_parameter.update({("grad", e.name[len("grad/"):]): e for e in diverged if e.phase == "backward"})
    owned = sorted((walk.first_call[walk.owner(e.name[len("param/"):])], e.index, e)
                   for e in parameters if walk.owner(e.name[len("param/"):]) is not None)
    owned_calls = [call for call, _, _ in owned]
    earliest_owned = []  # earliest_owned[i]: the earliest-walked of owned[:i + 1]
    for _, _, e in owned:
        earliest_owned.append(e if not earliest_owned or e.index < earliest_owned[-1].index else earliest_owned[-1])
    unowned = next((e for e in parameters if walk.owner(e.name[len("param/"):]) is None), None)
    by_owner: dict[str, Entry] = {}
    for e in parameters:
        owner = walk.owner(e.name[len("param/"):])
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
        elif entry.phase == "step" and (found := _STEP.fullmatch(entry.name) or _OPTIM.fullmatch(entry.name)) and found[1] == "1":
            candidates += [by_parameter.get(("param", found[2])), by_parameter.get(("grad", found[2]))]
        else:
            candidates.append(first_overall)
        upstream = [c for c in candidates if c is not None and c.index < entry.index]
        source = min(upstream, key=lambda c: c.index, default=None)
        entry.introduced = source is None
        entry.inherited_from = source.name if source else None


def _module_parameters(entry: Entry, entries: list[Entry]) -> list[Entry]:
    """The parameters (`param/<module>.*`) of the module a tensor came from: for `act/M`, M's; for
    a parameter's tensor, the module holding the parameter; none for a loss."""
    if entry.name.startswith("act/"):
        module = module_of_act(entry.name)
    else:
        path = parameter_of(entry.name)
        if path is None:
            return []
        module = path.rpartition(".")[0]
        if not module:
            return [e for e in entries if e.name == f"param/{path}"]
    prefix = f"param/{module}."
    return [e for e in entries if e.phase == "parameters" and e.name.startswith(prefix)]


# --- the verdict -------------------------------------------------------------------------------


def _verdict(result: TraceResult) -> str:
    if result.ok:
        return "every phase matched: the candidate computes what the reference computes"
    divergence = result.first_divergence
    if divergence is None:
        gaps = [name for phase in result.phases for name in phase.missing + phase.extra]
        return (f"every tensor compared matched, but {len(gaps)} are recorded on one side only (first {gaps[0]}): "
                "record the same tensors on both sides")
    entry = divergence.entry
    if entry.phase == "parameters":
        if entry.status == "missing":
            return f"the candidate has no {entry.name}: the port lacks a parameter the reference has, or names it differently"
        if entry.status == "extra":
            return f"the candidate has {entry.name}, which the reference does not: the port has a parameter too many, or names it differently"
        if entry.name in result.still_initial:
            return f"{entry.name} was never loaded: the candidate still holds its initial value"
        return "the parameters differ as loaded: the weights were loaded or laid out differently (later phases inherit it)"
    if entry.phase == "forward":
        module = module_of_act(entry.name)
        return (f"the forward pass departs at {entry.name} while the parameters it uses matched: "
                f"the port's {module or 'module'} computes differently")
    if entry.phase == "loss":
        return "the forward pass matched and the loss differs: the loss function or its reduction differs"
    if entry.phase == "backward":
        return ("the forward pass and the loss matched and the gradients differ: the backward pass differs "
                "(the loss's reduction, a detached tensor, a custom backward)")
    if entry.phase == "step":
        unchecked = [p.phase for p in result.phases[:4] if p.compared == 0]
        caveat = f" (nothing was recorded in: {', '.join(unchecked)})" if unchecked else ""
        return f"parameters, forward, loss and backward match and the step differs: the optimizer or its hyper-parameters differ{caveat}"
    return f"{entry.name}, outside the recording convention, differs"


# --- rendering ---------------------------------------------------------------------------------


def render_trace_text(result: TraceResult) -> str:
    """The first divergence first (headline, compare's lines for it, its module's parameters),
    the verdict, one line per phase, then notes and the tolerance."""
    lines = []
    divergence = result.first_divergence
    if divergence is None:
        lines.append("first divergence: none" + (" (every phase matched)" if result.ok else ""))
    else:
        entry = divergence.entry
        lines.append(f"first divergence: {entry.phase} {entry.name} ({entry.origin()}): {entry.describe()}")
        if entry.result is not None:
            lines.extend(f"  {line}" for line in tensor_lines(entry.result))
        lines.extend(f"  note: {note}" for note in entry.notes)
        if divergence.module_parameters and entry.phase != "parameters":
            shown = [f"{p.name} {_status(p)}" for p in divergence.module_parameters[:2 * SHOWN_NAMES]]
            more = len(divergence.module_parameters) - len(shown)
            lines.append("  its module's parameters: " + ", ".join(shown) + (f" and {more} more" if more > 0 else ""))
    lines.append(f"verdict: {result.verdict}")
    for phase in result.phases:
        lines.append(_phase_line(phase, result))
    lines.extend(f"mapping: {mapping}" for mapping in result.comparison.mappings)
    lines.extend(f"note: {note}" for note in result.notes)
    tolerance = result.comparison.tolerance
    lines.append(f"tolerance: {tolerance.formula()}")
    lines.append(f"tol={tolerance.short()} {'OK' if result.ok else 'MISMATCH'}")
    return "\n".join(lines) + "\n"


def render_trace_json(result: TraceResult) -> str:
    return json_text(result.to_dict())


def _status(entry: Entry) -> str:
    if entry.status == "mismatch" and entry.result.diagnosis:
        return f"MISMATCH ({', '.join(d.kind for d in entry.result.diagnosis)})"
    return {"ok": "OK", "mismatch": "MISMATCH", "missing": "missing from the candidate", "extra": "only in the candidate"}[entry.status]


def _phase_line(phase: Phase, result: TraceResult) -> str:
    if not phase.entries:
        return f"{phase.phase}: nothing recorded"
    first = phase.first
    line = f"{phase.phase}: {phase.compared} compared, {len(phase.mismatches)} mismatched"
    if first is not None:
        line += f", first {first.name} ({first.origin()})"
    names = lambda listed: ", ".join(listed[:SHOWN_NAMES]) + (f" and {len(listed) - SHOWN_NAMES} more" if len(listed) > SHOWN_NAMES else "")
    if phase.phase == "parameters":
        audit = result.load_audit
        parts = [f"{len(audit[key])} {label}: {names(audit[key])}"
                 for key, label in (("missing", "missing from the candidate"), ("unused", "unused, in the candidate only"),
                                    ("still_initial", "still initial")) if audit[key]]
        return line + "; load audit: " + ("; ".join(parts) if parts else "clean")
    if phase.missing:
        line += f"; recorded only in the reference: {names(phase.missing)}"
    if phase.extra:
        line += f"; recorded only in the candidate: {names(phase.extra)}"
    return line
