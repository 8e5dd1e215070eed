"""`pita lint PATH`: the catalog's pitfalls found in burn source, before anything runs.

The rules are ast-grep rules (structural patterns over Rust's syntax tree, not regexes), declared
by each pitfall's folder (experiments/<id>/lint.yml) and shipped with the library as
pita/catalog/lint.json, which the lab writes (`pita book build`). The parser is ast-grep's Python
binding, the optional extra `lint` (ARCHITECTURE.md, "Lint: why ast-grep").
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from pita.errors import UsageError

CATALOG = Path(__file__).parent / "catalog" / "lint.json"
EXTRA_MISSING = "pita lint needs its Rust parser, ast-grep: pip install 'pita-parity[lint]'"
# `// pita: allow(p20)` or `// pita: allow(p20, p21)`, on the finding's line or the line before.
ALLOW = re.compile(r"//\s*pita:\s*allow\(\s*([A-Za-z0-9_-]+(?:\s*,\s*[A-Za-z0-9_-]+)*)\s*\)")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SKIPPED_FOLDERS = ("target", "tests", "benches")


@dataclass(frozen=True)
class Rule:
    id: str  # the pitfall's id, or `<pitfall>-<what>` when a pitfall has several rules (p20-adagrad)
    pitfall: str
    title: str
    chapter: str  # book/<pitfall>.md
    fix: str
    summary: str  # what the rule matches, in a line
    matcher: dict  # the ast-grep rule config (rule, and utils or constraints where used)


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    line: int  # 1-based
    column: int  # 1-based
    end_line: int
    end_column: int
    rule: str  # the rule's id (`p20-adagrad`); `pitfall` its pitfall's (`p20`)
    title: str
    fix: str
    chapter: str
    pitfall: str

    def to_dict(self) -> dict:
        """`id` is the pitfall, `rule` the rule that found it (`p20`, `p20-adagrad`)."""
        return {"file": self.file, "line": self.line, "column": self.column, "end": {"line": self.end_line, "column": self.end_column},
                "id": self.pitfall, "rule": self.rule, "title": self.title, "fix": self.fix, "chapter": self.chapter}


def load_rules(text: str | None = None) -> list[Rule]:
    """The rules in the catalog the library ships (or in `text`, the same JSON)."""
    if text is None:
        text = CATALOG.read_text(encoding="utf-8")
    return [Rule(matcher=entry["rule"], **{k: entry[k] for k in ("id", "pitfall", "title", "chapter", "fix", "summary")})
            for entry in json.loads(text)["rules"]]


def rust_files(path: str | os.PathLike) -> list[Path]:
    """The .rs files to lint: `path` itself, or every one under the folder, leaving out target/,
    hidden folders and test code (folders tests/ and benches/, files tests.rs: built for tests
    only, where burn's defaults are made on purpose). One line (UsageError) for a path that is neither."""
    given = Path(path)
    if not str(path):
        raise UsageError("pita lint: empty path: name a .rs file or a folder")
    if given.is_dir():
        found = []
        for folder, subfolders, files in os.walk(given):
            subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not d.startswith("."))
            found += [Path(folder) / name for name in sorted(files) if name.endswith(".rs") and name != "tests.rs"]
        return found
    if not given.exists():
        raise UsageError(f"pita lint: {path}: no such file or folder")
    if not given.is_file() or given.suffix != ".rs":
        raise UsageError(f"pita lint: {path}: not a .rs file or a folder")
    return [given]


def read_source(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"pita lint: {path}: not UTF-8 text (byte {error.start}): Rust source is UTF-8") from None
    except OSError as error:
        raise UsageError(f"pita lint: {path}: cannot read it ({error.strerror or error})") from None


def _parser():
    try:
        from ast_grep_py import SgRoot
    except ImportError:
        raise UsageError(EXTRA_MISSING) from None
    return SgRoot


def lint_source(source: str, file: str, rules: list[Rule]) -> list[Finding]:
    """Every finding of `rules` in one file's text, less those an allow comment silences, sorted."""
    root = _parser()(source, "rust").root()
    lines = source.splitlines()
    found = set()
    for rule in rules:
        for match in root.find_all(config=rule.matcher):
            start, end = match.range().start, match.range().end
            if not _allowed(rule, lines, start.line):
                found.add(Finding(file, start.line + 1, start.column + 1, end.line + 1, end.column + 1, rule.id, rule.title, rule.fix, rule.chapter,
                                   rule.pitfall))
    return sorted(found)


def _allowed(rule: Rule, lines: list[str], line: int) -> bool:
    """Whether `// pita: allow(...)` on the line (0-based) or the one before names the rule or its pitfall."""
    for text in lines[max(line - 1, 0):line + 1]:
        for match in ALLOW.finditer(text):
            if {rule.id, rule.pitfall} & {name.strip() for name in match.group(1).split(",")}:
                return True
    return False


def lint_path(path: str | os.PathLike, rules: list[Rule] | None = None) -> list[Finding]:
    """The findings in a .rs file or under a folder, sorted by file, line and column."""
    rules = load_rules() if rules is None else rules
    _parser()  # without the extra, say so before walking anything
    findings = []
    for file in rust_files(path):
        findings += lint_source(read_source(file), os.fspath(file), rules)
    return sorted(findings)


def render_text(findings: list[Finding]) -> str:
    return "".join(f"{f.file}:{f.line}:{f.column}: {f.rule} {f.title} — {f.fix} ({f.chapter})\n" for f in findings)


def render_json(findings: list[Finding]) -> str:
    return json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=2) + "\n"


def render_sarif(findings: list[Finding], rules: list[Rule]) -> str:
    """SARIF 2.1.0, as GitHub code scanning reads it: every rule the catalog has, one result per finding."""
    index = {rule.id: i for i, rule in enumerate(rules)}
    driver = {
        "name": "pita lint",
        "informationUri": "https://pypi.org/project/pita-parity/",
        "rules": [{
            "id": rule.id,
            "name": rule.id,
            "shortDescription": {"text": rule.title},
            "fullDescription": {"text": rule.summary},
            "help": {"text": f"{rule.fix} ({rule.chapter})"},
            "helpUri": rule.chapter,
            "defaultConfiguration": {"level": "warning"},
        } for rule in rules],
    }
    results = [{
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": "warning",
        "message": {"text": f"{f.title} — {f.fix} ({f.chapter})"},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": _uri(f.file)},
            "region": {"startLine": f.line, "startColumn": f.column, "endLine": f.end_line, "endColumn": f.end_column},
        }}],
    } for f in findings]
    # columns count characters (code points), as ast-grep reports them and editors show them
    run = {"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}
    sarif = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(sarif, ensure_ascii=False, indent=2) + "\n"


def _uri(file: str) -> str:
    """A file's path as SARIF's artifact URI: relative paths stay relative (to where pita ran)."""
    path = Path(file)
    return path.as_uri() if path.is_absolute() else quote(path.as_posix())


def render(findings: list[Finding], rules: list[Rule], output_format: str) -> str:
    if output_format == "json":
        return render_json(findings)
    if output_format == "sarif":
        return render_sarif(findings, rules)
    return render_text(findings)
