"""The GRU classifier port (ports/gru-classifier/), run for real: the PyTorch original records two
AdamW steps (dropout on, with its float64 run), the burn port is built once and run as the
correct port and with each planted mistake, and `pita trace`, with default options, finds each
mistake first, at its phase and module, introduced there, with a verdict that names it.

The correct port loads PyTorch's packed GRU tensors into burn's per-gate Linears by hand and is
recorded with `torch_names(true)`, which packs them back: the recordings align name for name
without a rules file. Each plant is a negative control for the correct port's `ok`.

Needs torch and cargo (skips without them); after the build, the module takes about half a minute."""

import json
from pathlib import Path

import pytest

from conftest import ROOT, cargo_binary, phases, port_plant, port_reference, run, trace_json

pytestmark = pytest.mark.integration

PORT = ROOT / "ports" / "gru-classifier"
BINARY = "port-gru-classifier"
PHASES = ("parameters", "forward", "loss", "backward", "step")
PAD, EMBED = 0, 32  # pytorch.py's padding token and embedding width
GRU_PACKED = [f"param/gru.{name}" for name in ("bias_hh_l0", "bias_ih_l0", "weight_hh_l0", "weight_ih_l0")]


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """The PyTorch side, run once: weights, data, the reference recording and its float64 run."""
    return port_reference(PORT, tmp_path_factory.mktemp("gru-classifier"))


@pytest.fixture(scope="module")
def binary() -> Path:
    return cargo_binary(BINARY)


def burn(binary: Path, out: Path, plant: str) -> Path:
    return port_plant(binary, out, plant)


def trace(out: Path, candidate: Path) -> tuple[int, dict]:
    return trace_json(out / "torch-record.safetensors", candidate)


def test_the_correct_port_traces_ok_with_default_options(out, binary):
    code, report = trace(out, burn(binary, out, "none"))
    assert (code, report["ok"], report["first_divergence"]) == (0, True, None), report["verdict"]
    by_phase = phases(report)
    assert all(by_phase[p]["compared"] > 0 and by_phase[p]["mismatched"] == 0 for p in PHASES)
    assert by_phase["parameters"]["compared"] == 7  # the GRU's four packed tensors among them, no one-sided name
    assert by_phase["forward"]["compared"] == 4  # embed, gru, drop, head: every module PyTorch's hooks saw
    assert by_phase["step"]["compared"] == 2 * 7 + 1  # step1/*, loss/2, step2/*
    assert report["load_audit"] == {"missing": [], "unused": [], "still_initial": []}
    assert report["mappings"] == [] and report["judged_by"] == "float64 budget"
    assert report["settings"]["differences"] == [] and report["settings"]["compared"] > 0


def test_the_recordings_name_the_same_tensors(out, binary):
    """Name for name, without a rules file: PyTorch's packed GRU tensors on one side, burn's
    per-gate Linears packed back by torch_names on the other; the reference's dropout masks are
    replayed, not drawn, and the burn side adds only its init/ values."""
    from pita.dump import read_dump

    torch_side = read_dump(out / "torch-record.safetensors")
    burn_side = read_dump(burn(binary, out, "none"))
    masks = {name for name in torch_side.tensors if name.startswith("mask")}
    assert masks == {"mask1/drop", "mask2/drop"}
    assert {name for name in burn_side.tensors if not name.startswith("init/")} == set(torch_side.tensors) - masks
    assert burn_side.metadata["masks_replayed"] == "2"
    assert json.loads(burn_side.metadata["execution_order"]) == json.loads(torch_side.metadata["execution_order"])


def assert_first(report: dict, phase: str, name: str) -> dict:
    """The first divergence is `name`, in `phase`, introduced there, and every phase before it
    compared something and matched."""
    first = report["first_divergence"]
    assert first is not None, report["verdict"]
    assert (first["phase"], first["name"], first["introduced"]) == (phase, name, True), (first["name"], first["description"])
    by_phase = phases(report)
    for earlier in PHASES[: PHASES.index(phase)]:
        assert by_phase[earlier]["compared"] > 0, earlier
        assert by_phase[earlier]["mismatched"] == 0, (earlier, by_phase[earlier]["first"])
    assert report["random_masks"] is None  # replayed: trace must not blame the masks
    return first


def parameter_mismatches(report: dict) -> dict:
    return {m["name"]: m["kinds"] for m in phases(report)["parameters"]["mismatches"]}


def gates_rz_swapped(report: dict) -> None:
    """r and z swapped when splitting: every packed tensor is the reference with its gate blocks r
    and z exchanged, and trace names the gates (the wording is the point: "blocks 0 and 1" would
    leave the user to look up PyTorch's packing)."""
    first = assert_first(report, "parameters", "param/gru.bias_hh_l0")
    diagnosis = first["diagnosis"][0]
    assert (diagnosis["kind"], diagnosis["permutation"], diagnosis["residual"]) == ("block_permutation", [1, 0, 2], 0.0)
    assert (diagnosis["layout"], diagnosis["names"]) == ("GRU", ["r", "z", "n"])
    assert "gate blocks r and z swapped" in diagnosis["message"]
    assert parameter_mismatches(report) == {name: ["block_permutation"] for name in GRU_PACKED}
    assert "loaded or laid out differently" in report["verdict"]


def hh_not_transposed(report: dict) -> None:
    assert_first(report, "parameters", "param/gru.weight_hh_l0")
    assert list(parameter_mismatches(report)) == ["param/gru.weight_hh_l0"]  # the input weights, not square, were transposed
    assert "loaded or laid out differently" in report["verdict"]
    [finding] = [d for d in report["first_divergence"]["diagnosis"] if d["kind"] == "block_transpose"]
    assert "every gate block transposed" in finding["message"]


def bias_hh_dropped(report: dict) -> None:
    assert_first(report, "parameters", "param/gru.bias_hh_l0")
    assert report["load_audit"]["still_initial"] == ["param/gru.bias_hh_l0"]
    assert "never loaded" in report["verdict"]


def reset_after_false(report: dict) -> None:
    assert_first(report, "forward", "act/gru")
    assert "the port's gru computes differently" in report["verdict"]


def h_n_as_first_step(report: dict) -> None:
    """The GRU's output matches; what is taken from it for the dropout does not."""
    assert_first(report, "forward", "act/drop")
    assert phases(report)["forward"]["mismatches"][0]["name"] == "act/drop"
    assert "code between act/gru (which matched) and it" in report["verdict"]  # not a module: the verdict says where


def loss_pad_tokens(report: dict) -> None:
    assert_first(report, "loss", "loss/1")
    assert "the loss function or its reduction differs" in report["verdict"]


def padding_idx_lost(report: dict) -> None:
    """One row of the embedding's gradient differs: the padding token's."""
    first = assert_first(report, "backward", "grad/embed.weight")
    tensor = first["tensor"]
    assert tensor["mismatched"] == EMBED and tensor["worst_index"][0] == PAD
    assert "the backward pass differs" in report["verdict"]
    [finding] = [d for d in first["diagnosis"] if d["kind"] == "rows"]
    assert finding["rows"] == [PAD] and "padding_idx" in finding["hint"]


def adamw_defaults(report: dict) -> None:
    first = assert_first(report, "step", "step1/embed.weight")
    assert first["tensor"]["max_abs_diff"] > 1e-4
    differences = {d["name"]: (d["reference"], d["candidate"]) for d in report["settings"]["differences"]}
    assert differences == {"eps": (1e-8, pytest.approx(1e-5)), "weight_decay": (1e-2, pytest.approx(1e-4))}
    assert "the optimizer's settings differ" in report["verdict"]


PLANTS = {
    "gates-rz-swapped": gates_rz_swapped,
    "hh-not-transposed": hh_not_transposed,
    "bias-hh-dropped": bias_hh_dropped,
    "reset-after-false": reset_after_false,
    "h-n-as-first-step": h_n_as_first_step,
    "loss-pad-tokens": loss_pad_tokens,
    "padding-idx-lost": padding_idx_lost,
    "adamw-defaults": adamw_defaults,
}


@pytest.mark.parametrize("plant", PLANTS)
def test_each_plant_is_the_first_divergence(out, binary, plant):
    code, report = trace(out, burn(binary, out, plant))
    assert (code, report["ok"]) == (1, False), report["verdict"]
    PLANTS[plant](report)


def test_an_unknown_plant_is_refused(binary, tmp_path):
    proc = run(binary, "--out", tmp_path, "--plant", "no-such-plant")
    assert proc.returncode == 2 and "unknown plant" in proc.stderr and "gates-rz-swapped" in proc.stderr
