import numpy as np
import pytest

from conftest import pita
from pita.dump import Dump, write_dump


@pytest.fixture
def dumps(tmp_path):
    meta = {"batch_size": "4", "input_sha256": "ab"}
    write_dump(Dump({"w": np.float32([0.1, 0.2])}, meta), tmp_path / "ref.safetensors")
    write_dump(Dump({"w": np.float32([0.4, 0.8])}, meta), tmp_path / "scaled.json")
    write_dump(Dump({"w": np.float32([0.1, 0.2])}, meta), tmp_path / "same.npz")
    return tmp_path


def test_compare_exit_codes_and_closing_line(dumps):
    ok = pita("compare", dumps / "ref.safetensors", dumps / "same.npz")
    assert ok.returncode == 0 and ok.stdout.splitlines()[-1] == "worst=0.00e+00 tol=1e-06 OK"
    bad = pita("compare", dumps / "ref.safetensors", dumps / "scaled.json")
    assert bad.returncode == 1 and bad.stdout.splitlines()[-1].endswith("MISMATCH")
    assert "candidate = 4 × reference" in bad.stdout and "batch size" in bad.stdout


def test_compare_json_output(dumps):
    import json

    proc = pita("compare", dumps / "ref.safetensors", dumps / "scaled.json", "--format", "json")
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["missing"] == [] and report["extra"] == []
    [tensor] = report["tensors"]
    assert {"name", "ok", "n", "mismatched", "max_abs_diff", "max_rel_diff", "max_ulp", "worst_index", "diagnosis"} <= set(tensor)
    assert tensor["diagnosis"][0]["kind"] == "scale" and tensor["diagnosis"][0]["factor"] == 4.0


def test_compare_json_is_strict_when_values_are_not_finite(tmp_path):
    import json

    write_dump(Dump({"w": np.float32([1.0, 2.0])}), tmp_path / "a.npz")
    write_dump(Dump({"w": np.float32([np.nan, 2.0])}), tmp_path / "b.npz")
    proc = pita("compare", tmp_path / "a.npz", tmp_path / "b.npz", "--format", "json")
    report = json.loads(proc.stdout, parse_constant=lambda name: pytest.fail(f"non-standard JSON constant {name}"))
    assert report["tensors"][0]["max_abs_diff"] == "NaN" and report["tensors"][0]["diagnosis"][0]["kind"] == "nan"  # |NaN - 1|


@pytest.mark.parametrize("args", [
    ("compare", "nope.safetensors", "ref.safetensors"),
    ("compare", "ref.safetensors"),
    ("compare", "ref.safetensors", "same.npz", "--atol", "x"),
    ("compare", "ref.safetensors", "same.npz", "--atol", "-1"),
    ("compare", "ref.safetensors", "same.npz", "--bogus"),
    ("frobnicate",),
    ("run", "p999"),
])
def test_bad_input_gets_one_line_and_exit_2(dumps, args):
    proc = pita(*args, cwd=dumps)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: ")


@pytest.mark.parametrize("args, says", [
    (("--atol", "-1"), "error: --atol must be a finite number, not negative, got -1.0"),
    (("--rtol", "nan"), "error: --rtol must be a finite number, not negative, got nan"),
    (("--ulp", "-3"), "error: --ulp must be an integer from 0 to 9223372036854775807, got -3"),
    (("--reference64", "other.npz"), "error: --reference64: tensor 'w' has shape [3], the reference's is [2]: not a run of the same computation"),
])
def test_the_cli_names_the_flag_where_the_api_names_the_parameter(dumps, args, says):
    write_dump(Dump({"w": np.float64([0.1, 0.2, 0.3])}), dumps / "other.npz")
    proc = pita("compare", "ref.safetensors", "same.npz", *args, cwd=dumps)
    assert (proc.returncode, proc.stderr) == (2, says + "\n")


def test_dumps_of_other_inputs_are_refused_with_the_flag_that_allows_them(dumps):
    write_dump(Dump({"w": np.float32([0.1, 0.2])}, {"input_sha256": "cd"}), dumps / "other.npz")
    proc = pita("compare", "ref.safetensors", "other.npz", cwd=dumps)
    assert proc.returncode == 2 and proc.stderr.endswith("; pass --allow-input-mismatch to compare anyway\n")
    assert pita("compare", "ref.safetensors", "other.npz", "--allow-input-mismatch", cwd=dumps).returncode == 0


def test_compare_does_not_import_torch(dumps):
    import subprocess
    import sys

    code = ("import sys, pita.cli; rc = pita.cli.main(['compare', sys.argv[1], sys.argv[2]]); "
            "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, dumps / "ref.safetensors", dumps / "same.npz"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_bug_is_reported_as_a_bug(dumps, monkeypatch, capsys):
    import pita.cli
    import pita.compare

    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(pita.compare, "compare_dumps", broken)
    assert pita.cli.main(["compare", str(dumps / "ref.safetensors"), str(dumps / "same.npz")]) == 3
    err = capsys.readouterr().err
    assert "ZeroDivisionError: boom" in err and "this is a bug in pita" in err


def without_the_lab(monkeypatch):
    """As where only the library is installed: no plugin offers commands."""
    import pita.cli

    monkeypatch.setattr(pita.cli, "COMMANDS_GROUP", "pita.commands.none-installed")


@pytest.mark.parametrize("argv", [["run", "p12"], ["run", "--all"], ["run", "--help"], ["list", "--format", "json"],
                                  ["book", "check", "p12"], ["comapre", "a", "b"]])
def test_without_the_lab_other_commands_answer_with_one_line(monkeypatch, capsys, argv):
    import pita.cli

    without_the_lab(monkeypatch)
    assert pita.cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"error: pita {argv[0]} is not a command of this pita (compare, trace, lint); it may be one of pita's lab, "
                          "which runs from a source checkout")


def test_without_the_lab_compare_and_help_still_work(dumps, monkeypatch, capsys):
    import pita.cli

    without_the_lab(monkeypatch)
    assert pita.cli.main(["compare", str(dumps / "ref.safetensors"), str(dumps / "same.npz")]) == 0
    with pytest.raises(SystemExit) as exited:
        pita.cli.main(["--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0 and "needs a source checkout" in out and "{compare,trace,lint}" in out


def test_the_lab_adds_its_commands_through_the_entry_point_group():
    from importlib.metadata import entry_points

    from pita.cli import COMMANDS_GROUP, build_parser

    assert [plugin.value for plugin in entry_points(group=COMMANDS_GROUP)] == ["pita_lab.cli:add_commands"]
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert {"run", "list", "matrix", "book"} <= set(commands)


def test_a_lab_that_is_installed_but_broken_is_a_bug_not_a_missing_lab(monkeypatch, capsys):
    import sys
    import types

    import pita.cli

    monkeypatch.setitem(sys.modules, "pita_lab.cli", types.ModuleType("pita_lab.cli"))  # no add_commands
    assert pita.cli.main(["list"]) == 3
    err = capsys.readouterr().err
    assert "add_commands" in err and "this is a bug in pita" in err


def test_trace_takes_compare_options_but_the_histograms():
    from pita.cli import build_parser

    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    options = {name: {o for action in commands[name]._actions for o in action.option_strings} for name in ("compare", "trace")}
    # the per-tensor histograms and error maps are compare's own (each writes its own --html page); --strict is trace's
    assert options["compare"] - options["trace"] == {"--histogram"} and options["trace"] - options["compare"] == {"--strict"}


def test_compare_prints_the_report_and_writes_the_json_in_one_run(dumps):
    proc = pita("compare", dumps / "ref.safetensors", dumps / "scaled.json", "--json", dumps / "result.json", "--histogram")
    printed = pita("compare", dumps / "ref.safetensors", dumps / "scaled.json", "--format", "json", "--histogram")
    assert proc.returncode == printed.returncode == 1
    assert proc.stdout == pita("compare", dumps / "ref.safetensors", dumps / "scaled.json").stdout  # the text report, unchanged
    assert (dumps / "result.json").read_text() == printed.stdout and '"ulp_histogram"' in printed.stdout


@pytest.mark.parametrize("where, says", [("folder", "is a folder, not a file"), ("nowhere/result.json", "folder")])
def test_an_unwritable_json_path_is_refused_before_comparing(dumps, where, says):
    (dumps / "folder").mkdir()
    proc = pita("compare", dumps / "ref.safetensors", dumps / "same.npz", "--json", dumps / where)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: --json {dumps / where}: ") and says in proc.stderr
    assert proc.stdout == ""


def test_pita_s_own_commands_are_the_ones_built_without_plugins():
    from pita.cli import CORE_COMMANDS, _parser_and_commands

    _, commands, lab = _parser_and_commands(plugins=False)
    assert set(commands.choices) == set(CORE_COMMANDS) and lab is False


# Loaded only for a failing pair (the diagnosis rules, the likely causes and the settings they
# read), with --histogram, or for a plugin's command: a passing `pita compare` starts without them.
NOT_FOR_A_PASSING_COMPARE = ("importlib.metadata", "pita_lab", "pita.diagnose.scale", "pita.likely", "pita.settings", "pita.distribution", "numba")
LOADED = ("import sys; from pita.cli import main; code = main(sys.argv[1:]); "
          f"print(sorted(m for m in sys.modules if m in {NOT_FOR_A_PASSING_COMPARE!r}), file=sys.stderr); sys.exit(code)")


def modules_loaded_by(*argv):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", LOADED, *map(str, argv)], capture_output=True, text=True)
    return proc.returncode, proc.stderr.splitlines()[-1]


def test_a_passing_compare_loads_neither_plugins_nor_what_only_a_failure_needs(dumps):
    assert modules_loaded_by("compare", dumps / "ref.safetensors", dumps / "same.npz") == (0, "[]")
    code, loaded = modules_loaded_by("compare", dumps / "ref.safetensors", dumps / "scaled.json")
    assert code == 1 and loaded == str(["pita.diagnose.scale", "pita.likely", "pita.settings"])


def test_the_cli_reads_medium_tensors_from_their_files_and_reports_what_the_library_reports(tmp_path):
    from pita.compare import compare_dumps
    from pita.dump import COMPARED_LAZY_MIN_BYTES, read_dump
    from pita.report import render_text

    values = np.random.default_rng(3).standard_normal(COMPARED_LAZY_MIN_BYTES // 4 + 5).astype(np.float32)  # read lazily only by the CLI
    write_dump(Dump({"same": values, "scaled": values, "small": np.float32([1.0, 2.0])}), tmp_path / "ref.safetensors")
    write_dump(Dump({"same": values, "scaled": values * np.float32(4), "small": np.float32([1.0, 2.0])}), tmp_path / "cand.safetensors")
    proc = pita("compare", tmp_path / "ref.safetensors", tmp_path / "cand.safetensors")
    library = compare_dumps(read_dump(str(tmp_path / "ref.safetensors")), read_dump(str(tmp_path / "cand.safetensors")))
    assert proc.returncode == 1 and "candidate = 4 × reference" in proc.stdout
    assert proc.stdout == render_text(library)
