"""The drift check both ways: platform noise passes and is listed; a real change fails."""

import copy
import re

import numpy as np
import pytest

import pita.report
from conftest import ROOT
from pita_lab.drift import PlatformTolerance, compare_records, render
from pita_lab.record import RunRecord


@pytest.fixture()
def committed() -> RunRecord:
    return RunRecord.load(ROOT / "book" / "records" / "p12.json")


def nudged(value: float, ulps: int) -> float:
    """`value` moved by `ulps` float32 ULPs."""
    moved = np.float32(value)
    for _ in range(abs(ulps)):
        moved = np.nextafter(moved, np.float32(np.inf if ulps > 0 else -np.inf))
    return float(moved)


def on_another_machine(record: RunRecord, ulps: int) -> RunRecord:
    """The record as another CPU and kernel build would write it: every recorded tensor value and
    every float printed in a program's output moved by `ulps` ULPs."""
    fresh = copy.deepcopy(record)
    fresh.platform = {**fresh.platform, "cpu": "AMD EPYC 9B14", "os": "Linux-6.1.0-other-x86_64-with-glibc2.36"}
    for program in fresh.programs:
        program.tensors = {name: [nudged(v, ulps) for v in values] for name, values in program.tensors.items()}
        program.stdout = re.sub(r"-?\d+\.\d{6,}", lambda m: repr(nudged(float(m.group()), ulps)), program.stdout)
    for comparison in fresh.comparisons:
        for tensor in comparison.tensors:
            if tensor.max_ulp is not None:
                tensor.max_ulp += ulps
    return reprinted(fresh)


def reprinted(record: RunRecord) -> RunRecord:
    """The record with what each comparison printed made again from its result, as a run prints it."""
    for comparison in record.comparisons:
        comparison.stdout = pita.report.render_text(comparison.result)
    return record


def test_the_same_record_has_no_drift(committed):
    report = compare_records(committed, committed)
    assert report.ok and not report.moved and not report.machine


def test_a_few_ulps_and_another_machine_pass_and_are_listed(committed):
    report = compare_records(committed, on_another_machine(committed, 3))
    assert report.ok, render(report)
    assert {d.where for d in report.machine} == {"platform.cpu", "platform.os"}
    assert any("programs[torch-mean].tensors.weight.grad" in d.where for d in report.moved)
    assert any(".max_ulp" in d.where for d in report.moved)
    text = render(report)
    assert "platform differences:" in text and "AMD EPYC 9B14" in text and "CHANGES" not in text


def test_a_figure_beyond_the_tolerance_fails(committed):
    fresh = on_another_machine(committed, PlatformTolerance().ulps * 64)
    report = compare_records(committed, fresh)
    assert not report.ok
    assert any("tensors.weight.grad" in d.where for d in report.changed)


def test_a_flipped_verdict_fails(committed):
    fresh = copy.deepcopy(committed)
    comparison = fresh.comparison("torch-mean", "burn-nomean")
    comparison.exit_code = 0
    for tensor in comparison.tensors:
        tensor.ok = True
    report = compare_records(committed, reprinted(fresh))
    assert not report.ok
    changed = {d.where for d in report.changed}
    assert "p12.comparisons[torch-mean vs burn-nomean].exit_code" in changed
    assert "p12.comparisons[torch-mean vs burn-nomean].result.ok" in changed


def test_a_printed_report_that_is_not_its_result_fails(committed):
    fresh = copy.deepcopy(committed)
    comparison = fresh.comparison("torch-mean", "burn-nomean")
    comparison.stdout = comparison.stdout.replace("MISMATCH", "OK")
    changed = {d.where for d in compare_records(committed, fresh).changed}
    assert changed == {"p12.comparisons[torch-mean vs burn-nomean].stdout"}


def reworded(text: str) -> str:
    """Compare's report with its lines worded otherwise (the words drift once parsed)."""
    text = re.sub(r"MISMATCH (\d+)/(\d+) \(([\d.]+)%\)", r"\1 of \2 elements fail (\3 in 100)", text)
    return text.replace("first mismatches:", "earliest failures:").replace("worst at", "largest |diff| at")


def test_rewording_the_report_does_not_change_what_drift_accepts(committed, monkeypatch):
    """Positions, example values and mismatch counts stay free and a real change still fails,
    however the report words its lines: drift compares the results, not the printed words."""
    original = pita.report.render_text
    monkeypatch.setattr(pita.report, "render_text", lambda result: reworded(original(result)))
    before = reprinted(copy.deepcopy(committed))
    assert "earliest failures:" in before.comparison("torch-mean", "burn-nomean").stdout
    fresh = copy.deepcopy(before)
    tensor = fresh.comparison("torch-mean", "burn-nomean").tensors[0]
    tensor.mismatched -= 1
    tensor.worst_index = [index + 1 for index in tensor.worst_index]
    tensor.examples = tensor.examples[:1]
    report = compare_records(before, reprinted(fresh))
    assert report.ok, render(report)
    assert {d.where.rsplit(".", 1)[-1] for d in report.moved} >= {"mismatched", "worst_index[0]"}
    tensor.max_abs_diff *= 2
    assert not compare_records(before, reprinted(fresh)).ok


def test_a_failed_claim_and_a_changed_diagnosis_fail(committed):
    fresh = copy.deepcopy(committed)
    fresh.claims[0].ok = False
    fresh.comparison("torch-mean", "burn-nomean").tensors[0].diagnosis[0].kind = "offset"
    changed = {d.where for d in compare_records(committed, reprinted(fresh)).changed}
    assert f"p12.claims[{committed.claims[0].id}].ok" in changed
    assert any(w.endswith(".kind") for w in changed)


def test_a_changed_panic_or_compiler_error_fails(committed):
    fresh = copy.deepcopy(committed)
    fresh.program("burn", "guard").stderr += "extra line\n"
    fresh.compile_fail[0].diagnostic = fresh.compile_fail[0].diagnostic.replace("E0308", "E0599")
    changed = {d.where for d in compare_records(committed, fresh).changed}
    assert "p12.programs[burn-guard].stderr" in changed
    assert "p12.compile_fail[ce12].diagnostic" in changed


def test_printed_figures_may_flip_their_last_digit_but_not_more():
    tolerance = PlatformTolerance(ulps=4)
    base = RunRecord.load(ROOT / "book" / "records" / "p12.json")

    def with_stdout(text):
        record = copy.deepcopy(base)
        record.programs[0].stdout = text
        return record

    assert compare_records(with_stdout("ratio 10.9"), with_stdout("ratio 11.0"), tolerance).ok
    assert not compare_records(with_stdout("ratio 10.9"), with_stdout("ratio 11.1"), tolerance).ok
    assert compare_records(with_stdout("16 ulps at [0, 2]"), with_stdout("10 ulps at [0, 1]"), tolerance).ok
    assert not compare_records(with_stdout("16 ulps at [0, 2]"), with_stdout("160 ulps at [0, 2]"), tolerance).ok
    assert not compare_records(with_stdout("exit 1"), with_stdout("exit 2"), tolerance).ok
    assert compare_records(with_stdout("nan"), with_stdout("nan"), tolerance).ok


def test_facts_are_compared_exactly(committed):
    """A default is not a float sum: one bit of difference in a recorded default is a change."""
    with_facts = copy.deepcopy(committed)
    with_facts.claims[0].facts = {"setting": "s", "key": "epsilon", "torch": 1e-08, "burn": 1e-05}
    assert compare_records(with_facts, copy.deepcopy(with_facts)).ok
    fresh = copy.deepcopy(with_facts)
    fresh.claims[0].facts = {**with_facts.claims[0].facts, "burn": float(np.nextafter(1e-05, 1.0))}
    report = compare_records(with_facts, fresh)
    assert not report.ok and not report.moved
    assert [d.where for d in report.changed] == [f"p12.claims[{committed.claims[0].id}].facts"]


def test_ulp_histograms_are_shown_not_compared_but_their_totals_are(committed):
    """The bins of a ULP histogram move with the platform (another bin length included); how
    many elements it counts and how many have no finite distance do not."""
    with_histogram = copy.deepcopy(committed)
    tensor = with_histogram.comparison("torch-mean", "burn-mean").tensors[-1]
    tensor.ulp_histogram = {"edges": [0, 1, 2], "counts": [1, 1, tensor.n - 2], "unbounded": 0}
    moved = copy.deepcopy(with_histogram)
    moved.comparison("torch-mean", "burn-mean").tensors[-1].ulp_histogram = {
        "edges": [0, 1, 2, 4, 8], "counts": [tensor.n - 1, 0, 0, 0, 1], "unbounded": 0}
    report = compare_records(with_histogram, moved)
    assert report.ok, render(report)
    assert [d.where.rsplit(".", 1)[-1] for d in report.moved] == ["ulp_histogram"]
    lost = copy.deepcopy(moved)
    lost.comparison("torch-mean", "burn-mean").tensors[-1].ulp_histogram["counts"][0] -= 1
    assert not compare_records(with_histogram, lost).ok
    non_finite = copy.deepcopy(moved)
    histogram = non_finite.comparison("torch-mean", "burn-mean").tensors[-1].ulp_histogram
    histogram["counts"][0] -= 1
    histogram["unbounded"] += 1
    report = compare_records(with_histogram, non_finite)
    assert not report.ok and any("no finite distance" in d.fresh for d in report.changed)
