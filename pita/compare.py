"""Comparison: every aligned tensor pair measured against a named tolerance formula.

The reference is the first argument (usually the PyTorch dump), the candidate the second (the
port). An element passes when `|candidate - reference| <= atol + rtol*|reference|`; NaN never
passes unless `equal_nan` is set, and then only against NaN; an infinity passes only against the
same infinity. Integers and bools compare exactly (against floats too). Given no atol or rtol,
float16 and bfloat16 tensors get torch.testing's defaults for their dtype (`pita.tolerance.DTYPE_DEFAULTS`),
float32 and float64 pita's own.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from functools import cache

import numpy as np

from pita.align import BROADCAST, CONFLICT, align, expanded, shape_note, shape_relation
from pita.diagnose.base import Context, Diagnosis
from pita.dtypes import dtype_name, is_float, widen
from pita.dump import Dump
from pita.errors import UsageError
from pita.filetensor import take
from pita.progress import Progress
from pita.recording import parse
from pita.rules import Rules
from pita.stats import ULP_UNBOUNDED, measure, measure_many
from pita.strict_json import unspelt
from pita.tolerance import INF_POLICY, Tolerance, compares_exactly

# Imported where used, as the CLI's start-up counts (bench/recording.py): pita.diagnose's rules and
# pita.likely only for a failing pair, pita.budget only with a float64 run, pita.distribution only
# when asked for.

DEFAULT_TOLERANCE = Tolerance.from_options()  # what `pita compare` uses without tolerance options
COMPARE_FORMAT = "pita-compare/1"  # the JSON form of a ComparisonResult


def check_format(data, expected: str, what: str) -> None:
    """Refuses a dict that is not the JSON form `expected` names (another format, or none)."""
    found = data.get("format") if isinstance(data, dict) else None
    if found != expected:
        raise UsageError(f"not a {what}: format {found!r}, expected {expected!r}")


def tolerance_to_dict(tolerance: Tolerance) -> dict:
    return {**asdict(tolerance), "formula": tolerance.formula()}


def tolerance_from_dict(data: dict) -> Tolerance:
    return Tolerance(**{key: value for key, value in data.items() if key != "formula"})


@dataclass(frozen=True)
class AppliedTolerance:
    """A tolerance some tensors of a comparison were judged by. `dtypes`: the pair's dtype (`F32`),
    or `reference/candidate` where they differ (`F32/BF16`); `source`: `comparison` (the one asked
    for), `dtype` (the dtypes' defaults, as torch.testing's), `exact` (integers and bools take
    part), `rules` (a rules-file entry); `tensors`: how many were judged by it."""

    dtypes: str
    source: str
    tolerance: Tolerance
    tensors: int = 1

    @property
    def label(self) -> str:
        return self.dtypes + (" (rules file)" if self.source == "rules" else "")

    def short(self, nominal: Tolerance) -> str:
        """`1e-05+0.016*|reference|`, `exact`, `float64 budget`; with the NaN policy where it is not `nominal`'s."""
        if self.source in ("exact", "float64"):
            return {"exact": "exact", "float64": "float64 budget"}[self.source]
        return self.tolerance.short() + self._nan_policy_unlike(nominal)

    def bounds(self, nominal: Tolerance) -> str:
        """`atol=1e-05 rtol=0.016` (and `ulp=4`), `exact`, as the `tolerance:` line lists it."""
        if self.source == "exact":
            return "exact"
        if self.source == "float64":
            from pita.budget import BUDGET_FACTOR, FLOOR_ULPS

            return (f"{BUDGET_FACTOR:g} × max(the reference's own error against the float64 run, {FLOOR_ULPS:g} ULP of the tensor's "
                    f"largest value), per tensor ({self.tensors})")
        t = self.tolerance
        return f"atol={t.atol:g} rtol={t.rtol:g}" + (f" ulp={t.ulp}" if t.ulp is not None else "") + self._nan_policy_unlike(nominal)

    def _nan_policy_unlike(self, nominal: Tolerance) -> str:
        """` (NaN passes only against NaN)` where this tolerance's NaN policy is not `nominal`'s."""
        return f" ({self.tolerance.nan_policy()})" if self.tolerance.equal_nan != nominal.equal_nan else ""

    def to_dict(self) -> dict:
        return {"dtypes": self.dtypes, "source": self.source, "tensors": self.tensors, "tolerance": tolerance_to_dict(self.tolerance)}

    @classmethod
    def from_dict(cls, data: dict) -> AppliedTolerance:
        return cls(data["dtypes"], data["source"], tolerance_from_dict(data["tolerance"]), data["tensors"])


def as_asked(applied: list[AppliedTolerance]) -> bool:
    """Whether every tensor was judged by the comparison's own tolerance (or nothing was compared)."""
    return all(a.source == "comparison" for a in applied)


def shown_tolerance(nominal: Tolerance, applied: list[AppliedTolerance]) -> str:
    """The tolerance as a verdict line shows it (`tol=...`): the comparison's own when it judged
    every tensor, else each applied one by dtype pair (`F32:1e-06; F32/BF16:1e-05+0.016*|reference|`)."""
    if as_asked(applied):
        return nominal.short()
    return "; ".join(f"{a.label}:{a.short(nominal)}" for a in applied)


def tolerance_text(nominal: Tolerance, applied: list[AppliedTolerance]) -> str:
    """The `tolerance:` line: the comparison's formula when it judged every tensor, else the
    formula with the bounds applied to each dtype pair."""
    if as_asked(applied):
        return nominal.formula()
    ulp = " (or ULP distance <= ulp)" if any(a.tolerance.ulp is not None for a in applied if a.source != "exact") else ""
    pairs = "; ".join(f"{a.label} {a.bounds(nominal)}" for a in applied)
    if all(a.source in ("float64", "exact") for a in applied):
        return f"|candidate - reference| <= the float64 budget, by dtype: {pairs}. {nominal.nan_policy()}; {INF_POLICY}"
    return f"|candidate - reference| <= atol + rtol*|reference|{ulp}, by dtype: {pairs}. {nominal.nan_policy()}; {INF_POLICY}"


def nfc_twins(missing: list[str], extra: list[str]) -> list[str]:
    """A note for names on both lists that differ only in Unicode normalisation (`café` as one
    code point or as `e` and a combining accent), which print alike: each with its escaped form."""
    if not missing or not extra:
        return []
    import unicodedata

    by_form = {}
    for name in extra:
        by_form.setdefault(unicodedata.normalize("NFC", name), name)
    twins = [(name, by_form[form]) for name in missing if (form := unicodedata.normalize("NFC", name)) in by_form]
    if not twins:
        return []
    shown = ", ".join(f"{ascii(ours)} (reference) and {ascii(theirs)} (candidate)" for ours, theirs in twins[:5])
    more = f" and {len(twins) - 5} more" if len(twins) > 5 else ""
    return [f"{len(twins)} unpaired name(s) differ only in Unicode normalisation (NFC/NFD), so they print alike: {shown}{more}; "
            "write the names in one normalisation on both sides, or map them with a [[rename]] rule"]


@dataclass(frozen=True)
class PlatformFields:
    """Which figures of a result depend on the machine that computed it: two machines of one
    kind differ in the last bits of float sums (pita's lab holds a fresh run to its committed
    record by this). Names are keys of the result's JSON form, at any depth below the type that
    declares them. Any other float is a figure that may move a little; every other number, string
    and bool is the same on every machine."""

    ulp_counts: frozenset[str] = frozenset()  # ULP distances between two values that may each move
    free: frozenset[str] = frozenset()  # positions of the worst elements, the values there, counts of rounding-level mismatches
    unordered: frozenset[str] = frozenset()  # lists that grow or shrink with the rounding-level mismatches; free inside
    histograms: frozenset[str] = frozenset()  # distributions of ULP distances: their bins move, their totals do not

    def __or__(self, other: PlatformFields) -> PlatformFields:
        return PlatformFields(self.ulp_counts | other.ulp_counts, self.free | other.free,
                              self.unordered | other.unordered, self.histograms | other.histograms)


@dataclass
class TensorResult:
    PLATFORM = PlatformFields(  # `support`: the elements a diagnosis' finding rests on
        ulp_counts=frozenset({"max_ulp"}),
        free=frozenset({"worst_index", "max_ulp_index", "worst_reference", "worst_candidate", "mismatched", "support"}),
        unordered=frozenset({"examples"}),
        histograms=frozenset({"ulp_histogram"}),
    )
    _TEXTS = ("name", "dtype", "candidate_dtype", "would_pass", "tolerance", "notes")  # never numbers


    name: str
    ok: bool
    n: int
    shape: list[int]
    candidate_shape: list[int]
    dtype: str = ""  # as dumps name it: F32, BF16, I64, BOOL, ...
    candidate_dtype: str = ""
    mismatched: int = 0
    max_abs_diff: float = 0.0
    max_rel_diff: float = 0.0
    worst_index: list[int] = field(default_factory=list)
    worst_reference: float | None = None
    worst_candidate: float | None = None
    max_ulp: int | None = None
    max_ulp_index: list[int] = field(default_factory=list)
    nan_reference: int = 0
    nan_candidate: int = 0
    examples: list[dict] = field(default_factory=list)  # the first mismatched elements
    would_pass: str = ""  # for a failure: the tolerances that would let it pass, or why none would
    tolerance: str | None = None  # set when this tensor's tolerance is not the comparison's (rules file, dtype)
    float64: dict | None = None  # each side's error against a float64 reference run
    notes: list[str] = field(default_factory=list)
    diagnosis: list[Diagnosis] = field(default_factory=list)
    # Asked for (`distributions=True`): the ULP histogram of a float pair, the error map of a failing
    # pair (pita.distribution); left out of the JSON when not measured.
    ulp_histogram: dict | None = None
    error_map: dict | None = None

    @property
    def shape_conflict(self) -> bool:
        return shape_relation(self.shape, self.candidate_shape) == CONFLICT  # pita.align: flat and broadcast pairs compare

    def to_dict(self) -> dict:
        # as `asdict` makes it, without its generic deep copy (a third of `pita compare --format json`'s time on 500 tensors)
        data = {f.name: _copied(getattr(self, f.name)) if f.name != "diagnosis" else [d.to_dict() for d in self.diagnosis] for f in fields(self)}
        for key in ("ulp_histogram", "error_map"):
            if data[key] is None:
                del data[key]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> TensorResult:
        """A tensor's result from its JSON form (`to_dict`, or strict JSON read back)."""
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        values.update({key: unspelt(value) for key, value in values.items() if key not in cls._TEXTS})
        values["diagnosis"] = [Diagnosis.from_dict(d) for d in data.get("diagnosis", [])]
        return cls(**values)


def _copied(value):
    """A JSON-like value (dicts, lists, numbers, strings) copied, so that changing the copy leaves the original."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


@dataclass
class ComparisonResult:
    reference: str
    candidate: str
    tolerance: Tolerance
    tensors: list[TensorResult]
    missing: list[str]
    extra: list[str]
    mappings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the dump readers said (files skipped, ...)
    applied: list[AppliedTolerance] = field(default_factory=list)  # the tolerances the tensors were judged by, per dtype pair
    likely: list[dict] = field(default_factory=list)  # the catalog's pitfalls that fit (pita.likely): {id, title, chapter, fix, evidence}

    @property
    def ok(self) -> bool:
        """Every tensor paired and within its tolerance, and at least one compared: nothing
        compared is never OK."""
        return bool(self.tensors) and not self.missing and not self.extra and all(t.ok for t in self.tensors)

    @property
    def worst(self) -> float:
        """The largest max|diff|; NaN where some tensor's worst element is undefined (a NaN in it)."""
        diffs = [t.max_abs_diff for t in self.tensors]
        return math.nan if any(math.isnan(d) for d in diffs) else max(diffs, default=0.0)

    def to_dict(self, tensor_dict=None) -> dict:
        """The JSON form. `tensor_dict`: what stands for each tensor in it (default its own
        `to_dict`); a streaming writer passes a stand-in that makes the dict only when written."""
        tensor_dict = tensor_dict or TensorResult.to_dict
        return {
            "format": COMPARE_FORMAT,
            "ok": self.ok,
            "reference": self.reference,
            "candidate": self.candidate,
            "tolerance": tolerance_to_dict(self.tolerance),
            "worst": self.worst,
            "notes": self.notes,
            "missing": self.missing,
            "extra": self.extra,
            "mappings": self.mappings,
            **({"applied": [a.to_dict() for a in self.applied]} if self.applied else {}),  # none: nothing compared
            "tensors": [tensor_dict(t) for t in self.tensors],
            "likely": self.likely,
        }

    @classmethod
    def from_dict(cls, data: dict) -> ComparisonResult:
        """A comparison from its JSON form (`to_dict`, or `pita compare --json`'s file read back);
        `ok` and `worst` are derived again. Raises `UsageError` for another format or none."""
        check_format(data, COMPARE_FORMAT, "pita compare result")
        return cls(reference=data["reference"], candidate=data["candidate"], tolerance=tolerance_from_dict(data["tolerance"]),
                   tensors=[TensorResult.from_dict(t) for t in data["tensors"]], missing=data["missing"], extra=data["extra"],
                   mappings=data["mappings"], notes=data["notes"],
                   applied=[AppliedTolerance.from_dict(a) for a in data.get("applied", [])], likely=data.get("likely", []))


def check_same_inputs(reference: Dump, candidate: Dump) -> None:
    """Refuses dumps made from different inputs: their differences would mean nothing."""
    ours, theirs = reference.metadata.get("input_sha256"), candidate.metadata.get("input_sha256")
    if ours and theirs and ours != theirs:
        differ = f"input hashes differ (reference {ours[:12]}…, candidate {theirs[:12]}…): the dumps come from different inputs"
        raise UsageError(f"{differ}; pass allow_input_mismatch=True to compare anyway",
                         cli_message=f"{differ}; pass --allow-input-mismatch to compare anyway")


def without_unwalked(dump: Dump) -> tuple[Dump, dict[str, int]]:
    """The dump without the recorded names no walk compares (`pita.recording.parse` gives them no
    phase): `init/` values before loading, which only trace's load audit reads, and `mask<k>/`
    random masks, which trace reads to explain random ops (docs/recording.md); and how many of each
    kind it had."""
    skipped: dict[str, int] = {}
    tensors = {}
    for name, tensor in dump.tensors.items():
        recorded = parse(name)
        if recorded is not None and recorded.phase is None:
            skipped[recorded.kind] = skipped.get(recorded.kind, 0) + 1
        else:
            tensors[name] = tensor
    if not skipped:
        return dump, {}
    return Dump(tensors=tensors, metadata=dump.metadata, source=dump.source, notes=list(getattr(dump, "notes", []))), skipped


SKIPPED_NOTES = {"init": "init/ tensor(s) not compared: the values before loading, read by pita trace's load audit",
                 "mask": "mask tensor(s) not compared: the random masks the run drew, which pita trace reads and a port replays"}


def _as_compared(dump: Dump) -> Dump:
    """A recording leaves out what no walk compares, with a note; any other dump as it is."""
    if "recording" not in dump.metadata:
        return dump
    compared, skipped = without_unwalked(dump)
    compared.notes += [f"{count} {SKIPPED_NOTES[kind]}" for kind, count in skipped.items()]
    return compared


def compare_dumps(
    reference: Dump,
    candidate: Dump,
    tolerance: Tolerance = DEFAULT_TOLERANCE,
    *,
    allow_input_mismatch: bool = False,
    rules: Rules | None = None,
    reference64: Dump | None = None,
    distributions: bool = False,
) -> ComparisonResult:
    """Every aligned pair measured (`compare_pairs`), then the catalog's likely causes of what
    failed (pita.likely), from the diagnoses and the settings the dumps recorded."""
    result = compare_pairs(reference, candidate, tolerance, allow_input_mismatch=allow_input_mismatch, rules=rules,
                           reference64=reference64, distributions=distributions)
    if not result.ok:  # a passing comparison has no likely causes (pita.likely.comparison_causes)
        from pita.likely import comparison_causes, facts_of
        from pita.settings import compare_settings

        settings = compare_settings(reference.metadata, candidate.metadata)
        facts = facts_of(reference, candidate, settings.to_dict() if settings is not None else None)
        result.likely = [cause.to_dict() for cause in comparison_causes(result, facts)]
    return result


def compare_pairs(
    reference: Dump,
    candidate: Dump,
    tolerance: Tolerance = DEFAULT_TOLERANCE,
    *,
    allow_input_mismatch: bool = False,
    rules: Rules | None = None,
    reference64: Dump | None = None,
    distributions: bool = False,
    progress: str = "compare",
) -> ComparisonResult:
    """Every aligned pair measured, without likely causes (trace names its own, from its walk);
    with `distributions`, also each float pair's ULP histogram and each failing pair's error map
    (one more streaming pass per pair). `progress`: the label of the progress line on a terminal
    (pita.progress; trace passes its own)."""
    if not allow_input_mismatch:
        check_same_inputs(reference, candidate)
    reference, candidate = _as_compared(reference), _as_compared(candidate)
    rules = rules or Rules()
    reference_tensors, reference_mappings = rules.apply(reference.tensors, "reference")
    candidate_tensors, candidate_mappings = rules.apply(candidate.tensors, "candidate")
    alignment = align(reference_tensors, candidate_tensors)
    exact_all = rules.apply(reference64.tensors, "reference")[0] if reference64 is not None else {}  # renamed as the reference is
    exact = float64_references(exact_all, reference_tensors, alignment.pairs)
    context = Context(batch_sizes={b for b in (reference.batch_size, candidate.batch_size) if b})
    pairs = [_judged_pair(name, reference_tensors[name], candidate_tensors[name], tolerance, rules) for name in alignment.pairs]
    if exact:
        _judge_by_float64(pairs, tolerance, exact, exact_all, reference.metadata, progress)
    measured = _measured(pairs)
    tensors, applied = [], {}
    with Progress(len(pairs), progress) as shown:
        for pair in pairs:
            shown.advance(pair.name)
            key = (pair.dtypes, pair.source or "comparison", tolerance if pair.source == "float64" else pair.tolerance)  # one entry for every budget
            applied[key] = applied.get(key, 0) + 1
            tensors.append(_result(pair, measured.get(pair.name), context, exact, exact_all, reference_tensors, distributions))
    _excuse_after_noise(tensors)
    if any(t.diagnosis for t in tensors):
        from pita import diagnose

        diagnose.corroborate([t.diagnosis for t in tensors])
    return ComparisonResult(
        reference=f"{reference.source} ({reference.describe()})",
        candidate=f"{candidate.source} ({candidate.describe()})",
        tolerance=tolerance,
        tensors=tensors,
        missing=alignment.missing,
        extra=alignment.extra,
        mappings=reference_mappings + candidate_mappings,
        notes=[f"{side}: {note}" for side, dump in (("reference", reference), ("candidate", candidate))
               for note in getattr(dump, "notes", [])] + nfc_twins(alignment.missing, alignment.extra),
        applied=[AppliedTolerance(dtypes, source, own, count) for (dtypes, source, own), count in applied.items()],
    )


@dataclass
class _Pair:
    """One aligned pair on its way through compare: the tensors, the tolerance it is judged by,
    where that comes from (`tensor_tolerance`) and the note saying so; its float64 budget, if any;
    its result, made before measuring (names, shapes, dtypes)."""

    name: str
    reference: object
    candidate: object
    tolerance: Tolerance
    source: str
    note: str
    result: TensorResult
    budget: object = None  # a pita.budget.Budget

    @property
    def dtypes(self) -> str:
        """`F32`, or `F32/BF16` where the sides differ."""
        return "/".join(dict.fromkeys((self.result.dtype, self.result.candidate_dtype)))

    @property
    def batched(self) -> bool:
        """Measured with the others in one batch: every pair of equal size (not a shape conflict, not
        a broadcast pair, whose expansion is made in memory only while that pair is measured)."""
        return not self.result.shape_conflict and shape_relation(self.result.shape, self.result.candidate_shape) != BROADCAST


def _judged_pair(name: str, reference, candidate, tolerance: Tolerance, rules: Rules) -> _Pair:
    own, source, note = tensor_tolerance(name, reference.dtype, candidate.dtype, tolerance, rules)
    return _Pair(name, reference, candidate, own, source, note, _new_result(name, reference, candidate))


def _judge_by_float64(pairs: list[_Pair], tolerance: Tolerance, exact: dict, exact_all: dict, metadata: dict, progress: str) -> None:
    """Each pair the float64 run holds gets its budget, and is judged by it where the tolerance is
    not the rules file's and the dtypes allow (`pita.budget.judged_by_float64`)."""
    from pita.budget import budget_of, judged_by_float64, update_floor_of, update_share

    share = update_share(metadata)
    with Progress(len(pairs), f"{progress} float64 budget") as shown:
        for pair in pairs:
            shown.advance(pair.name)
            if pair.name in exact and pair.reference.size == pair.candidate.size:  # a shape conflict or a broadcast pair has no budget
                pair.budget = budget_of(exact[pair.name], pair.reference, update_floor_of(pair.name, exact_all, share))
                if pair.source in ("", "dtype") and judged_by_float64(pair.reference, pair.candidate, exact[pair.name]):
                    pair.tolerance, pair.source, pair.note = pair.budget.tolerance(tolerance), "float64", ""


def _measured(pairs: list[_Pair]) -> dict:
    """The statistics of every batched pair, measured in one call (`pita.stats.measure_many`), by name."""
    batch = [pair for pair in pairs if pair.batched]
    found = measure_many([(pair.reference, pair.candidate) for pair in batch], [pair.tolerance for pair in batch])
    return {pair.name: stats for pair, stats in zip(batch, found, strict=True)}


def _result(pair: _Pair, stats, context: Context, exact: dict, exact_all: dict, reference_tensors: dict, distributions: bool) -> TensorResult:
    """The pair's result: filled from its statistics (measured here for a broadcast pair), diagnosed
    if it fails, with its float64 figures, what would let it pass and, if asked, its distributions."""
    result, name, own = pair.result, pair.name, pair.tolerance
    if not result.shape_conflict:
        reference, candidate = expanded(pair.reference, pair.candidate)
        stats = stats or measure(reference, candidate, own)
        _fill(result, stats, reference, candidate)
    if not result.ok:
        from pita import diagnose

        result.diagnosis = (diagnose.explain(pair.reference, pair.candidate, own, context, name=name) if result.shape_conflict else
                            diagnose.explain(reference, candidate, own, context, stats, name=name))
    if pair.source:
        result.tolerance = {"exact": "exact", "float64": f"float64 budget: atol={own.atol:.3g}"}.get(pair.source, own.short())
    if pair.note:
        result.notes.append(pair.note)
    if pair.budget is not None:
        from pita.budget import float64_figures, noise_moved

        result.float64 = float64_figures(pair.budget, exact[name], pair.candidate)
        if pair.source == "float64" and not result.ok and (moved := noise_moved(name, pair.reference, pair.candidate, own.atol, exact_all,
                                                                               reference_tensors)):
            _excuse(result, "noise_moved", moved, f"within float32 noise: {moved} element(s) whose gradient cannot be told from zero "
                    "moved by up to twice the update (Adam-type optimizers turn noise into steps of about lr)")
    if not result.ok and not result.shape_conflict:
        result.would_pass = beyond_budget(result) if pair.source == "float64" else would_pass(result, own, in_rules_file=pair.source == "rules")
    if distributions and not result.shape_conflict:
        from pita.distribution import measure_distribution

        result.ulp_histogram, result.error_map = measure_distribution(reference, candidate, error_map=not result.ok)
    return result


def tensor_tolerance(name: str, reference_dtype, candidate_dtype, tolerance: Tolerance, rules: Rules) -> tuple[Tolerance, str, str]:
    """The tolerance one pair is compared with; where it comes from: '' (the comparison's own),
    'exact', 'rules' (a rules-file entry) or 'dtype' (the dtype's default); and the note saying so."""
    by_dtype, names = _for_dtypes(tolerance, reference_dtype, candidate_dtype)
    own = rules.tolerance_for(name, by_dtype)
    if compares_exactly(*names):
        return by_dtype, "exact", "integers and bools compare exactly: the rules file's tolerance does not apply to them" if own != by_dtype else ""
    if own != by_dtype:
        return own, "rules", f"tolerance from the rules file: {own.formula()}"
    if own != tolerance:
        return own, "dtype", f"default tolerance for {' against '.join(names)} (torch.testing's): {own.formula()}"
    return own, "", ""


@cache
def _for_dtypes(tolerance: Tolerance, reference_dtype, candidate_dtype) -> tuple[Tolerance, dict]:
    """The tolerance for a dtype pair, and the pair's dump names (as a dict's keys, each once):
    the same for every pair of these dtypes, so worked out once."""
    return tolerance.for_dtypes(reference_dtype, candidate_dtype), dict.fromkeys(_dtype_name(d) for d in (reference_dtype, candidate_dtype))


_dtype_name = cache(dtype_name)


def float64_references(renamed: dict, reference_tensors: dict, names: list[str]) -> dict:
    """The float64 run's tensors (`renamed` as the reference's are) for the compared names. One of
    another dtype than float64, or of another shape than the reference's, is a user's mistake: it
    is not a float64 run of the same computation."""
    found = {name: renamed[name] for name in names if name in renamed}
    for name, exact in found.items():
        if is_float(exact.dtype) and dtype_name(exact.dtype) != "F64":
            what = f"tensor {name!r} is {dtype_name(exact.dtype)}: a float64 run holds F64 tensors"
            raise UsageError(f"reference64: {what}", cli_message=f"--reference64: {what}")
        if tuple(exact.shape) != tuple(reference_tensors[name].shape):
            shapes = f"tensor {name!r} has shape {list(exact.shape)}, the reference's is {list(reference_tensors[name].shape)}"
            raise UsageError(f"reference64: {shapes}: not a run of the same computation",
                             cli_message=f"--reference64: {shapes}: not a run of the same computation")
    return found


def _excuse(result: TensorResult, key: str, count: int, note: str) -> None:
    """A pair beyond its float64 budget only where float32 noise explains it: within the budget, said so."""
    result.ok, result.mismatched, result.would_pass, result.diagnosis = True, 0, "", []
    result.float64[key] = count
    result.notes.append(note)


def _excuse_after_noise(tensors: list[TensorResult]) -> None:
    """Once step 1 moved elements on noise, later steps inherit the move: a later tensor beyond its
    budget in at most NOISE_SPREAD of its elements is not judged (said so), a broader one still is."""
    moved = [t.name for t in tensors if t.float64 and t.float64.get("noise_moved")]
    if not moved:
        return
    from pita.budget import NOISE_SPREAD, later_step

    for t in tensors:
        if not t.ok and t.float64 and later_step(t.name) and t.mismatched <= NOISE_SPREAD * t.n:
            _excuse(t, "after_noise", t.mismatched, f"not judged: {t.mismatched} element(s) beyond the budget after step 1 moved "
                    f"elements on noise ({moved[0]}{' and others' if len(moved) > 1 else ''}); the float64 run cannot say "
                    "where that noise went")


def beyond_budget(result: TensorResult) -> str:
    """Why no tolerance is suggested for a tensor judged by the float64 budget."""
    from pita.budget import BUDGET_FACTOR, FLOOR_ULPS

    f = result.float64
    return (f"nothing: the float64 run allows |diff| <= {f['allowed']:.3g} here (pita.budget: {BUDGET_FACTOR:g} × the larger of the "
            f"reference's own error {f['reference_error']:.3g} and {FLOOR_ULPS:g} ULP of the tensor's largest value, {f['scale']:.3g}); "
            f"max|diff| is {result.max_abs_diff / f['allowed']:.3g}× that, beyond float32 noise")


def _new_result(name: str, reference, candidate) -> TensorResult:
    """A pair's result before it is measured: names, shapes, dtypes and the notes on them. Either
    side may be a `FileTensor` (read a chunk or a sample at a time, never whole); shapes pair as
    `pita.align.shape_relation` says: a pair whose shapes differ only in size-1 axes is compared
    flat, and one whose smaller side broadcasts to the other's is compared after expanding it
    (`pita.align.expanded`, in memory); a shape conflict fails unmeasured."""
    names = [_dtype_name(tensor.dtype) for tensor in (reference, candidate)]
    for side, tensor, dtype in zip(("reference", "candidate"), (reference, candidate), names):
        if dtype is None:
            raise UsageError(f"{side} tensor {name!r} has dtype {tensor.dtype}, which no dump format holds")
    result = TensorResult(name=name, ok=True, n=int(reference.size), shape=list(reference.shape), candidate_shape=list(candidate.shape),
                          dtype=names[0], candidate_dtype=names[1])
    if result.dtype != result.candidate_dtype:
        result.notes.append(f"dtypes differ: reference {result.dtype}, candidate {result.candidate_dtype}")
    if note := shape_note(result.shape, result.candidate_shape):
        result.notes.append(note)
    if result.shape_conflict:
        result.ok = False
    elif shape_relation(result.shape, result.candidate_shape) == BROADCAST:
        result.n = max(int(reference.size), int(candidate.size))  # as expanded
    return result


def _fill(result: TensorResult, stats, reference, candidate) -> None:
    index = lambda flat: [int(i) for i in np.unravel_index(flat, reference.shape)]
    # The worst element and the examples, read with one `take` a side (a `FileTensor` reads its file once).
    wanted = ([stats.worst] if stats.worst >= 0 else []) + list(stats.examples)
    ours, theirs = ([widen(take(tensor, wanted)).tolist() if wanted else [] for tensor in (reference, candidate)])  # Python floats, ints or bools
    result.mismatched = stats.mismatched
    result.ok = stats.mismatched == 0
    result.max_abs_diff, result.max_rel_diff = stats.max_abs_diff, stats.max_rel_diff
    result.max_ulp = stats.max_ulp
    result.nan_reference, result.nan_candidate = stats.nan_reference, stats.nan_candidate
    if stats.worst >= 0:
        result.worst_index = index(stats.worst)
        result.worst_reference, result.worst_candidate = ours.pop(0), theirs.pop(0)
        if math.isinf(stats.max_abs_diff) and any(isinstance(v, float) and math.isnan(v) for v in (result.worst_reference, result.worst_candidate)):
            result.max_abs_diff = math.nan  # |NaN - x| is NaN: undefined, not infinite (measure ranks it as inf)
    if stats.max_ulp_at >= 0:
        result.max_ulp_index = index(stats.max_ulp_at)
    result.examples = [
        {"index": index(i), "reference": r, "candidate": c}
        for i, r, c in zip(stats.examples, ours, theirs, strict=True)
    ]


# --- what would have passed ----------------------------------------------------------------------


def would_pass(result: TensorResult, tolerance: Tolerance, in_rules_file: bool = False) -> str:
    """The smallest tolerances that would let a failing tensor pass, each on its own, or why none
    would. Each one passes when the comparison is re-run with it (the rest of the command line
    unchanged; for a tensor whose tolerance comes from the rules file, set in its entry there)."""
    if compares_exactly(result.dtype, result.candidate_dtype):
        return "no tolerance (integers and bools compare exactly)"
    if not math.isfinite(result.max_abs_diff):
        return _why_no_tolerance(result, tolerance, in_rules_file)
    options = [{"atol": _round_up(result.max_abs_diff)}]
    if math.isfinite(result.max_rel_diff):  # inf where the reference holds a zero: no rtol helps there
        options.append({"rtol": _rtol_text(result), "atol": "0"})
    if result.max_ulp is not None and result.max_ulp < ULP_UNBOUNDED:
        options.append({"ulp": str(result.max_ulp)})
    options = [option for option in options if all(math.isfinite(float(value)) for value in option.values())]  # 1.8e+308 is inf
    if not options:
        return "no tolerance suggested (|diff| rounds up beyond the float64 range)"
    if tolerance.equal_nan and not in_rules_file:
        options = [{**option, "equal_nan": "true"} for option in options]
    return _phrase(options, in_rules_file)


def _why_no_tolerance(result: TensorResult, tolerance: Tolerance, in_rules_file: bool) -> str:
    if not tolerance.equal_nan and result.mismatched == result.nan_reference == result.nan_candidate:
        # every NaN on one side lies against a NaN on the other, and nothing else fails
        same = {} if in_rules_file else _options_of(tolerance)
        return _phrase([{**same, "equal_nan": "true"}], in_rules_file) + " (every mismatch is NaN against NaN)"
    if all(isinstance(v, float) and math.isfinite(v) for v in (result.worst_reference, result.worst_candidate)):
        return "no tolerance suggested (|diff| is beyond the float64 range)"
    return "no tolerance (NaN or inf against a number)"


def _options_of(tolerance: Tolerance) -> dict:
    """The command-line options that give `tolerance` again (none for the per-dtype defaults)."""
    options = {} if tolerance.dtype_defaults else {"atol": repr(tolerance.atol), "rtol": repr(tolerance.rtol)}
    return options | ({"ulp": str(tolerance.ulp)} if tolerance.ulp is not None else {})


def _phrase(options: list[dict], in_rules_file: bool) -> str:
    """`--rtol 0.25 --atol 0` on the command line; `[rtol = 0.25, atol = 0]` in a rules-file entry."""
    if in_rules_file:
        entries = [", ".join(f"{key} = {value}" for key, value in option.items()) for option in options]
        return " or ".join(f"[{entry}]" for entry in entries) + " in this tensor's [tolerance] entry of the rules file"
    flag = lambda key, value: f"--{key.replace('_', '-')}" if value == "true" else f"--{key} {value}"
    return ", or ".join(" ".join(flag(key, value) for key, value in option.items()) for option in options)


def _rtol_text(result: TensorResult) -> str:
    """max rel diff is diff/|reference| rounded to float64, so an rtol of exactly that value can
    fail on re-run (0.3 is not 0.3 in binary): the text must read back above it. Exactly it is
    enough where rtol*|reference| is exact in float64 (then no element can lie above it and still
    round to it): for a reference of float32 or narrower and an rtol of few significant bits."""
    value = result.max_rel_diff
    exact = _significant_bits(value) + REFERENCE_BITS.get(result.dtype, 53) <= 53
    return _round_up(value, strictly=not exact)


REFERENCE_BITS = {"F32": 24, "F16": 11, "BF16": 8}  # significant bits; float64 products may also underflow


def _significant_bits(value: float) -> int:
    mantissa = int(math.frexp(value)[0] * 2**53)
    return mantissa.bit_length() - (mantissa & -mantissa).bit_length() + 1


def _round_up(value: float, strictly: bool = False) -> str:
    """`value` to three significant digits such that the text, read back as a float, is at least
    `value` (above it, when `strictly`). Exact down to the smallest subnormal."""
    if math.isnan(value):
        return "nan"  # no number is at least NaN
    from decimal import Decimal

    enough = (lambda text: float(text) > value) if strictly else (lambda text: float(text) >= value)
    text = f"{value:.3g}"
    shown = Decimal(text)
    step = Decimal(1).scaleb(shown.adjusted() - 2)
    while not enough(text):
        shown += step
        text = f"{float(shown):.3g}"
    return text
