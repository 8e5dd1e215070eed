"""The lint rules the pitfall folders declare, over the whole repository: every rule fires in each
unfixed book region its lint.yml names, and nothing fires anywhere else (fixed regions, guards,
the worked ports, the crate, the lab's own burn code). The library's copy, pita/catalog/lint.json,
is what the folders render to."""

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from pita.lint import Rule, lint_path, lint_source, load_rules
from pita_lab import catalog
from pita_lab.book.lint import LIBRARY_DATA, PAGE, lint_example, render_lint_catalog
from pita_lab.errors import BrokenExperiment
from pita_lab.lint_rules import fires_in, read_rules_file, regions

# What a user's burn code looks like in this repository: the catalog, the worked ports, the crate.
LINTED = ("experiments", "ports", "examples", "crates", "lab/burn")


def rendered_rules() -> list[Rule]:
    return load_rules(render_lint_catalog(ROOT)[ROOT / LIBRARY_DATA])


def declared_regions() -> dict[str, list[tuple[Path, str, tuple[int, int]]]]:
    """rule id -> (burn.rs, region, lines) of every region its lint.yml says it fires in."""
    declared = {}
    for experiment_id in catalog.ids():
        for rule_id, places in fires_in(ROOT, experiment_id).items():
            declared[rule_id] = []
            for owner, region in places:
                path = ROOT / "experiments" / catalog.folders()[owner].name / "burn.rs"
                assert region in regions(path), f"{rule_id}: {path.relative_to(ROOT)} has no region {region!r}"
                declared[rule_id].append((path, region, regions(path)[region]))
    return declared


@pytest.fixture(scope="module")
def findings():
    rules = rendered_rules()
    return [f for folder in LINTED for f in lint_path(ROOT / folder, rules)]


def test_the_library_ships_the_rules_the_folders_declare_and_the_docs_list_them():
    rendered = render_lint_catalog(ROOT)
    assert sorted(rendered) == [ROOT / PAGE, ROOT / LIBRARY_DATA]
    for path, text in rendered.items():
        assert path.read_text(encoding="utf-8") == text, f"{path.relative_to(ROOT)} is stale: run `pita book build`"


def test_every_rule_fires_in_each_region_it_declares(findings):
    missing = []
    for rule_id, places in declared_regions().items():
        for path, region, (first, last) in places:
            if not any(f.rule == rule_id and Path(f.file) == path and first <= f.line <= last for f in findings):
                missing.append(f"{rule_id} in {path.relative_to(ROOT)} region {region}")
    assert missing == []


def test_nothing_fires_outside_the_declared_unfixed_regions(findings):
    allowed = [(path, lines) for places in declared_regions().values() for path, _, lines in places]
    stray = [f"{Path(f.file).relative_to(ROOT)}:{f.line} {f.rule}" for f in findings
             if not any(Path(f.file) == path and first <= f.line <= last for path, (first, last) in allowed)]
    assert stray == []


def test_a_rule_fires_nowhere_in_the_catalog_only_when_it_declares_no_region(findings):
    """A pitfall no experiment runs the code of (an encoder from a safetensors checkpoint) has a
    rule with `fires_in: []`: its examples test it."""
    quiet = {rule.id for rule in rendered_rules()} - {f.rule for f in findings}
    assert quiet == {rule_id for rule_id, places in declared_regions().items() if not places}


def examples() -> list[tuple[str, str, bool]]:
    """(rule id, function body, whether the rule must find something in it) from every lint.yml."""
    return [(rule["id"], body, kind == "fires") for experiment_id in catalog.ids() for rule in read_rules_file(ROOT, experiment_id)
            for kind in ("fires", "quiet") for body in rule["examples"][kind]]


def test_every_rule_has_examples_of_both_kinds():
    kinds = {(rule_id, fires) for rule_id, _, fires in examples()}
    assert kinds == {(rule.id, fires) for rule in rendered_rules() for fires in (True, False)}


@pytest.mark.parametrize("rule_id, body, fires", examples(), ids=lambda v: v if isinstance(v, str) and len(v) < 20 else "")
def test_the_rule_on_its_examples(rule_id, body, fires):
    [rule] = [r for r in rendered_rules() if r.id == rule_id]
    found = lint_source(f"fn main() {{\n    {body}\n}}\n", "example.rs", [rule])
    assert bool(found) == fires, f"{rule_id} {'finds nothing in' if fires else 'finds something in'}: {body}"


def test_every_rule_names_its_pitfall_and_fix():
    for rule in rendered_rules():
        experiment = catalog.get(rule.pitfall)
        assert (rule.title, rule.chapter) == (experiment.title, f"book/{experiment.id}.md")
        assert rule.fix


def test_a_rule_file_with_an_unknown_key_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "experiments" / catalog.folders()["p20"].name
    folder.mkdir(parents=True)
    (folder / "lint.yml").write_text("rules:\n  - {id: p20, summary: s, fires_in: [], examples: {}, config: AdamConfig, without: with_epsilon, where: x}\n")
    with pytest.raises(BrokenExperiment, match="unknown: where"):
        read_rules_file(tmp_path, "p20")
    (folder / "lint.yml").write_text("rules:\n  - {id: p200, summary: s, fires_in: [], examples: {}, config: AdamConfig, without: with_epsilon}\n")
    with pytest.raises(BrokenExperiment, match="is not p20"):
        read_rules_file(tmp_path, "p20")


def test_the_docs_example_is_what_pita_lint_prints_on_that_file():
    """docs/lint.md quotes a record's lint claim: those lines are what `pita lint` prints on that
    file now, and the page holds them under the command."""
    example = lint_example(ROOT)
    proc = subprocess.run([sys.executable, "-m", "pita", "lint", example["path"]], cwd=ROOT, capture_output=True, text=True)
    assert (proc.returncode, proc.stdout.splitlines()) == (1, example["lines"]), proc.stderr
    page = (ROOT / PAGE).read_text(encoding="utf-8")
    assert f"$ pita lint {example['path']}" in page and "\n".join(example["lines"]) in page
