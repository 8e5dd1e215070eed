"""Every figure as measured: the book's number filters refuse to print a figure nobody measured,
and no integer on a page moves when the record's floats move by one ULP (another machine's last
bits), so no page floors, truncates or rounds a measured float into an integer."""

import difflib
import json
import math
import re

import jinja2
import numpy as np
import pytest

from pita_lab import catalog
from pita_lab.book import render_chapter
from pita_lab.book.environment import environment
from pita_lab.book.measured import FigureChanged, integers_only, unsafe_percent_operators
from pita_lab.record import RunRecord
from pita_lab.store import RecordStore

# A number as a page prints it: an integer, a decimal, or either with an exponent.
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def render(text: str, **values) -> str:
    return environment().from_string(text).render(**values)


def test_int_of_a_non_integer_is_refused():
    with pytest.raises(FigureChanged, match="3.9999997"):
        render("×{{ factor | int }}", factor=3.9999997)
    with pytest.raises(FigureChanged):
        render("{{ factor | int }}", factor="3.9999997")


def test_int_of_an_integer_is_the_integer():
    assert render("{{ a | int }} {{ b | int }} {{ c | int }}", a=4.0, b="12", c=7) == "4 12 7"


def test_round_shows_the_digits_it_keeps():
    assert render("{{ x | round(6) }}", x=0.9) == "0.900000"
    assert render("{{ x | round(2) }}", x=3.9999997) == "4.00"
    with pytest.raises(FigureChanged):
        render("{{ x | round }}", x=3.9999997)
    assert render("{{ x | round(0, 'floor') }}", x=1.5) == "1"  # an index, computed, not a figure rounded


@pytest.mark.parametrize("spec, value", [("%d", 3.9999997), ("%.0f", 83.88608), ("%.3g", 3.9999997), ("%.4g", 1.099893447831312), ("%.0e", 2.5)])
def test_a_format_that_hides_its_rounding_is_refused(spec, value):
    with pytest.raises(FigureChanged):
        render("{{ spec | format(value) }}", spec=spec, value=value)


@pytest.mark.parametrize("spec, value, shown", [
    ("%#.3g", 3.9999997, "4.00"),
    ("%.3g", 1.23456, "1.23"),  # three digits kept, three shown
    ("%g", float(np.float32(1e-6)), "1e-06"),  # float32's 1e-06 itself
    ("%g", 1 / (1 - 0.9), "10"),  # float64 noise of arithmetic on a setting
    ("%.2e", 3.9999997, "4.00e+00"),
    ("%d", 4.0, "4"),
])
def test_a_format_that_shows_its_digits_passes(spec, value, shown):
    assert render("{{ spec | format(value) }}", spec=spec, value=value) == shown


def test_percent_operator_with_a_hiding_format_is_refused(tmp_path):
    template = tmp_path / "chapter.md.j2"
    template.write_text("{{ '%.3g' % x }} {{ '%.2e' % y }} {{ '差 %d 个 ulp' % n }}", encoding="utf-8")
    unsafe = unsafe_percent_operators(template)
    assert len(unsafe) == 2 and "'%.3g'" in unsafe[0] and "%d" in unsafe[1]
    template.write_text("{{ '%.2e' % y }} {{ '%#.3g' % x }}", encoding="utf-8")
    assert unsafe_percent_operators(template) == []


def test_every_template_formats_through_the_checked_filter():
    found = [problem for folder in (catalog.experiments_dir(), catalog.examples_dir(), catalog.guides_dir(), catalog.ports_dir())
             if folder.exists() for path in sorted(folder.glob("*/chapter.md.j2")) for problem in unsafe_percent_operators(path)]
    assert found == []


def test_the_loader_refuses_a_template_with_a_hiding_percent(tmp_path):
    from pita_lab.book.measured import MeasuredLoader
    (tmp_path / "page.md.j2").write_text("{{ '%.0f' % x }}", encoding="utf-8")
    with pytest.raises(FigureChanged):
        jinja2.Environment(loader=MeasuredLoader([tmp_path])).get_template("page.md.j2")


def integer_data(result: dict) -> bool:
    """Whether a comparison's tensor result is about integers (an integer op's output stored as
    floats): its worst pair of values is integral on both sides."""
    worst = [result.get("worst_reference"), result.get("worst_candidate")]
    return all(isinstance(v, (int, float)) and math.isfinite(v) and v == math.floor(v) for v in worst)


def nudged(value, direction: int, exact_integers: bool):
    """`value` with every float moved one ULP towards `direction` (+1 or -1): a float32 ULP for a
    value float32 holds exactly (the measurements), a float64 ULP otherwise. Left alone: zeros
    (bit-identical results stay so on any machine), non-finite values, and the integral values
    where the record holds integer data, which no machine rounds: a program's `tensors` (name ->
    values; integer tensors are stored as floats, and the record keeps no dtype) and a comparison
    row whose worst values are integers (`integer_data`)."""
    if isinstance(value, dict):
        exact_here = exact_integers or ("worst_reference" in value and integer_data(value))
        return {k: nudged(v, direction, exact_here or (k == "tensors" and isinstance(v, dict))) for k, v in value.items()}
    if isinstance(value, list):
        return [nudged(v, direction, exact_integers) for v in value]
    if not isinstance(value, float) or value == 0 or not math.isfinite(value) or (exact_integers and value == math.floor(value)):
        return value
    single = np.float32(value)
    if float(single) == value:
        return float(np.nextafter(single, np.float32(direction * np.inf)))
    return math.nextafter(value, direction * math.inf)


def integers_that_moved(page: str, moved: str) -> list[str]:
    """Where an integer on `page` became another integer on `moved`: number tokens aligned by
    difflib; an integer that became a decimal is the nudged figure shown with its digits."""
    before, after = NUMBER.findall(page), NUMBER.findall(moved)
    changes = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if tag == "replace":
            for old, new in zip(before[i1:i2], after[j1:j2]):
                if old.isdigit() and new.isdigit() and old != new:
                    changes.append(f"{old} -> {new}")
    return changes


def nudged_record(record_path, direction: int, tmp_path) -> RunRecord:
    data = nudged(json.loads(record_path.read_text(encoding="utf-8")), direction, False)
    path = tmp_path / f"{direction}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return RunRecord.load(path)


def chapter_ids_with_records(root):
    store = RecordStore(root)
    return [i for i in catalog.chapter_ids() if store.committed_path(i).exists()]


def test_nudging_finds_an_integer_that_moves(root, tmp_path):
    """The negative control of the test below: a page that floors a measured float (the tutorial's
    scale factor, 4 on this record) shows another integer once the record moves by one ULP."""
    path = RecordStore(root).committed_path("port-encoder")
    page = "loss：×{{ record.trace('torch-record', 'burn-fix1').result.first_divergence.diagnosis[0].factor | round(0, 'floor') }}"
    shown = [render(page, record=record) for record in (RunRecord.load(path), nudged_record(path, -1, tmp_path), nudged_record(path, 1, tmp_path))]
    assert integers_that_moved(shown[0], shown[1]) == ["4 -> 3"]
    assert integers_that_moved(shown[0], shown[2]) == []


def test_no_integer_on_a_page_moves_with_one_ulp(root, tmp_path):
    moved = {}
    for experiment_id in chapter_ids_with_records(root):
        path = RecordStore(root).committed_path(experiment_id)
        page = render_chapter(root, RunRecord.load(path))
        for direction in (1, -1):
            try:
                with integers_only():
                    changes = integers_that_moved(page, render_chapter(root, nudged_record(path, direction, tmp_path)))
            except FigureChanged as error:  # the same template would refuse the next machine's record
                changes = [str(error)]
            if changes:
                moved[f"{experiment_id} {'+' if direction > 0 else '-'}1 ulp"] = changes
    assert moved == {}


# An example in the diagnosis rules' docs: two float32 values and the ULPs between them, as
# written in English (pita/diagnose/*.py, docs/diagnosis.md) and in Chinese (book/diagnosis.md).
ULP_EXAMPLE = re.compile(r"`(?P<reference>-?[\d.e+-]+)`[,，]\s*(?:candidate|候选)\s*`(?P<candidate>-?[\d.e+-]+)`\s*[（(](?:相差\s*)?(?P<ulps>\d+) ULP")


def ulp_examples(text: str) -> list[tuple[str, str, int]]:
    return [(m["reference"], m["candidate"], int(m["ulps"])) for m in ULP_EXAMPLE.finditer(text)]


def test_the_ulp_counts_in_the_diagnosis_docs_are_computed(root):
    from pita.diagnose import _rules
    from pita.stats import ulp_distance
    from pita_lab.book.diagnosis_zh import DIAGNOSIS_ZH
    texts = [rule.__doc__ or "" for rule in _rules()] + list(DIAGNOSIS_ZH.values())
    examples = [example for text in texts for example in ulp_examples(text)]
    assert len(examples) >= 2  # the rounding rule's, in both languages
    for reference, candidate, ulps in examples:
        measured = int(ulp_distance(np.array([float(reference)], dtype=np.float32), np.array([float(candidate)], dtype=np.float32))[0])
        assert ulps == measured, f"`{reference}` against `{candidate}`: the doc says {ulps} ULP, float32 has {measured}"
    assert ulp_examples("参考 `0.0425`，候选 `0.042500019`（相差 8 ULP）") == [("0.0425", "0.042500019", 8)]  # the old text, which the check refuses
