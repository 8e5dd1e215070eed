"""Report: a comparison rendered as text lines (the chapter's form) or as one JSON object."""

from __future__ import annotations

import json

from pita.align import mapping_summary
from pita.compare import ComparisonResult, TensorResult, shown_tolerance, tolerance_text
from pita.stats import ULP_UNBOUNDED
from pita.strict_json import spelt
from pita.text import printable


def render_text(result: ComparisonResult) -> str:
    lines = [f"reference: {result.reference}", f"candidate: {result.candidate}"]
    lines.append(f"tolerance: {tolerance_text(result.tolerance, result.applied)}")
    lines.extend(mapping_summary(result.mappings, verbose=False))
    lines.extend(f"note: {note}" for note in result.notes)
    if result.missing or result.extra:
        one_sided = []
        if result.missing:
            one_sided.append(f"missing from candidate: {', '.join(result.missing)}")
        if result.extra:
            one_sided.append(f"only in candidate: {', '.join(result.extra)}")
        lines.append("unpaired: " + "; ".join(one_sided))
    for tensor in result.tensors:
        lines.extend(tensor_lines(tensor))
    lines.append(verdict_line(result))
    if result.likely:  # only a failing comparison has likely causes: pita.likely stays unloaded otherwise
        from pita.likely import likely_lines

        lines.extend(likely_lines(result.likely))
    return "\n".join(map(printable, lines)) + "\n"  # values from files on one line, without control characters


def verdict_line(result: ComparisonResult) -> str:
    """The text report's last line: the worst |diff|, the tolerance each dtype pair was judged by
    (`pita.compare.shown_tolerance`), OK or MISMATCH; `nothing compared` when no pair was."""
    if not result.tensors:
        return f"nothing compared: no tensor is in both dumps (reference: {len(result.missing)} tensor(s), candidate: {len(result.extra)})"
    return f"worst={result.worst:.2e} tol={shown_tolerance(result.tolerance, result.applied)} {'OK' if result.ok else 'MISMATCH'}"


def tensor_lines(tensor: TensorResult) -> list[str]:
    """One tensor's lines of the text report (`pita trace` shows its first divergence with them)."""
    notes = [f"  note: {note}" for note in tensor.notes]
    diagnosis = [f"  diagnosis {d.kind}: {d.message}" for d in tensor.diagnosis]
    if tensor.shape_conflict:
        return [f"{tensor.name} SHAPE CONFLICT: reference {tensor.shape}, candidate {tensor.candidate_shape}", *notes, *diagnosis]
    line = f"{tensor.name} n= {tensor.n} max|diff|={tensor.max_abs_diff:.2e}"
    if tensor.max_ulp is not None:
        line += f" max_ulp={ulp_text(tensor.max_ulp)} at {tensor.max_ulp_index}"
    if not tensor.ok:
        share = 100.0 * tensor.mismatched / tensor.n if tensor.n else 100.0
        line += f" MISMATCH {tensor.mismatched}/{tensor.n} ({share:.1f}%)"
    lines = [line]
    if not tensor.ok and tensor.worst_reference is not None:
        worst = f"reference {_value(tensor.worst_reference)}, candidate {_value(tensor.worst_candidate)}"
        lines.append(f"  worst at {tensor.worst_index}: {worst}; max rel diff {tensor.max_rel_diff:.2e}")
        examples = "; ".join(f"{e['index']} {_value(e['reference'])} vs {_value(e['candidate'])}" for e in tensor.examples)
        lines.append(f"  first mismatches: {examples}")
        lines.append(f"  would pass with: {tensor.would_pass}")
    lines.extend(notes)
    if tensor.float64:
        lines.append(f"  float64 check: {float64_text(tensor)}")
    return lines + diagnosis


def float64_text(tensor) -> str:
    """A tensor's figures against the float64 run, led by what they say: within float32 noise or beyond it."""
    f = tensor.float64
    judged = tensor.tolerance is not None and tensor.tolerance.startswith("float64 budget")
    lead = ("within float32 noise: " if tensor.ok else "beyond float32 noise: ") if judged else ""
    return (f"{lead}the candidate's error is {f['ratio']:.3g}× the reference's own (reference error {f['reference_error']:.2e}, "
            f"candidate error {f['candidate_error']:.2e}" + (f"; budget |diff| <= {f['allowed']:.2e})" if "allowed" in f else ")"))


def _value(value) -> str:
    """A float to 9 significant digits (float32 round-trips); integers and bools exactly."""
    return f"{value:.9g}" if isinstance(value, float) else str(value)


def ulp_text(value: int) -> str:
    """A ULP distance as the report prints it: `inf` where there is no finite one."""
    return "inf" if value >= ULP_UNBOUNDED else str(value)  # NaN against a number, inf against a finite value


def render_json(result: ComparisonResult) -> str:
    """Strict JSON: infinities and NaN (a NaN mismatch's max|diff|) become the strings
    "Infinity", "-Infinity" and "NaN", as in the dump format."""
    return json_text(result.to_dict())


def json_text(data: dict) -> str:
    """One report as strict JSON (what `render_json` and `pita trace --format json` print)."""
    return json.dumps(spelt(data), indent=2, default=_jsonable, allow_nan=False) + "\n"


def _jsonable(value):
    return int(value) if hasattr(value, "__int__") else str(value)
