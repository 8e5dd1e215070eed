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
from pita.align import align
from pita.dump import Dump
from pita.errors import UsageError
from pita.diagnose.base import Diagnosis


@dataclass(frozen=True)
class Tolerance:
    atol: float = 1e-6
    rtol: float = 0.0
    equal_nan: bool = False

    def formula(self) -> str:
        nan = "NaN passes only against NaN" if self.equal_nan else "NaN never passes"
        return f"|candidate - reference| <= atol + rtol*|reference| (atol={self.atol:g}, rtol={self.rtol:g}); {nan}"

    def short(self) -> str:
        return f"{self.atol:g}" if self.rtol == 0 else f"{self.atol:g}+{self.rtol:g}*|reference|"


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


def compare_dumps(reference: Dump, candidate: Dump, tolerance: Tolerance = Tolerance(), *, allow_input_mismatch: bool = False) -> ComparisonResult:
    if not allow_input_mismatch:
        check_same_inputs(reference, candidate)
    alignment = align(reference.tensors, candidate.tensors)
    context = diagnose.Context(batch_sizes={b for b in (reference.batch_size, candidate.batch_size) if b})
    tensors = [
        compare_tensor(name, reference.tensors[name], candidate.tensors[name], tolerance, context)
        for name in alignment.pairs
    ]
    diagnose.corroborate([t.diagnosis for t in tensors])
    return ComparisonResult(
        reference=f"{reference.source} ({reference.describe()})",
        candidate=f"{candidate.source} ({candidate.describe()})",
        tolerance=tolerance,
        tensors=tensors,
        missing=alignment.missing,
        extra=alignment.extra,
    )


def compare_tensor(name: str, reference: np.ndarray, candidate: np.ndarray, tolerance: Tolerance, context: diagnose.Context) -> TensorResult:
    shape, candidate_shape = list(reference.shape), list(candidate.shape)
    result = TensorResult(name=name, ok=True, n=int(reference.size), shape=shape, candidate_shape=candidate_shape)
    if shape != candidate_shape:
        if [d for d in shape if d != 1] != [d for d in candidate_shape if d != 1]:
            result.ok = False
            result.notes.append(f"shape conflict: reference {shape}, candidate {candidate_shape}")
            result.diagnosis = diagnose.explain(np.asarray(reference), np.asarray(candidate), tolerance, context)
            return result
        result.notes.append(f"shapes {shape} (reference) and {candidate_shape} (candidate) differ only in size-1 axes: compared flat")
        candidate = candidate.reshape(reference.shape)
    failed = _measure(result, np.asarray(reference), np.asarray(candidate), tolerance)
    if failed:
        result.diagnosis = diagnose.explain(np.asarray(reference), np.asarray(candidate), tolerance, context)
    return result


def _measure(result: TensorResult, reference: np.ndarray, candidate: np.ndarray, tolerance: Tolerance) -> bool:
    r, c = reference.astype(np.float64), candidate.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(c - r)
        same = (c == r) | (tolerance.equal_nan & np.isnan(c) & np.isnan(r))
        passed = same | (diff <= tolerance.atol + tolerance.rtol * np.abs(r))
        diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
        rel = np.where(diff == 0, 0.0, diff / np.abs(r))
    result.mismatched = int(np.count_nonzero(~passed))
    result.ok = result.mismatched == 0
    if r.size == 0:
        return False
    worst = int(np.argmax(diff))
    result.max_abs_diff = float(diff.flat[worst])
    result.max_rel_diff = float(np.max(rel))
    result.worst_index = [int(i) for i in np.unravel_index(worst, r.shape)]
    result.worst_reference, result.worst_candidate = float(r.flat[worst]), float(c.flat[worst])
    ulp = ulp_distance(reference, candidate)
    if ulp is not None:
        at = int(np.argmax(ulp))
        result.max_ulp = int(ulp.flat[at])
        result.max_ulp_index = [int(i) for i in np.unravel_index(at, r.shape)]
    return not result.ok


_INT_OF_FLOAT = {2: np.int16, 4: np.int32, 8: np.int64}


def ulp_distance(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray | None:
    """Units in the last place between elements, in the coarser of the two float dtypes.

    NaN pairs count as 0 when both are NaN and as the largest distance otherwise."""
    if reference.dtype.kind != "f" or candidate.dtype.kind != "f":
        return None
    dtype = min(reference.dtype, candidate.dtype, key=lambda d: d.itemsize)
    r, c = reference.astype(dtype), candidate.astype(dtype)
    a, b = _ordered(r), _ordered(c)
    same_sign = (a >= 0) == (b >= 0)
    # Across zero the distance is |a| + |b|, which can exceed int64 for float64: count in uint64.
    distance = np.where(same_sign, np.abs(a - np.where(same_sign, b, a)), 0).astype(np.uint64)
    distance[~same_sign] = np.abs(a[~same_sign]).astype(np.uint64) + np.abs(b[~same_sign]).astype(np.uint64)
    nan_r, nan_c = np.isnan(r), np.isnan(c)
    distance[nan_r != nan_c] = np.iinfo(np.uint64).max
    distance[nan_r & nan_c] = 0
    return distance


def _ordered(values: np.ndarray) -> np.ndarray:
    """Maps float bits to integers that are ordered like the floats (+0 and -0 both map to 0)."""
    bits = values.view(_INT_OF_FLOAT[values.dtype.itemsize]).astype(np.int64)
    sign_bit = 1 << (values.dtype.itemsize * 8 - 1)
    return np.where(bits < 0, -(bits & (sign_bit - 1)), bits)
