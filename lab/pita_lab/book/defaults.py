"""The defaults table (book/defaults.md): every default a chapter's run found to differ between
burn and PyTorch, built from the facts its `DefaultsDiffer` claims kept in the committed
records, along the training main line. The same rows, where a claim `maps` the setting to its
names in the recordings, are the settings table's measured rows (book/settings_table.py)."""

from __future__ import annotations

from pathlib import Path

from pita_lab import catalog
from pita_lab.book.environment import MAINLINE_ZH, book_dir, environment
from pita_lab.claims import DefaultsDiffer, show_default
from pita_lab.errors import BrokenExperiment
from pita_lab.record import RunRecord
from pita_lab.store import RecordStore

PAGE = "defaults.md"


def render_defaults_page(root: Path) -> dict[Path, str]:
    rows, versions, store = [], {"torch": set(), "burn": set()}, RecordStore(root)
    for experiment_id in catalog.ids():
        record = store.committed(experiment_id)
        if record is None:
            continue
        found = defaults_rows(catalog.get(experiment_id), record)
        rows += found
        if found:
            for side in versions:
                versions[side] |= framework_versions(record, side)
    text = environment().get_template("defaults.md.j2").render(
        rows=rows, mainline_zh=MAINLINE_ZH, torch_version=" / ".join(sorted(versions["torch"])),
        burn_version=" / ".join(sorted(versions["burn"])),
    )
    return {book_dir(root) / PAGE: text}


def defaults_rows(experiment, record: RunRecord) -> list[dict]:
    """One row per default the record shows to differ, in the order the experiment declares
    them, with the values as measured and the claim's `maps` (empty: trace does not compare the
    setting). Every `DefaultsDiffer` the experiment declares must have held and kept its facts."""
    maps = {claim.id: claim.maps for claim in experiment.claims if isinstance(claim, DefaultsDiffer)}
    declared = list(maps)
    results = {result.id: result for result in record.claims}
    rows = []
    # a defaults claim the record kept but the experiment no longer declares; other claims' facts (signatures, lint) are not defaults
    for claim_id in declared + [r.id for r in record.claims if r.facts and "setting" in r.facts and r.id not in declared]:
        result = results.get(claim_id)
        where = f"{RecordStore.shown_committed(record.experiment)}, claim {claim_id}"
        rerun = f"re-run `pita run {record.experiment}` and `pita book update {record.experiment}`"
        if result is None or result.facts is None:
            raise BrokenExperiment(f"{where}: no defaults recorded (a record from before claims kept facts): {rerun}")
        if not result.ok:
            raise BrokenExperiment(f"{where}: the claim did not hold, so the defaults do not differ: {rerun}")
        facts = result.facts
        rows.append({
            "id": record.experiment, "mainline": experiment.mainline, "setting": facts["setting"], "key": facts["key"],
            "torch": show_default(facts["torch"], "torch"), "burn": show_default(facts["burn"], "burn"),
            "torch_value": facts["torch"], "burn_value": facts["burn"], "maps": tuple(maps.get(claim_id, ())),
        })
    return rows


def framework_versions(record: RunRecord, side: str) -> set[str]:
    """The framework's release as the side's dumps recorded it, without a local build tag
    (`2.15.0+cu132` is PyTorch 2.15.0)."""
    return {p.metadata["framework_version"].split("+")[0] for p in record.programs if p.side == side and "framework_version" in p.metadata}
