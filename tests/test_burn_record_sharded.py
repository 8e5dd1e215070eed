"""The burn recorder's streaming, sharded output (docs/recording.md, "burn: streaming, shards and long runs") as the library reads it.

`crates/pita/examples/record_long_run.rs` trains a small MLP and records a light trace with
`Recorder::stream_to` (a light trace, `--every`): once in one file, once in shards of 2000 bytes, and
once with its inputs scaled (the negative control). `pita trace` reads the sharded recording, by
its index and by the path it was asked to write, as it reads the one file.

Needs cargo (skips without it); the build reuses `cargo test -p pita --all-features`'s."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import cargo_executable, run, trace_json
from pita.dump import read_dump

pytestmark = pytest.mark.integration

EXAMPLE = "record_long_run"
STEPS, EVERY = 20, 5
PARAMETERS = ("fc1.weight", "fc1.bias", "norm.weight", "norm.bias", "fc2.weight", "fc2.bias")


@pytest.fixture(scope="module")
def example() -> Path:
    """The example's executable, as cargo reports it."""
    return cargo_executable(EXAMPLE, "--workspace", "--example", EXAMPLE)  # the workspace's one build of burn


def record(example: Path, path: Path, *options: str) -> Path:
    """Runs the example; the path it says it wrote."""
    proc = run(example, "--out", path, "--steps", STEPS, "--every", EVERY, *options)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return Path(proc.stdout.strip())


@pytest.fixture(scope="module")
def recordings(example, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("burn-sharded")
    return {
        "whole": record(example, out / "whole.safetensors"),
        "sharded": record(example, out / "sharded.safetensors", "--shard-bytes", "2000"),
        "scaled": record(example, out / "scaled.safetensors", "--scale", "1.5"),
    }


def test_the_recorder_names_what_it_wrote(recordings):
    whole, sharded = recordings["whole"], recordings["sharded"]
    assert whole.name == "whole.safetensors" and whole.is_file()
    assert sharded.name == "sharded.safetensors.index.json"
    assert not (sharded.parent / "sharded.safetensors").exists()
    shards = sorted(p.name for p in sharded.parent.glob("sharded-*.safetensors"))
    assert len(shards) > 3 and shards[0] == "sharded-00001.safetensors"
    index = json.loads(sharded.read_text())
    assert sorted(set(index["weight_map"].values())) == shards
    assert not [p.name for p in sharded.parent.iterdir() if p.name.startswith(".")], "a temporary file was left"


def test_the_shards_hold_the_tensors_and_metadata_of_the_one_file(recordings):
    whole, sharded = read_dump(recordings["whole"]), read_dump(recordings["sharded"])
    assert sorted(sharded.tensors) == sorted(whole.tensors)
    for name, tensor in whole.tensors.items():
        reference, candidate = np.asarray(tensor), np.asarray(sharded.tensors[name])
        assert (reference.dtype, reference.shape) == (candidate.dtype, candidate.shape), name
        assert reference.tobytes() == candidate.tobytes(), name
    assert {k: v for k, v in sharded.metadata.items()} == whole.metadata
    scaled = read_dump(recordings["scaled"])  # the negative control
    assert np.asarray(scaled.tensors["loss/1"]).tobytes() != np.asarray(whole.tensors["loss/1"]).tobytes()


def test_the_light_trace_holds_what_contract_5_lists(recordings):
    dump = read_dump(recordings["sharded"])
    assert (dump.metadata["every"], dump.metadata["steps"]) == (str(EVERY), str(STEPS))
    checkpoints = [1, *range(EVERY, STEPS + 1, EVERY)]
    expected = {f"loss/{k}" for k in range(1, STEPS + 1)} | {"act/fc1", "act/norm", "act/fc2"}
    for path in PARAMETERS:
        expected |= {f"param/{path}", f"grad/{path}"}
        expected |= {f"gradnorm{k}/{path}" for k in range(1, STEPS + 1)}
        expected |= {f"step{k}/{path}" for k in checkpoints}
    assert set(dump.tensors) == expected
    norm = np.asarray(dump.tensors["gradnorm1/fc1.weight"])
    assert norm.shape == () and norm.dtype == np.float32
    np.testing.assert_allclose(norm, np.linalg.norm(np.asarray(dump.tensors["grad/fc1.weight"], dtype=np.float64)), rtol=1e-6)


def test_trace_reads_the_sharded_recording_by_its_index(recordings):
    code, report = trace_json(recordings["whole"], recordings["sharded"])
    assert code == 0 and report["first_divergence"] is None, report["first_divergence"]
    code, report = trace_json(recordings["whole"], recordings["scaled"])  # the negative control
    assert code == 1 and report["first_divergence"] is not None


def test_trace_reads_the_sharded_recording_by_the_path_it_was_asked_to_write(recordings):
    asked = recordings["sharded"].parent / "sharded.safetensors"
    proc = run(sys.executable, "-m", "pita", "trace", recordings["whole"], asked)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "first divergence: none" in proc.stdout
