"""`pita trace --html FILE` opened in Debian's chromium (through playwright, as tests/lab/test_site.py
does): the page shows its figures, highlights the first divergence, and makes no request beyond
itself. Skips where chromium or playwright is missing, except under CI=true; the run's last line
counts these tests (tests/conftest.py, the `browser` fixture)."""

from pathlib import Path

import numpy as np
import pytest
from test_trace_steps import MISTAKEN, REFERENCE, REFERENCE64

from conftest import chromium_context, pita
from pita.dump import Dump, write_dump


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> Path:
    """The page of a long run whose candidate departs in the forward pass (act/relu planted) and
    leaves the budget from step 6, written by the command line."""
    folder = tmp_path_factory.mktemp("trace-html")
    reference = Dump(dict(REFERENCE.tensors), {**REFERENCE.metadata, "reference64": "reference-float64.safetensors"})
    relu = np.array(MISTAKEN.tensors["act/relu"])
    relu[0, 0] += 0.5
    candidate = Dump({**MISTAKEN.tensors, "act/relu": relu}, dict(MISTAKEN.metadata))
    write_dump(reference, folder / "reference.safetensors")
    write_dump(REFERENCE64, folder / "reference-float64.safetensors")
    write_dump(candidate, folder / "candidate.safetensors")
    page = folder / "trace.html"
    proc = pita("trace", folder / "reference.safetensors", folder / "candidate.safetensors", "--html", page)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "first divergence: forward act/relu" in proc.stdout
    return page


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


def test_the_page_shows_its_figures_and_asks_for_nothing(browser, page_file):
    url = page_file.as_uri()
    requests: list[str] = []

    def route(route):
        requests.append(route.request.url)
        if route.request.url == url:
            route.continue_()
        else:
            route.abort()

    page = browser.new_page()
    page.route("**/*", route)
    problems: list[str] = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(url, wait_until="load")

    assert requests == [url]  # the file itself, and nothing else: no font, image, style or script to fetch
    assert problems == []
    assert page.title() == "pita trace: MISMATCH"

    # the first divergence, highlighted: its section and its outlined cell in the forward row
    first = page.locator("section.first-divergence")
    assert "act/relu" in first.locator("h2").inner_text() and "introduced" in first.inner_text()
    assert first.locator("p.verdict").inner_text().startswith("the forward pass departs at act/relu")
    assert first.evaluate("e => getComputedStyle(e).borderTopColor") == "rgb(0, 160, 255)"
    outlined = page.locator("rect.cell.first")
    assert outlined.count() == 1
    assert outlined.get_attribute("data-module") == "act/relu"
    assert outlined.evaluate("e => e.closest('.phase-row').dataset.phase") == "forward"

    # each phase a row of modules, in walk order, each cell drawn
    rows = page.locator(".phase-row")
    assert [rows.nth(k).get_attribute("data-phase") for k in range(rows.count())] == ["parameters", "forward", "loss", "backward", "step"]
    assert page.locator('.phase-row[data-phase="forward"] rect.cell').count() == 3
    assert page.locator('.phase-row[data-phase="parameters"] rect.cell').count() == 2  # fc1, fc2

    # the charts: error against depth (forward, backward), loss and error against step, each drawn with its points
    for selector, points in (("svg.depth-chart.forward", 3), ("svg.depth-chart.backward", 4), ("svg.loss-chart", 60),
                             ("svg.step-error-chart", 30 + 30 + 4)):
        chart = page.locator(selector)
        assert chart.count() == 1, selector
        box = chart.bounding_box()
        assert box["width"] > 300 and box["height"] > 150, selector
        assert chart.locator("circle").count() == points, selector
    assert page.locator("svg.step-error-chart line.marker").count() == 1
    assert "first step beyond the budget: 6" in page.locator("section#steps").inner_text()
    page.close()
