"""The catalog's lint rules checked on its own runs: every `pita run` of an experiment whose burn.rs
a lint rule names a region of (`fires_in` in an experiments/<id>/lint.yml, its own or another
folder's as `<id>:<region>`) adds the claim `lint`. It runs `pita lint` over that burn.rs with every
rule the folders declare (pita_lab.lint_rules, not the shipped JSON `pita book build` writes from
them) and holds when each declared region holds a finding of its rule and nothing is found outside
the regions its rule declares. The record keeps the lines as `pita lint` prints them, the path
relative to the checkout, for the chapter's console block.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pita.lint import Finding, lint_source, load_rules, read_source, render_text
from pita_lab import catalog
from pita_lab.claims import Claim
from pita_lab.experiment import Experiment
from pita_lab.lint_rules import all_declared_rules, fires_in, regions, rules_file


def catalog_rules(root: Path) -> list:
    """Every rule the folders declare, as `pita.lint` runs it."""
    return load_rules(json.dumps({"rules": all_declared_rules(root)}))


def declared_places(root: Path, experiment_id: str) -> list[tuple[str, str]]:
    """(rule id, region) for every region of this experiment's burn.rs a rule must fire in, in catalog order."""
    return [(rule_id, region) for owner in catalog.ids() for rule_id, places in fires_in(root, owner).items()
            for place_owner, region in places if place_owner == experiment_id]


@dataclass(frozen=True)
class LintFits(Claim):
    """`pita lint` on the experiment's burn.rs finds exactly its declared unfixed regions (the module's docstring)."""

    experiment: Experiment
    root: Path
    id: str = "lint"
    text: str = "`pita lint` 在本章的 burn.rs 里只报 lint.yml 声明的未修复区域，每个区域至少一条，别处一条也不报"

    def observe(self, record, out):
        findings = self._findings()
        places = declared_places(self.root, self.experiment.id)
        lines = regions(self.root / self.experiment.burn_source)
        unknown = sorted({region for _, region in places if region not in lines})
        if unknown:
            raise ValueError(f"{self.experiment.burn_source} has no book region {', '.join(unknown)} (a lint.yml `fires_in` names it)")
        inside = {(rule_id, region): [f for f in findings if f.rule == rule_id and lines[region][0] <= f.line <= lines[region][1]]
                  for rule_id, region in places}
        missing = [f"{rule_id} in {region}" for (rule_id, region), found in inside.items() if not found]
        stray = [f"{f.rule} at {f.line}:{f.column}" for f in findings if not any(f in found for found in inside.values())]
        expected = "; ".join(f"{rule_id} in {region}" for rule_id, region in places) or "no finding"
        expected += "; nothing elsewhere" if places else ""
        observed = "; ".join(f"{f.rule} at {f.line}:{f.column}" + "".join(f" ({region})" for (rule_id, region), found in inside.items() if f in found)
                             for f in findings) or "no finding"
        observed += "".join(f" | MISSING {m}" for m in missing) + "".join(f" | OUTSIDE THE DECLARED REGIONS {s}" for s in stray)
        return expected, observed, not missing and not stray

    def facts(self, record, out):
        return {"path": self.experiment.burn_source, "lines": render_text(self._findings()).splitlines()}

    def _findings(self) -> list[Finding]:
        path = self.experiment.burn_source  # shown as `pita lint` run from the checkout shows it
        return lint_source(read_source(self.root / path), path, catalog_rules(self.root))


def lint_claim(experiment: Experiment, root: Path) -> LintFits | None:
    """The claim a run of an experiment with lint rules (or whose burn.rs another's rule names) checks."""
    own_rules = experiment.id in catalog.folders() and rules_file(root, experiment.id).is_file()  # a tutorial's port has no folder here
    if own_rules or declared_places(root, experiment.id):
        return LintFits(experiment, root)
    return None
