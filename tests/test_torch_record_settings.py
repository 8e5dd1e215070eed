"""Module and loss settings: pita.torch's recorder writes `modules` and `loss_fn` (contract: the
fixture tests/data/recording-convention.json, `settings`), the settings table maps them to
burn's, and trace compares them before any tensor (docs/settings.md)."""

import copy
import json

import pytest

from conftest import ROOT
from conftest import pita as pita_cli
from pita.dump import Dump, read_dump, write_dump
from pita.settings import table
from pita.trace import render_trace_text, trace_dumps

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import pita.torch  # noqa: E402

EXAMPLE = json.loads((ROOT / "tests" / "data" / "recording-convention.json").read_text())["settings"]


class Block(nn.Module):
    """The fixture's example model: a Conv2d, a GELU and a BERT-style output block (LayerNorm eps 1e-12)."""

    def __init__(self, eps=1e-12):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1, bias=False)
        self.act = nn.GELU()
        self.attention = nn.Module()
        self.attention.output = nn.Module()
        self.attention.output.dense = nn.Linear(4, 4)
        self.attention.output.dropout = nn.Dropout(0.1)
        self.attention.output.LayerNorm = nn.LayerNorm(4, eps=eps)

    def forward(self, x):
        out = self.attention.output
        h = self.act(self.conv(x)).mean(1)
        return out.LayerNorm(out.dropout(out.dense(h))).mean(1)


class EveryKind(nn.Module):
    """One module of every kind issue 19 lists."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4, padding_idx=0)
        self.conv = nn.Conv1d(4, 4, 3, padding=2, dilation=2, groups=2, padding_mode="reflect")
        self.bn = nn.BatchNorm1d(4, momentum=0.2, track_running_stats=True)
        self.inorm = nn.InstanceNorm1d(4, affine=True)
        self.gn = nn.GroupNorm(2, 4, eps=1e-6)
        self.rms = nn.RMSNorm(4)
        self.ln = nn.LayerNorm(4, bias=False)
        self.attn = nn.MultiheadAttention(4, 2, dropout=0.25, batch_first=True)
        self.gelu = nn.GELU(approximate="tanh")
        self.drop = nn.Dropout(0.3)
        self.lstm = nn.LSTM(4, 4, batch_first=True)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.fc = nn.Linear(4, 3, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)  # [B, T, 4]
        x = self.conv(x.transpose(1, 2))  # [B, 4, T]
        x = self.gn(self.inorm(self.bn(x))).transpose(1, 2)
        x = self.ln(self.rms(x))
        x = x + self.attn(x, x, x)[0]
        x = self.lstm(self.drop(self.gelu(x)))[0]
        x = self.up(x.transpose(1, 2)).transpose(1, 2)
        return self.fc(x).mean(1)


def recorded(tmp_path, model, inputs, targets, loss_fn, **options) -> Dump:
    path = tmp_path / "torch.safetensors"
    pita.torch.record(model, inputs, targets, loss_fn, path, float64=False, **options)
    return read_dump(path)


def test_the_recorder_writes_the_fixtures_torch_example(tmp_path):
    torch.manual_seed(0)
    recording = recorded(tmp_path, Block().eval(), torch.randn(2, 1, 4, 4), torch.tensor([0, 1]), nn.CrossEntropyLoss())
    assert json.loads(recording.metadata["modules"]) == EXAMPLE["torch"]["modules"]
    assert json.loads(recording.metadata["loss_fn"]) == EXAMPLE["torch"]["loss_fn"]


def test_every_listed_kind_is_recorded_and_mapped(tmp_path):
    torch.manual_seed(0)
    weight = torch.tensor([1.0, 2.0, 0.5])
    loss_fn = nn.CrossEntropyLoss(weight=weight, ignore_index=2, label_smoothing=0.1, reduction="sum")
    recording = recorded(tmp_path, EveryKind(), torch.randint(0, 10, (2, 5)), torch.tensor([0, 1]), loss_fn)
    modules = json.loads(recording.metadata["modules"])
    settings = {path: entry["settings"] for path, entry in modules.items()}
    assert {path: entry["kind"] for path, entry in modules.items() if path in ("embed", "attn", "lstm", "up")} == {
        "embed": "Embedding", "attn": "MultiheadAttention", "lstm": "LSTM", "up": "Upsample"}
    assert settings["embed"]["padding_idx"] == 0 and settings["conv"]["padding"] == [2] and settings["conv"]["dilation"] == [2]
    assert settings["conv"]["groups"] == 2 and settings["conv"]["padding_mode"] == "reflect" and settings["conv"]["bias"] is True
    assert (settings["bn"]["momentum"], settings["bn"]["affine"], settings["bn"]["track_running_stats"]) == (0.2, True, True)
    assert settings["inorm"]["affine"] is True and settings["gn"]["eps"] == 1e-6 and settings["rms"]["eps"] is None
    assert settings["ln"]["bias"] is False and settings["fc"]["bias"] is False
    assert (settings["attn"]["dropout"], settings["attn"]["batch_first"]) == (0.25, True)
    assert settings["gelu"]["approximate"] == "tanh" and settings["drop"]["p"] == 0.3 and settings["lstm"]["batch_first"] is True
    assert json.loads(recording.metadata["loss_fn"]) == {"kind": "CrossEntropyLoss", "settings": {
        "reduction": "sum", "ignore_index": 2, "label_smoothing": 0.1, "weight": [1.0, 2.0, 0.5]}}
    mapped = {(row.torch_kind, row.torch_name) for row in table()}
    listed = [("Embedding", "padding_idx"), ("Conv1d", "padding"), ("Conv1d", "padding_mode"), ("Conv1d", "dilation"), ("Conv1d", "groups"),
              ("Conv1d", "bias"), ("BatchNorm1d", "eps"), ("BatchNorm1d", "momentum"), ("BatchNorm1d", "affine"),
              ("BatchNorm1d", "track_running_stats"), ("InstanceNorm1d", "affine"), ("GroupNorm", "eps"), ("RMSNorm", "eps"),
              ("LayerNorm", "eps"), ("LayerNorm", "bias"), ("MultiheadAttention", "dropout"), ("GELU", "approximate"), ("Dropout", "p"),
              ("LSTM", "batch_first"), ("Upsample", "align_corners"), ("Linear", "bias"), ("CrossEntropyLoss", "reduction"),
              ("CrossEntropyLoss", "ignore_index"), ("CrossEntropyLoss", "label_smoothing"), ("CrossEntropyLoss", "weight")]
    assert [pair for pair in listed if pair not in mapped] == []
    assert {entry["kind"] for entry in modules.values()} <= {row.torch_kind for row in table()}  # MHA's out_proj too


def test_the_float64_run_writes_the_same_settings(tmp_path):
    path = tmp_path / "torch.safetensors"
    pita.torch.record(Block().eval(), torch.randn(2, 1, 4, 4), torch.tensor([0, 1]), nn.CrossEntropyLoss(), path, float64=True)
    first, sibling = read_dump(path), read_dump(tmp_path / "torch-float64.safetensors")
    assert sibling.metadata["modules"] == first.metadata["modules"] and sibling.metadata["loss_fn"] == first.metadata["loss_fn"]


def test_a_plain_function_loss_writes_no_loss_fn(tmp_path):
    recording = recorded(tmp_path, Block().eval(), torch.randn(2, 1, 4, 4), torch.tensor([0, 1]), nn.functional.cross_entropy)
    assert "loss_fn" not in recording.metadata and "modules" in recording.metadata


# --- trace on a torch recording against a burn-shaped one ------------------------------------


def burn_twin(reference: Dump, edit=None) -> Dump:
    """The reference's tensors with the fixture's burn `modules` and `loss_fn` (edited by `edit`)."""
    burn = copy.deepcopy(EXAMPLE["burn"])
    if edit:
        edit(burn)
    metadata = {**reference.metadata, "framework": "burn", "modules": json.dumps(burn["modules"]), "loss_fn": json.dumps(burn["loss_fn"])}
    return Dump(dict(reference.tensors), metadata, source="burn")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Dump:
    torch.manual_seed(0)
    return recorded(tmp_path_factory.mktemp("ref"), Block().eval(), torch.randn(2, 1, 4, 4), torch.tensor([0, 1]), nn.CrossEntropyLoss())


def layer_norm_eps(value):
    def edit(burn):
        burn["modules"]["attention.output.LayerNorm"]["settings"]["epsilon"] = value
    return edit


def test_a_layer_norm_epsilon_is_said_first_with_both_values_and_the_chapter(reference, tmp_path):
    candidate = burn_twin(reference, layer_norm_eps(1e-05))
    result = trace_dumps(reference, candidate)
    assert result.to_dict()["settings"]["differences"] == [{"module": "attention.output.LayerNorm", "kind": "LayerNorm", "name": "eps",
                                                            "reference": 1e-12, "candidate": 1e-05, "chapter": "p10l"}]
    headline = render_trace_text(result).splitlines()[0]
    assert headline.startswith("settings: 1 difference: attention.output.LayerNorm eps: 1e-12 against 1e-05 (book/p10l.md)")
    assert "the settings differ: attention.output.LayerNorm eps: 1e-12 against 1e-05 (book/p10l.md)" in result.verdict and not result.ok
    shifted = Dump({**candidate.tensors, "loss/1": candidate.tensors["loss/1"] * 2}, candidate.metadata, source="burn")
    verdict = trace_dumps(reference, shifted).verdict  # the numbers differ too: the setting is still said first
    assert verdict.startswith("the settings differ: attention.output.LayerNorm eps: 1e-12 against 1e-05 (book/p10l.md); and in the numbers: ")
    write_dump(reference, tmp_path / "ref.safetensors")
    write_dump(candidate, tmp_path / "cand.safetensors")
    run = pita_cli("trace", tmp_path / "ref.safetensors", tmp_path / "cand.safetensors")
    assert run.returncode == 1 and run.stdout.startswith("settings: 1 difference: attention.output.LayerNorm eps: 1e-12 against 1e-05"), run


def test_settings_that_agree_are_compared_and_pass(reference, tmp_path):
    result = trace_dumps(reference, burn_twin(reference))
    settings = result.to_dict()["settings"]
    assert result.ok and settings["differences"] == [] and settings["compared"] >= 20
    assert "attention.output.LayerNorm eps" in settings["names"] and "conv padding" in settings["names"] and "loss_fn ignore_index" in settings["names"]
    write_dump(reference, tmp_path / "ref.safetensors")
    write_dump(burn_twin(reference), tmp_path / "cand.safetensors")
    assert pita_cli("trace", tmp_path / "ref.safetensors", tmp_path / "cand.safetensors").returncode == 0


def test_the_converters_see_through_spellings(reference):
    def asymmetric(burn):
        burn["modules"]["conv"]["settings"]["padding"] = "Explicit(1, 1, 0, 0)"  # what PyTorch's padding=(1, 1) cannot be
        burn["modules"]["act"]["settings"]["approximate"] = True
        burn["loss_fn"]["settings"]["pad_tokens"] = [0]
    differences = trace_dumps(reference, burn_twin(reference, asymmetric)).to_dict()["settings"]["differences"]
    assert [(d["module"], d["name"], d["reference"], d["candidate"]) for d in differences] == [
        ("conv", "padding", [1, 1], [1, 1, 0, 0]), ("act", "approximate", "none", "tanh"), ("loss_fn", "ignore_index", [], [0])]


def test_unmapped_and_one_sided_settings_are_not_compared_never_differences(reference):
    def extra(burn):
        burn["modules"]["attention.output.LayerNorm"]["settings"]["centered"] = True  # no row maps it
        burn["modules"]["pooler"] = {"kind": "Linear", "settings": {"d_input": 4, "d_output": 4, "bias": True}}  # burn only
        del burn["modules"]["attention.output.dropout"]
    result = trace_dumps(reference, burn_twin(reference, extra))
    settings = result.to_dict()["settings"]
    assert result.ok and settings["differences"] == []
    assert {"attention.output.LayerNorm LayerNorm.centered (burn)", "pooler Linear (candidate only)",
            "attention.output.dropout Dropout (reference only)"} <= set(settings["not_compared"])
    assert "3 not compared: " in render_trace_text(result)
