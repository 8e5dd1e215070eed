"""`pita trace` on planted mistakes: two PyTorch recordings of one model (docs/recording.md), the
candidate's run altered in one known way; trace must name the phase, the tensor (so the module),
whether the mistake was introduced there, and the diagnosis. The matching pair is the negative
control of every case: the same run twice is `ok`, exit 0."""

import importlib.util
import json
import subprocess
import sys

import pytest

from pita.dump import read_dump

torch = pytest.importorskip("torch")
if importlib.util.find_spec("pita.trace") is None:
    pytest.skip("pita/trace.py is not written yet", allow_module_level=True)

from torch import nn  # noqa: E402

import pita.torch  # noqa: E402
from pita.budget import named_reference64  # noqa: E402
from pita.trace import trace_dumps  # noqa: E402

BATCH, TOKENS, VOCAB, WIDTH, CLASSES = 4, 6, 11, 8, 5
PHASES = ["parameters", "forward", "loss", "backward", "step"]


class Tiny(nn.Module):
    """Embedding → LayerNorm → self-attention → a square Linear → GELU → Sequential(Linear,
    GELU, Linear). The attention has no biases (its key bias's gradient is float32 noise)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.attn = nn.MultiheadAttention(WIDTH, 2, bias=False, batch_first=True)
        self.fc1 = nn.Linear(WIDTH, WIDTH)
        self.act = nn.GELU()
        self.head = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, CLASSES))

    def forward(self, tokens):
        x = self.norm(self.embed(tokens))
        attended, _ = self.attn(x, x, x)
        return self.head(self.act(self.fc1(x + attended)).mean(dim=1))


def transposed(run):  # a square weight loaded without transposing: no shape check can catch it
    with torch.no_grad():
        run["model"].fc1.weight.copy_(run["model"].fc1.weight.T.clone())


def summed(run):  # reduction="sum" where the original averaged over the batch
    run["loss_fn"] = nn.CrossEntropyLoss(reduction="sum")


def other_eps(run):  # the optimizer ported with another default
    run["eps"] = 1e-5


def tanh_gelu(run):  # one GELU ported with the tanh approximation
    run["model"].head[1].approximate = "tanh"


def nothing(run):
    pass


PLANTS = {"transpose": transposed, "summed loss": summed, "adam eps": other_eps, "tanh gelu": tanh_gelu, "matching": nothing}


def record(path, plant):
    torch.manual_seed(0)
    run = {"model": Tiny(), "loss_fn": nn.CrossEntropyLoss(), "eps": 1e-8}
    plant(run)
    generator = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB, (BATCH, TOKENS), generator=generator)
    targets = torch.randint(0, CLASSES, (BATCH,), generator=generator)
    optimizer = torch.optim.Adam(run["model"].parameters(), lr=0.1, eps=run["eps"])
    return pita.torch.record(run["model"], tokens, targets, run["loss_fn"], path, optimizer, steps=2, optimizer_state=True, batch_size=BATCH)


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """(reference, candidate) paths for each plant; the reference is the unaltered run."""
    folder = tmp_path_factory.mktemp("recordings")
    reference = record(folder / "reference.safetensors", nothing)
    return {case: (reference, record(folder / f"{case.replace(' ', '-')}.safetensors", plant)) for case, plant in PLANTS.items()}


def traced(pairs, case) -> dict:
    """The library's trace, judged by the float64 run the reference names (as the command line finds it)."""
    reference, candidate = pairs[case]
    reference = read_dump(reference)
    path, _ = named_reference64(pairs[case][0], reference.metadata)
    assert path is not None  # pita.torch.record writes it by default
    return trace_dumps(reference, read_dump(candidate), reference64=read_dump(path)).to_dict()


def phases(result) -> dict:
    assert [p["phase"] for p in result["phases"]] == PHASES
    return {p["phase"]: p for p in result["phases"]}


def kinds(divergence) -> list[str]:
    return [d["kind"] for d in divergence["diagnosis"]]


def matched_until(result, phase) -> None:
    """Every phase before `phase` compared something and matched: the finding is introduced."""
    by_phase = phases(result)
    for earlier in PHASES[: PHASES.index(phase)]:
        assert by_phase[earlier]["compared"] > 0 and by_phase[earlier]["mismatched"] == 0, earlier
    assert by_phase[phase]["mismatched"] > 0 and by_phase[phase]["first"] == result["first_divergence"]["name"]


def test_the_recordings_differ_only_where_planted(pairs):
    """The planted mistakes are real: each candidate differs from the reference, the matching one does not."""
    reference = read_dump(pairs["matching"][0])
    for case, (_, candidate) in pairs.items():
        candidate = read_dump(candidate)
        assert candidate.tensors.keys() == reference.tensors.keys()
        same = all((reference.tensors[n] == candidate.tensors[n]).all() for n in reference.tensors)
        assert same == (case == "matching"), case


def test_a_transposed_square_weight_is_found_at_the_load(pairs):
    result = traced(pairs, "transpose")
    first = result["first_divergence"]
    assert result["ok"] is False
    assert (first["phase"], first["name"], first["introduced"]) == ("parameters", "param/fc1.weight", True)
    assert "transpose" in kinds(first)
    assert phases(result)["parameters"]["mismatched"] == 1  # only the planted one
    forward = phases(result)["forward"]
    assert (forward["first"], forward["introduced"], forward["inherited_from"]) == ("act/fc1", False, "param/fc1.weight")  # the first module that uses it


def test_a_summed_loss_is_found_at_the_loss_as_a_batch_size_scale(pairs):
    result = traced(pairs, "summed loss")
    first = result["first_divergence"]
    assert (first["phase"], first["name"], first["introduced"]) == ("loss", "loss/1", True)
    matched_until(result, "loss")
    [scale] = [d for d in first["diagnosis"] if d["kind"] == "scale"]
    assert scale["factor"] == pytest.approx(BATCH)
    assert phases(result)["backward"]["mismatched"] > 0  # every gradient BATCH times larger


def test_another_adam_eps_is_found_at_the_step_and_blamed_on_the_optimizer(pairs):
    result = traced(pairs, "adam eps")
    first = result["first_divergence"]
    assert first["phase"] == "step" and first["name"].startswith("step1/") and first["introduced"] is True
    matched_until(result, "step")
    assert "the optimizer's settings differ: eps: 1e-08 against 1e-05" in result["verdict"]


def test_a_gelu_approximation_is_found_at_its_module(pairs):
    result = traced(pairs, "tanh gelu")
    first = result["first_divergence"]
    assert (first["phase"], first["name"], first["introduced"]) == ("forward", "act/head.1", True)
    matched_until(result, "forward")
    assert "head.1" in result["verdict"]
    assert phases(result)["backward"]["introduced"] is False  # the gradients inherit it


def test_the_same_run_twice_matches(pairs):
    result = traced(pairs, "matching")
    assert result["ok"] is True and result["first_divergence"] is None and result["verdict"].startswith("every phase matched")
    assert all(p["compared"] > 0 and p["mismatched"] == 0 and p["first"] is None for p in result["phases"])


@pytest.mark.parametrize("case", sorted(PLANTS))
def test_the_command_line_says_what_the_library_says(pairs, case):
    reference, candidate = pairs[case]
    proc = subprocess.run([sys.executable, "-m", "pita", "trace", str(reference), str(candidate), "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == (0 if case == "matching" else 1), proc.stderr
    printed, result = json.loads(proc.stdout), traced(pairs, case)
    assert printed["ok"] == result["ok"] and printed["phases"] == result["phases"] and printed["verdict"] == result["verdict"]
    if case == "matching":
        assert printed["first_divergence"] is None
    else:
        keys = ("phase", "name", "introduced")
        assert {k: printed["first_divergence"][k] for k in keys} == {k: result["first_divergence"][k] for k in keys}
        assert kinds(printed["first_divergence"]) == kinds(result["first_divergence"])

