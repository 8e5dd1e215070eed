"""The trace as one self-contained page (`pita trace --html FILE`): where the port departs, to look at.

- the first divergence, highlighted: its phase, its diagnosis, whether it was introduced there,
  the verdict and the catalog's likely causes;
- each phase as a row of modules (a cell per module: its parameters, activation, gradients or
  step), coloured by the error relative to the float64 budget (by pass or fail where the trace was
  judged by the tolerance), the first divergence's cell outlined;
- the error against depth, for the forward (activations in execution order) and the backward
  (gradients in the order backward computes them);
- for a long run (a light recording, docs/recording.md), the loss on each side and each kind's
  error relative to its budget against the step, the first step beyond the budget marked.

Like compare's page (pita.report_html, whose escaping and style it shares) it holds everything
inline: CSS and SVG, no script, no link, no font or image to fetch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pita.compare import tolerance_text
from pita.recording import parse
from pita.report_html import FONT, STYLE, escape
from pita.trace import TraceResult, Walked, origin

PAGE_WIDTH = 1100  # the drawings' width, in CSS pixels
# Colours of an error relative to its budget, on a log scale: greens within it (pale far within),
# from orange at its edge to deep red beyond it, so the budget's edge is a visible step.
FAR_WITHIN, NEAR_EDGE, JUST_BEYOND, FAR_BEYOND = (226, 244, 216), (112, 180, 80), (250, 160, 50), (177, 0, 38)
DECADES = 3  # the colour ramp spans 10^-3 .. 1 within the budget and 1 .. 10^3 beyond it
OK_COLOUR, FAIL_COLOUR, ONE_SIDED_COLOUR = "#9ad18b", "#b10026", "#bbbbbb"  # judged by the tolerance; one side only
FIRST_OUTLINE = "#00a0ff"
SERIES = {"reference": "#3b6ea8", "candidate": "#d4551a", "loss": "#3b6ea8", "gradnorm": "#7b3fa0", "params": "#2f8f5b",
          "forward": "#3b6ea8", "backward": "#d4551a"}

TRACE_STYLE = """
section.first-divergence { border: 3px solid #00a0ff; padding: 0.5em 1em; background: #f0f8ff; }
section.first-divergence.none { border-color: #1a7f37; background: #f3fbf3; }
.verdict { font-weight: bold; }
.phase-row h3 { margin: 0.8em 0 0.2em; font-size: 1em; }
.legend { color: #555; }
"""


def render_trace_html(result: TraceResult) -> str:
    """The whole trace as one HTML page."""
    status = _status(result)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>pita trace: {escape(status)}</title>",
        f"<style>{STYLE}{TRACE_STYLE}</style></head><body>",
        f"<h1>pita trace: {escape(status)}</h1>",
        f"<p>reference: <code>{escape(result.reference)}</code><br>candidate: <code>{escape(result.candidate)}</code><br>"
        f"judged by: {escape(result.judged_by)}; tolerance: {escape(tolerance_text(result.tolerance, result.applied))}</p>",
        _first_divergence(result),
        _phase_rows(result),
        _depth_charts(result),
        _steps_charts(result),
    ]
    notes = result.mappings + result.notes
    if notes:
        parts.append('<section id="notes"><h2>Notes</h2>' + "".join(f'<p class="note">{escape(n)}</p>' for n in notes) + "</section>")
    parts.append("</body></html>")
    return "\n".join(part for part in parts if part) + "\n"


def _status(result: TraceResult) -> str:
    if result.ok:
        return "OK"
    return "NOT CHECKED" if result.clean and not result.setting_differences else "MISMATCH"


# --- the first divergence ------------------------------------------------------------------------


def _first_divergence(result: TraceResult) -> str:
    divergence = result.first_divergence
    if divergence is None:
        return (f'<section id="first-divergence" class="first-divergence none"><h2>First divergence: none</h2>'
                f'<p class="verdict">{escape(result.verdict)}</p></section>')
    parts = ['<section id="first-divergence" class="first-divergence">',
             f"<h2>First divergence: {escape(divergence.phase)} <code>{escape(divergence.name)}</code> "
             f"({escape(origin(divergence.introduced, divergence.inherited_from))})</h2>",
             f'<p class="description">{escape(divergence.description)}</p>']
    if divergence.diagnosis:
        parts.append('<ul class="diagnosis">' + "".join(f"<li><b>{escape(d.kind)}</b>: {escape(d.message)}</li>"
                                                        for d in divergence.diagnosis) + "</ul>")
    parts.append(f'<p class="verdict">{escape(result.verdict)}</p>')
    if result.likely:
        parts.append('<h3>Likely cause</h3><ul class="likely">' + "".join(_likely_item(cause) for cause in result.likely) + "</ul>")
    parts += [f'<p class="note">{escape(note)}</p>' for note in divergence.notes]
    return "\n".join(parts + ["</section>"])


def _likely_item(cause: dict) -> str:
    """A likely cause (pita.likely's JSON form): the pitfall, its chapter, the fix, what matched."""
    fix = f"<br>fix: {escape(cause['fix'])}" if cause["fix"] else ""
    return (f"<li><b>{escape(cause['id'])}</b> {escape(cause['title'])} ({escape(cause['chapter'])}){fix}"
            f"<br>evidence: {escape(cause['evidence'])}</li>")


# --- each phase as a row of modules --------------------------------------------------------------


@dataclass
class Cell:
    """One module of a phase: the tensors of the walk it gathers, and the worst of them."""

    key: str
    names: list[str]
    status: str  # the worst: mismatch, then one side only, then ok
    ratio: float | None  # the largest error relative to its budget, None where no tensor has one
    worst: Walked
    first: bool  # holds the first divergence


def cells_of(walked: list[Walked], first: str | None) -> list[Cell]:
    """The walk's tensors gathered by module, in the order of each module's first tensor."""
    groups: dict[str, list[Walked]] = {}
    for tensor in walked:
        groups.setdefault(module_key(tensor.name), []).append(tensor)
    cells = []
    for key, members in groups.items():
        worst = max(members, key=_badness)
        ratios = [r for r in (m.ratio for m in members) if r is not None]
        cells.append(Cell(key, [m.name for m in members], worst.status, max(ratios) if ratios else None, worst,
                          any(m.name == first for m in members)))
    return cells


def module_key(name: str) -> str:
    """The module a walked name belongs to, with its kind: `act/encoder.fc1` (each call its own),
    `param/encoder.fc1` for `param/encoder.fc1.weight`, `step1/encoder.fc1`; a loss is its own."""
    recorded = parse(name)
    if recorded is None or recorded.path is None:
        return name
    prefix = name[: len(name) - len(recorded.path)]
    return prefix + (recorded.path.rpartition(".")[0] or recorded.path)


def _badness(tensor: Walked) -> tuple[int, float]:
    """A mismatch before a name on one side only before a match; then the larger error."""
    rank = {"mismatch": 2, "missing": 1, "extra": 1}.get(tensor.status, 0)
    if tensor.ratio is not None:
        return rank, tensor.ratio
    diff = tensor.max_abs_diff
    return rank, math.inf if _nan(diff) else diff or 0.0


def _nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def budget_colour(ratio: float | None, status: str) -> str:
    """A cell's colour: one side only grey; judged by the tolerance (no ratio), green or red;
    else by its error relative to its budget, on a log scale, yellow at the budget's edge."""
    if status in ("missing", "extra"):
        return ONE_SIDED_COLOUR
    if ratio is None:
        return OK_COLOUR if status == "ok" else FAIL_COLOUR
    if ratio <= 1:
        position = max(0.0, 1 + math.log10(ratio) / DECADES) if ratio > 0 else 0.0
        return _mix(FAR_WITHIN, NEAR_EDGE, position)
    return _mix(JUST_BEYOND, FAR_BEYOND, min(1.0, math.log10(ratio) / DECADES) if math.isfinite(ratio) else 1.0)


def _mix(a, b, t: float) -> str:
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b))


def _phase_rows(result: TraceResult) -> str:
    first = result.first_divergence.name if result.first_divergence else None
    parts = ['<section id="phases"><h2>Each phase, module by module</h2>',
             f'<p class="legend">{escape(_legend_text(result))}</p>', _legend_svg(result)]
    for phase in result.phases:
        walked = [w for w in result.walked if w.phase == phase.phase and not (result.steps and _later_step(w.name))]
        if not walked:
            continue
        cells = cells_of(walked, first)
        summary = f"{phase.phase}: {phase.compared} compared, {phase.mismatched} mismatched, {len(cells)} module(s)"
        if phase.phase == "step" and result.steps:
            summary += " (the cells are step 1's; the later steps are in 'Loss and error against step', below)"
        parts.append(f'<div class="phase-row" data-phase="{escape(phase.phase)}"><h3>{escape(summary)}</h3>{_cells_svg(cells)}</div>')
    return "\n".join(parts + ["</section>"])


def _later_step(name: str) -> bool:
    recorded = parse(name)
    return recorded is not None and recorded.step is not None and recorded.step >= 2


def _legend_text(result: TraceResult) -> str:
    if result.judged_by == "float64 budget":
        return ("colour: each module's largest error relative to its float64 budget (log scale): green within it (pale far "
                "within), orange just beyond its edge (1×), deep red far beyond; grey: recorded on one side only; outlined: the first divergence")
    return ("colour: green within the tolerance, red beyond it (no float64 run: pita.torch.record writes one, and the "
            "colours then show how close to its budget each module is); grey: recorded on one side only; outlined: the first divergence")


def _legend_svg(result: TraceResult) -> str:
    if result.judged_by != "float64 budget":
        return ""
    stops = [10.0 ** (k / 2 - DECADES) for k in range(4 * DECADES + 1)]  # 10^-3 .. 10^3, two a decade
    width = 30
    parts = [_svg_open(len(stops) * width + 20, 40, "legend")]
    for k, ratio in enumerate(stops):
        parts.append(f'<rect x="{10 + k * width}" y="4" width="{width}" height="14" fill="{budget_colour(ratio, "ok")}"/>')
        if k % 2 == 0:
            parts.append(f'<text x="{10 + k * width + width / 2}" y="32" text-anchor="middle">{ratio:g}×</text>')
    return "\n".join(parts + ["</svg>"])


def _cells_svg(cells: list[Cell]) -> str:
    size = max(6, min(28, (PAGE_WIDTH - 20) // max(len(cells), 1)))
    per_line = max(1, (PAGE_WIDTH - 20) // size)
    lines = -(-len(cells) // per_line)
    parts = [_svg_open(min(PAGE_WIDTH, 20 + len(cells) * size), 10 + lines * (size + 4), "modules")]
    for k, cell in enumerate(cells):
        x, y = 10 + (k % per_line) * size, 5 + (k // per_line) * (size + 4)
        outline = f' stroke="{FIRST_OUTLINE}" stroke-width="3"' if cell.first else ' stroke="#ffffff" stroke-width="1"'
        parts.append(f'<rect class="cell{" first" if cell.first else ""}" x="{x}" y="{y}" width="{size}" height="{size}" '
                     f'fill="{budget_colour(cell.ratio, cell.status)}"{outline} data-module="{escape(cell.key)}" '
                     f'data-status="{cell.status}"><title>{escape(_cell_title(cell))}</title></rect>')
    return "\n".join(parts + ["</svg>"])


def _cell_title(cell: Cell) -> str:
    worst = cell.worst
    what = {"missing": "missing from the candidate", "extra": "only in the candidate"}.get(worst.status)
    if what is None:
        what = f"|diff| {_number(worst.max_abs_diff)}" + (f", {_number(worst.ratio)}× its budget" if worst.ratio is not None else "")
        what += "" if worst.status == "ok" else " MISMATCH"
    head = f"{cell.key} ({len(cell.names)} tensors)" if len(cell.names) > 1 else cell.key
    return f"{head}: worst {worst.name}: {what}" + (" (the first divergence)" if cell.first else "")


# --- line charts ---------------------------------------------------------------------------------


@dataclass
class Series:
    label: str
    colour: str
    points: list[tuple[float, float | None]]  # (x, y); y None: nothing to draw there


def svg_line_chart(series: list[Series], x_label: str, y_label: str, *, log_y: bool, edge: float | None = None,
                   marker: float | None = None, marker_label: str = "", kind: str = "chart") -> str:
    """Lines of points, each point with a tooltip; on a log y axis (non-positive values drawn at
    its floor, infinite ones at its top) with `edge` drawn as a dashed line (the budget), and
    `marker` as a vertical line at that x (the first step beyond the budget)."""
    left, right, top, bottom, height = 70, 20, 28, 46, 240
    width = PAGE_WIDTH
    xs = [x for s in series for x, _ in s.points]
    values = [y for s in series for _, y in s.points if y is not None and math.isfinite(y) and (y > 0 or not log_y)]
    if edge is not None:
        values.append(edge)
    x_low, x_high = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y_low, y_high = (min(values), max(values)) if values else (1.0, 10.0)
    if log_y:
        y_low, y_high = math.floor(math.log10(y_low)), math.ceil(math.log10(y_high))
    if y_high == y_low:
        y_low, y_high = y_low - 1, y_high + 1
    x_high = x_high if x_high > x_low else x_low + 1
    plot_width, plot_height = width - left - right, height

    def at_x(x):
        return round(left + (x - x_low) / (x_high - x_low) * plot_width, 1)

    def at_y(y):
        if log_y:
            v = y_high if y is not None and math.isinf(y) else (y_low if not y or y <= 0 else min(max(math.log10(y), y_low), y_high))
        else:
            v = y
        return round(top + (y_high - v) / (y_high - y_low) * plot_height, 1)

    parts = [_svg_open(width, top + height + bottom + 18 * len(series), kind)]
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_width}" height="{plot_height}" fill="none" stroke="#999"/>')
    for tick in _ticks(y_low, y_high, log_y):
        y = at_y(10.0**tick if log_y else tick)
        parts.append(f'<line x1="{left - 4}" y1="{y}" x2="{left}" y2="{y}" stroke="#333"/>'
                     f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{escape(_tick_label(tick, log_y))}</text>')
    for tick in _ticks(x_low, x_high, False, whole=True):
        x = at_x(tick)
        parts.append(f'<line x1="{x}" y1="{top + plot_height}" x2="{x}" y2="{top + plot_height + 4}" stroke="#333"/>'
                     f'<text x="{x}" y="{top + plot_height + 16}" text-anchor="middle">{escape(_tick_label(tick, False))}</text>')
    if edge is not None:
        y = at_y(edge)
        parts.append(f'<line class="edge" x1="{left}" y1="{y}" x2="{left + plot_width}" y2="{y}" stroke="#b10026" stroke-dasharray="6 4"/>'
                     f'<text x="{left + plot_width - 4}" y="{y - 4}" text-anchor="end" fill="#b10026">the budget (1×)</text>')
    if marker is not None:
        x = at_x(marker)
        parts.append(f'<line class="marker" x1="{x}" y1="{top}" x2="{x}" y2="{top + plot_height}" stroke="{FIRST_OUTLINE}" stroke-width="2"/>'
                     f'<text x="{x + 4}" y="{top + 12}" fill="{FIRST_OUTLINE}">{escape(marker_label)}</text>')
    for s in series:
        drawn = [(x, y) for x, y in s.points if y is not None and not _nan(y)]
        if len(drawn) > 1:
            path = " ".join(f"{at_x(x)},{at_y(y)}" for x, y in drawn)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{s.colour}" stroke-width="1.5" data-series="{escape(s.label)}"/>')
        for x, y in drawn:
            parts.append(f'<circle cx="{at_x(x)}" cy="{at_y(y)}" r="2.5" fill="{s.colour}">'
                         f"<title>{escape(s.label)} at {_number(x)}: {_number(y)}</title></circle>")
    parts.append(f'<text x="{left + plot_width / 2}" y="{top + plot_height + 34}" text-anchor="middle">{escape(x_label)}</text>')
    parts.append(f'<text x="16" y="{top + plot_height / 2}" text-anchor="middle" transform="rotate(-90 16 {top + plot_height / 2})">'
                 f"{escape(y_label)}</text>")
    for k, s in enumerate(series):
        y = top + plot_height + bottom + 4 + 18 * k
        parts.append(f'<rect x="{left}" y="{y - 9}" width="12" height="12" fill="{s.colour}"/>'
                     f'<text x="{left + 18}" y="{y + 1}">{escape(s.label)}</text>')
    return "\n".join(parts + ["</svg>"])


def _ticks(low: float, high: float, log: bool, whole: bool = False) -> list[float]:
    """About six round ticks between `low` and `high` (whole decades on a log axis; `whole`:
    whole numbers, for steps and depths)."""
    if log:
        step = max(1, math.ceil((high - low) / 8))
        return list(range(int(low), int(high) + 1, step))
    span = high - low
    step = 10.0 ** math.floor(math.log10(span / 5)) if span > 0 else 1.0
    step *= next(m for m in (1, 2, 5, 10) if span / (step * m) <= 6)
    step = max(step, 1.0) if whole else step
    first = math.ceil(low / step) * step
    return [first + k * step for k in range(int((high - first) / step + 1e-9) + 1)]


def _tick_label(tick: float, log: bool) -> str:
    return f"1e{int(tick)}" if log else f"{tick:g}"


def _number(value) -> str:
    if value is None:
        return "none"
    return "inf" if value == math.inf else f"{value:.3g}"


def _svg_open(width: float, height: float, kind: str) -> str:
    return (f'<svg class="{kind}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" {FONT}>')


# --- error against depth, and against step -------------------------------------------------------


def _depth_charts(result: TraceResult) -> str:
    budget = result.judged_by == "float64 budget"
    parts = []
    for phase, what in (("forward", "activations in the order the forward pass computed them"),
                        ("backward", "gradients in the order the backward pass computed them (last module first)")):
        walked = [w for w in result.walked if w.phase == phase and w.max_abs_diff is not None]
        if not walked:
            continue
        first = next((k for k, w in enumerate(walked) if result.first_divergence and w.name == result.first_divergence.name), None)
        points = [(k, w.ratio if budget else w.max_abs_diff) for k, w in enumerate(walked)]
        parts.append(f"<h3>{escape(phase)}</h3>")
        parts.append(svg_line_chart([Series(f"{phase}: {'error / budget' if budget else 'max |diff|'}", SERIES[phase], points)],
                                    f"depth: {what} (0 to {len(walked) - 1})",
                                    "error / float64 budget (log)" if budget else "max |diff| (log)", log_y=True,
                                    edge=1.0 if budget else None, marker=first, marker_label="first divergence" if first is not None else "",
                                    kind=f"depth-chart {phase}"))
    if not parts:
        return ""
    return '<section id="depth"><h2>Error against depth</h2>\n' + "\n".join(parts) + "\n</section>"


def _steps_charts(result: TraceResult) -> str:
    if not result.steps:
        return ""
    budget = result.judged_by == "float64 budget"
    first = result.first_step_beyond_budget
    mark = {"marker": first, "marker_label": f"first step beyond the {'budget' if budget else 'tolerance'}: {first}" if first else ""}
    losses = [Series(side, SERIES[side], [(row.step, getattr(row.loss, side)) for row in result.steps if row.loss is not None])
              for side in ("reference", "candidate")]
    errors = [Series(kind, SERIES[kind], [(row.step, _error_of(part, budget)) for row in result.steps if (part := getattr(row, kind))])
              for kind in ("loss", "gradnorm", "params")]
    errors = [s for s in errors if s.points]
    positive = all(y is not None and y > 0 for s in losses for _, y in s.points)  # a loss that falls by decades: on a log axis
    line = "first step beyond the budget: " + (str(first) if first else "none")
    return "\n".join([
        '<section id="steps"><h2>Loss and error against step</h2>',
        f'<p class="verdict">{escape(line)}</p>',
        svg_line_chart(losses, "step", "loss (log)" if positive else "loss", log_y=positive, kind="loss-chart", **mark),
        svg_line_chart(errors, "step", "largest error / float64 budget (log)" if budget else "largest max |diff| (log)", log_y=True,
                       edge=1.0 if budget else None, kind="step-error-chart", **mark),
        "</section>"])


def _error_of(part, budget: bool) -> float | None:
    return part.ratio if budget else part.max_abs_diff
