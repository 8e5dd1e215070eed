"""The run record keeps what claims observed, facts included, through a save and a load."""

import json

import pytest

from conftest import ROOT
from pita.compare import ComparisonResult
from pita.errors import UsageError
from pita.trace import TraceResult
from pita_lab.record import ClaimResult, ComparisonRun, RunRecord

FACTS = {"setting": "Adam 的 epsilon", "key": "epsilon", "torch": 1e-08, "burn": 1e-05}


def with_claims(*claims: ClaimResult) -> RunRecord:
    return RunRecord("p00", {}, "", [], [], [], [], list(claims))


def test_facts_survive_a_save_and_a_load(tmp_path):
    record = with_claims(ClaimResult("d", "", "epsilon differs", "…", True, facts={**FACTS, "flag": False, "none": None}))
    record.save(tmp_path / "record.json")
    assert RunRecord.load(tmp_path / "record.json").claims[0].facts == {**FACTS, "flag": False, "none": None}


def test_a_claim_without_facts_is_saved_as_before(tmp_path):
    record = with_claims(ClaimResult("m", "", "OK", "OK", True))
    record.save(tmp_path / "record.json")
    saved = json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    assert "facts" not in saved["claims"][0]
    assert RunRecord.load(tmp_path / "record.json").claims[0].facts is None


def test_a_record_from_before_facts_still_loads(tmp_path):
    data = json.loads((ROOT / "book" / "records" / "p12.json").read_text(encoding="utf-8"))
    for claim in data["claims"]:
        claim.pop("facts", None)
    (tmp_path / "old.json").write_text(json.dumps(data), encoding="utf-8")
    old = RunRecord.load(tmp_path / "old.json")
    assert old.claims and all(claim.facts is None for claim in old.claims)


def test_every_committed_record_loads_typed_and_saves_byte_for_byte(tmp_path):
    """The results are `ComparisonResult`s and `TraceResult`s after a load, and a save writes the
    record again exactly, as a fresh run writes it."""
    paths = sorted(p for p in (ROOT / "book" / "records").glob("*.json") if p.name != "matrix.json")
    for path in paths:
        record = RunRecord.load(path)
        assert all(isinstance(c.result, ComparisonResult) for c in record.comparisons)
        assert all(isinstance(t.result, TraceResult) for t in record.traces)
        record.save(tmp_path / "again.json")
        assert (tmp_path / "again.json").read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), path.name


def test_a_comparison_that_could_not_run_is_saved_without_a_result(tmp_path):
    failed = ComparisonRun("torch-ref", "burn-port", ["pita", "compare"], 2, "could not run\n", None)
    RunRecord("p00", {}, "", [], [failed], [], [], []).save(tmp_path / "record.json")
    assert json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))["comparisons"][0]["result"] is None
    loaded = RunRecord.load(tmp_path / "record.json").comparisons[0]
    assert loaded.result is None and loaded.tensors == [] and loaded.verdict == "could not run"


def test_a_result_without_its_format_is_refused(tmp_path):
    data = json.loads((ROOT / "book" / "records" / "p12.json").read_text(encoding="utf-8"))
    del data["comparisons"][0]["result"]["format"]
    (tmp_path / "old.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UsageError, match=r"not a pita compare result: format None, expected 'pita-compare/1'"):
        RunRecord.load(tmp_path / "old.json")
