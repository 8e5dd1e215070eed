"""p12 for real: PyTorch and burn run, nothing mocked. Numbers are checked against the run's
own dumps and against the reference chapter's figures, read from the chapter itself."""

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import pita
from pita.dump import read_dump
from pita_lab.record import RunRecord

pytestmark = pytest.mark.integration
REFERENCE_CHAPTER = Path(__file__).resolve().parents[2] / "shared" / "reference" / "p12-loss-mean.txt"


@pytest.fixture(scope="module")
def run(p12_run):
    out, proc, _ = p12_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, RunRecord.load(out / "record.json")


def grads(out, name):
    dump = read_dump(out / f"{name}.safetensors")
    return {k: v.astype(np.float64).ravel() for k, v in dump.tensors.items()}


def test_every_claim_holds_and_the_table_says_so(run, p12_run):
    out, record = run
    assert [c.id for c in record.claims if not c.ok] == []
    assert len(record.claims) >= 8
    assert f"p12: {len(record.claims)}/{len(record.claims)} claims hold" in p12_run[1].stdout


def test_dumps_are_named_by_side_and_variant_with_their_json_form(run):
    out, _ = run
    for name in ("torch-mean", "burn-mean", "burn-nomean"):
        assert (out / f"{name}.safetensors").exists() and (out / f"{name}.json").exists()
        metadata = read_dump(out / f"{name}.safetensors").metadata
        for key in ("framework", "framework_version", "backend", "experiment", "variant", "input_sha256"):
            assert metadata[key], key
    assert read_dump(out / "burn-mean.safetensors").metadata["framework_version"] == "0.22.1"
    assert read_dump(out / "torch-mean.safetensors").metadata["framework_version"].startswith("2.15.0")


def test_both_sides_hashed_the_same_input_bytes(run):
    out, record = run
    hashes = {read_dump(p).metadata["input_sha256"] for p in out.glob("*.safetensors")}
    assert hashes == {record.input_sha256} and len(record.input_sha256) == 64


def test_nomean_is_four_times_mean_for_every_element(run):
    out, _ = run
    torch_mean, burn_nomean = grads(out, "torch-mean"), grads(out, "burn-nomean")
    for name in torch_mean:
        np.testing.assert_allclose(burn_nomean[name] / torch_mean[name], 4.0, rtol=0, atol=1e-5)


def test_burn_mean_matches_torch_mean(run):
    out, _ = run
    torch_mean, burn_mean = grads(out, "torch-mean"), grads(out, "burn-mean")
    for name in torch_mean:
        assert np.max(np.abs(burn_mean[name] - torch_mean[name])) <= 1e-6


def test_negative_control_exits_1_and_names_the_factor(run):
    out, _ = run
    proc = pita("compare", out / "torch-mean.safetensors", out / "burn-nomean.safetensors")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert "candidate = 4 × reference" in proc.stdout and lines[-3].endswith("MISMATCH")
    assert lines[-2].startswith("likely cause: p12 ") and lines[-1].startswith("  evidence: ")  # the verdict, then what it is likely to be


def test_compile_fail_and_guard_are_observed(run):
    _, record = run
    [ce12] = record.compile_fail
    assert "error[E0308]" in ce12.diagnostic and "expected `1`, found `2`" in ce12.diagnostic
    guard = record.program("burn", "guard")
    assert guard.exit_code == 101 and "loss must be reduced (mean/sum) before backward" in guard.stderr


@pytest.mark.skipif(not REFERENCE_CHAPTER.exists(), reason="the reference chapter is not beside this checkout")
def test_torch_mean_reproduces_the_reference_chapters_figures(run):
    out, record = run
    text = REFERENCE_CHAPTER.read_text(encoding="utf-8")
    numbers = lambda label: [float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", re.search(rf"^{label} \[?([^\]\n]*)", text, re.M).group(1))]
    torch_mean = grads(out, "torch-mean")
    np.testing.assert_allclose(torch_mean["weight.grad"], numbers("weight.grad"), rtol=0, atol=1e-6)
    np.testing.assert_allclose(torch_mean["bias.grad"], numbers("bias.grad"), rtol=0, atol=1e-6)
    loss = float(re.search(r"^mean loss (\S+)", record.program("torch", "mean").stdout, re.M).group(1))
    assert abs(loss - numbers("mean loss")[0]) <= 1e-6
