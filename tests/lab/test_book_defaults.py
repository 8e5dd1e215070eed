"""The defaults table (book/defaults.md) is built from the facts the records' DefaultsDiffer
claims kept, and refuses a record that has none."""

import copy
import json

import pytest

from conftest import ROOT
from pita.settings import CONVERTERS, IN_CODE
from pita_lab import catalog
from pita_lab.book.defaults import defaults_rows, render_defaults_page
from pita_lab.book.settings_table import render_settings_table, settings_rows
from pita_lab.claims import DefaultsDiffer, show_default
from pita_lab.errors import BrokenExperiment
from pita_lab.record import RunRecord


def committed_records() -> dict[str, RunRecord]:
    records = {}
    for experiment_id in catalog.ids():
        path = ROOT / "book" / "records" / f"{experiment_id}.json"
        if path.exists():
            records[experiment_id] = RunRecord.load(path)
    return records


def declaring(record: RunRecord) -> list[str]:
    return [c.id for c in catalog.get(record.experiment).claims if isinstance(c, DefaultsDiffer)]


def test_every_default_in_the_records_is_a_row_of_the_page():
    [text] = render_defaults_page(ROOT).values()
    rows = [line for line in text.splitlines() if line.startswith("| ") and line.endswith(".md) |")]
    expected = []
    for experiment_id, record in committed_records().items():
        for claim in record.claims:
            if claim.facts and "setting" in claim.facts:  # a DefaultsDiffer claim's (signatures and lint keep facts too)
                facts = claim.facts
                burn, torch = show_default(facts["burn"], "burn"), show_default(facts["torch"], "torch")
                expected.append(f"| {facts['setting']} | `{burn}` | `{torch}` |")
                assert expected[-1] in text, f"{experiment_id} {claim.id} is not in the table"
    assert expected and len(rows) == len(expected)
    assert [row.split(" | ")[0] for row in rows] == [line.split(" | ")[0] for line in expected]  # main-line order


def test_every_declared_defaults_claim_kept_its_facts():
    for record in committed_records().values():
        results = {c.id: c for c in record.claims}
        for claim_id in declaring(record):
            assert results[claim_id].ok and results[claim_id].facts, f"{record.experiment} {claim_id}"


def a_record_with_defaults() -> RunRecord:
    return next(r for r in committed_records().values() if declaring(r))


def test_a_record_without_facts_fails_clearly():
    record = copy.deepcopy(a_record_with_defaults())
    for claim in record.claims:
        claim.facts = None
    with pytest.raises(BrokenExperiment, match=rf"book/records/{record.experiment}\.json, claim .*: no defaults recorded .*pita run {record.experiment}"):
        defaults_rows(catalog.get(record.experiment), record)


def test_a_claim_that_did_not_hold_is_not_a_row():
    record = copy.deepcopy(a_record_with_defaults())
    failed = next(c for c in record.claims if c.id in declaring(record))
    failed.ok = False
    with pytest.raises(BrokenExperiment, match=rf"claim {failed.id}: the claim did not hold"):
        defaults_rows(catalog.get(record.experiment), record)


def test_a_changed_default_changes_the_row():
    record = copy.deepcopy(a_record_with_defaults())
    before = defaults_rows(catalog.get(record.experiment), record)
    claim = next(c for c in record.claims if c.facts)
    claim.facts = {**claim.facts, "burn": "Changed"}
    after = defaults_rows(catalog.get(record.experiment), record)
    assert [r["burn"] for r in after] != [r["burn"] for r in before] and "Changed" in [r["burn"] for r in after]


# --- the settings table (pita/catalog/settings.json), built from the same rows -----------------


def test_the_settings_table_is_current_and_names_existing_chapters():
    [(path, text)] = render_settings_table(ROOT).items()
    assert path == ROOT / "pita" / "catalog" / "settings.json" and path.read_text(encoding="utf-8") == text  # `pita book build` wrote it
    rows = json.loads(text)["rows"]
    chapters = set(catalog.chapter_ids())
    named = [row for row in rows if row["id"] is not None]
    assert named and all(row["id"] in chapters and row["chapter"] == f"book/{row['id']}.md" and row["title"] for row in named)
    assert all(row["convert"] in CONVERTERS or row["convert"] == IN_CODE for row in rows if row["convert"])
    pairs = [(row["scope"], row["torch_kind"], row["torch_name"], row["burn_kind"], row["burn_name"]) for row in rows]
    assert len(pairs) == len(set(pairs)), "a setting mapped twice"


def test_every_mapped_defaults_claim_is_a_row_with_the_measured_defaults():
    rows = settings_rows(ROOT)
    for record in committed_records().values():
        experiment = catalog.get(record.experiment)
        for claim in experiment.claims:
            if isinstance(claim, DefaultsDiffer) and claim.maps:
                facts = next(c.facts for c in record.claims if c.id == claim.id)
                kinds, _, name = claim.maps[0].partition(".")
                found = [r for r in rows if r["id"] == record.experiment and r["torch_kind"] in kinds.split("|") and r["torch_name"] == (name or None)]
                assert found and all((r["torch_default"], r["burn_default"]) == (facts["torch"], facts["burn"]) for r in found), claim.id
    layer_norm = next(r for r in rows if (r["torch_kind"], r["torch_name"]) == ("LayerNorm", "eps"))
    assert (layer_norm["burn_kind"], layer_norm["burn_name"], layer_norm["torch_default"], layer_norm["burn_default"]) == ("LayerNorm", "epsilon", 1e-05, 1e-05)


def test_a_changed_measured_default_changes_the_settings_table():
    record = copy.deepcopy(committed_records()["p10b"])
    claim = next(c for c in record.claims if c.facts)
    claim.facts = {**claim.facts, "burn": 1e-06}
    [row] = [r for r in defaults_rows(catalog.get("p10b"), record) if r["maps"]]
    assert row["burn_value"] == 1e-06 and row["maps"] == ("RMSNorm.eps", "RmsNorm.epsilon")


def test_the_defaults_page_shows_the_names_trace_compares():
    [text] = render_defaults_page(ROOT).values()
    assert "| `RMSNorm.eps` ↔ `RmsNorm.epsilon` |" in text and "| — |" in text  # p08a's initializers are not compared
