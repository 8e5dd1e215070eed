"""The lint rules the library ships (pita/catalog/lint.json) and the page that lists them
(docs/lint.md), from the rules the pitfall folders declare (pita_lab.lint_rules, which says how).
The library reads only the JSON this writes, with each rule's pitfall id, title, chapter and fix.
"""

from __future__ import annotations

import json
from pathlib import Path

from pita_lab import catalog
from pita_lab.book.environment import environment
from pita_lab.errors import BrokenExperiment
from pita_lab.lint_rules import all_declared_rules
from pita_lab.store import RecordStore

LIBRARY_DATA = Path("pita") / "catalog" / "lint.json"
PAGE = Path("docs") / "lint.md"


def render_lint_catalog(root: Path) -> dict[Path, str]:
    """The library's rules (pita/catalog/lint.json) and the page that lists them (docs/lint.md)."""
    rules = all_declared_rules(root)
    return {
        root / LIBRARY_DATA: json.dumps({"rules": rules}, ensure_ascii=False, indent=1) + "\n",
        root / PAGE: environment().get_template("lint.md.j2").render(rules=rules, example=lint_example(root)),
    }


def lint_example(root: Path) -> dict:
    """What `pita lint` printed on the first chapter's burn program (catalog order) whose record
    kept its `lint` claim with two findings or more: the page quotes a run, not typed lines."""
    store = RecordStore(root)
    for experiment_id in catalog.ids():
        record = store.committed(experiment_id)
        facts = next((claim.facts for claim in record.claims if claim.id == "lint" and claim.facts), None) if record else None
        if facts and len(facts["lines"]) >= 2:
            return facts
    raise BrokenExperiment("no committed record keeps a lint claim with two findings: run `pita run --all` and `pita book update`")
