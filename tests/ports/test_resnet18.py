"""The ResNet-18 port (ports/resnet18/), run for real: torchvision's `resnet18` with random weights
records two AdamW steps in training mode (dropout on, BatchNorm on batch statistics, the float64
run beside it), the burn port replays its dropout masks and records the same steps, correct and
with each planted mistake, and `pita trace` (default options) judges each against PyTorch:

    port                      -> ok, exit 0
    maxpool-no-padding        -> forward: act/maxpool, a shape conflict
    bn-eps                    -> forward: act/bn1, a per-channel scale near 1
    label-smoothing-missing   -> loss: loss/1
    adamw-defaults            -> step: the optimizer's settings differ (eps, weight_decay)
    bn-biased-running-var     -> step: step1/bn1.running_var, a buffer, not the optimizer

Each plant's first divergence is introduced where it is planted and every phase before it
matches. Needs torch, torchvision and cargo (skips without them). The PyTorch side runs once; the
six burn runs and their traces run two at a time (about 25 s of CPU each: debug burn, 11M
parameters). The port's seventh plant, conv-bias (ports/resnet18/README.md), is left out to keep
the ports' tests within their time: its finding is the load audit's, which tests/test_trace.py covers."""

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT, cargo_binary, phases, port_plant, port_reference, trace_json

pytestmark = pytest.mark.integration

PORT = ROOT / "ports" / "resnet18"
PHASES = ("parameters", "forward", "loss", "backward", "step")
PLANTS = ("maxpool-no-padding", "bn-eps", "label-smoothing-missing", "adamw-defaults", "bn-biased-running-var")
BATCH_NORMS = 20


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """The PyTorch side, run once: weights, data, the recording and its float64 run."""
    return port_reference(PORT, tmp_path_factory.mktemp("port-resnet18"), "torchvision")


@pytest.fixture(scope="module")
def binary() -> Path:
    return cargo_binary("port-resnet18")


def burn(binary: Path, out: Path, plant: str) -> Path:
    return port_plant(binary, out, plant)


def trace(out: Path, candidate: Path) -> tuple[int, dict]:
    return trace_json(out / "torch-record.safetensors", candidate)


@pytest.fixture(scope="module")
def traces(out, binary) -> dict[str, tuple[int, dict]]:
    """Every variant run and traced, two at a time; a plant's recording (226 MB) is deleted once
    traced, the correct port's kept for the name test."""

    def one(plant: str) -> tuple[int, dict]:
        path = burn(binary, out, plant)
        result = trace(out, path)
        if plant != "none":
            path.unlink()
        return result

    variants = ("none", *PLANTS)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(variants, pool.map(one, variants)))


def assert_first(report: dict, phase: str, name: str) -> dict:
    """The first divergence is `name`, in `phase`, introduced there, and every phase before it matched."""
    first = report["first_divergence"]
    assert first is not None, report["verdict"]
    assert (first["phase"], first["name"], first["introduced"]) == (phase, name, True), (first["name"], first["description"])
    by_phase = phases(report)
    for earlier in PHASES[: PHASES.index(phase)]:
        assert by_phase[earlier]["compared"] > 0, earlier
        assert by_phase[earlier]["mismatched"] == 0, (earlier, by_phase[earlier]["first"])
    return first


def test_the_correct_port_traces_ok_with_default_options(traces):
    code, report = traces["none"]
    assert (code, report["ok"], report["first_divergence"]) == (0, True, None), report["verdict"]
    by_phase = phases(report)
    assert all(by_phase[p]["compared"] > 0 and by_phase[p]["mismatched"] == 0 for p in PHASES), report["verdict"]
    assert by_phase["forward"]["compared"] == 77  # every module PyTorch's hooks saw, tapped on the burn side
    assert report["judged_by"] == "float64 budget"  # the float64 run pytorch.py wrote beside the recording
    assert report["settings"]["differences"] == [] and report["settings"]["compared"] > 0
    assert report["load_audit"] == {"missing": [], "unused": [], "still_initial": []}


def test_maxpool_without_padding_is_a_shape_at_the_maxpool(traces):
    """burn's MaxPool2dConfig pads nothing by default; torchvision's pads 1: 16×16 pools to 7×7, not 8×8."""
    _, report = traces["maxpool-no-padding"]
    first = assert_first(report, "forward", "act/maxpool")
    assert (first["tensor"]["shape"], first["tensor"]["candidate_shape"]) == ([4, 64, 8, 8], [4, 64, 7, 7])
    assert "the port's maxpool computes differently" in report["verdict"]


def test_bn_eps_is_a_scale_per_channel(traces):
    """BatchNorm's epsilon 1e-3 against 1e-5: each channel of bn1's output is scaled by
    sqrt((var + 1e-5) / (var + 1e-3)), a factor just under 1, one per channel."""
    _, report = traces["bn-eps"]
    first = assert_first(report, "forward", "act/bn1")
    diagnosis = first["diagnosis"][0]
    assert diagnosis["kind"] == "slice_scale" and diagnosis["constant_along"] == [0, 2, 3] and diagnosis["slices"] == 64
    assert 0.98 < diagnosis["min_factor"] <= diagnosis["max_factor"] < 1.0
    assert "the port's bn1 computes differently" in report["verdict"]


def test_label_smoothing_missing_is_a_loss(traces):
    _, report = traces["label-smoothing-missing"]
    assert_first(report, "loss", "loss/1")
    assert "the loss function or its reduction differs" in report["verdict"]


def test_adamw_defaults_are_named_settings(traces):
    _, report = traces["adamw-defaults"]
    first = assert_first(report, "step", "step1/conv1.weight")
    assert first["tensor"]["max_abs_diff"] > 1e-6
    differences = {d["name"]: (d["reference"], d["candidate"]) for d in report["settings"]["differences"]}
    assert differences == {"eps": (1e-8, 1e-5), "weight_decay": (1e-2, 1e-4)}
    assert "eps: 1e-08 against 1e-05" in report["verdict"]


def test_burns_batch_norm_as_is_is_a_buffer_not_the_optimizer(traces):
    """p27: burn updates running_var with the biased batch variance. The first BatchNorm's
    running_var after step 1 is the first divergence; the optimizer's settings match and its
    parameters match, so the verdict must not blame it."""
    _, report = traces["bn-biased-running-var"]
    first = assert_first(report, "step", "step1/bn1.running_var")
    assert [p["status"] for p in first["module_parameters"]] == ["ok", "ok"]  # bn1's weight and bias loaded right
    assert report["settings"]["differences"] == []
    step = phases(report)["step"]
    assert not any(m["name"].startswith("step1/") and not m["name"].endswith(".running_var") for m in step["mismatches"])
    assert sum(m["name"].startswith("step1/") for m in step["mismatches"]) == BATCH_NORMS
    assert "optimizer" not in report["verdict"], report["verdict"]
    assert "running_var" in report["verdict"] or "buffer" in report["verdict"], report["verdict"]


def test_the_recordings_name_the_same_tensors(out, traces):
    """Name for name: PyTorch's hooks, parameters and buffers on one side, burn's taps and module
    traversal (with torch_names) on the other; the burn side adds its init/ values, the PyTorch
    side its dropout masks, which the port replayed."""
    from pita.dump import read_dump

    torch_side = read_dump(out / "torch-record.safetensors")
    burn_side = read_dump(out / "burn-port.safetensors")
    masks = {name for name in torch_side.tensors if name.startswith("mask")}
    assert masks == {"mask1/fc.0", "mask2/fc.0"}
    assert burn_side.metadata["masks_replayed"] == "2"
    assert {name for name in burn_side.tensors if not name.startswith("init/")} == set(torch_side.tensors) - masks
    assert json.loads(burn_side.metadata["execution_order"]) == json.loads(torch_side.metadata["execution_order"])
    assert json.loads(burn_side.metadata["buffers"]) == json.loads(torch_side.metadata["buffers"])
