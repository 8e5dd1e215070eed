"""Drift: a fresh run record set against the committed one, telling platform noise from change.

Two machines of one kind still differ in the last bits of float sums, in the CPU name and in the
kernel string. So a fresh record is not required to equal the committed one byte for byte:

- what does not depend on the platform must be equal: exit codes, messages, panics, compiler
  errors, shapes, verdicts, claim outcomes and facts (the defaults each side read), diagnosis
  kinds, every word of every printed line;
- float figures may move within the tolerance the experiment declares (`PlatformTolerance`),
  ULP counts (a distance between two values that may each move) by twice its ULPs, and the
  positions of the worst elements, the values found there and the counts of rounding-level
  mismatches freely (the verdicts above still pin down the outcome). Which fields of compare's
  and trace's results are which, the result types declare (`PLATFORM` on `TensorResult` and
  `TraceResult`);
- what `pita compare` or `pita trace` printed is held to be exactly what pita prints for the
  result recorded beside it, so their results are compared, never the wording of their reports;
- the machine itself (`platform`) is shown, never compared;
- a ULP histogram (`ulp_histogram`) is shown, not compared bin by bin: rounding-level distances
  move between bins from one machine to the next; only how many elements it counts and how many
  have no finite distance (NaN or an infinity against a number) must be equal.

What moved is listed as a platform-difference table; anything else is a change, and fails.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from pita import report as compare_report
from pita import trace
from pita.compare import ComparisonResult, TensorResult
from pita.trace import TraceResult
from pita_lab import catalog
from pita_lab.experiment import PlatformTolerance
from pita_lab.record import RunRecord
from pita_lab.store import RecordStore

DEFAULT_TOLERANCE = PlatformTolerance()


@dataclass(frozen=True)
class Difference:
    where: str
    committed: str
    fresh: str
    detail: str


@dataclass
class DriftReport:
    experiment: str
    tolerance: PlatformTolerance
    machine: list[Difference] = field(default_factory=list)  # platform facts, shown only
    moved: list[Difference] = field(default_factory=list)  # within tolerance: platform noise
    changed: list[Difference] = field(default_factory=list)  # anything else: a real change

    @property
    def ok(self) -> bool:
        return not self.changed

    def summary(self) -> str:
        verdict = "CHANGED" if self.changed else "same within platform tolerance"
        return f"{verdict} ({len(self.moved)} figure(s) moved; tolerance {self.tolerance.describe()})"


# What the result types declare machine-dependent: ULP counts, free figures (positions, the
# values there, counts of rounding-level mismatches), lists that grow or shrink with those, histograms.
_DECLARED = TensorResult.PLATFORM | TraceResult.PLATFORM
ULP_KEYS, FREE_KEYS, UNORDERED_LISTS, HISTOGRAMS = _DECLARED.ulp_counts, _DECLARED.free, _DECLARED.unordered, _DECLARED.histograms
NOT_COMPARED = {"platform"}
EXACT = {"facts"}  # a claim's structured facts (each side's defaults) do not depend on the platform
# A printed report that is what pita prints for its result: the results are compared instead.
RENDERED = "(what pita prints for the result beside it)"
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
# In other text (claims, a result's own phrases): integers that are ULP counts, and positions.
ULP_SPANS = re.compile(r"\b\d+ (?:ULPs?|ulps?)\b|--ulp \d+")
FREE_SPANS = re.compile(r"\bat \[[\d, ]*\]")


def compare_records(committed: RunRecord, fresh: RunRecord, tolerance: PlatformTolerance = DEFAULT_TOLERANCE) -> DriftReport:
    report = DriftReport(committed.experiment, tolerance)
    old, new = _comparable(committed), _comparable(fresh)
    for key in sorted(set(old["platform"]) | set(new["platform"])):
        a, b = str(old["platform"].get(key, "")), str(new["platform"].get(key, ""))
        if a != b:
            report.machine.append(Difference(f"platform.{key}", a, b, "another machine"))
    _walk(report, old, new, committed.experiment, key="")
    return report


def drift_from_committed(store: RecordStore, record: RunRecord) -> DriftReport | None:
    """`record` set against the committed record of its experiment, or None when there is none."""
    committed = store.committed(record.experiment)
    if committed is None:
        return None
    return compare_records(committed, record, catalog.get(record.experiment).platform_tolerance)


def compare_values(report: DriftReport, committed, fresh, where: str) -> None:
    """Adds to `report` how `fresh` differs from `committed` (any JSON-like values: a record's
    parts, a matrix's cells), by the rules of the module docstring; `where` names them."""
    _walk(report, committed, fresh, where, key="")


def _comparable(record: RunRecord) -> dict:
    """The record as saved, each printed report that is what pita prints for its result replaced
    by `RENDERED`: what it says is then the result's, walked field by field."""
    data = record.to_dict()
    for key, runs in (("comparisons", record.comparisons), ("traces", record.traces)):
        for run, saved in zip(runs, data[key]):
            if run.result is not None and run.stdout == _printed(run.result):
                saved["stdout"] = RENDERED
    return data


def _printed(result: ComparisonResult | TraceResult) -> str:
    """What `pita compare` or `pita trace` prints for `result` (looked up at call time, so a
    reworded report is what a run prints and what its record is held to)."""
    return trace.render_trace_text(result) if isinstance(result, TraceResult) else compare_report.render_text(result)


def _walk(report: DriftReport, old, new, where: str, key: str, free: bool = False) -> None:
    """`free`: inside a list of UNORDERED_LISTS, whose every figure is free."""
    if isinstance(old, dict) and isinstance(new, dict):
        for name in sorted(set(old) | set(new)):
            if name in NOT_COMPARED:
                continue
            if name not in old or name not in new:
                report.changed.append(Difference(f"{where}.{name}", _show(old.get(name)), _show(new.get(name)), "present on one side only"))
                continue
            if name in EXACT:
                if old[name] != new[name]:
                    report.changed.append(Difference(f"{where}.{name}", _show(old[name]), _show(new[name]), "differs (compared exactly)"))
                continue
            if name in HISTOGRAMS and isinstance(old[name], dict) and isinstance(new[name], dict):
                _histogram(report, old[name], new[name], f"{where}.{name}")
            else:
                _walk(report, old[name], new[name], f"{where}.{name}", name, free or name in UNORDERED_LISTS)
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            if key not in UNORDERED_LISTS:
                report.changed.append(Difference(where, f"{len(old)} entries", f"{len(new)} entries", "another number of entries"))
            return
        for position, (a, b) in enumerate(zip(old, new)):
            _walk(report, a, b, f"{where}[{_label(a, position)}]", key, free)
    elif isinstance(old, str) and isinstance(new, str):
        _text(report, old, new, where)
    elif _is_number(old) and _is_number(new):
        _number(report, old, new, where, "free" if free else _kind_of_key(key, old, new))
    elif old != new:
        report.changed.append(Difference(where, _show(old), _show(new), "differs"))


def _histogram(report: DriftReport, old: dict, new: dict, where: str) -> None:
    """Bins move with the platform; the elements counted and those without a finite distance do not."""
    total = lambda histogram: sum(histogram.get("counts", [])) + histogram.get("unbounded", 0)
    for what, a, b in (("elements counted", total(old), total(new)), ("no finite distance", old.get("unbounded"), new.get("unbounded"))):
        if a != b:
            report.changed.append(Difference(where, f"{a} {what}", f"{b} {what}", "an exact figure differs"))
    if old.get("counts") != new.get("counts"):
        report.moved.append(Difference(where, _bins(old), _bins(new), "ULP distances move between bins: shown, not compared"))


def _bins(histogram: dict) -> str:
    return " ".join(str(count) for count in histogram.get("counts", []))


def _label(item, position: int) -> str:
    """A readable name for a list entry: the program, comparison, claim or tensor it is."""
    if isinstance(item, dict):
        if "side" in item and "variant" in item:
            return f"{item['side']}-{item['variant']}"
        if "reference" in item and "candidate" in item and "command" in item:
            return f"{item['reference']} vs {item['candidate']}"
        for key in ("id", "case", "name", "kind"):
            if isinstance(item.get(key), str):
                return item[key]
    return str(position)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind_of_key(key: str, old, new) -> str:
    if key in ULP_KEYS:
        return "ulp"
    if key in FREE_KEYS:
        return "free"
    return "float" if isinstance(old, float) or isinstance(new, float) else "exact"


def _text(report: DriftReport, old: str, new: str, where: str) -> None:
    if old == new:
        return
    old_numbers, new_numbers = list(NUMBER.finditer(old)), list(NUMBER.finditer(new))
    if NUMBER.sub("#", old) != NUMBER.sub("#", new) or len(old_numbers) != len(new_numbers):
        report.changed.append(Difference(where, _excerpt(old, new), _excerpt(new, old), "the words differ"))
        return
    for a, b in zip(old_numbers, new_numbers):
        if a.group() != b.group():
            kind = _kind_in_text(old, a)
            _number(report, _parse(a.group()), _parse(b.group()), where, kind, printed=(a.group(), b.group()))


def _kind_in_text(text: str, number: re.Match) -> str:
    inside = lambda spans: any(s.start() <= number.start() and number.end() <= s.end() for s in spans.finditer(text))
    if inside(FREE_SPANS):
        return "free"
    if re.search(r"[.eE]", number.group()):
        return "float"
    return "ulp" if inside(ULP_SPANS) else "exact"


def _parse(token: str) -> float | int:
    return float(token) if re.search(r"[.eE]", token) else int(token)


def _number(report: DriftReport, old, new, where: str, kind: str, printed: tuple[str, str] | None = None) -> None:
    if old == new or (isinstance(old, float) and isinstance(new, float) and math.isnan(old) and math.isnan(new)):
        return
    a, b = printed or (_show(old), _show(new))
    if kind == "free":
        report.moved.append(Difference(where, a, b, "a position or count of rounding-level mismatches"))
    elif kind == "ulp":  # a distance between two values that may each move by `ulps`
        moved, allowed = abs(int(new) - int(old)), 2 * report.tolerance.ulps
        target = report.moved if moved <= allowed else report.changed
        target.append(Difference(where, a, b, f"{moved} ULPs (allowed {allowed})"))
    elif kind == "float":
        _float(report, float(old), float(new), where, a, b, printed is not None)
    else:
        report.changed.append(Difference(where, a, b, "an exact figure differs"))


def _float(report: DriftReport, old: float, new: float, where: str, a: str, b: str, printed: bool) -> None:
    if not (math.isfinite(old) and math.isfinite(new)):
        report.changed.append(Difference(where, a, b, "a non-finite figure differs"))
        return
    allowed = report.tolerance.allowed(old, new)
    if printed:  # the finer of the two printings: a zero printed as 0.00e+00 says nothing
        allowed = max(allowed, min(_last_digit(a), _last_digit(b)))
    moved = abs(new - old)
    allowed *= 1 + 1e-9  # the tolerance itself is computed in floats
    detail = f"moved {moved:.3g} (allowed {allowed:.3g})"
    (report.moved if moved <= allowed else report.changed).append(Difference(where, a, b, detail))


def _last_digit(token: str) -> float:
    """One unit of the last printed digit: 0.1 for `10.9`, 1e-10 for `5.96e-08`."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def _excerpt(text: str, other: str, width: int = 60) -> str:
    """The part of `text` around its first difference from `other`."""
    start = next((i for i, (x, y) in enumerate(zip(text, other)) if x != y), min(len(text), len(other)))
    begin = max(0, start - width // 2)
    return ("…" if begin else "") + text[begin:begin + width].replace("\n", "⏎") + ("…" if begin + width < len(text) else "")


def _show(value) -> str:
    return repr(value) if not isinstance(value, str) else value


def render(report: DriftReport) -> str:
    """The drift report as text: the machines, the platform-difference table, the changes."""
    lines = [f"{report.experiment}: {report.summary()}"]
    lines += [f"  machine {d.where.removeprefix('platform.')}: {d.committed} -> {d.fresh}" for d in report.machine]
    lines += _table("platform differences", report.moved)
    lines += _table("CHANGES", report.changed)
    return "\n".join(lines) + "\n"


def _table(title: str, rows: list[Difference]) -> list[str]:
    if not rows:
        return []
    header = ("where", "committed", "fresh", "")
    cells = [header] + [(d.where, d.committed, d.fresh, d.detail) for d in rows]
    widths = [min(60, max(len(row[i]) for row in cells)) for i in range(3)]
    lines = [f"  {title}:"]
    for row in cells:
        lines.append("    " + "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths)) + "  " + row[3])
    return [line.rstrip() for line in lines]
