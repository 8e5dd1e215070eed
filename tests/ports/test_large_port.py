"""bench/large_port.py, the 300 M-parameter measurement, run by the test suite at ports/gpt2's
tiny size with the debug build: both sides recorded under /usr/bin/time, trace over the pair,
and the figures it prints are the processes' own (the bytes written are the files' sizes, the
verdict trace's).

Needs torch, transformers and cargo (skips without them); after the build, about half a minute."""

import json
import shutil
import sys

import pytest

from conftest import ROOT, cargo_binary, run

pytestmark = pytest.mark.integration

BENCH = ROOT / "bench" / "large_port.py"


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One run of the bench at the tiny size, its files kept: (exit code, stdout, figures, folder)."""
    for module in ("torch", "transformers"):
        pytest.importorskip(module)
    if shutil.which("/usr/bin/time") is None:
        pytest.skip("/usr/bin/time is missing: the bench measures with it")
    out = tmp_path_factory.mktemp("large-port")
    figures = out.parent / f"{out.name}.json"
    proc = run(sys.executable, BENCH, "--size", "tiny", "--burn", cargo_binary("port-gpt2"), "--out", out, "--keep", "--json", figures)
    return proc.returncode, proc.stdout, json.loads(figures.read_text()), out


def test_the_bench_measures_both_sides_and_trace(measured):
    code, stdout, figures, _ = measured
    assert code == 0, stdout
    processes = {row["name"]: row for row in figures["processes"]}
    assert list(processes) == ["torch", "burn", "trace"]
    assert all(row["exit_code"] == 0 and row["seconds"] > 0 and row["peak_bytes"] > 0 for row in processes.values())
    assert figures["trace_ok"] and figures["trace_within_memory"]
    for name in processes:
        assert stdout.count(f"\n{name} ") == 1, stdout  # one line of figures per process


def test_the_bytes_written_are_the_files_sizes(measured):
    """Each side's recording (its shards and index, if any) and, for torch, its float64 run."""
    _, _, figures, out = measured
    processes = {row["name"]: row for row in figures["processes"]}
    for name, stem in (("torch", "torch-record"), ("burn", "burn-port")):
        files = [f for f in out.iterdir() if f.name.startswith(stem)]
        assert files and processes[name]["written_bytes"] == sum(f.stat().st_size for f in files), name
    assert any(f.name.startswith("torch-record-float64") for f in out.iterdir())
    assert processes["trace"]["written_bytes"] == 0


def test_the_verdict_is_traces_own(measured, tmp_path, capsys):
    """The bench says the pair matches because trace's JSON says so: the same figures with a
    trace that found a divergence, or that took more than the limit, make it say otherwise."""
    _, stdout, figures, out = measured
    assert json.loads((out / "trace.json").read_text())["ok"] is True
    assert "trace: the pair matches" in stdout
    bench = load_bench()
    rows = [bench.Measured(**row) for row in figures["processes"]]
    (tmp_path / "trace.json").write_text(json.dumps({"ok": False, "verdict": "first divergence: forward act/x"}))
    rows[-1].peak_bytes = int(bench.TRACE_MEMORY_LIMIT) + 1
    summary = bench.report("tiny", rows, tmp_path)
    assert (summary["trace_ok"], summary["trace_within_memory"]) == (False, False)
    printed = capsys.readouterr().out
    assert "the pair does not match" in printed and "BEYOND 500 MB" in printed and "verdict: first divergence: forward act/x" in printed


def load_bench():
    import importlib.util

    spec = importlib.util.spec_from_file_location("large_port", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
