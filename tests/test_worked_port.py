"""The worked port (examples/port-encoder/), run for real: the PyTorch original records one
training run, the burn port is built and run with the catalog's three mistakes planted, and
`pita trace` finds them one phase at a time, in the order a user fixes them:

    broken (layout, loss, eps) -> parameters: transpose
    fix1   (loss, eps)         -> loss: scale by the batch size
    fix2   (eps)               -> step: the optimizer's settings differ: eps
    fixed                      -> every phase matches, exit 0

The negative controls plant each mistake alone on the fixed port: trace's first finding is that
mistake, in its phase, and every phase before it matches.

Needs torch and cargo (skips without them); after the build, the whole module takes a few
seconds."""

import json
import sys
from pathlib import Path

import pytest

from conftest import ROOT, cargo_binary, phases, run, trace_json

pytestmark = pytest.mark.integration

EXAMPLE = ROOT / "examples" / "port-encoder"
BATCH = 4  # pytorch.py's BATCH
PHASES = ("parameters", "forward", "loss", "backward", "step")
OPTIMIZER_VERDICT = "the optimizer's settings differ: eps: 1e-08 against 1e-05"


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """The PyTorch side, run once: weights, data and the reference recording."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("port-encoder")
    proc = run(sys.executable, EXAMPLE / "pytorch.py", "--out", out)
    assert proc.returncode == 0, proc.stderr
    for name in ("weights.safetensors", "data.safetensors", "torch-record.safetensors"):
        assert (out / name).is_file(), name
    return out


@pytest.fixture(scope="module")
def binary() -> Path:
    return cargo_binary("port-encoder")


def burn(binary: Path, out: Path, mistakes: str, variant: str) -> Path:
    proc = run(binary, "--out", out, "--mistakes", mistakes)
    assert proc.returncode == 0, proc.stderr
    path = out / f"burn-{variant}.safetensors"
    assert f"wrote {path}" in proc.stdout
    return path


def trace(out: Path, candidate: Path) -> tuple[int, dict]:
    return trace_json(out / "torch-record.safetensors", candidate)


def assert_first(report: dict, phase: str, kind: str | None = None) -> dict:
    """The first divergence is in `phase`, introduced there (with diagnosis `kind`), and every
    phase before it matched."""
    first = report["first_divergence"]
    assert first is not None, report["verdict"]
    assert (first["phase"], first["introduced"]) == (phase, True), (first["name"], first["description"])
    if kind is not None:
        assert first["diagnosis"] and first["diagnosis"][0]["kind"] == kind, first["description"]
    by_phase = phases(report)
    for earlier in PHASES[: PHASES.index(phase)]:
        assert by_phase[earlier]["compared"] > 0, earlier
        assert by_phase[earlier]["mismatched"] == 0, (earlier, by_phase[earlier]["first"])
    return first


def assert_layout(report: dict) -> None:
    first = assert_first(report, "parameters", "transpose")
    assert first["name"].endswith(".weight") and first["diagnosis"][0]["residual"] == 0.0
    parameters = phases(report)["parameters"]
    # Every Linear weight (all square) and nothing else: the embedding and the norms loaded right.
    assert sorted(m["name"] for m in parameters["mismatches"]) == [
        f"param/{p}.weight" for p in ("block.attn.key", "block.attn.output", "block.attn.query", "block.attn.value",
                                       "block.mlp.fc1", "block.mlp.fc2", "head")]
    assert all(m["kinds"] == ["transpose"] for m in parameters["mismatches"])
    assert report["load_audit"] == {"missing": [], "unused": [], "still_initial": []}
    assert "weights were loaded or laid out differently" in report["verdict"]


def assert_loss(report: dict) -> None:
    first = assert_first(report, "loss", "scale")
    assert first["name"] == "loss/1"
    assert first["diagnosis"][0]["factor"] == pytest.approx(BATCH)
    assert "batch size" in first["description"]
    assert "the loss function or its reduction differs" in report["verdict"]


def assert_eps(report: dict) -> None:
    first = assert_first(report, "step")
    assert first["name"].startswith("step1/")
    assert OPTIMIZER_VERDICT in report["verdict"]
    assert first["tensor"]["max_abs_diff"] > 1e-5  # well beyond atol 1e-6, not a rounding-level miss


def test_the_workflow_finds_one_mistake_per_phase(out, binary):
    code, report = trace(out, burn(binary, out, "layout,loss,eps", "broken"))
    assert code == 1 and not report["ok"]
    assert_layout(report)

    code, report = trace(out, burn(binary, out, "loss,eps", "fix1"))
    assert code == 1
    assert_loss(report)

    code, report = trace(out, burn(binary, out, "eps", "fix2"))
    assert code == 1
    assert_eps(report)

    code, report = trace(out, burn(binary, out, "none", "fixed"))
    assert (code, report["ok"], report["first_divergence"]) == (0, True, None), report["verdict"]
    by_phase = phases(report)
    assert all(by_phase[p]["compared"] > 0 and by_phase[p]["mismatched"] == 0 for p in PHASES)
    assert by_phase["forward"]["compared"] == 14  # every module PyTorch's hooks saw, tapped on the burn side
    assert by_phase["step"]["compared"] == 2 * 18 + 1  # step1/*, loss/2, step2/*
    assert report["tolerance"]["atol"] == 1e-6  # compare's defaults, no rules file


@pytest.mark.parametrize(("mistake", "variant", "check"), [("layout", "layout", assert_layout), ("loss", "loss", assert_loss),
                                                      ("eps", "fix2", assert_eps)])  # eps alone is the workflow's fix2
def test_each_mistake_alone_is_the_first_finding(out, binary, mistake, variant, check):
    """The fixed port with one mistake planted again: trace's first finding is that mistake, so
    the findings above come from the planted mistakes and not from something else in the port."""
    code, report = trace(out, burn(binary, out, mistake, variant))
    assert code == 1
    check(report)


def test_the_recordings_name_the_same_tensors(out, binary):
    """Name for name: PyTorch's hooks and parameters on one side, burn's taps and module
    traversal (with torch_names) on the other; the burn side adds only its init/ values."""
    from pita.dump import read_dump

    torch_side = read_dump(out / "torch-record.safetensors")
    burn_side = read_dump(burn(binary, out, "none", "fixed"))
    burn_names = {name for name in burn_side.tensors if not name.startswith("init/")}
    assert burn_names == set(torch_side.tensors)
    assert {name[len("init/"):] for name in burn_side.tensors if name.startswith("init/")} == \
        {name[len("param/"):] for name in torch_side.tensors if name.startswith("param/")}
    assert json.loads(burn_side.metadata["execution_order"]) == json.loads(torch_side.metadata["execution_order"])


def test_the_float64_run_judges_both_sides_errors(binary, out):
    """pita.torch.record writes the same run in double precision beside the recording, and names
    it: compare finds it and judges each float tensor by it; the burn side's init/ tensors are
    left to trace's load audit."""
    assert (out / "torch-record-float64.safetensors").is_file()
    fixed = burn(binary, out, "none", "fixed")
    compare = [sys.executable, "-m", "pita", "compare", out / "torch-record.safetensors", fixed, "--format", "json"]
    proc = run(*compare)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    result = json.loads(proc.stdout)
    assert not result["extra"] and any("init/ tensor(s) not compared" in note for note in result["notes"])
    assert any("judged against the float64 run torch-record-float64.safetensors" in note for note in result["notes"])
    assert all(t.get("float64") for t in result["tensors"] if t["name"].startswith("step2/"))
    broken = burn(binary, out, "eps", "fix2")  # negative control: a planted mistake still mismatches
    assert run(*[broken if part == fixed else part for part in compare]).returncode == 1
