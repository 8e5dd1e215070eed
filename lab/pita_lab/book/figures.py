"""Figures: the pictures a chapter shows of its comparisons, drawn from the run record with the
library's renderer (`pita.report_html`), the same one `pita compare --html` draws with.

Each chapter with a fix (a `Matches` claim) shows the ULP distances of the fixed port against the
reference, all float tensors together; where its negative control (a `Mismatches` claim) keeps an
error map, where that control's errors sit. The SVG files go to book/img/, named after the
experiment and the two dumps; `pita book build` writes them, `pita book check` holds them to the
committed records like every page. A record made before compare kept histograms (no
`ulp_histogram` in its comparisons) gives no figure, so its chapter still renders.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pita.compare import TensorResult
from pita.distribution import merged_histogram
from pita.report_html import svg_heatmap, svg_histogram
from pita_lab import catalog
from pita_lab.claims import Matches
from pita_lab.record import RunRecord
from pita_lab.store import RecordStore

FIGURES = "img"  # under book/
WORDS_ZH = {
    "ulp_axis": "ULP 距离",
    "ulp_axis_note": "ULP 距离（2^k 档：2^k 到 2^(k+1)-1；∞：没有有限距离）",
    "count_axis": "元素个数（对数刻度）",
    "unbounded": "没有有限距离",
    "row": "行",
    "column": "列",
    "zero": "相等",
    "nonfinite": "NaN/inf 不匹配",
    "value": "最大 |diff|",
    "value_axis": "每格最大 |diff|（对数色阶）",
}


@dataclass(frozen=True)
class Figure:
    path: str  # relative to book/, as a chapter links it
    alt: str
    caption: str
    svg: str


def fix_claims(experiment) -> list[Matches]:
    """The claims that the fix matches: those named `…fix-matches`, else the first `Matches`."""
    matches = [c for c in experiment.claims if isinstance(c, Matches)]
    return [c for c in matches if c.id.endswith("fix-matches")] or matches[:1]


def compared_tensors(record: RunRecord, claim) -> list[TensorResult]:
    """The tensors of a claim's comparison as the record keeps them (none where a record older
    than the experiment's declaration lacks the comparison)."""
    found = [c for c in record.comparisons if (c.reference, c.candidate) == (claim.reference, claim.candidate)]
    return found[0].tensors if found else []


def fix_histogram(record: RunRecord, claim) -> dict | None:
    """The overall ULP histogram of a claim's comparison, or None where the record has none."""
    return merged_histogram([t.ulp_histogram for t in compared_tensors(record, claim)])


def chapter_figures(experiment, record: RunRecord) -> list[Figure]:
    """The figures of one chapter, in the order it shows them."""
    figures = []
    for claim in fix_claims(experiment):
        histogram = fix_histogram(record, claim)
        if histogram:
            figures.append(_histogram_figure(experiment.id, claim, histogram))
    control = experiment.negative_control
    if control is not None:
        failing = [t for t in compared_tensors(record, control) if t.error_map]
        if failing:
            figures.append(_map_figure(experiment.id, control, max(failing, key=lambda t: t.n)))
    return figures


def _histogram_figure(experiment_id: str, claim, histogram: dict) -> Figure:
    elements = sum(histogram["counts"]) + histogram["unbounded"]
    return Figure(
        path=f"{FIGURES}/{experiment_id}-{claim.reference}-{claim.candidate}-ulp.svg",
        alt=f"修正后 {claim.candidate} 与 {claim.reference} 逐元素的 ULP 距离分布",
        caption=f"图：修正后 `{claim.candidate}` 对 `{claim.reference}`，全部 {elements} 个浮点元素按 ULP 距离分档计数"
                "（0、1、2–3、4–7……，纵轴取对数）；最右一档是没有有限距离的元素。",
        svg=svg_histogram(histogram, words=WORDS_ZH),
    )


def _map_figure(experiment_id: str, claim, tensor: TensorResult) -> Figure:
    error_map = tensor.error_map
    rows, columns = error_map["view"]
    shape = f"形状 {tensor.shape}" + ("" if len(tensor.shape) == 2 else f"，按 {rows} 行 × {columns} 列画")
    return Figure(
        path=f"{FIGURES}/{experiment_id}-{claim.reference}-{claim.candidate}-errors.svg",
        alt=f"负对照 {claim.candidate} 对 {claim.reference} 中 {tensor.name} 的误差位置图",
        caption=f"图：负对照 `{claim.candidate}` 对 `{claim.reference}` 中 `{tensor.name}`（{shape}）的误差位置："
                "每格是该块元素的最大 |diff|，颜色越深差得越多（对数色阶），蓝框是差得最多的一格。",
        svg=svg_heatmap(error_map, words=WORDS_ZH),
    )


def render_figures(root: Path) -> dict[Path, str]:
    """book/img/<file>.svg -> its text, for every chapter with a record."""
    pages, store = {}, RecordStore(root)
    for experiment_id in catalog.chapter_ids():
        record = store.committed(experiment_id)
        if record is not None:
            for figure in chapter_figures(catalog.get(experiment_id), record):
                pages[root / "book" / figure.path] = figure.svg
    return pages

