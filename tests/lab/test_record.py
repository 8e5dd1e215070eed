"""The run record keeps what claims observed, facts included, through a save and a load."""

import json

from conftest import ROOT
from pita_lab.record import ClaimResult, RunRecord

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
