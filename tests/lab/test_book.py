import dataclasses
import shutil

import pytest

from conftest import ROOT, pita, tracked_digest
from pita_lab import book
from pita_lab.book import render_chapter, snippet
from pita_lab.errors import BrokenExperiment
from pita_lab.record import RunRecord
from pita_lab.store import RecordStore

# What `pita book update` writes: the records and pages under book/, and docs/diagnosis.md.
WRITTEN = ("book", "docs")


def checkout_copy(tmp_path):
    """A checkout to update: what the book writes copied, everything else linked to the real one."""
    root = tmp_path / "checkout"
    root.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in WRITTEN:
            shutil.copytree(entry, root / entry.name, symlinks=True)
        else:
            (root / entry.name).symlink_to(entry)
    return root


def test_committed_chapters_match_their_records(root):
    proc = pita("book", "check", cwd=root)
    assert proc.returncode == 0, proc.stdout


def test_a_changed_record_changes_the_chapter(root):
    record = RecordStore(root).committed("p12")
    committed = (root / "book" / "p12.md").read_text(encoding="utf-8")
    assert render_chapter(root, record) == committed
    torch_mean = record.program("torch", "mean")
    changed = dataclasses.replace(torch_mean, stdout=torch_mean.stdout.replace("mean loss", "mean loss 9"))
    record.programs[record.programs.index(torch_mean)] = changed
    assert render_chapter(root, record) != committed


@pytest.mark.integration
def test_the_fresh_run_agrees_with_the_committed_record(root, p12_run):
    """The drift check on p12 as `pita book drift` runs it: exit 0, the machines and what moved shown."""
    out, proc, _ = p12_run
    assert proc.returncode == 0
    drift = pita("book", "drift", "p12", "--from", out, cwd=root)
    assert drift.returncode == 0, drift.stdout + drift.stderr
    assert drift.stdout.startswith("p12: same within platform tolerance")


@pytest.mark.integration
def test_the_main_job_leaves_the_checkout_clean(p12_run):
    _, proc, clean = p12_run
    assert proc.returncode == 0 and clean


@pytest.mark.integration
def test_update_makes_a_run_the_committed_record(p12_run, tmp_path, capsys):
    """`pita book update` is the one step that writes book/records/ and re-renders the book;
    here in a copy of the checkout, which the real one never sees."""
    out, _, _ = p12_run
    root, before = checkout_copy(tmp_path), tracked_digest(ROOT)
    assert book.update(["p12"], out, root=root) == 0
    assert RecordStore(root).committed("p12") == RunRecord.load(RecordStore.fresh_path(out))
    assert "updated book/records/p12.json" in capsys.readouterr().err
    assert book.check(root=root) == 0
    assert tracked_digest(ROOT) == before


@pytest.mark.integration
def test_update_refuses_a_record_with_a_failing_claim(p12_run, tmp_path, capsys):
    out, _, _ = p12_run
    record = RunRecord.load(RecordStore.fresh_path(out))
    record.claims[0] = dataclasses.replace(record.claims[0], ok=False)
    record.save(RecordStore.fresh_path(tmp_path))
    root = checkout_copy(tmp_path)
    committed = RecordStore(root).committed_path("p12")
    before = committed.read_bytes()
    assert book.update([], tmp_path, root=root) == 1
    assert "failing claim" in capsys.readouterr().err
    assert committed.read_bytes() == before


def test_snippet_needs_its_marker(tmp_path):
    source = tmp_path / "s.py"
    source.write_text("x = 1\n    # book:begin a\n    y = 2\n    # book:end\n")
    assert snippet(source, "a") == "y = 2"
    with pytest.raises(BrokenExperiment, match="no snippet marker 'book:begin b'"):
        snippet(source, "b")
