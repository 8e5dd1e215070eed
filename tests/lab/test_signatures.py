"""The catalog's signatures in the lab: the shipped JSON is what the declarations render, and the
claim every run adds (`signatures`) holds only when each negative control fires the chapter's
own signature and nothing fires where it should not."""

from pathlib import Path

from conftest import ROOT
from pita_lab.book.signatures import LIBRARY_DATA, render_signatures
from pita_lab.catalog import get
from pita_lab.signatures import SignaturesFit, entries, signatures_claim

P12 = get("p12")
OWN = P12.id
# another chapter with a signature that does not declare OWN's firing right too, found, not named: any will do
OTHER = next(get(entry.id) for entry in entries() if entry.id != OWN and OWN not in get(entry.id).also)
NEGATIVE, FIXED = "torch-mean/burn-nomean", "torch-mean/burn-mean"


def cause(pitfall: str) -> dict:
    return {"id": pitfall, "title": "", "chapter": f"book/{pitfall}.md", "fix": "", "evidence": "bias.grad: candidate = 4 × reference"}


def judged(found: dict, experiment=P12) -> bool:
    return SignaturesFit(experiment)._judge(found)[2]


def test_the_shipped_signatures_are_what_the_declarations_render():
    assert render_signatures(ROOT) == {ROOT / LIBRARY_DATA: (ROOT / LIBRARY_DATA).read_text(encoding="utf-8")}
    assert all(Path(ROOT, entry.chapter).name == f"{entry.id}.md" and entry.fix for entry in entries())


def test_the_claim_holds_when_the_negative_control_fires_its_own_and_the_fix_nothing():
    assert judged({NEGATIVE: [cause(OWN)], FIXED: []})


def test_the_claim_fails_when_the_negative_control_is_silent():
    expected, observed, ok = SignaturesFit(P12)._judge({NEGATIVE: [], FIXED: []})
    assert not ok and f"SILENT on {NEGATIVE}" in observed and expected.startswith(f"{OWN} on {NEGATIVE}")


def test_the_claim_fails_when_another_chapter_fires_unless_declared_right_too():
    found = {NEGATIVE: [cause(OWN), cause("pX")], FIXED: []}
    _, observed, ok = SignaturesFit(P12)._judge(found)
    assert not ok and f"FIRES WRONGLY {NEGATIVE}: pX" in observed
    assert judged(found, OTHER) is False  # neither is OTHER's own nor declared by it
    port = get("port-encoder")
    assert OWN in port.also and judged({"torch-record/burn-fix1": [cause(OWN)]}, port)


def test_the_claim_fails_when_anything_fires_on_a_fixed_pair():
    assert not judged({NEGATIVE: [cause(OWN)], FIXED: [cause(OWN)]})


def test_every_experiment_that_compares_gets_the_claim():
    assert isinstance(signatures_claim(P12), SignaturesFit)
