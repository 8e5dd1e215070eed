"""The Rust crate as a user gets it: a tiny burn port outside the workspace (its template is
tests/data/standalone-port/) depends on crates/pita by path, dumps one tensor of each dtype, and
`pita compare` reads the dump: OK against an equal numpy-written reference, MISMATCH against a
perturbed one, every dtype read back as written. The port also records one training step of a
tiny model with `pita::record` (docs/recording.md), read back here: the names, the PyTorch
layouts, the metadata, and an SGD step that is `param - lr·grad`.

The port is built in a temporary folder with the workspace's Cargo.lock beside it (so versions
resolve as in the workspace, offline) and with CARGO_TARGET_DIR set to the workspace's target/,
where `cargo build --workspace` (setup's; run again here, a no-op when target/ is warm) compiled
burn with the features and the profile the template asks for: only pita and the port compile
(seconds), and a burn crate built otherwise than for the workspace fails the test. Skips without cargo."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, built_otherwise, registry_artifacts
from pita.dtypes import BF16, from_float32
from pita.dump import Dump, read_dump, write_dump

pytestmark = pytest.mark.integration

TEMPLATE = ROOT / "tests" / "data" / "standalone-port"
TARGET = ROOT / "target"


def run(*command, cwd, env=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def port_project(where: Path) -> Path:
    """The template, with the path of crates/pita filled in and the workspace's Cargo.lock."""
    (where / "src").mkdir(parents=True)
    manifest = (TEMPLATE / "Cargo.toml.in").read_text(encoding="utf-8")
    (where / "Cargo.toml").write_text(manifest.replace("@PITA_CRATE@", (ROOT / "crates" / "pita").as_posix()), encoding="utf-8")
    shutil.copy2(TEMPLATE / "src" / "main.rs", where / "src" / "main.rs")
    shutil.copy2(ROOT / "Cargo.lock", where / "Cargo.lock")
    return where


def build(project: Path) -> tuple[Path, float]:
    """Builds the port offline (online only if the offline build cannot resolve), after the
    workspace, returning the binary and the seconds the port's build took. The port must reuse the
    workspace's burn: a burn crate built otherwise means the template's features or profile no
    longer match the workspace's, and every fresh machine would compile burn a second time."""
    workspace = run("cargo", "build", "--workspace", "--locked", "--message-format=json", cwd=ROOT, timeout=3600)
    assert workspace.returncode == 0, workspace.stderr
    env = {**os.environ, "CARGO_TARGET_DIR": str(TARGET)}
    started = time.monotonic()
    proc = run("cargo", "build", "--offline", "--message-format=json", cwd=project, env=env, timeout=1800)
    if proc.returncode != 0 and "offline" in proc.stderr:
        proc = run("cargo", "build", "--message-format=json", cwd=project, env=env, timeout=1800)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    ours, theirs = registry_artifacts(workspace.stdout), registry_artifacts(proc.stdout)
    rebuilt = built_otherwise(theirs, ours)
    assert not rebuilt, f"the port builds {', '.join(rebuilt)} otherwise than the workspace: align tests/data/standalone-port/Cargo.toml.in with it"
    binary = TARGET / "debug" / ("standalone-port.exe" if os.name == "nt" else "standalone-port")
    assert binary.is_file(), f"no {binary}"
    return binary, seconds


def reference_tensors() -> dict[str, np.ndarray]:
    """What the port computes, with numpy: the same formulas, the same IEEE operations."""
    ramp64 = np.array([0.1 * k - 0.5 for k in range(6)], dtype=np.float64)
    x = ramp64.astype(np.float32).reshape(2, 3)
    y = x * np.float32(2.0) + np.float32(1.0)
    return {
        "y.f32": y,
        "x.f64": ramp64 * 3.0,
        "ids.i64": np.array([3, -1, 0, 1 << 40], dtype=np.int64),
        "mask.bool": np.array([True, False, True]),
        "y.bf16": from_float32(y),
        "y.f16": y.astype(np.float16),
        "x.grad": np.full((2, 3), 2.0, dtype=np.float32),
    }


def compare(reference: Path, candidate: Path) -> subprocess.CompletedProcess:
    return run(sys.executable, "-m", "pita", "compare", reference, candidate, cwd=ROOT)


@pytest.fixture(scope="module")
def port_dump(tmp_path_factory) -> Path:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not on PATH: the Rust crate cannot be built")
    tmp = tmp_path_factory.mktemp("standalone")
    binary, seconds = build(port_project(tmp / "port"))
    print(f"standalone port built in {seconds:.1f} s")
    out = tmp / "out"
    proc = run(binary, out, cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    assert "backend Autodiff<Flex>" in proc.stdout, proc.stdout
    assert "recorded " in proc.stdout and "burn-record.safetensors" in proc.stdout, proc.stdout
    return out


def test_dump_keeps_every_dtype(port_dump):
    want = {"y.f32": np.float32, "x.f64": np.float64, "ids.i64": np.int64, "mask.bool": np.bool_,
            "y.bf16": BF16, "y.f16": np.float16, "x.grad": np.float32}
    for form in ("burn-port.safetensors", "burn-port.json"):
        dump = read_dump(port_dump / form)
        assert {name: np.asarray(t).dtype for name, t in dump.tensors.items()} == {k: np.dtype(v) for k, v in want.items()}, form
        for name, array in reference_tensors().items():
            assert np.asarray(dump.tensors[name]).tobytes() == array.tobytes(), (form, name)
        meta = dump.metadata
        assert (meta["format"], meta["framework"], meta["variant"], meta["backend"]) == ("pita-dump/1", "burn", "port", "Autodiff<Flex>")
        assert meta["burn_requirement"] == "^0.22.1" and meta["pita_version"] and meta["guard_refused"] == "true"
        assert meta["framework_version"].startswith("0.22."), meta  # found in the Cargo.lock above target/


def test_compare_matches_an_equal_reference(port_dump, tmp_path):
    reference = write_dump(Dump(tensors=reference_tensors(), metadata={"framework": "numpy", "variant": "port"}),
                           tmp_path / "torch-port.safetensors")
    for candidate in ("burn-port.safetensors", "burn-port.json"):
        proc = compare(reference, port_dump / candidate)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "OK" in proc.stdout and "MISMATCH" not in proc.stdout, proc.stdout


@pytest.mark.parametrize("name", ["y.f32", "x.f64", "ids.i64", "mask.bool", "y.bf16", "y.f16"])
def test_compare_catches_a_perturbed_reference(port_dump, tmp_path, name):
    """The negative control: one element of one tensor changed, beyond any default tolerance."""
    tensors = reference_tensors()
    changed = tensors[name].copy().reshape(-1)
    if name == "mask.bool":
        changed[1] = True
    elif name == "ids.i64":
        changed[0] += 1
    elif name == "y.bf16":
        changed = from_float32(np.array([4.0], dtype=np.float32)).repeat(changed.size)
    else:
        changed[0] += 0.5
    tensors[name] = changed.reshape(tensors[name].shape)
    reference = write_dump(Dump(tensors=tensors, metadata={"framework": "numpy", "variant": "port"}), tmp_path / "torch-port.safetensors")
    proc = compare(reference, port_dump / "burn-port.safetensors")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "MISMATCH" in proc.stdout, proc.stdout


# The tiny model's parameters, under PyTorch's names, with PyTorch's shapes (Linear: [out, in]).
RECORDED_PARAMS = {"fc1.weight": (4, 3), "fc1.bias": (4,), "fc2.weight": (1, 4), "fc2.bias": (1,)}


def test_recording_follows_the_convention(port_dump):
    for form in ("burn-record.safetensors", "burn-record.json"):
        dump = read_dump(port_dump / form)
        want = {"act/fc1": (2, 4), "act/fc2": (2, 1), "loss/1": (1,)}
        for prefix in ("param", "grad", "step1"):
            want |= {f"{prefix}/{name}": shape for name, shape in RECORDED_PARAMS.items()}
        assert {name: np.asarray(t).shape for name, t in dump.tensors.items()} == want, form
        assert {np.asarray(t).dtype for t in dump.tensors.values()} == {np.dtype(np.float32)}, form
        meta = dump.metadata
        assert (meta["recording"], meta["steps"], meta["dtype"]) == ("pita-record/1", "1", "float32"), meta
        # Only the listened forward is recorded, in the order of its taps.
        assert json.loads(meta["execution_order"]) == ["act/fc1", "act/fc2"], meta
        assert (meta["framework"], meta["variant"], meta["experiment"], meta["backend"]) == ("burn", "record", "standalone", "Autodiff<Flex>")
        assert "no_grad" not in meta, meta
        # burn's SGD, lr 0.1, no momentum: the step the recording holds is param - 0.1·grad.
        for name in RECORDED_PARAMS:
            param, grad, step = (np.asarray(dump.tensors[f"{p}/{name}"]) for p in ("param", "grad", "step1"))
            assert np.any(grad != 0), name
            np.testing.assert_allclose(step, param - np.float32(0.1) * grad, rtol=1e-6, atol=1e-7, err_msg=name)
