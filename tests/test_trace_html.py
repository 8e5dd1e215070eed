"""`pita trace --html FILE` without a browser: what the page holds, that it asks for nothing, that
file values reach it escaped, and that the file is written whole (tests/test_trace_html_browser.py
opens it in chromium)."""

import re

import numpy as np
from test_trace import REFERENCE as ONE_STEP
from test_trace import edited, run
from test_trace_steps import CORRECT, MISTAKEN, REFERENCE, REFERENCE64

from conftest import pita
from pita.dump import Dump, write_dump
from pita.trace import trace_dumps
from pita.trace_html import budget_colour, cells_of, module_key, render_trace_html


def test_nothing_on_the_page_is_fetched_or_run():
    page = render_trace_html(trace_dumps(REFERENCE, MISTAKEN, reference64=REFERENCE64))
    assert "<script" not in page and "src=" not in page and "@import" not in page and "url(" not in page
    assert set(re.findall(r'href="([^"]*)"', page)) == set()  # no link at all (a stylesheet, a font, an icon)
    assert set(re.findall(r"https?://[^\"' )]+", page)) == {"http://www.w3.org/2000/svg"}  # SVG's namespace, never fetched


def test_a_long_runs_page_has_every_figure():
    page = render_trace_html(trace_dumps(REFERENCE, MISTAKEN, reference64=REFERENCE64))
    assert '<section id="first-divergence" class="first-divergence">' in page
    assert page.count('<div class="phase-row"') == 5
    for kind in ('class="depth-chart forward"', 'class="depth-chart backward"', 'class="loss-chart"', 'class="step-error-chart"'):
        assert page.count(kind) == 1, kind
    assert "first step beyond the budget: 6" in page
    assert page.count('class="cell first"') == 0  # the first divergence is loss/6, a later step: not a step-1 cell


def test_a_one_step_trace_has_no_steps_section_and_outlines_its_first_divergence():
    candidate = edited(run(), param__fc1__weight=np.asarray(ONE_STEP.tensors["param/fc1.weight"]) * 1.5)
    result = trace_dumps(ONE_STEP, candidate)
    page = render_trace_html(result)
    assert 'id="steps"' not in page and 'class="loss-chart"' not in page
    first = re.findall(r'<rect class="cell first"[^>]*data-module="([^"]*)"', page)
    assert first == ["param/fc1"] and result.first_divergence.name == "param/fc1.weight"
    assert "green within the tolerance, red beyond it" in page


def test_values_from_files_are_escaped():
    hostile = '<img src=x onerror=alert(1)>"\n'
    tensors = {name.replace("fc1", "fc1" + hostile) if name.startswith(("param/fc1", "grad/fc1", "step1/fc1")) else name: value
               for name, value in ONE_STEP.tensors.items()}
    reference = Dump(tensors, dict(ONE_STEP.metadata), source="run" + hostile)
    candidate = Dump({name: (value * 2 if name.startswith("grad/") else value) for name, value in tensors.items()}, dict(ONE_STEP.metadata),
                     source="run")
    page = render_trace_html(trace_dumps(reference, candidate))
    assert "<img" not in page and "onerror=alert(1)&gt;&quot;\\n" in page


def test_modules_gather_a_kinds_tensors():
    assert module_key("param/encoder.fc1.weight") == "param/encoder.fc1"
    assert module_key("step3/encoder.fc1.weight") == "step3/encoder.fc1"
    assert module_key("act/encoder.fc1#2") == "act/encoder.fc1#2"
    assert module_key("loss/1") == "loss/1"
    assert module_key("param/scale") == "param/scale"
    result = trace_dumps(REFERENCE, CORRECT, reference64=REFERENCE64)
    cells = cells_of([w for w in result.walked if w.phase == "parameters"], None)
    assert [(c.key, len(c.names), c.status) for c in cells] == [("param/fc1", 2, "ok"), ("param/fc2", 2, "ok")]


def test_colours_step_at_the_budgets_edge():
    within, edge, beyond = budget_colour(0.999, "ok"), budget_colour(1.0, "ok"), budget_colour(1.001, "mismatch")
    assert within == edge and beyond != edge
    assert budget_colour(1e-6, "ok") == budget_colour(1e-3, "ok") != budget_colour(1e-2, "ok")  # the ramp starts at 10^-3
    assert budget_colour(1e3, "mismatch") == budget_colour(float("inf"), "mismatch") == "#b10026"
    assert budget_colour(None, "ok") != budget_colour(None, "mismatch")
    assert budget_colour(0.5, "missing") == budget_colour(None, "extra") == "#bbbbbb"


def test_the_command_line_writes_the_page_whole_even_when_the_trace_fails(tmp_path):
    write_dump(REFERENCE, tmp_path / "reference.safetensors")
    write_dump(MISTAKEN, tmp_path / "candidate.safetensors")
    page = tmp_path / "trace.html"
    page.write_text("an older page", encoding="utf-8")
    proc = pita("trace", tmp_path / "reference.safetensors", tmp_path / "candidate.safetensors", "--html", page)
    assert proc.returncode == 1, proc.stderr
    written = page.read_text(encoding="utf-8")
    assert written.startswith("<!DOCTYPE html>") and written.endswith("</body></html>\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["candidate.safetensors", "reference.safetensors", "trace.html"]  # no temporary left


def test_the_page_may_not_overwrite_an_input(tmp_path):
    write_dump(REFERENCE, tmp_path / "reference.safetensors")
    write_dump(CORRECT, tmp_path / "candidate.safetensors")
    before = (tmp_path / "candidate.safetensors").read_bytes()
    proc = pita("trace", tmp_path / "reference.safetensors", tmp_path / "candidate.safetensors", "--html", tmp_path / "candidate.safetensors")
    assert proc.returncode == 2 and proc.stderr.startswith("error: --html ") and "the same file" in proc.stderr
    assert (tmp_path / "candidate.safetensors").read_bytes() == before
