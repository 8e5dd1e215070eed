"""pita.torch.record's float64 run: the same model, inputs and masks in double precision, written
beside the recording as `<stem>-float64<suffix>` and named by its `reference64` metadata key."""

import gc
import json

import numpy as np
import pytest

from pita.dump import read_dump
from pita.errors import UsageError

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import pita.torch  # noqa: E402

BATCH, WIDTH, CLASSES = 4, 8, 3


class Net(nn.Module):
    """Linear → ReLU → Dropout → Linear, and a functional dropout inside a module."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(WIDTH, WIDTH)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(0.25)
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, x):
        return self.head(self.drop(self.act(self.fc1(x))))


class Direct(Net):
    """Dropout in the model's own forward: its mask is not recorded, so a float64 run could not replay it."""

    def forward(self, x):
        return self.head(F.dropout(self.fc1(x), 0.5, self.training))


def net(seed=0, kind=Net) -> Net:
    torch.manual_seed(seed)
    return kind()


def batch():
    generator = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, WIDTH, generator=generator), torch.randint(0, CLASSES, (BATCH,), generator=generator)


def sgd(params):
    return torch.optim.SGD(params, lr=0.5, momentum=0.9)


def record(path, model=None, optimizer=sgd, loss_fn=None, seed=5, **options):
    """Two steps of `model` (Net), the generator seeded with `seed` first."""
    model = model or net()
    inputs, targets = batch()
    if next(model.parameters()).dtype == torch.float64:
        inputs = inputs.double()
    torch.manual_seed(seed)
    return pita.torch.record(model, inputs, targets, loss_fn or nn.CrossEntropyLoss(), path, optimizer, 2, **options)


def values(dump, name) -> np.ndarray:
    return np.asarray(dump.tensors[name])


def test_the_float64_run_is_written_beside_and_named_and_draws_the_same_masks(tmp_path):
    model = net()
    initial = {name: p.detach().clone() for name, p in model.named_parameters()}
    float32 = read_dump(record(tmp_path / "r.safetensors", model=model))
    assert float32.metadata["reference64"] == "r-float64.safetensors"
    float64 = read_dump(tmp_path / "r-float64.safetensors")
    assert (tmp_path / "r-float64.json").is_file() and "reference64" not in float64.metadata
    assert float64.metadata["dtype"] == "float64" and float64.tensors.keys() == float32.tensors.keys()
    masks = [name for name in float32.tensors if name.startswith("mask")]
    assert sorted(masks) == ["mask1/drop", "mask2/drop"] and float64.metadata["masks_replayed"] == "2"
    for name in float32.tensors:
        if name in masks:
            assert np.array_equal(values(float64, name), values(float32, name)), name
        else:
            assert values(float64, name).dtype == np.float64, name
            assert np.allclose(values(float64, name), values(float32, name), rtol=0, atol=1e-5), name
    for name, value in initial.items():  # from the model as it was before the run trained it
        assert np.array_equal(values(float64, f"param/{name}"), value.double().numpy())
        assert np.array_equal(values(float32, f"step2/{name}"), model.get_parameter(name).detach().numpy())
    # the negative control: computed in float64, not float32 values widened
    assert not np.array_equal(values(float64, "act/head"), values(float32, "act/head").astype(np.float64))


def test_without_the_replayed_masks_the_float64_run_would_differ(tmp_path):
    float32 = read_dump(record(tmp_path / "r.safetensors", float64=False))
    drawn = read_dump(record(tmp_path / "d.safetensors", dtype=torch.float64, seed=6))  # a float64 run drawing its own masks
    assert "reference64" not in float32.metadata and not (tmp_path / "r-float64.safetensors").exists()
    assert not np.array_equal(values(drawn, "mask1/drop"), values(float32, "mask1/drop"))
    assert not np.allclose(values(drawn, "act/drop"), values(float32, "act/drop"), rtol=0, atol=1e-5)


def test_an_optimizer_instance_is_rebuilt_from_its_state_before_the_run(tmp_path):
    model = net()
    optimizer = torch.optim.Adam([{"params": model.head.parameters(), "lr": 0.02}, {"params": model.fc1.parameters()}], lr=0.01)
    float32 = read_dump(record(tmp_path / "r.safetensors", model=model, optimizer=optimizer))
    float64 = read_dump(tmp_path / "r-float64.safetensors")
    assert optimizer.state[model.head.weight]["step"] == 2  # the run's own optimizer took both steps
    for name, _ in model.named_parameters():
        for k in (1, 2):  # an optimizer rebuilt after the run would start from step 2's state
            assert np.allclose(values(float64, f"step{k}/{name}"), values(float32, f"step{k}/{name}"), rtol=0, atol=1e-5), name
    assert json.loads(float64.metadata["optimizer"]) == json.loads(float32.metadata["optimizer"])


@pytest.mark.parametrize("kind", ["AdamW", "Adam", "SGD", "RMSprop"])
def test_every_common_optimizer_instance_is_rebuilt(tmp_path, kind):
    """torch 2.15's AdamW keeps `decoupled_weight_decay` in its defaults but does not take it back."""
    model = net()
    optimizer = getattr(torch.optim, kind)(model.parameters(), lr=0.01)
    float32 = read_dump(record(tmp_path / "r.safetensors", model=model, optimizer=optimizer))
    float64 = read_dump(tmp_path / "r-float64.safetensors")
    assert json.loads(float64.metadata["optimizer"]) == json.loads(float32.metadata["optimizer"])
    assert np.allclose(values(float64, "step2/head.weight"), values(float32, "step2/head.weight"), rtol=0, atol=1e-5)


def test_auto_follows_the_declared_memory_rule(tmp_path, monkeypatch, capsys):
    float32 = read_dump(record(tmp_path / "measure.safetensors", float64=False))
    parameters = sum(p.numel() for p in net().parameters())
    activations = sum(t.size for name, t in float32.tensors.items() if name.startswith("act/"))  # the rest is streamed, not held
    need = pita.torch.FLOAT64_BYTES_PER_PARAMETER * parameters + pita.torch.FLOAT64_BYTES_PER_RECORDED_ELEMENT * activations
    for available, runs in ((int(need / pita.torch.FLOAT64_MEMORY_SHARE), False), (int(need / pita.torch.FLOAT64_MEMORY_SHARE) + 8, True),
                            (None, True)):
        monkeypatch.setattr(pita.torch, "_available_memory", lambda torch, device, available=available: available)
        path = tmp_path / f"r{available}.safetensors"
        dump = read_dump(record(path))
        assert ("reference64" in dump.metadata) == runs == path.with_name(f"{path.stem}-float64.safetensors").exists(), available
        stderr = capsys.readouterr().err
        if runs:
            assert stderr == ""
        else:
            assert stderr.count("\n") == 1 and stderr.startswith(f"pita.torch.record: no float64 run beside {path.name}: it needs about")
    monkeypatch.setattr(pita.torch, "_available_memory", lambda torch, device: 1)
    assert read_dump(record(tmp_path / "forced.safetensors", float64=True)).metadata["reference64"] == "forced-float64.safetensors"
    assert (tmp_path / "forced-float64.safetensors").exists()


def test_the_memory_available_is_read_from_the_system():
    available = pita.torch._available_memory(torch, torch.device("cpu"))
    assert available is None or 0 < available < 2**50
    assert pita.torch._available_memory(torch, torch.device("meta")) is None


def test_no_float64_run_where_the_run_is_float64_already_or_none_is_asked_for(tmp_path):
    for name, options in (("asked", {"dtype": torch.float64}), ("off", {"float64": False})):
        assert "reference64" not in read_dump(record(tmp_path / f"{name}.safetensors", **options)).metadata
    assert "reference64" not in read_dump(record(tmp_path / "double.safetensors", model=net().double())).metadata
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".safetensors") == ["asked.safetensors", "double.safetensors", "off.safetensors"]


def test_misuse_of_float64_is_refused_before_the_run(tmp_path):
    model = net()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    with pytest.raises(UsageError, match="float64=True with dtype=torch.float64"):
        record(tmp_path / "r.safetensors", model=model, float64=True, dtype=torch.float64)
    for value in ("yes", 1, None):
        with pytest.raises(UsageError, match="float64 must be True, False or 'auto'"):
            record(tmp_path / "r.safetensors", model=model, float64=value)
    stranger = nn.Parameter(torch.zeros(3))  # an optimizer the float64 run cannot rebuild over its copy
    with pytest.raises(UsageError, match="pass a factory"):
        record(tmp_path / "r.safetensors", model=model, optimizer=torch.optim.SGD([*model.parameters(), stranger], lr=0.1))
    (tmp_path / "r-float64.safetensors").mkdir()  # where the float64 run would be written
    with pytest.raises(UsageError, match="r-float64.safetensors"):
        record(tmp_path / "r.safetensors", model=model)
    assert all(torch.equal(p, before[name]) for name, p in model.named_parameters())  # no run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r-float64.safetensors"]


def test_a_float64_run_that_fails_leaves_the_recording_and_no_float64_file(tmp_path):
    def fails_in_float64(output, targets):
        if output.dtype == torch.float64:
            assert (tmp_path / "r.safetensors").is_file()  # the float64 run starts after the recording is written
            recorders = [o for o in gc.get_objects() if type(o) is pita.torch.Recorder]
            assert len(recorders) == 1 and recorders[0].dropouts.replayed  # and the run's recorder is freed: only this one is left
            raise RuntimeError("float64 unsupported")
        return F.cross_entropy(output, targets)

    stale = tmp_path / "r-float64.safetensors"
    record(stale, float64=False)  # a float64 file an earlier run left there
    with pytest.raises(RuntimeError, match="float64 unsupported") as raised:
        record(tmp_path / "r.safetensors", loss_fn=fails_in_float64)
    assert "r.safetensors is written; its float64 run" in "\n".join(raised.value.__notes__)
    assert read_dump(tmp_path / "r.safetensors").metadata["reference64"] == "r-float64.safetensors"
    assert not stale.exists() and not stale.with_suffix(".json").exists()  # never paired with this run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.safetensors"]


def test_a_mask_that_was_not_recorded_stops_the_float64_run(tmp_path, capsys):
    with pytest.warns(UserWarning, match="outside every submodule"):
        dump = read_dump(record(tmp_path / "auto.safetensors", model=net(kind=Direct)))
    assert "reference64" not in dump.metadata and not (tmp_path / "auto-float64.safetensors").exists()
    assert "no float64 run beside auto.safetensors: the mask of 2 dropout call(s) was not recorded" in capsys.readouterr().err
    with pytest.warns(UserWarning), pytest.raises(UsageError, match="forced.safetensors is written, without its float64 run"):
        record(tmp_path / "forced.safetensors", model=net(kind=Direct), float64=True)
    assert "reference64" not in read_dump(tmp_path / "forced.safetensors").metadata
    assert not (tmp_path / "forced-float64.safetensors").exists()
