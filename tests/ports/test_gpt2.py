"""The GPT-2 port (ports/gpt2/), run for real: transformers' GPT2LMHeadModel records two AdamW
steps (dropout on, with its float64 run), the burn port is built once and run as the correct port
and with each planted mistake, and `pita trace` with default options (no rules file: the port
records PyTorch's names with its Conv1D weights in their stored `[in, out]` layout,
`transpose_linears(false)`) finds each mistake first, at its phase and module, introduced there,
with a verdict that names it. Each plant is a negative control for the correct port's `ok`.

Needs torch, transformers and cargo (skips without them); after the build, the module takes
about 25 s of CPU (a minute on a busy 2-core machine)."""

import json
from pathlib import Path

import pytest

from conftest import ROOT, cargo_binary, phases, port_plant, port_reference, trace_json
from pita.settings import table

pytestmark = pytest.mark.integration

PORT = ROOT / "ports" / "gpt2"
BINARY = "port-gpt2"
PHASES = ("parameters", "forward", "loss", "backward", "step")
LAYERS = 2  # pytorch.py's LAYERS
MASKS_PER_STEP = 1 + 3 * LAYERS  # transformer.drop; per block: the attention weights', resid_dropout's, mlp.dropout's


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """The PyTorch side, run once: weights, data, the reference recording and its float64 run."""
    return port_reference(PORT, tmp_path_factory.mktemp("gpt2"), "transformers")


@pytest.fixture(scope="module")
def binary() -> Path:
    return cargo_binary(BINARY)


def burn(binary: Path, out: Path, plant: str) -> Path:
    return port_plant(binary, out, plant)


def trace(out: Path, candidate: Path) -> tuple[int, dict]:
    return trace_json(out / "torch-record.safetensors", candidate)


@pytest.fixture(scope="module")
def traced(out, binary):
    """plant -> (trace's exit code, its JSON report), each plant run and traced once."""
    reports = {}

    def traced(plant: str) -> tuple[int, dict]:
        if plant not in reports:
            reports[plant] = trace(out, burn(binary, out, plant))
        return reports[plant]
    return traced


@pytest.fixture(scope="module")
def port(traced) -> dict:
    code, report = traced("none")
    assert code == 0, report["verdict"]
    return report


def test_the_port_matches_every_phase(port):
    assert (port["ok"], port["first_divergence"]) == (True, None), port["verdict"]
    by_phase = phases(port)
    assert all(by_phase[p]["compared"] > 0 and by_phase[p]["mismatched"] == 0 for p in PHASES), port["verdict"]
    assert by_phase["forward"]["compared"] == 30  # every module PyTorch's hooks saw, tapped on the burn side
    assert by_phase["step"]["compared"] == 2 * 28 + 1  # step1/*, loss/2, step2/*: lm_head.weight is wte's, recorded once
    assert port["judged_by"] == "float64 budget"
    assert port["settings"]["compared"] > 0 and port["settings"]["differences"] == []
    assert not port["unobserved"]


def test_the_recordings_name_the_same_tensors(out, binary):
    """Name for name, as recorded: PyTorch's hooks and parameters on one side, burn's taps and
    module traversal (`torch_names(true)`: the LayerNorms' gamma/beta as weight/bias) on the
    other; the reference adds its masks, the port its init/ values."""
    from pita.dump import read_dump

    torch_side = read_dump(out / "torch-record.safetensors")
    burn_side = read_dump(burn(binary, out, "none"))
    assert {n for n in burn_side.tensors if not n.startswith("init/")} == {n for n in torch_side.tensors if not n.startswith("mask")}
    assert json.loads(burn_side.metadata["execution_order"]) == json.loads(torch_side.metadata["execution_order"])
    assert int(burn_side.metadata["masks_replayed"]) == sum(n.startswith("mask") for n in torch_side.tensors) == 2 * MASKS_PER_STEP
    # The Conv1D weights in burn's Linear are PyTorch's layout as they are, [in, out], and so recorded
    # (transpose_linears(false)): their gradients, steps and init/ values too.
    for kind in ("init", "param", "grad", "step2"):
        c_attn = f"{kind}/transformer.h.0.attn.c_attn.weight"
        assert burn_side.tensors[c_attn].shape == (64, 192), c_attn
        assert kind == "init" or torch_side.tensors[c_attn].shape == (64, 192), c_attn


def check_conv1d_through_adapter(report: dict, first: dict) -> None:
    assert first["diagnosis"][0]["kind"] == "transpose" and first["diagnosis"][0]["residual"] == 0.0
    # Only the square Conv1D, in both blocks: the others failed the adapter's shape check and loaded raw.
    assert [m["name"] for m in phases(report)["parameters"]["mismatches"]] == [f"param/transformer.h.{i}.attn.c_proj.weight" for i in range(LAYERS)]
    assert report["load_audit"] == {"missing": [], "unused": [], "still_initial": []}
    assert "weights were loaded or laid out differently" in report["verdict"]


def check_no_mask_replay(report: dict, first: dict) -> None:
    assert report["random_masks"] == {"reference": 2 * MASKS_PER_STEP, "first": "mask1/transformer.drop", "replayed": 0}
    assert report["verdict"].startswith("random masks differ (expected across frameworks)")
    assert "pita::replay" in report["verdict"]


def check_forward(module: str, input_module: str):
    """The module's parameters matched, and so did the activation recorded before it (what it
    reads, or computes from); the verdict names both."""
    def check(report: dict, first: dict) -> None:
        assert all(p["status"] == "ok" for p in first["module_parameters"]), first["module_parameters"]
        assert report["previous_activation"] == f"act/{input_module}"
        assert f"act/{input_module}" not in {m["name"] for m in phases(report)["forward"]["mismatches"]}
        assert f"act/{module}" in report["verdict"] and f"act/{input_module} (which matched)" in report["verdict"]
    return check


def check_untied_head(report: dict, first: dict) -> None:
    assert first["status"] == "extra"
    assert report["load_audit"]["unused"] == ["param/lm_head.weight"]
    by_phase = phases(report)
    assert by_phase["parameters"]["mismatched"] == by_phase["forward"]["mismatched"] == by_phase["loss"]["mismatched"] == 0
    # The one gradient that differs: the embedding's, which lacks the head's share.
    assert [m["name"] for m in by_phase["backward"]["mismatches"]] == ["grad/transformer.wte.weight"]


def check_loss_no_shift(report: dict, first: dict) -> None:
    assert "the loss function or its reduction differs" in report["verdict"]


def check_adamw_defaults(report: dict, first: dict) -> None:
    assert first["name"].startswith("step1/")
    assert {d["name"]: (d["reference"], d["candidate"]) for d in report["settings"]["differences"]} == \
        {"eps": (1e-8, pytest.approx(1e-5)), "weight_decay": (1e-2, pytest.approx(1e-4))}
    assert "the optimizer's settings differ" in report["verdict"]


def check_layer_norm_eps(report: dict, first: dict) -> None:
    """The settings phase says it before any tensor, by name, with both values and the chapter the
    settings table names; the numbers agree (a per-row scale near 1 in the first LayerNorm), and
    the likely cause is that chapter."""
    chapter = next(row.id for row in table() if row.torch_kind == "LayerNorm" and row.torch_name == "eps")
    differences = report["settings"]["differences"]
    assert [d["module"] for d in differences] == [f"transformer.h.{i}.ln_{j}" for i in range(LAYERS) for j in (1, 2)] + ["transformer.ln_f"], differences
    assert {(d["kind"], d["name"], d["reference"], d["candidate"], d["chapter"]) for d in differences} == {("LayerNorm", "eps", 1e-5, 1e-12, chapter)}
    assert report["verdict"].startswith("the settings differ: transformer.h.0.ln_1 and 4 more LayerNorm (×5) eps: 1e-05 against 1e-12 "
                                        f"(book/{chapter}.md); and in the numbers: ")
    assert first["diagnosis"][0]["kind"] == "slice_scale"
    assert [cause["id"] for cause in report["likely"]] == [chapter]


# plant -> (phase, first divergence, check): each found first, introduced, every phase before it matching.
PLANTED = {
    "conv1d-through-adapter": ("parameters", "param/transformer.h.0.attn.c_proj.weight", check_conv1d_through_adapter),
    "untied-head": ("parameters", "param/lm_head.weight", check_untied_head),
    "no-mask-replay": ("forward", "act/transformer.drop", check_no_mask_replay),
    "layer-norm-eps": ("forward", "act/transformer.h.0.ln_1", check_layer_norm_eps),
    "gelu-exact": ("forward", "act/transformer.h.0.mlp.act", check_forward("transformer.h.0.mlp.act", "transformer.h.0.mlp.c_fc")),
    "no-causal-mask": ("forward", "act/transformer.h.0.attn.c_proj", check_forward("transformer.h.0.attn.c_proj", "transformer.h.0.attn.c_attn")),
    "no-attn-scale": ("forward", "act/transformer.h.0.attn.c_proj", check_forward("transformer.h.0.attn.c_proj", "transformer.h.0.attn.c_attn")),
    "loss-no-shift": ("loss", "loss/1", check_loss_no_shift),
    "adamw-defaults": ("step", None, check_adamw_defaults),
}


@pytest.mark.parametrize("plant", PLANTED)
def test_each_plant_is_the_first_finding(traced, plant):
    phase, name, check = PLANTED[plant]
    code, report = traced(plant)
    assert (code, report["ok"]) == (1, False)
    first = report["first_divergence"]
    assert first is not None, report["verdict"]
    assert (first["phase"], first["introduced"]) == (phase, True), (first["name"], first["description"])
    if name is not None:
        assert first["name"] == name, first["description"]
    by_phase = phases(report)
    for earlier in PHASES[: PHASES.index(phase)]:
        assert by_phase[earlier]["compared"] > 0, earlier
        assert by_phase[earlier]["mismatched"] == 0 and not by_phase[earlier]["missing"] + by_phase[earlier]["extra"], (earlier, by_phase[earlier]["first"])
    check(report, first)


@pytest.mark.parametrize("plant", ["no-causal-mask", "no-attn-scale"])
def test_an_attention_mistake_points_at_the_attention_core(traced, plant):
    """The attention core (scores, scale, causal mask, softmax, dropout) is transformers' own code
    in GPT2Attention's forward, between c_attn and c_proj, and no hook sees it: c_proj is the
    first recorded module after it. c_proj computes what PyTorch's computes (its parameters
    match), so the verdict must also name that unrecorded code, in the attention's forward,
    after c_attn, which matched."""
    _, report = traced(plant)
    assert report["previous_activation"] == "act/transformer.h.0.attn.c_attn"
    assert ("code in transformer.h.0.attn's forward between act/transformer.h.0.attn.c_attn (which matched) and it "
            "that no module records computes its input differently") in report["verdict"]
