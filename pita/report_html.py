"""The visual report: a comparison as one self-contained HTML page (`pita compare --html FILE`),
and the two pictures it is made of, as SVG text the handbook also draws its figures with.

- `svg_histogram`: a ULP histogram (pita.distribution) as bars on a log scale, each bar labelled
  with its count, the last bar for pairs with no finite distance.
- `svg_heatmap`: an error map as a grid of cells coloured by the largest |diff| in each block (log
  scale), with a legend, row and column labels, a tooltip (`<title>`) per cell and the hottest
  cell outlined.

The page holds everything inline (CSS, SVG; no script, no link, no font to fetch), so it opens
the same offline, attached to an issue or in a CI artifact.
"""

from __future__ import annotations

import math
from html import escape as html_escape

from pita.compare import ComparisonResult, TensorResult, tolerance_text
from pita.distribution import bin_labels, bin_range, merged_histogram, view_note
from pita.report import ulp_text
from pita.text import printable

FONT = 'font-family="sans-serif" font-size="11"'
# What the pictures call things; the handbook passes its own words.
WORDS = {
    "ulp_axis": "ULP distance",
    "ulp_axis_note": "ULP distance (2^k: 2^k to 2^(k+1)-1; ∞: no finite distance)",
    "count_axis": "elements (log scale)",
    "unbounded": "no finite distance",
    "row": "row",
    "column": "column",
    "zero": "equal",
    "nonfinite": "NaN/inf mismatch",
    "value": "max |diff|",
    "value_axis": "max |diff| per cell (log scale)",
}
COLD, HOT = (255, 237, 160), (177, 0, 38)  # the smallest and the largest |diff| on a map
ZERO_COLOUR, NONFINITE_COLOUR = "#eeeeee", "#000000"
MAX_SHOWN = 2000  # tensors a page shows in its table and sections: every failing one first, then passing ones


def escape(text) -> str:
    """Text for the page: on one line without control characters (`pita.text.printable`, the
    rule the text report follows), then HTML-escaped."""
    return html_escape(printable(text))


def svg_histogram(histogram: dict, title: str = "", words: dict | None = None) -> str:
    """One histogram `{edges, counts, unbounded}` as an SVG element."""
    words = {**WORDS, **(words or {})}
    labels = bin_labels(histogram["edges"]) + ["∞"]
    counts = list(histogram["counts"]) + [histogram["unbounded"]]
    bar, gap, left, top, plot_height = 34, 6, 50, 28 if title else 12, 150
    width = max(360, left + len(counts) * (bar + gap) + 20)
    height = top + plot_height + 58
    scale = math.log10(1 + max(counts)) or 1.0
    parts = [_svg_open(width, height)]
    if title:
        parts.append(f'<text x="{left}" y="16" font-weight="bold">{escape(title)}</text>')
    base = top + plot_height
    parts.append(f'<line x1="{left}" y1="{base}" x2="{width - 10}" y2="{base}" stroke="#333"/>')
    for k, (label, count) in enumerate(zip(labels, counts)):
        x = left + k * (bar + gap) + gap
        h = round(plot_height * math.log10(1 + count) / scale, 1)
        colour = "#555555" if k == len(counts) - 1 else "#3b6ea8"
        what = words["unbounded"] if k == len(counts) - 1 else f'{words["ulp_axis"]} {bin_range(histogram["edges"], k)}'
        parts.append(f'<rect x="{x}" y="{base - h}" width="{bar}" height="{h}" fill="{colour}" data-bin="{k}" data-count="{count}">'
                     f"<title>{escape(what)}: {count}</title></rect>")
        if count:
            parts.append(f'<text x="{x + bar / 2}" y="{base - h - 3}" text-anchor="middle">{count}</text>')
        parts.append(f'<text x="{x + bar / 2}" y="{base + 14}" text-anchor="middle" font-size="9">{escape(label)}</text>')
    parts.append(f'<text x="{left + (width - left) / 2}" y="{base + 34}" text-anchor="middle">{escape(words["ulp_axis_note"])}</text>')
    parts.append(f'<text x="14" y="{top + plot_height / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {top + plot_height / 2})">{escape(words["count_axis"])}</text>')
    return "\n".join(parts + ["</svg>"]) + "\n"


def svg_heatmap(error_map: dict, title: str = "", words: dict | None = None, legend_id: str = "ramp") -> str:
    """One error map `{shape, view, cells, grid}` as an SVG element. `legend_id` names its colour
    ramp: ids are global to a page, so a page of several maps gives each its own."""
    words = {**WORDS, **(words or {})}
    grid = error_map["grid"]
    (rows, columns), (cell_rows, cell_columns) = error_map["view"], error_map["cells"]
    size = max(6, min(28, 448 // max(cell_rows, cell_columns)))
    tall = size if cell_rows > 1 else max(size, 24)  # a strip (one row) drawn tall enough to see
    left, top = 64, 30 if title else 14
    width = max(480, left + cell_columns * size + 20)
    legend_top = top + cell_rows * tall + 56
    height = legend_top + 56
    positive = [v for row in grid for v in row if 0 < v < math.inf]
    low, high = (min(positive), max(positive)) if positive else (0.0, 0.0)
    hottest = _hottest(grid)
    parts = [_svg_open(width, height)]
    if title:
        parts.append(f'<text x="{left}" y="18" font-weight="bold">{escape(title)}</text>')
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            first_row, last_row = _block(i, cell_rows, rows)
            first_column, last_column = _block(j, cell_columns, columns)
            where = f'{words["row"]} {_span(first_row, last_row)}, {words["column"]} {_span(first_column, last_column)}'
            outline = ' stroke="#00a0ff" stroke-width="2" class="hottest"' if (i, j) == hottest else ""
            parts.append(f'<rect x="{left + j * size}" y="{top + i * tall}" width="{size}" height="{tall}" '
                         f'fill="{_colour(value, low, high)}" data-row="{i}" data-column="{j}" data-value="{_number(value)}"{outline}>'
                         f'<title>{escape(where)}: {escape(words["value"])} = {_number(value)}</title></rect>')
    parts += _axes(left, top, size, tall, cell_rows, cell_columns, rows, columns, words)
    parts += _legend(left, legend_top, low, high, words, legend_id)
    return "\n".join(parts + ["</svg>"]) + "\n"


def _svg_open(width: int, height: int) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" {FONT}>')


def _hottest(grid: list[list[float]]) -> tuple[int, int] | None:
    """The first cell holding the largest value, if any cell differs at all."""
    best, where = 0.0, None
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            if value > best:
                best, where = value, (i, j)
    return where


def _block(cell: int, cells: int, length: int) -> tuple[int, int]:
    """The first and last index of the rows (or columns) that map to `cell`."""
    first = -(-cell * length // cells)
    last = -(-(cell + 1) * length // cells) - 1
    return first, last


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}–{last}"


def _colour(value: float, low: float, high: float) -> str:
    if value == 0:
        return ZERO_COLOUR
    if not math.isfinite(value):
        return NONFINITE_COLOUR
    t = 1.0 if high == low else (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low))
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(COLD, HOT))


def _number(value: float) -> str:
    return "inf" if value == math.inf else f"{value:.3g}"


def _axes(left, top, size, tall, cell_rows, cell_columns, rows, columns, words) -> list[str]:
    bottom, right = top + cell_rows * tall, left + cell_columns * size
    return [
        f'<text x="{left}" y="{bottom + 14}">0</text>',
        f'<text x="{right}" y="{bottom + 14}" text-anchor="end">{columns - 1}</text>',
        f'<text x="{(left + right) / 2}" y="{bottom + 28}" text-anchor="middle">{escape(words["column"])} (0–{columns - 1})</text>',
        f'<text x="{left - 4}" y="{top + 10}" text-anchor="end">0</text>',
        *([f'<text x="{left - 4}" y="{bottom}" text-anchor="end">{rows - 1}</text>'] if rows > 1 else []),
        f'<text x="14" y="{(top + bottom) / 2}" text-anchor="middle" transform="rotate(-90 14 {(top + bottom) / 2})">'
        f'{escape(words["row"])} (0–{rows - 1})</text>',
    ]


def _legend(left, top, low, high, words, legend_id) -> list[str]:
    """A colour ramp from the smallest to the largest |diff|, and swatches for equal and NaN/inf."""
    stops = "".join(f'<stop offset="{t}" stop-color="{_colour(10 ** (math.log10(low) + t * (math.log10(high) - math.log10(low))), low, high)}"/>'
                    for t in (0, 0.5, 1)) if high else ""
    parts = [f'<text x="{left}" y="{top - 6}">{escape(words["value_axis"])}</text>']
    if high:
        parts += [f'<defs><linearGradient id="{legend_id}">{stops}</linearGradient></defs>',
                  f'<rect x="{left}" y="{top}" width="160" height="12" fill="url(#{legend_id})"/>',
                  f'<text x="{left}" y="{top + 26}">{_number(low)}</text>',
                  f'<text x="{left + 160}" y="{top + 26}" text-anchor="end">{_number(high)}</text>']
    swatch = left + 176
    for colour, word in ((ZERO_COLOUR, words["zero"]), (NONFINITE_COLOUR, words["nonfinite"])):
        parts += [f'<rect x="{swatch}" y="{top}" width="12" height="12" fill="{colour}" stroke="#999"/>',
                  f'<text x="{swatch + 16}" y="{top + 10}">{escape(word)}</text>']
        swatch += 24 + sum(7 if ord(c) < 128 else 12 for c in word)  # wide CJK characters in the book's words
    return parts


# --- the page ------------------------------------------------------------------------------------

STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
td.number { text-align: right; font-family: monospace; }
tr.fail td.verdict { color: #b10026; font-weight: bold; }
tr.ok td.verdict { color: #1a7f37; }
section { margin: 2em 0; }
p.note { color: #555; }
svg { max-width: 100%; height: auto; }  /* a wide histogram shrinks to the page, its last bins in view */
"""


def render_html(result: ComparisonResult) -> str:
    """The whole comparison as one HTML page: the table of every pair, the overall ULP histogram,
    and per pair its histogram and, for a failing pair, where its errors sit."""
    verdict = "OK" if result.ok else "MISMATCH"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>pita compare: {escape(verdict)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>pita compare: {escape(verdict)}</h1>",
        f"<p>reference: <code>{escape(result.reference)}</code><br>candidate: <code>{escape(result.candidate)}</code><br>"
        f"tolerance: {escape(tolerance_text(result.tolerance, result.applied))}</p>",
    ]
    parts += [f'<p class="note">{escape(line)}</p>' for line in _unpaired(result) + result.mappings + result.notes]
    shown, left_out = shown_tensors(result.tensors)
    if left_out:
        parts.append(f'<p class="note left-out">{escape(left_out)}</p>')
    parts.append(_table(shown))
    overall = merged_histogram([t.ulp_histogram for t in result.tensors])
    if overall:
        parts += ["<h2>ULP distances, all float tensors</h2>", svg_histogram(overall)]
    parts += [_tensor_section(t, k) for k, t in enumerate(shown)]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def shown_tensors(tensors: list[TensorResult], at_most: int = MAX_SHOWN) -> tuple[list[TensorResult], str]:
    """The tensors the page shows, in the comparison's order, and what it says of the others:
    all of them up to `at_most`; beyond, the failing ones first (at most `at_most`), then the
    first passing ones up to `at_most` in all, so a page of 100,000 tensors stays a few MB."""
    if len(tensors) <= at_most:
        return tensors, ""
    failing = [k for k, t in enumerate(tensors) if not t.ok]
    passing = [k for k, t in enumerate(tensors) if t.ok]
    chosen_failing = failing[:at_most]
    chosen_passing = passing[: at_most - len(chosen_failing)]
    keep = set(chosen_failing) | set(chosen_passing)
    shown = [t for k, t in enumerate(tensors) if k in keep]
    return shown, (f"{len(tensors)} tensors were compared; this page shows {len(shown)} of them: "
                   f"{_first('failing', len(chosen_failing), len(failing))} and {_first('passing', len(chosen_passing), len(passing))}. "
                   "The overall histogram counts every tensor; pita compare --json FILE writes each one's result.")


def _first(what: str, shown: int, of: int) -> str:
    return f"all {of} {what}" if shown == of else f"the first {shown} of the {of} {what}"


def _unpaired(result: ComparisonResult) -> list[str]:
    lines = []
    if result.missing:
        lines.append(f"missing from candidate: {', '.join(result.missing)}")
    if result.extra:
        lines.append(f"only in candidate: {', '.join(result.extra)}")
    return lines


def _table(tensors: list[TensorResult]) -> str:
    header = "".join(f"<th>{h}</th>" for h in ("tensor", "n", "dtype", "max |diff|", "max ULP", "verdict", "diagnosis"))
    rows = [f"<table><tr>{header}</tr>"]
    for t in tensors:
        dtype = t.dtype if t.dtype == t.candidate_dtype else f"{t.dtype} / {t.candidate_dtype}"
        ulp = "" if t.max_ulp is None else ulp_text(t.max_ulp)
        if t.shape_conflict:
            verdict = f"SHAPE CONFLICT {t.shape} / {t.candidate_shape}"
        else:
            verdict = "OK" if t.ok else f"MISMATCH {t.mismatched}/{t.n}"
        diagnosis = "<br>".join(f"{escape(d.kind)}: {escape(d.message)}" for d in t.diagnosis)
        cells = [f'<td><a href="#{_anchor(t.name)}">{escape(t.name)}</a></td>', f'<td class="number">{t.n}</td>',
                 f"<td>{escape(dtype)}</td>", f'<td class="number">{t.max_abs_diff:.2e}</td>', f'<td class="number">{ulp}</td>',
                 f'<td class="verdict">{escape(verdict)}</td>', f"<td>{diagnosis}</td>"]
        rows.append(f'<tr class="{"ok" if t.ok else "fail"}" data-tensor="{escape(t.name)}">{"".join(cells)}</tr>')
    return "\n".join(rows + ["</table>"])


def _anchor(name: str) -> str:
    """A tensor's section id: its name with every character but an ASCII letter or digit written
    as `-<hex code>-` (`fc.weight` is `tensor-fc-2e-weight`), so two names never share an id."""
    return "tensor-" + "".join(c if c.isascii() and c.isalnum() else f"-{ord(c):x}-" for c in name)


def _tensor_section(t: TensorResult, k: int) -> str:
    parts = [f'<section id="{_anchor(t.name)}"><h2>{escape(t.name)} {list(t.shape)} {"OK" if t.ok else "MISMATCH"}</h2>']
    if t.ulp_histogram:
        parts.append(svg_histogram(t.ulp_histogram, title="ULP distances"))
    elif not t.shape_conflict:
        parts.append('<p class="note">integers and bools compare exactly: no ULP distances</p>')
    if t.error_map:
        parts.append(f'<p class="note">where the errors sit: {escape(view_note(t.shape))}, in at most '
                     f'{t.error_map["cells"][0]} × {t.error_map["cells"][1]} blocks, each cell the largest |diff| in its block</p>')
        parts.append(svg_heatmap(t.error_map, title="error map", legend_id=f"ramp-{k}"))
    return "\n".join(parts + ["</section>"])
