"""pita.torch: what a step records besides the parameters: floating buffers after each step, and
the optimizer's settings in the `optimizer` metadata key."""

import copy
import json

import numpy as np
import pytest

from pita.dump import read_dump

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import pita.torch  # noqa: E402

BATCH, WIDTH, CLASSES = 6, 5, 3


class Normed(nn.Module):
    """Linear → BatchNorm1d → ReLU → Linear, with a non-persistent floating buffer (a constant)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)
        self.bn = nn.BatchNorm1d(WIDTH)
        self.act = nn.ReLU()
        self.head = nn.Linear(WIDTH, CLASSES)
        self.register_buffer("scale", torch.full((CLASSES,), 2.0), persistent=False)

    def forward(self, x):
        return self.head(self.act(self.bn(self.fc(x)))) * self.scale


def normed() -> Normed:
    torch.manual_seed(0)
    return Normed()


def batch():
    generator = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, WIDTH, generator=generator), torch.randint(0, CLASSES, (BATCH,), generator=generator)


def record(path, model, optimizer, steps=2):
    inputs, targets = batch()
    return read_dump(pita.torch.record(model, inputs, targets, nn.CrossEntropyLoss(), path, optimizer, steps, float64=False))


def values(dump, name) -> np.ndarray:
    return np.asarray(dump.tensors[name])


def test_floating_buffers_are_recorded_after_each_step_and_listed(tmp_path):
    model = normed()
    twin, (inputs, targets) = copy.deepcopy(model), batch()
    dump = record(tmp_path / "r.safetensors", model, torch.optim.SGD(model.parameters(), lr=0.1))
    assert json.loads(dump.metadata["buffers"]) == ["bn.running_mean", "bn.running_var"]
    assert not [name for name in dump.tensors if "num_batches_tracked" in name or name.endswith("/scale")]
    optimizer = torch.optim.SGD(twin.parameters(), lr=0.1)
    for k in (1, 2):  # the same run by hand: the statistics after each step
        optimizer.zero_grad()
        nn.CrossEntropyLoss()(twin(inputs), targets).backward()
        optimizer.step()
        for name in ("running_mean", "running_var"):
            assert np.array_equal(values(dump, f"step{k}/bn.{name}"), getattr(twin.bn, name).numpy()), (k, name)
    assert not np.array_equal(values(dump, "step1/bn.running_var"), values(dump, "step2/bn.running_var"))  # they move


def test_a_model_without_floating_buffers_lists_none(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDTH, CLASSES))
    dump = record(tmp_path / "r.safetensors", model, torch.optim.SGD(model.parameters(), lr=0.1))
    assert "buffers" not in dump.metadata and {name for name in dump.tensors if name.startswith("step1/")} == {"step1/0.weight", "step1/0.bias"}


def settings(dump) -> dict:
    return json.loads(dump.metadata["optimizer"])


@pytest.mark.parametrize(("build", "expected"), [
    (lambda params: torch.optim.Adam(params, lr=1e-3, eps=1e-5), {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-5, "weight_decay": 0}),
    (lambda params: torch.optim.AdamW(params, lr=2e-3, weight_decay=0.05), {"lr": 2e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.05}),
    (lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True), {"lr": 0.1, "momentum": 0.9, "nesterov": True, "dampening": 0}),
], ids=["Adam", "AdamW", "SGD"])
def test_the_optimizers_settings_are_recorded_without_its_parameters(tmp_path, build, expected):
    model = normed()
    optimizer = build(model.parameters())
    found = settings(record(tmp_path / "r.safetensors", model, optimizer))
    assert found["framework"] == "torch" and found["name"] == type(optimizer).__name__ and len(found["groups"]) == 1
    group = found["groups"][0]
    assert {key: group[key] for key in expected} == expected
    assert "params" not in group and set(group) == set(optimizer.param_groups[0]) - {"params"}


def test_settings_are_made_json_and_taken_at_the_first_step(tmp_path):
    model, (inputs, targets) = normed(), batch()
    optimizer = torch.optim.Adam([{"params": model.head.parameters(), "lr": torch.tensor(0.5)}, {"params": model.fc.parameters()}],
                                 lr=torch.tensor(0.25), betas=(0.8, 0.9))
    optimizer.param_groups[1]["note"] = object()  # a value JSON has no form for
    optimizer.param_groups[1]["limit"] = float("inf")
    with pita.torch.Recorder(model) as recorder:
        for k in (1, 2):
            loss = nn.CrossEntropyLoss()(model(inputs), targets)
            recorder.loss(k, loss)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            recorder.step(k, optimizer)
            optimizer.param_groups[0]["lr"] = torch.tensor(0.125)  # a scheduler's change after step 1: not recorded
    found = settings(read_dump(recorder.write(tmp_path / "r.safetensors")))
    head, body = found["groups"]
    assert (head["lr"], body["lr"], head["betas"]) == (0.5, 0.25, [0.8, 0.9])
    assert body["note"].startswith("<object object at") and body["limit"] == "inf" and "note" not in head
    with pita.torch.Recorder(model) as recorder:  # the negative control: without an optimizer, no settings
        recorder.step(1)
    assert "optimizer" not in read_dump(recorder.write(tmp_path / "s.safetensors")).metadata
