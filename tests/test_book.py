import dataclasses

import pytest

from pita.book import render_chapter, snippet
from pita.errors import UsageError
from pita.record import RunRecord

from conftest import pita


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


def test_the_fresh_run_renders_the_committed_chapter(root, p12_run):
    """The drift check: a live run on this machine renders exactly what is committed."""
    out, proc = p12_run
    assert proc.returncode == 0
    fresh = render_chapter(root, RunRecord.load(out / "record.json"))
    assert fresh == (root / "book" / "p12.md").read_text(encoding="utf-8")


def test_snippet_needs_its_marker(tmp_path):
    source = tmp_path / "s.py"
    source.write_text("x = 1\n    # book:begin a\n    y = 2\n    # book:end\n")
    assert snippet(source, "a") == "y = 2"
    with pytest.raises(UsageError):
        snippet(source, "b")
