"""`pita lint`: what holds for every rule (guards, test code, macros), allow comments, the walk,
the three formats; bad input exits 2 with one line. Each rule on its own examples, and over the
repository: tests/lab/test_lint_catalog.py."""

import json
import os
import sys

import pytest

from pita import cli
from pita.errors import UsageError
from pita.lint import EXTRA_MISSING, lint_path, lint_source, load_rules, render_sarif

RULES = load_rules()

def in_fn(body: str) -> str:
    return f"fn main() {{\n    {body}\n}}\n"


def found(source: str, rule_ids=None) -> list[str]:
    rules = [r for r in RULES if rule_ids is None or r.id in rule_ids]
    return [f.rule for f in lint_source(source, "model.rs", rules)]


def test_each_rule_carries_its_pitfall():
    for rule in RULES:
        assert rule.id == rule.pitfall or rule.id.startswith(f"{rule.pitfall}-")
        assert rule.chapter == f"book/{rule.pitfall}.md" and rule.title and rule.fix and rule.summary


def test_a_guard_in_the_same_block_silences_the_rule():
    guarded = "let config = AdamConfig::new(); assert_torch_hparams(&config, &[(\"epsilon\", 1e-8)]);"
    assert found(in_fn(guarded), {"p20"}) == []
    assert found(in_fn("{ let config = AdamConfig::new(); } assert_torch_hparams(&c, &[]);"), {"p20"}) == ["p20"]


def test_test_code_is_quiet():
    source = "#[cfg(test)]\nmod tests {\n    fn t() { let c = AdamConfig::new(); }\n}\n#[test]\n#[ignore]\nfn u() { let c = AdamConfig::new(); }\n"
    assert found(source, {"p20"}) == []
    assert found(source.replace("#[cfg(test)]", "#[cfg(feature = \"x\")]").replace("#[test]", "#[inline]"), {"p20"}) == ["p20", "p20"]


def test_a_macro_argument_is_not_code_the_lint_reads():
    assert found(in_fn('println!("{:?}", AdamConfig::new());'), {"p20"}) == []


@pytest.mark.parametrize("comment, silenced", [
    ("let config = AdamConfig::new(); // pita: allow(p20)", True),
    ("// pita: allow(p20): the reference uses 1e-5 too\n    let config = AdamConfig::new();", True),
    ("let config = AdamConfig::new(); // pita: allow(p12, p20)", True),
    ("let config = AdamConfig::new(); // pita: allow(p12)", False),
    ("// pita: allow(p20)\n\n    let config = AdamConfig::new();", False),  # two lines above: not this finding
])
def test_an_allow_comment_silences_its_finding(comment, silenced):
    assert found(in_fn(comment)) == ([] if silenced else ["p20"])


def test_allowing_a_pitfall_silences_each_of_its_rules():
    assert found(in_fn("let c = AdaGradConfig::new(); // pita: allow(p20)")) == []
    assert found(in_fn("let c = AdaGradConfig::new(); // pita: allow(p20-adagrad)")) == []
    assert found(in_fn("let c = AdaGradConfig::new(); // pita: allow(p20-rmsprop)")) == ["p20-adagrad"]


@pytest.fixture
def project(tmp_path):
    """A folder with one finding in src/, and code the walk leaves out."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.rs").write_text(in_fn("let config = AdamConfig::new().with_weight_decay(None);\n    let ok = 1;"))
    (tmp_path / "src" / "fine.rs").write_text(in_fn("let config = AdamConfig::new().with_epsilon(1e-8);"))
    for skipped in ("target/debug", ".git", "tests", "benches"):
        (tmp_path / skipped).mkdir(parents=True)
        (tmp_path / skipped / "gen.rs").write_text(in_fn("let config = AdamConfig::new();"))
    (tmp_path / "src" / "tests.rs").write_text(in_fn("let config = AdamConfig::new();"))
    (tmp_path / "src" / "notes.txt").write_text("AdamConfig::new()")
    return tmp_path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(["lint", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_folder_with_a_finding_exits_1_with_one_line_per_finding(project, capsys):
    code, out, err = run(capsys, project)
    path = project / "src" / "main.rs"
    assert code == 1 and err == ""
    rule = next(r for r in RULES if r.id == "p20")
    assert out == f"{path}:2:18: p20 {rule.title} — {rule.fix} (book/p20.md)\n"


def test_a_clean_file_exits_0_and_prints_nothing(project, capsys):
    assert run(capsys, project / "src" / "fine.rs") == (0, "", "")


def test_findings_are_sorted_by_file_then_line(tmp_path):
    (tmp_path / "b.rs").write_text(in_fn("let c = AdamConfig::new();"))
    (tmp_path / "a.rs").write_text(in_fn("let c = AdaGradConfig::new();\n    let d = AdamConfig::new();"))
    findings = lint_path(tmp_path)
    assert [(os.path.basename(f.file), f.line, f.rule) for f in findings] == [("a.rs", 2, "p20-adagrad"), ("a.rs", 3, "p20"), ("b.rs", 2, "p20")]


def test_json_lists_each_finding_with_its_pitfall_and_rule(project, capsys):
    code, out, _ = run(capsys, project / "src" / "main.rs", "--format", "json")
    [finding] = json.loads(out)
    assert code == 1
    assert set(finding) == {"file", "line", "column", "end", "id", "rule", "title", "fix", "chapter"}
    assert (finding["line"], finding["column"], finding["end"]) == (2, 18, {"line": 2, "column": 35})  # `AdamConfig::new()`, the end exclusive
    assert (finding["id"], finding["rule"], finding["chapter"]) == ("p20", "p20", "book/p20.md")
    assert json.loads(run(capsys, tmp := project / "src" / "fine.rs", "--format", "json")[1]) == [] and tmp.exists()


def test_json_names_the_rule_and_its_pitfall_apart(tmp_path, capsys):
    (tmp_path / "a.rs").write_text(in_fn("let c = AdaGradConfig::new();"))
    [finding] = json.loads(run(capsys, tmp_path, "--format", "json")[1])
    assert (finding["id"], finding["rule"]) == ("p20", "p20-adagrad")


def check_sarif(sarif: dict) -> None:
    """The properties SARIF 2.1.0's schema requires (sarifLog: version, runs; run: tool; tool:
    driver; driver: name; reportingDescriptor: id; result: message; message: text or id;
    physicalLocation: artifactLocation or address; region: startLine >= 1), and what GitHub code
    scanning reads: each result's rule among the driver's rules, a helpUri per rule."""
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(sarif["runs"], list) and sarif["runs"]
    for run_ in sarif["runs"]:
        driver = run_["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        ids = [rule["id"] for rule in driver["rules"]]
        assert len(ids) == len(set(ids))
        for rule in driver["rules"]:
            assert rule["helpUri"].startswith("book/") and rule["shortDescription"]["text"]
        for result in run_["results"]:
            assert result["message"]["text"]
            assert result["ruleId"] in ids and ids[result["ruleIndex"]] == result["ruleId"]
            assert result["level"] in ("none", "note", "warning", "error")
            for location in result["locations"]:
                physical = location["physicalLocation"]
                assert physical["artifactLocation"]["uri"]
                region = physical["region"]
                assert region["startLine"] >= 1 and region["startColumn"] >= 1
                assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"])


def test_sarif_has_the_keys_the_schema_requires(project, capsys):
    code, out, _ = run(capsys, project, "--format", "sarif")
    sarif = json.loads(out)
    check_sarif(sarif)
    [result] = sarif["runs"][0]["results"]
    assert code == 1 and result["ruleId"] == "p20"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (project / "src" / "main.rs").as_uri()
    assert [r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]] == [r.id for r in RULES]


@pytest.mark.parametrize("broken", [
    lambda s: s.pop("version"),
    lambda s: s["runs"][0]["tool"]["driver"].pop("name"),
    lambda s: s["runs"][0]["results"][0].pop("message"),
    lambda s: s["runs"][0]["results"][0].update(ruleId="p99"),
    lambda s: s["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"].update(startLine=0),
])
def test_the_sarif_check_refuses_a_log_without_a_required_key(broken, project):
    sarif = json.loads(render_sarif(lint_path(project), RULES))
    broken(sarif)
    with pytest.raises((AssertionError, KeyError, IndexError)):
        check_sarif(sarif)


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.rs", "no such file or folder"),
    (lambda d: (d / "notes.txt").write_text("x") and d / "notes.txt", "not a .rs file or a folder"),
    (lambda d: (d / "latin1.rs").write_bytes(b"// caf\xe9\nfn main() {}\n") and d / "latin1.rs", "not UTF-8"),
    (lambda d: "", "empty path"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, make, message):
    code, out, err = run(capsys, make(tmp_path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_a_file_that_is_not_utf8_inside_a_folder_is_named(tmp_path, capsys):
    (tmp_path / "ok.rs").write_text(in_fn("let c = AdamConfig::new();"))
    (tmp_path / "bad.rs").write_bytes(b"\xff\xfe")
    code, _, err = run(capsys, tmp_path)
    assert code == 2 and "bad.rs: not UTF-8" in err


def test_without_the_extra_pita_says_how_to_install_it(monkeypatch, project, capsys):
    monkeypatch.setitem(sys.modules, "ast_grep_py", None)  # what an absent package imports as
    code, out, err = run(capsys, project)
    assert code == 2 and out == "" and err == f"error: {EXTRA_MISSING}\n"
    assert "pip install 'pita-parity[lint]'" in EXTRA_MISSING
    with pytest.raises(UsageError):
        lint_path(project)


def test_columns_count_characters_not_bytes():
    [finding] = lint_source(in_fn("/* 中文 */ let c = AdamConfig::new();"), "model.rs", RULES)
    assert (finding.line, finding.column) == (2, 22)


def test_a_relative_path_stays_relative_in_sarif(tmp_path, capsys, monkeypatch):
    (tmp_path / "my src").mkdir()
    (tmp_path / "my src" / "main.rs").write_text(in_fn("let c = AdamConfig::new();"))
    monkeypatch.chdir(tmp_path)
    [result] = json.loads(run(capsys, "my src", "--format", "sarif")[1])["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "my%20src/main.rs"
