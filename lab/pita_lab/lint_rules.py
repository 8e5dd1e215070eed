"""The lint rules the pitfall folders declare: read by the book, which ships them to the library
(pita/catalog/lint.json), and by `pita run`, which checks them on the experiment's burn.rs
(pita_lab.lint_check).

Each experiments/<id>/lint.yml declares one or more ast-grep rules for that pitfall's unfixed
burn code, and the book regions of burn.rs (`// book:begin <name>`) where each must fire. A rule
is either a full ast-grep `rule:` or the shorthand for the commonest pitfall, a burn config left
at a default that differs from PyTorch's:

    config: MultiHeadAttentionConfig   # a chain starting at `MultiHeadAttentionConfig::new(...)`
    without: with_dropout              # ... with no `.with_dropout(...)` link
    constructor: new                   # (the default; a regex: `from_(file|bytes)`)

and a `rule:` beside the shorthand adds conditions to it (`inside: ...`).

Every rule is quiet where the nearest block calls one of pita's run-time guards on it (those
check the same setting when the program runs: `assert_torch_hparams`, ...), and in test code
(`#[cfg(test)]`, `#[test]`; the walk leaves out files named tests.rs and folders tests/, benches/). The library reads
only the JSON this writes, with each rule's pitfall id, title, chapter and fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from pita_lab import catalog
from pita_lab.errors import BrokenExperiment

RULES_FILE = "lint.yml"
# pita's run-time guards (crates/pita): a block that calls one checks the setting itself.
GUARDS = ("assert_torch_hparams", "assert_no_per_tensor_norm_clipping", "binary_cross_entropy", "backward_scalar", "assert_written_by_burn")
# Shared by every rule (`matches: guarded`, `matches: chain-link`).
UTILS = {
    # in the nearest block, one statement calls a guard: `guard(..);` or `let x = guard(..);`
    "guarded": {"inside": {"stopBy": {"kind": "block"}, "kind": "block", "has": {
        "any": [{"kind": "expression_statement"}, {"kind": "let_declaration"}],
        "has": {"kind": "call_expression", "has": {"field": "function", "regex": rf"^(\w+::)*({'|'.join(GUARDS)})$"}}}}},
    # test code, which builds burn's defaults on purpose to check them: a `#[cfg(test)]` module
    # or a function whose attributes include `#[test]`
    "in-test": {"any": [
        {"inside": {"stopBy": "end", "kind": "mod_item", "follows": {"kind": "attribute_item", "regex": r"^#\[cfg\(test\)\]$"}}},
        {"inside": {"stopBy": "end", "kind": "function_item",
                    "follows": {"stopBy": {"not": {"kind": "attribute_item"}}, "kind": "attribute_item", "regex": r"^#\[(\w+::)*test\]$"}}},
    ]},
    # a call or a field access: what a method chain `A::new().with_x(1).init()` is made of
    "chain-link": {"any": [{"kind": "call_expression"}, {"kind": "field_expression"}]},
}
# `examples` (`fires:` and `quiet:`, function bodies) are the rule's unit tests
# (tests/lab/test_lint_catalog.py); the library does not ship them.
REGION = re.compile(r"//\s*book:begin\s+(\S+)")
KEYS = {"id", "summary", "limits", "fires_in", "fix", "rule", "config", "without", "constructor", "utils", "examples"}


def rules_file(root: Path, experiment_id: str) -> Path:
    return root / "experiments" / catalog.folders()[experiment_id].name / RULES_FILE


def read_rules_file(root: Path, experiment_id: str) -> list[dict]:
    """The rules as lint.yml declares them (none without the file), checked for their keys."""
    path = rules_file(root, experiment_id)
    if not path.is_file():
        return []
    shown = path.relative_to(root)
    try:
        declared = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise BrokenExperiment(f"{shown}: not YAML: {error}") from None
    if not isinstance(declared, dict) or not isinstance(declared.get("rules"), list) or not declared["rules"]:
        raise BrokenExperiment(f"{shown}: a mapping with `rules:`, a list of rules")
    for rule in declared["rules"]:
        unknown = set(rule) - KEYS
        keys = set(rule)
        if unknown or not {"id", "summary", "fires_in", "examples"} <= keys or not {"rule", "config"} & keys or ("config" in keys) != ("without" in keys):
            raise BrokenExperiment(f"{shown}: rule {rule.get('id')!r}: keys id, summary, fires_in, examples and rule or config+without or both "
                                   f"(unknown: {', '.join(sorted(unknown)) or 'none'})")
        if rule["id"] != experiment_id and not rule["id"].startswith(f"{experiment_id}-"):
            raise BrokenExperiment(f"{shown}: rule id {rule['id']!r} is not {experiment_id} or {experiment_id}-<what>")
    return declared["rules"]


def declared_rules(root: Path, experiment_id: str) -> list[dict]:
    """The library's entries for one pitfall's rules: its id, title, chapter and fix with each."""
    rules = read_rules_file(root, experiment_id)
    if not rules:
        return []
    experiment = catalog.get(experiment_id)
    entries = []
    for rule in rules:
        fix = rule.get("fix") or experiment.fix
        if not fix:
            raise BrokenExperiment(f"{experiment.folder}: rule {rule['id']} has no fix: give the experiment `fix=` (or the rule `fix:`)")
        entries.append({"id": rule["id"], "pitfall": experiment_id, "title": experiment.title, "chapter": f"book/{experiment_id}.md",
                        "fix": fix, "summary": rule["summary"], "limits": rule.get("limits", ""),
                        "rule": matcher(rule)})
    return entries


def all_declared_rules(root: Path) -> list[dict]:
    """Every rule the folders declare, in catalog order, as the library ships them (`declared_rules`)."""
    return [entry for experiment_id in catalog.ids() for entry in declared_rules(root, experiment_id)]


def matcher(rule: dict) -> dict:
    """The ast-grep config of a declared rule: its own `rule:` or the config shorthand, never
    inside a guarded block, with the shared utils."""
    found = [config_default(rule["config"], rule["without"], rule.get("constructor", "new"))] if "config" in rule else []
    found += [rule["rule"]] if "rule" in rule else []
    return {"rule": {"all": [*found, {"not": {"matches": "guarded"}}, {"not": {"matches": "in-test"}}]}, "utils": {**UTILS, **rule.get("utils", {})}}


def config_default(config: str, without: str, constructor: str) -> dict:
    """`<config>::<constructor>(...)` (any path before it) heading a method chain with no `.<without>(...)` link."""
    return {
        "kind": "call_expression",
        "has": {"field": "function", "regex": rf"^(\w+::)*{config}::{constructor}$"},
        "not": {"inside": {"stopBy": {"not": {"matches": "chain-link"}}, "kind": "call_expression",
                           "has": {"field": "function", "kind": "field_expression", "has": {"field": "field", "regex": rf"^{without}$"}}}},
    }


def fires_in(root: Path, experiment_id: str) -> dict[str, list[tuple[str, str]]]:
    """rule id -> the (experiment id, region name) pairs its lint.yml says it must fire in: a
    region of the folder's own burn.rs, or `<other id>:<region>` for another experiment's."""
    return {rule["id"]: [tuple(region.split(":", 1)) if ":" in region else (experiment_id, region) for region in rule["fires_in"]]
            for rule in read_rules_file(root, experiment_id)}


def regions(path: Path) -> dict[str, tuple[int, int]]:
    """A source file's book regions: name -> its first and last line (1-based) between the
    `// book:begin <name>` and `// book:end` markers."""
    found, open_at = {}, None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        begin = REGION.search(line)
        if begin:
            open_at = (begin.group(1), number + 1)
        elif line.strip().endswith("book:end") and open_at:
            found[open_at[0]] = (open_at[1], number - 1)
            open_at = None
    return found
