"""How the tools recognise a pitfall, in the book: each chapter's section 「工具怎么认出它」 (its
signature with what the run's `signatures` claim found, its lint rules with the lines the run's
`lint` claim printed) and the short page book/causes.md that explains trace's `settings` phase,
`likely cause` and `pita lint`, with a table of every signature and every rule. Everything comes
from the experiments' declarations, the settings table and the run records; nothing is typed here.
"""

from __future__ import annotations

from pathlib import Path

from pita_lab import catalog
from pita_lab.book.environment import book_dir, environment
from pita_lab.book.settings_table import settings_rows
from pita_lab.claims import Matches, Mismatches, Traced
from pita_lab.errors import BrokenExperiment
from pita_lab.experiment import Experiment
from pita_lab.lint_rules import declared_rules
from pita_lab.record import RunRecord
from pita_lab.signatures import entries
from pita_lab.store import RecordStore

CAUSES_PAGE = "causes.md"
# The chapter section's anchors: the section, its signature part, its lint part.
SECTION, SIGNATURE_PART, LINT_PART = "recognition", "likely-cause", "lint"
# The claims `pita run` adds (pita_lab.signatures, pita_lab.lint_check).
SIGNATURES_CLAIM, LINT_CLAIM = "signatures", "lint"


def lint_rules(experiment_id: str, root: Path) -> list[dict]:
    """The rules an experiment's folder declares (none for a tutorial or a guide: no folder under experiments/)."""
    return declared_rules(root, experiment_id) if experiment_id in catalog.folders() else []


def recognition(root: Path, experiment: Experiment, record: RunRecord) -> dict | None:
    """What a chapter's section 「工具怎么认出它」 shows, or None for a chapter with no signature and no lint rule."""
    rules = lint_rules(experiment.id, root)
    if not experiment.signature and not rules:
        return None
    return {
        "signatures": [signature.text() for signature in experiment.signature],
        "pairs": fired_pairs(experiment, record) if experiment.signature else [],
        "rules": rules,
        "lint": _claim_facts(record, LINT_CLAIM) if rules else None,
        "page": CAUSES_PAGE,
    }


def _claim_facts(record: RunRecord, claim_id: str) -> dict:
    """The facts a record's claim kept; a record from before the claim existed cannot show the section."""
    claim = next((c for c in record.claims if c.id == claim_id), None)
    if claim is None or claim.facts is None:
        where = RecordStore.shown_committed(record.experiment)
        raise BrokenExperiment(f"{where}: no `{claim_id}` claim with its facts (a record from before `pita run` added it): "
                               f"re-run `pita run {record.experiment}` and `pita book update {record.experiment}`")
    return claim.facts


def fired_pairs(experiment: Experiment, record: RunRecord) -> list[dict]:
    """Each compared or traced pair with what the `signatures` claim found there (ids and evidence) and its
    role: `negative` (a `Mismatches` pair), `fixed` (a `Matches` pair, a tutorial's trace of its correct port)."""
    facts = _claim_facts(record, SIGNATURES_CLAIM)
    negative = {(c.reference, c.candidate) for c in experiment.claims if isinstance(c, Mismatches)}
    fixed = {(c.reference, c.candidate) for c in experiment.claims if isinstance(c, Matches) or (isinstance(c, Traced) and c.phase is None)}
    pairs = []
    for pair, ids in facts["fired"].items():
        reference, candidate = pair.split("/")
        evidence = facts.get("evidence", {}).get(pair, {})
        pairs.append({"reference": reference, "candidate": candidate, "causes": [{"id": i, "evidence": evidence.get(i, "")} for i in ids],
                      "role": "negative" if (reference, candidate) in negative else "fixed" if (reference, candidate) in fixed else ""})
    return pairs


def recognised(root: Path, experiment_id: str) -> dict[str, bool]:
    """Whether the tools recognise a chapter's pitfall: `signature` (trace and compare name it) and `lint`."""
    return {"signature": bool(catalog.get(experiment_id).signature), "lint": bool(lint_rules(experiment_id, root))}


def render_causes_page(root: Path) -> dict[Path, str]:
    """book/causes.md: the three outputs explained, with every signature and every lint rule of the catalog."""
    rows = settings_rows(root)
    rules = [rule for experiment_id in catalog.ids() for rule in lint_rules(experiment_id, root)]
    text = environment().get_template("causes.md.j2").render(
        settings={"rows": len(rows), "chapters": len({row["id"] for row in rows if row["id"]}), "measured": sum(1 for row in rows if row["setting"])},
        signatures=[{"entry": entry, "texts": [s.text() for s in entry.signatures]} for entry in entries()],
        rules=rules,
        anchors={"signature": SIGNATURE_PART, "lint": LINT_PART},
    )
    return {book_dir(root) / CAUSES_PAGE: text}
