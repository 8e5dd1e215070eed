"""Comparison: every aligned tensor pair measured against a named tolerance formula.

The reference is the first argument (usually the PyTorch dump), the candidate the second (the
port). An element passes when `|candidate - reference| <= atol + rtol*|reference|`; NaN never
passes unless `equal_nan` is set, and then only against NaN; an infinity passes only against the
same infinity.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from pita import diagnose
from pita.align import Rules, align
from pita.dump import Dump
from pita.errors import UsageError
from pita.diagnose.base import Diagnosis
from pita.filetensor import take
from pita.stats import measure


@dataclass(frozen=True)
class Tolerance:
    atol: float = 1e-6
    rtol: float = 0.0
    ulp: int | None = None  # when set, an element also passes within this many ULPs
    equal_nan: bool = False

    def formula(self) -> str:
        nan = "NaN passes only against NaN" if self.equal_nan else "NaN never passes"
        ulp = f", or ULP distance <= {self.ulp}" if self.ulp is not None else ""
        return f"|candidate - reference| <= atol + rtol*|reference| (atol={self.atol:g}, rtol={self.rtol:g}){ulp}; {nan}; an inf passes only against the same inf"

    def short(self) -> str:
        text = f"{self.atol:g}" if self.rtol == 0 else f"{self.atol:g}+{self.rtol:g}*|reference|"
        return text + (f" or {self.ulp} ulp" if self.ulp is not None else "")


@dataclass
class TensorResult:
    name: str
    ok: bool
    n: int
    shape: list[int]
    candidate_shape: list[int]
    mismatched: int = 0
    max_abs_diff: float = 0.0
    max_rel_diff: float = 0.0
    worst_index: list[int] = field(default_factory=list)
    worst_reference: float | None = None
    worst_candidate: float | None = None
    max_ulp: int | None = None
    max_ulp_index: list[int] = field(default_factory=list)
    examples: list[dict] = field(default_factory=list)  # the first mismatched elements
    tolerance: str | None = None  # set when a rules file overrides the tolerance for this tensor
    float64: dict | None = None  # each side's error against a float64 reference run
    notes: list[str] = field(default_factory=list)
    diagnosis: list[Diagnosis] = field(default_factory=list)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["diagnosis"] = [d.to_dict() for d in self.diagnosis]
        return data


@dataclass
class ComparisonResult:
    reference: str
    candidate: str
    tolerance: Tolerance
    tensors: list[TensorResult]
    missing: list[str]
    extra: list[str]
    mappings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.extra and all(t.ok for t in self.tensors)

    @property
    def worst(self) -> float:
        return max((t.max_abs_diff for t in self.tensors), default=0.0)

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "reference": self.reference,
            "candidate": self.candidate,
            "tolerance": {**asdict(self.tolerance), "formula": self.tolerance.formula()},
            "worst": self.worst,
            "missing": self.missing,
            "extra": self.extra,
            "mappings": self.mappings,
            "tensors": [t.to_dict() for t in self.tensors],
        }


def check_same_inputs(reference: Dump, candidate: Dump) -> None:
    """Refuses dumps made from different inputs: their differences would mean nothing."""
    ours, theirs = reference.metadata.get("input_sha256"), candidate.metadata.get("input_sha256")
    if ours and theirs and ours != theirs:
        raise UsageError(
            f"input hashes differ (reference {ours[:12]}…, candidate {theirs[:12]}…): the dumps come "
            "from different inputs; pass --allow-input-mismatch to compare anyway"
        )


def compare_dumps(
    reference: Dump,
    candidate: Dump,
    tolerance: Tolerance = Tolerance(),
    *,
    allow_input_mismatch: bool = False,
    rules: Rules | None = None,
    reference64: Dump | None = None,
) -> ComparisonResult:
    if not allow_input_mismatch:
        check_same_inputs(reference, candidate)
    rules = rules or Rules()
    reference_tensors, reference_mappings = rules.apply(reference.tensors, "reference")
    candidate_tensors, candidate_mappings = rules.apply(candidate.tensors, "candidate")
    alignment = align(reference_tensors, candidate_tensors)
    context = diagnose.Context(batch_sizes={b for b in (reference.batch_size, candidate.batch_size) if b})
    tensors = []
    for name in alignment.pairs:
        own = rules.tolerance_for(name, tolerance)
        result = compare_tensor(name, reference_tensors[name], candidate_tensors[name], own, context)
        if own != tolerance:
            result.tolerance = own.short()
            result.notes.append(f"tolerance from the rules file: {own.formula()}")
        if reference64 is not None and name in reference64.tensors and result.shape == list(reference64.tensors[name].shape):
            result.float64 = float64_errors(reference64.tensors[name], reference_tensors[name], candidate_tensors[name].reshape(reference_tensors[name].shape))
        tensors.append(result)
    diagnose.corroborate([t.diagnosis for t in tensors])
    return ComparisonResult(
        reference=f"{reference.source} ({reference.describe()})",
        candidate=f"{candidate.source} ({candidate.describe()})",
        tolerance=tolerance,
        tensors=tensors,
        missing=alignment.missing,
        extra=alignment.extra,
        mappings=reference_mappings + candidate_mappings,
    )


def float64_errors(exact: np.ndarray, reference: np.ndarray, candidate: np.ndarray) -> dict:
    """Each side's largest error against a float64 run of the same computation: which side drifted."""
    reference_error = measure(exact, reference, Tolerance()).max_abs_diff
    candidate_error = measure(exact, candidate, Tolerance()).max_abs_diff
    ratio = candidate_error / reference_error if reference_error else (1.0 if candidate_error == 0 else float("inf"))
    return {"reference_error": reference_error, "candidate_error": candidate_error, "ratio": ratio}


DIAGNOSE_MAX = 1 << 22  # larger failing tensors are diagnosed on a sample of their elements


def compare_tensor(name: str, reference: np.ndarray, candidate: np.ndarray, tolerance: Tolerance, context: diagnose.Context) -> TensorResult:
    for side, array in (("reference", reference), ("candidate", candidate)):
        if array.dtype.kind not in "biuf":
            raise UsageError(f"{side} tensor {name!r} has dtype {array.dtype}, not a number type")
    shape, candidate_shape = list(reference.shape), list(candidate.shape)
    result = TensorResult(name=name, ok=True, n=int(reference.size), shape=shape, candidate_shape=candidate_shape)
    if shape != candidate_shape:
        if [d for d in shape if d != 1] != [d for d in candidate_shape if d != 1]:
            result.ok = False
            if reference.size <= DIAGNOSE_MAX and candidate.size <= DIAGNOSE_MAX:
                result.diagnosis = diagnose.explain(np.asarray(reference), np.asarray(candidate), tolerance, context)
            return result
        result.notes.append(f"shapes {shape} (reference) and {candidate_shape} (candidate) differ only in size-1 axes: compared flat")
        candidate = candidate.reshape(reference.shape)
    stats = measure(reference, candidate, tolerance)
    _fill(result, stats, reference, candidate)
    if not result.ok:
        result.diagnosis = _diagnose(result, reference, candidate, tolerance, context)
    return result


def _fill(result: TensorResult, stats, reference: np.ndarray, candidate: np.ndarray) -> None:
    index = lambda flat: [int(i) for i in np.unravel_index(flat, reference.shape)]
    result.mismatched = stats.mismatched
    result.ok = stats.mismatched == 0
    result.max_abs_diff, result.max_rel_diff = stats.max_abs_diff, stats.max_rel_diff
    result.max_ulp = stats.max_ulp
    if stats.worst >= 0:
        result.worst_index = index(stats.worst)
        result.worst_reference = float(take(reference, [stats.worst])[0])
        result.worst_candidate = float(take(candidate, [stats.worst])[0])
    if stats.max_ulp_at >= 0:
        result.max_ulp_index = index(stats.max_ulp_at)
    result.examples = [
        {"index": index(i), "reference": float(r), "candidate": float(c)}
        for i, r, c in zip(stats.examples, take(reference, stats.examples), take(candidate, stats.examples))
    ]


def _diagnose(result: TensorResult, reference, candidate, tolerance: Tolerance, context) -> list[Diagnosis]:
    if reference.size <= DIAGNOSE_MAX:
        return diagnose.explain(np.asarray(reference), np.asarray(candidate), tolerance, context)
    # Elementwise rules on an evenly spaced sample; axis orders need the whole tensor.
    sample = np.linspace(0, reference.size - 1, DIAGNOSE_MAX, dtype=np.int64)
    result.notes.append(f"diagnosed on a sample of {sample.size} of {reference.size} elements")
    flat = lambda a: take(a, sample)
    return diagnose.explain(flat(reference), flat(candidate), tolerance, context)
