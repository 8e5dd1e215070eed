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
    assert report["tensors"][0]["max_abs_diff"] == "Infinity" and report["tensors"][0]["diagnosis"][0]["kind"] == "nan"


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


@pytest.mark.parametrize("argv", [["run", "p12"], ["run", "--all"], ["run", "--help"], ["list", "--format", "json"],
                                  ["book", "check", "p12"]])
def test_without_the_lab_its_commands_answer_with_one_line(monkeypatch, capsys, argv):
    import sys

    import pita.cli

    for name in ("pita_lab", "pita_lab.cli"):  # as where only the library is installed
        monkeypatch.setitem(sys.modules, name, None)
    assert pita.cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"error: pita {argv[0]} is part of pita's lab, which runs from a source checkout")


def test_without_the_lab_compare_and_help_still_work(dumps, monkeypatch, capsys):
    import sys

    import pita.cli

    for name in ("pita_lab", "pita_lab.cli"):
        monkeypatch.setitem(sys.modules, name, None)
    assert pita.cli.main(["compare", str(dumps / "ref.safetensors"), str(dumps / "same.npz")]) == 0
    with pytest.raises(SystemExit) as exited:
        pita.cli.main(["--help"])
    assert exited.value.code == 0 and "needs a source checkout" in capsys.readouterr().out


def test_a_lab_that_is_installed_but_broken_is_a_bug_not_a_missing_lab(monkeypatch, capsys):
    import sys
    import types

    import pita.cli

    monkeypatch.setitem(sys.modules, "pita_lab.cli", types.ModuleType("pita_lab.cli"))  # no add_commands
    assert pita.cli.main(["list"]) == 3
    assert "this is a bug in pita" in capsys.readouterr().err


def test_trace_takes_compare_options_but_reference64():
    from pita.cli import build_parser

    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    options = {name: {o for action in commands[name]._actions for o in action.option_strings} for name in ("compare", "trace")}
    # the float64 run and the visual report (histograms, error maps, the HTML page) are compare's own
    assert options["compare"] - options["trace"] == {"--reference64", "--histogram", "--html"} and options["trace"] <= options["compare"]
