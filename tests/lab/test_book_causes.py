"""How the book shows that the tools recognise a pitfall: the `lint` claim every run of an
experiment with lint rules adds, each chapter's section 「工具怎么认出它」 (signature and lint
lines quoted from the record), the symptom index's links to it, and the short page book/causes.md."""

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ROOT
from pita_lab import catalog
from pita_lab.book import PAGE_RENDERERS, render_chapter
from pita_lab.book.causes import CAUSES_PAGE, LINT_PART, SIGNATURE_PART, render_causes_page
from pita_lab.book.navigation import render_symptoms_page
from pita_lab.errors import BrokenExperiment
from pita_lab.lint_check import declared_places, lint_claim
from pita_lab.lint_rules import all_declared_rules, declared_rules
from pita_lab.record import ClaimResult, RunRecord
from pita_lab.signatures import entries
from pita_lab.site import REFERENCE_PAGES
from pita_lab.store import RecordStore

SECTION = "## 工具怎么认出它"
# What a `signatures` claim keeps (pita_lab.signatures.SignaturesFit.facts): the chapter must quote it, not recompute it.
EVIDENCE = "bias.grad: candidate = 4 × reference (the record's evidence)"


def committed(experiment_id: str) -> RunRecord:
    return RecordStore(ROOT).committed(experiment_id)


def with_lint_claim(record: RunRecord, root: Path = ROOT, out: Path = ROOT) -> RunRecord:
    """The record with the `lint` claim `pita run` adds (it reads the source only, so it runs on a committed record)."""
    claim = lint_claim(catalog.get(record.experiment), root)
    record.claims = [c for c in record.claims if c.id != "lint"] + [claim.check(record, out)]
    return record


def with_signatures_facts(record: RunRecord, fired: dict[str, list[str]], evidence: dict[str, dict[str, str]]) -> RunRecord:
    record.claims = [c for c in record.claims if c.id != "signatures"] + [
        ClaimResult(id="signatures", text="t", expected="e", observed="o", ok=True, facts={"fired": fired, "evidence": evidence})]
    return record


def section(text: str) -> str:
    assert SECTION in text, "the chapter has no section 「工具怎么认出它」"
    return text[text.index(SECTION):text.index("## 相关")]


def console_lines(text: str, path: str) -> list[str]:
    """The lines of the console block that runs `pita lint <path>`."""
    block = re.search(rf"```console\n\$ pita lint {re.escape(path)}\n(.*?)```", text, re.S)
    assert block, f"no console block running `pita lint {path}`"
    return block.group(1).splitlines()


def firing_here(experiment_id: str) -> set[str]:
    """The rules (of any folder) whose `fires_in` names a region of this experiment's burn.rs."""
    return {rule for rule, _ in declared_places(ROOT, experiment_id)}


# a chapter where two rules fire (its burn.rs holds two unfixed configs), found, not named
TWO_RULES = next(experiment_id for experiment_id in catalog.ids() if len(firing_here(experiment_id)) >= 2)
# a chapter with neither a signature nor a rule, found, not named
PLAIN = next(experiment_id for experiment_id in catalog.ids() if not catalog.get(experiment_id).signature and not firing_here(experiment_id))


def test_the_lint_claim_holds_on_the_catalog_and_keeps_the_lines_pita_lint_prints():
    record = with_lint_claim(committed(TWO_RULES))
    [claim] = [c for c in record.claims if c.id == "lint"]
    assert claim.ok, claim.observed
    path = catalog.get(TWO_RULES).burn_source
    assert claim.facts["path"] == path
    assert [line.split(":")[0] for line in claim.facts["lines"]] == [path] * len(claim.facts["lines"])  # relative to the checkout
    assert {line.split(": ")[1].split()[0] for line in claim.facts["lines"]} == firing_here(TWO_RULES)


def folder_copy(tmp_path: Path, experiment_id: str) -> Path:
    """A checkout holding only one experiment's lint.yml and burn.rs (its rules are the only ones)."""
    folder = catalog.folders()[experiment_id]
    (tmp_path / "experiments" / folder.name).mkdir(parents=True)
    for name in ("lint.yml", "burn.rs"):
        shutil.copy(folder / name, tmp_path / "experiments" / folder.name / name)
    return tmp_path / "experiments" / folder.name / "burn.rs"


def test_the_lint_claim_fails_on_a_finding_outside_its_regions_and_on_a_region_without_one(tmp_path):
    burn = folder_copy(tmp_path, "p12")
    source = burn.read_text(encoding="utf-8")
    [claim] = [c for c in with_lint_claim(committed("p12"), tmp_path, tmp_path).claims if c.id == "lint"]
    assert claim.ok, claim.observed
    unfixed = "let grads = per_sample.backward();"
    assert source.count(unfixed) == 1, "p12's burn.rs changed: update the test's line"
    burn.write_text(source + "\nfn stray<B: AutodiffBackend>(per_sample: Tensor<B, 2>) {\n    let per_sample = per_sample * 2.0;\n"
                    "    let g = per_sample.backward();\n}\n", encoding="utf-8")
    [claim] = [c for c in with_lint_claim(committed("p12"), tmp_path, tmp_path).claims if c.id == "lint"]
    assert not claim.ok and "OUTSIDE THE DECLARED REGIONS p12" in claim.observed
    burn.write_text(source.replace(unfixed, "let grads = per_sample.mean().backward();"), encoding="utf-8")
    [claim] = [c for c in with_lint_claim(committed("p12"), tmp_path, tmp_path).claims if c.id == "lint"]
    assert not claim.ok and "MISSING p12 in nomean" in claim.observed


def test_a_run_adds_the_lint_claim_only_where_a_rule_names_a_region():
    assert lint_claim(catalog.get("p12"), ROOT) is not None
    assert lint_claim(catalog.get(PLAIN), ROOT) is None  # no lint.yml, no rule fires in its burn.rs


def test_a_chapter_with_a_lint_rule_prints_the_records_lint_lines():
    record = with_lint_claim(committed("p19"))
    [claim] = [c for c in record.claims if c.id == "lint"]
    shown = section(render_chapter(ROOT, record))
    assert console_lines(shown, "experiments/p19-clip-norm-per-parameter/burn.rs") == claim.facts["lines"] != []
    for rule in declared_rules(ROOT, "p19"):
        assert f"| `{rule['id']}` |" in shown
    assert f'<a id="{LINT_PART}"></a>' in shown and f'<a id="{SIGNATURE_PART}"></a>' not in shown  # p19 declares no signature
    claim.facts["lines"] = ["experiments/p19-clip-norm-per-parameter/burn.rs:1:1: a line only the record holds"]
    assert console_lines(render_chapter(ROOT, record), "experiments/p19-clip-norm-per-parameter/burn.rs") == claim.facts["lines"]


def test_a_chapter_with_a_signature_quotes_what_the_signatures_claim_found():
    record = with_signatures_facts(with_lint_claim(committed("p12")), {"torch-mean/burn-mean": [], "torch-mean/burn-nomean": ["p12"]},
                                   {"torch-mean/burn-nomean": {"p12": EVIDENCE}})
    shown = section(render_chapter(ROOT, record))
    for signature in catalog.get("p12").signature:
        assert f"- `{signature.text()}`" in shown
    assert catalog.get("p12").fix in shown
    assert f"- `torch-mean` 对 `burn-nomean`（反例）：报出 p12，证据 `{EVIDENCE}`" in shown
    assert "- `torch-mean` 对 `burn-mean`（修好的）：什么都没报" in shown
    assert f"]({CAUSES_PAGE})" in shown


def test_a_chapter_without_signature_or_rule_gets_no_section():
    assert SECTION not in render_chapter(ROOT, committed(PLAIN))


def test_a_record_from_before_the_claims_is_refused_with_the_command_that_fixes_it():
    record = committed("p19")
    older = replace(record, claims=[claim for claim in record.claims if claim.id != "lint"])  # as records were before the claim
    with pytest.raises(BrokenExperiment, match=r"no `lint` claim .* re-run `pita run p19`"):
        render_chapter(ROOT, older)


def test_the_symptom_index_links_each_chapters_section():
    [text] = render_symptoms_page(ROOT).values()
    assert f"[trace 能认出](p12.md#{SIGNATURE_PART})、[lint 能查出](p12.md#{LINT_PART})" in text
    assert f"[lint 能查出](p19.md#{LINT_PART})" in text and f"p19.md#{SIGNATURE_PART}" not in text
    assert f"{PLAIN}.md#" not in text
    assert f"]({CAUSES_PAGE})" in text


def test_the_causes_page_lists_every_signature_and_every_rule():
    [(path, text)] = render_causes_page(ROOT).items()
    assert path == ROOT / "book" / CAUSES_PAGE
    assert render_causes_page in PAGE_RENDERERS and CAUSES_PAGE in REFERENCE_PAGES
    signatures = [line for line in text.splitlines() if f".md#{SIGNATURE_PART})" in line]
    assert [re.match(r"\| \[([\w-]+)：", line).group(1) for line in signatures] == [entry.id for entry in entries()]
    rules = [rule["id"] for rule in all_declared_rules(ROOT)]
    assert re.findall(r"^\| `([\w-]+)` \|", text, re.M) == rules
    assert f"共 {len(entries())} 章声明了签名" in text and f"共 {len(rules)} 条规则" in text
    assert "// pita: allow(" in text and "--format sarif" in text
