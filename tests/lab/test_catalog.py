"""The whole catalog for real: one build, every experiment, every claim; then every committed
chapter must be what this machine's fresh run renders."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT, pita
from pita_lab import catalog
from pita_lab.book import render_chapter
from pita_lab.drift import drift_from_committed, render
from pita_lab.experiment import MAINLINE
from pita_lab.kinds import Kind
from pita_lab.record import RunRecord
from pita_lab.store import RecordStore

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def catalog_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("catalog")
    proc = subprocess.run([sys.executable, "-m", "pita", "run", "--all", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    return out, proc


def test_every_experiment_holds_all_its_claims(catalog_run):
    out, proc = catalog_run
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    ids = catalog.chapter_ids()  # the guides and the tutorials run with the catalog
    assert f"{len(ids)}/{len(ids)} experiments hold" in proc.stdout


@pytest.mark.parametrize("experiment_id", catalog.chapter_ids())
def test_the_fresh_run_agrees_with_the_committed_record(catalog_run, experiment_id):
    """The drift check: what does not depend on the platform is equal, float figures within the
    experiment's declared tolerance; what moved is printed, and the chapter still renders."""
    out, _ = catalog_run
    fresh = RunRecord.load(RecordStore.fresh_path(out / experiment_id))
    report = drift_from_committed(RecordStore(ROOT), fresh)
    print(render(report))
    assert report.ok, render(report)
    assert render_chapter(ROOT, fresh).startswith("<!--")


def test_each_signature_fires_on_its_negative_controls_and_nowhere_it_is_not_declared(catalog_run):
    """Every fresh record's `signatures` claim (pita_lab.signatures), all listed at once; and each
    declared signature fired somewhere (its own negative control)."""
    out, _ = catalog_run
    failing, fired = {}, set()
    for experiment_id in catalog.chapter_ids():
        experiment = catalog.get(experiment_id)
        claim = next((c for c in RunRecord.load(RecordStore.fresh_path(out / experiment_id)).claims if c.id == "signatures"), None)
        assert (claim is not None) == bool(experiment.comparisons or experiment.traces), experiment_id
        if claim is not None:
            fired |= {pitfall for ids in claim.facts["fired"].values() for pitfall in ids}
            if not claim.ok:
                failing[experiment_id] = claim.observed
    assert not failing
    assert {e.id for e in catalog.all_experiments().values() if e.signature} <= fired


def test_every_experiment_has_a_negative_control_and_a_fix():
    for experiment in [*catalog.all_experiments().values(), *map(catalog.get, catalog.guide_ids())]:
        kinds = {type(claim).__name__ for claim in experiment.claims}
        assert "Mismatches" in kinds, experiment.id
        assert "Matches" in kinds, experiment.id
        assert isinstance(experiment.kind, Kind) and (experiment.mainline in MAINLINE or not experiment.kind.is_pitfall), experiment.id
    for tutorial in map(catalog.get, catalog.tutorial_ids()):  # trace must find a planted mistake, and none once fixed
        traced = [claim for claim in tutorial.claims if type(claim).__name__ == "Traced"]
        assert any(claim.phase for claim in traced) and any(claim.phase is None for claim in traced), tutorial.id


def test_ids_follow_the_main_line():
    stages = [MAINLINE.index(e.mainline) for e in catalog.all_experiments().values()]
    assert stages == sorted(stages)
    assert catalog.get("p12").mainline == "loss → backward"


def test_list_shows_the_catalog_as_json():
    rows = json.loads(pita("list", "--format", "json").stdout)
    assert [r["id"] for r in rows] == catalog.guide_ids() + catalog.ids()
    assert {r["class"] for r in rows if r["id"] in catalog.guide_ids()} == {"guide"}
    assert {"id", "title", "mainline", "class", "status"} <= set(rows[0])
