"""pita.torch.record(..., steps=N, every=k): a light recording of a long run (docs/recording.md, "Long runs")."""

import copy
import re

import numpy as np
import pytest

from pita.dump import read_dump
from pita.errors import UsageError
from pita.recording import parse

torch = pytest.importorskip("torch")
from test_torch_record import batch, tiny  # noqa: E402
from torch import nn  # noqa: E402

import pita.torch  # noqa: E402

PARAMETERS = [name for name, _ in tiny().named_parameters()]


def adam(params):
    return torch.optim.Adam(params, lr=0.01)


def record(path, steps=7, every=3, model=None, **options):
    options.setdefault("float64", False)
    model = model or tiny()
    tokens, targets = batch()
    return read_dump(pita.torch.record(model, tokens, targets, nn.CrossEntropyLoss(), path, adam, steps, every=every, **options))


def kinds_by_step(dump) -> dict:
    """{(kind, step): count} of the recorded names (step None for param/, act/, grad/)."""
    counts = {}
    for name in dump.tensors:
        parsed = parse(name)
        counts[(parsed.kind, parsed.step)] = counts.get((parsed.kind, parsed.step), 0) + 1
    return counts


def test_which_names_a_light_recording_of_7_steps_every_3_holds(tmp_path):
    dump = record(tmp_path / "r.safetensors", optimizer_state=True)
    counts, full = kinds_by_step(dump), record(tmp_path / "full.safetensors", steps=1, every=None, optimizer_state=True)
    parameters = len(PARAMETERS)
    assert {key for key in counts if key[0] == "loss"} == {("loss", k) for k in range(1, 8)}
    assert {key: n for key, n in counts.items() if key[0] == "gradnorm"} == {("gradnorm", k): parameters for k in range(1, 8)}
    assert {key for key in counts if key[0] == "step"} == {("step", 1), ("step", 3), ("step", 6), ("step", 7)}
    assert {key for key in counts if key[0] == "optim"} == {("optim", 1)}  # the optimizer's state of step 1 only
    step1 = {name for name in dump.tensors if not name.startswith(("gradnorm", "loss/")) and parse(name).step in (None, 1)}
    assert step1 == {name for name in full.tensors if name != "loss/1"}  # step 1 in full, as without `every`
    assert dump.metadata["every"] == "3" and dump.metadata["steps"] == "7"
    assert "every" not in full.metadata
    assert all(np.asarray(dump.tensors[f"gradnorm5/{p}"]).shape == () for p in PARAMETERS)


def test_every_1_records_the_parameters_after_every_step_and_every_7_only_after_the_last(tmp_path):
    assert {k for kind, k in kinds_by_step(record(tmp_path / "a.safetensors", every=1)) if kind == "step"} == set(range(1, 8))
    assert {k for kind, k in kinds_by_step(record(tmp_path / "b.safetensors", every=7)) if kind == "step"} == {1, 7}
    assert {k for kind, k in kinds_by_step(record(tmp_path / "c.safetensors", every=10)) if kind == "step"} == {1, 7}


def test_gradnorms_and_checkpoints_are_the_runs_own(tmp_path):
    model = tiny()
    twin, (tokens, targets) = copy.deepcopy(model), batch()
    dump = record(tmp_path / "r.safetensors", steps=4, every=2, model=model)
    optimizer, norms = adam(twin.parameters()), {}
    for k in range(1, 5):  # the same run, by hand
        twin.zero_grad(set_to_none=True)
        nn.CrossEntropyLoss()(twin(tokens), targets).backward()
        norms[k] = {name: torch.linalg.vector_norm(p.grad).item() for name, p in twin.named_parameters()}
        optimizer.step()
    for k in range(1, 5):
        for name in PARAMETERS:
            assert np.asarray(dump.tensors[f"gradnorm{k}/{name}"]).item() == pytest.approx(norms[k][name], rel=1e-6, abs=0)
    assert np.array_equal(np.asarray(dump.tensors["step4/fc1.weight"]), twin.fc1.weight.detach().numpy())
    assert np.asarray(dump.tensors["gradnorm4/fc1.weight"]).item() != pytest.approx(norms[3]["fc1.weight"], rel=1e-6)  # negative control


def test_the_float64_run_of_a_light_recording_is_light_too(tmp_path):
    float32 = record(tmp_path / "r.safetensors", float64=True)
    float64 = read_dump(tmp_path / float32.metadata["reference64"])
    assert float64.tensors.keys() == float32.tensors.keys() and float64.metadata["every"] == "3"
    assert np.asarray(float64.tensors["gradnorm7/fc1.weight"]).dtype == np.float64
    assert np.asarray(float64.tensors["gradnorm7/fc1.weight"]).item() == pytest.approx(
        np.asarray(float32.tensors["gradnorm7/fc1.weight"]).item(), rel=1e-4)


@pytest.mark.parametrize("every, says", [(0, "every must be a positive integer"), (-3, "every must be a positive integer"),
                                         (True, "every must be a positive integer"), (1.5, "every must be a positive integer"),
                                         ("3", "every must be a positive integer")])
def test_every_is_checked_before_the_run(tmp_path, every, says):
    model = tiny()
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(UsageError, match=f"^{re.escape(says)}"):
        record(tmp_path / "r.safetensors", every=every, model=model)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()) and not list(tmp_path.iterdir())


def test_every_needs_an_optimizer(tmp_path):
    tokens, targets = batch()
    with pytest.raises(UsageError, match=r"^every=2 needs an optimizer"):
        pita.torch.record(tiny(), tokens, targets, nn.CrossEntropyLoss(), tmp_path / "r.safetensors", None, 1, every=2)


class Dropped(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


def test_dropout_masks_are_recorded_for_step_1_only_and_auto_skips_the_float64_run(tmp_path, capsys):
    torch.manual_seed(0)
    model, x, y = Dropped(), torch.randn(6, 4), torch.randint(0, 3, (6,))
    with pytest.warns(UserWarning, match="records dropout masks of step 1 only"):
        path = pita.torch.record(model, x, y, nn.CrossEntropyLoss(), tmp_path / "r.safetensors", adam, 3, every=2)
    dump = read_dump(path)
    assert [name for name in dump.tensors if name.startswith("mask")] == ["mask1/drop"]
    assert "reference64" not in dump.metadata and "no float64 run beside r.safetensors" in capsys.readouterr().err


def test_record_draws_its_progress_by_step_and_only_where_asked(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PITA_PROGRESS", "1")
    record(tmp_path / "r.safetensors", steps=3, every=2)
    err = capsys.readouterr().err
    assert err.startswith("\r[1/3] record step 1…")
    assert err.endswith("\r") and err.rsplit("\r", 2)[-2].strip() == ""  # cleared at the end: what follows starts on a clean line
    monkeypatch.setenv("PITA_PROGRESS", "0")
    record(tmp_path / "q.safetensors", steps=3, every=2)
    assert capsys.readouterr().err == ""
