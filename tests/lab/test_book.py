import dataclasses
import shutil

import pytest

from conftest import pita
from pita.errors import UsageError
from pita_lab.book import render_chapter, snippet
from pita_lab.record import RunRecord


def test_committed_chapters_match_their_records(root):
    proc = pita("book", "check", cwd=root)
    assert proc.returncode == 0, proc.stdout


def test_a_changed_record_changes_the_chapter(root):
    record = RunRecord.load(root / "book" / "records" / "p12.json")
    committed = (root / "book" / "p12.md").read_text(encoding="utf-8")
    assert render_chapter(root, record) == committed
    torch_mean = record.program("torch", "mean")
    changed = dataclasses.replace(torch_mean, stdout=torch_mean.stdout.replace("mean loss", "mean loss 9"))
    record.programs[record.programs.index(torch_mean)] = changed
    assert render_chapter(root, record) != committed


def test_the_fresh_run_agrees_with_the_committed_record(root, p12_run):
    """The drift check on p12 as `pita book drift` runs it: exit 0, the machines and what moved shown."""
    out, proc, _ = p12_run
    assert proc.returncode == 0
    drift = pita("book", "drift", "p12", "--from", out, cwd=root)
    assert drift.returncode == 0, drift.stdout + drift.stderr
    assert drift.stdout.startswith("p12: same within platform tolerance")


def test_the_main_job_leaves_the_checkout_clean(p12_run):
    _, proc, clean = p12_run
    assert proc.returncode == 0 and clean


def test_update_makes_a_run_the_committed_record(root, p12_run, tmp_path):
    """`pita book update` is the one step that writes book/records/ and re-renders the book;
    the checkout's book is restored afterwards."""
    out, _, _ = p12_run
    shutil.copytree(root / "book", tmp_path / "book")
    try:
        proc = pita("book", "update", "p12", "--from", out, cwd=root)
        assert proc.returncode == 0, proc.stderr
        assert RunRecord.load(root / "book" / "records" / "p12.json") == RunRecord.load(out / "record.json")
        assert "updated book/records/p12.json" in proc.stderr
        assert pita("book", "check", cwd=root).returncode == 0
    finally:
        shutil.rmtree(root / "book")
        shutil.copytree(tmp_path / "book", root / "book")


def test_update_refuses_a_record_with_a_failing_claim(root, p12_run, tmp_path):
    out, _, _ = p12_run
    record = RunRecord.load(out / "record.json")
    record.claims[0] = dataclasses.replace(record.claims[0], ok=False)
    record.save(tmp_path / "record.json")
    before = (root / "book" / "records" / "p12.json").read_bytes()
    proc = pita("book", "update", "--from", tmp_path, cwd=root)
    assert proc.returncode == 1 and "failing claim" in proc.stderr
    assert (root / "book" / "records" / "p12.json").read_bytes() == before


def test_snippet_needs_its_marker(tmp_path):
    source = tmp_path / "s.py"
    source.write_text("x = 1\n    # book:begin a\n    y = 2\n    # book:end\n")
    assert snippet(source, "a") == "y = 2"
    with pytest.raises(UsageError):
        snippet(source, "b")
