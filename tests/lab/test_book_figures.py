"""The chapters' figures (pita_lab.book.figures): drawn from the run record by the library's
renderer, embedded by the shared layout, covered by `pita book check`."""

import copy
import dataclasses
import re
import xml.etree.ElementTree as ElementTree

import pytest

from conftest import ROOT
from pita_lab import catalog
from pita_lab.book import render_chapter
from pita_lab.book.figures import chapter_figures, fix_claims, fix_histogram, render_figures
from pita_lab.claims import Matches
from pita_lab.kinds import PITFALL_KINDS
from pita_lab.record import RunRecord

SVG = "{http://www.w3.org/2000/svg}"
IMAGE = re.compile(r"!\[([^\]]+)\]\((img/[^)]+\.svg)\)\n\n(图：[^\n]+)\n")


def record_of(experiment_id: str) -> RunRecord:
    return RunRecord.load(ROOT / "book" / "records" / f"{experiment_id}.json")


def pitfalls() -> list[str]:
    return [i for i in catalog.chapter_ids() if catalog.get(i).kind in PITFALL_KINDS]


def bar_counts(svg: str) -> list[int]:
    bars = [rect for rect in ElementTree.fromstring(svg).iter(f"{SVG}rect") if rect.get("data-bin") is not None]
    return [int(bar.get("data-count")) for bar in bars]


def test_the_fix_figure_counts_the_ulp_distances_of_the_recorded_tensors():
    """p12's fix: the bars are the bit lengths of the ULP distances between the tensor values
    both programs recorded, counted here independently of compare."""
    from pita_lab.book import element_ulps

    experiment, record = catalog.get("p12"), record_of("p12")
    claim = fix_claims(experiment)[0]
    figure = chapter_figures(experiment, record)[0]
    assert figure.path == f"img/p12-{claim.reference}-{claim.candidate}-ulp.svg"
    reference, candidate = (record.program(*name.split("-", 1)).tensors for name in (claim.reference, claim.candidate))
    distances = [d for name in reference for d in element_ulps(reference[name], candidate[name])]
    counts = [0] * (max(d.bit_length() for d in distances) + 1)
    for d in distances:
        counts[d.bit_length()] += 1
    assert bar_counts(figure.svg) == counts + [0]  # the last bar: no finite distance


def test_the_control_figure_maps_the_failing_tensor():
    experiment, record = catalog.get("p12"), record_of("p12")
    figure = chapter_figures(experiment, record)[-1]
    assert figure.path.endswith("-errors.svg")
    assert len(ElementTree.fromstring(figure.svg).findall(f".//{SVG}rect[@class='hottest']")) == 1


def test_a_record_without_histograms_renders_its_chapter_without_figures():
    record = record_of("p12")
    older = copy.deepcopy(record)
    for comparison in older.comparisons:
        for tensor in comparison.tensors:
            tensor.ulp_histogram = tensor.error_map = None
    assert chapter_figures(catalog.get("p12"), older) == []
    chapter = render_chapter(ROOT, older)
    assert "](img/" not in chapter and "本次运行的断言" in chapter


def test_a_chapter_without_a_fix_has_no_figure():
    experiment = catalog.get("p12")
    without_fix = dataclasses.replace(experiment, claims=tuple(c for c in experiment.claims if not isinstance(c, Matches)))
    assert not [f for f in chapter_figures(without_fix, record_of("p12")) if f.path.endswith("-ulp.svg")]


def test_the_figures_are_pages_of_the_book():
    pages = render_figures(ROOT)
    for figure in chapter_figures(catalog.get("p12"), record_of("p12")):
        assert pages[ROOT / "book" / figure.path] == figure.svg


# The two tests below hold once every record was written by a `pita run` that keeps histograms:
# they need `pita run --all` and `pita book update` (all ids) after this change.


@pytest.mark.parametrize("experiment_id", pitfalls())
def test_every_pitfall_record_keeps_the_histogram_of_its_fix(experiment_id):
    """NEEDS THE FULL RE-RUN (`pita run --all`, `pita book update`)."""
    experiment, record = catalog.get(experiment_id), record_of(experiment_id)
    claims = fix_claims(experiment)
    assert claims, f"{experiment_id} has no Matches claim for its fix"
    for claim in claims:
        assert fix_histogram(record, claim), f"book/records/{experiment_id}.json: no ulp_histogram for {claim.reference} vs {claim.candidate}"


@pytest.mark.parametrize("experiment_id", pitfalls())
def test_every_pitfall_chapter_embeds_an_existing_figure(experiment_id):
    """NEEDS THE FULL RE-RUN (`pita run --all`, `pita book update`)."""
    chapter = (ROOT / "book" / f"{experiment_id}.md").read_text(encoding="utf-8")
    images = IMAGE.findall(chapter)
    assert any(path.endswith("-ulp.svg") for _, path, _ in images), f"book/{experiment_id}.md embeds no ULP histogram"
    for alt, path, caption in images:
        assert (ROOT / "book" / path).is_file(), path
        assert re.search(r"[\u4e00-\u9fff]", alt) and re.search(r"[\u4e00-\u9fff]", caption)
