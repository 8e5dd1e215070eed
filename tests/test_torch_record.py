"""pita.torch: recording a PyTorch run under docs/recording.md's names, on a small real model."""

import copy
import json
import os
import stat
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from pita.dump import read_dump
from pita.errors import UsageError

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import pita.torch  # noqa: E402
from pita.torch_dump import write_torch_dump  # noqa: E402

BATCH, TOKENS, VOCAB, WIDTH, CLASSES = 4, 6, 11, 8, 5
DROPOUT, ATTENTION = nn.functional.dropout, nn.functional.scaled_dot_product_attention  # torch's own, as the recorder must leave them
# The order the calls of Tiny's submodules end in: `mix` is called twice, a child ends before its
# parent (`head.*` before `head`), and nn.MultiheadAttention's out_proj is never called as a module.
EXECUTION_ORDER = ["act/embed", "act/norm", "act/attn", "act/fc1", "act/act", "act/mix", "act/mix#2",
                   "act/head.0", "act/head.1", "act/head.2", "act/head"]


class Tiny(nn.Module):
    """Embedding → LayerNorm → self-attention (a tuple output) → Linear → GELU → one Linear called
    twice → Sequential(Linear, GELU, Linear). The attention has no biases: its key bias has no
    effect on the output, so its gradient is float32 noise that Adam scales up to a full step,
    which would make the float64 run differ from the float32 one by design."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.attn = nn.MultiheadAttention(WIDTH, 2, bias=False, batch_first=True)
        self.fc1 = nn.Linear(WIDTH, WIDTH)
        self.act = nn.GELU()
        self.mix = nn.Linear(WIDTH, WIDTH)
        self.head = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, CLASSES))

    def forward(self, tokens):
        x = self.norm(self.embed(tokens))
        attended, _ = self.attn(x, x, x)
        x = self.act(self.fc1(x + attended))
        x = self.mix(torch.tanh(self.mix(x)))
        return self.head(x.mean(dim=1))


def tiny(seed=0) -> Tiny:
    torch.manual_seed(seed)
    return Tiny()


def batch():
    generator = torch.Generator().manual_seed(1)
    return (torch.randint(0, VOCAB, (BATCH, TOKENS), generator=generator),
            torch.randint(0, CLASSES, (BATCH,), generator=generator))


def adam(params):
    return torch.optim.Adam(params, lr=0.01)


def record(path, model=None, optimizer=adam, steps=2, **options):
    """`pita.torch.record` on Tiny, without the float64 run unless asked (the tests of it ask)."""
    options.setdefault("float64", False)
    model = model or tiny()
    tokens, targets = batch()
    optimizer = optimizer(model.parameters()) if optimizer is adam else optimizer
    return read_dump(pita.torch.record(model, tokens, targets, nn.CrossEntropyLoss(), path, optimizer, steps, **options))


def values(dump, name) -> np.ndarray:
    return np.asarray(dump.tensors[name])


def hooks(model) -> list:
    return [hook for m in model.modules() for hook in (*m._forward_hooks.values(), *m._forward_pre_hooks.values())]


def test_a_recording_holds_every_name_of_the_convention(tmp_path):
    dump = record(tmp_path / "torch-record.safetensors")
    parameters = [name for name, _ in tiny().named_parameters()]
    expected = {f"{prefix}/{name}" for prefix in ("param", "grad", "step1", "step2") for name in parameters}
    assert set(dump.tensors) == expected | set(EXECUTION_ORDER) | {"loss/1", "loss/2"}
    assert "act/attn.out_proj" not in dump.tensors and "act/" not in dump.tensors  # never called; the root is not recorded
    meta = dump.metadata
    assert meta["recording"] == "pita-record/1" and meta["steps"] == "2" and meta["dtype"] == "float32"
    assert json.loads(meta["execution_order"]) == EXECUTION_ORDER
    assert meta["framework"] == "torch" and meta["framework_version"] == torch.__version__ and meta["backend"] == "cpu"
    assert "no_grad" not in meta
    assert read_dump(tmp_path / "torch-record.json").tensors.keys() == dump.tensors.keys()  # the JSON twin


def test_recorded_values_are_what_the_run_computed(tmp_path):
    reference, (tokens, targets) = tiny(), batch()
    dump = record(tmp_path / "r.safetensors")
    for name, parameter in reference.named_parameters():
        assert np.array_equal(values(dump, f"param/{name}"), parameter.detach().numpy())
    with torch.no_grad():
        embedded = reference.embed(tokens)
        assert np.array_equal(values(dump, "act/embed"), embedded.numpy())
        assert np.array_equal(values(dump, "act/norm"), reference.norm(embedded).numpy())
        logits = reference(tokens)
    assert np.array_equal(values(dump, "act/head"), logits.numpy())
    assert values(dump, "act/attn").shape == (BATCH, TOKENS, WIDTH)  # the output, not the [B, T, T] weights
    assert values(dump, "act/mix").shape == values(dump, "act/mix#2").shape and not np.array_equal(values(dump, "act/mix"), values(dump, "act/mix#2"))
    loss = nn.CrossEntropyLoss()(reference(tokens), targets)
    assert values(dump, "loss/1").shape == (1,) and values(dump, "loss/2").shape == (1,)
    assert values(dump, "loss/1")[0] == loss.item()
    loss.backward()
    for name, parameter in reference.named_parameters():
        assert np.array_equal(values(dump, f"grad/{name}"), parameter.grad.numpy())


def test_every_trained_parameter_moves_at_each_step_and_a_frozen_one_does_not(tmp_path):
    model = tiny()
    model.norm.bias.requires_grad_(False)  # the negative control: no gradient, no step
    dump = record(tmp_path / "r.safetensors", model=model)
    for name, parameter in model.named_parameters():
        before, after1, after2 = (values(dump, f"{phase}/{name}") for phase in ("param", "step1", "step2"))
        if name == "norm.bias":
            assert np.array_equal(before, after1) and np.array_equal(after1, after2)
        else:
            assert not np.array_equal(before, after1) and not np.array_equal(after1, after2), name
        assert np.array_equal(after2, parameter.detach().numpy())  # record trained the model itself
    assert "grad/norm.bias" not in dump.tensors and json.loads(dump.metadata["no_grad"]) == ["norm.bias"]
    assert values(dump, "loss/2")[0] < values(dump, "loss/1")[0]


def test_without_an_optimizer_one_step_is_recorded_without_steps(tmp_path):
    dump = record(tmp_path / "r.safetensors", optimizer=None, steps=1)
    assert not [name for name in dump.tensors if name.startswith("step")]
    assert {"loss/1", "grad/fc1.weight", "param/fc1.weight", "act/head"} <= set(dump.tensors) and "loss/2" not in dump.tensors
    assert dump.metadata["steps"] == "0"
    with pytest.raises(UsageError, match="needs an optimizer"):
        record(tmp_path / "s.safetensors", optimizer=None, steps=2)
    with pytest.raises(UsageError, match="optimizer_state=True needs an optimizer"):
        record(tmp_path / "s.safetensors", optimizer=None, steps=1, optimizer_state=True)
    assert not (tmp_path / "s.safetensors").exists()


def test_the_optimizer_state_is_recorded_when_asked(tmp_path):
    dump = record(tmp_path / "r.safetensors", optimizer_state=True)
    optim = {name for name in dump.tensors if name.startswith("optim")}
    assert optim == {f"optim{k}/{name}/{state}" for k in (1, 2) for name, _ in tiny().named_parameters() for state in ("exp_avg", "exp_avg_sq")}
    assert "optim1/fc1.weight/step" not in dump.tensors  # Adam's step counter: burn keeps it as an integer
    step1 = (1 - 0.9) * values(dump, "grad/fc1.weight")  # Adam's first moment after step 1
    assert np.allclose(values(dump, "optim1/fc1.weight/exp_avg"), step1, rtol=1e-6, atol=0)
    assert not [name for name in record(tmp_path / "s.safetensors").tensors if name.startswith("optim")]


def test_float64_mode_records_the_same_run_in_double_precision_on_a_copy(tmp_path):
    float32 = record(tmp_path / "r32.safetensors")
    model = tiny()
    optimizer = adam(model.parameters())
    untouched = copy.deepcopy(model.state_dict())
    float64 = record(tmp_path / "r64.safetensors", model=model, optimizer=optimizer, dtype=torch.float64)
    assert float64.metadata["dtype"] == "float64" and float64.tensors.keys() == float32.tensors.keys()
    for name in float32.tensors:
        assert values(float64, name).dtype == np.float64, name
        assert np.allclose(values(float64, name), values(float32, name), rtol=0, atol=1e-5), name
    for name, _ in model.named_parameters():
        assert np.array_equal(values(float64, f"param/{name}"), values(float32, f"param/{name}").astype(np.float64))
    # the negative control: computed in float64, not float32 values widened
    assert not np.array_equal(values(float64, "act/head"), values(float32, "act/head").astype(np.float64))
    assert all(torch.equal(value, untouched[key]) for key, value in model.state_dict().items())  # model and optimizer untouched
    assert not optimizer.state and all(p.dtype == torch.float32 and p.grad is None for p in model.parameters())


def test_float64_mode_rebuilds_an_optimizer_instance_as_its_factory_would(tmp_path):
    """Two groups with their own learning rates and an optimizer that already took a step: the
    instance is rebuilt from its type, defaults, groups and state; a factory is simply called."""
    def groups(model):
        return [{"params": [p for n, p in model.named_parameters() if n.startswith("head")], "lr": 0.05},
                {"params": [p for n, p in model.named_parameters() if not n.startswith("head")]}]

    def used(model):  # an optimizer with state: one step of plain Adam taken on the model
        optimizer = torch.optim.Adam(groups(model), lr=0.01, eps=1e-6)
        tokens, targets = batch()
        nn.CrossEntropyLoss()(model(tokens), targets).backward()
        optimizer.step()
        model.zero_grad()
        return optimizer

    model = tiny()
    optimizer = used(model)
    from_instance = record(tmp_path / "a.safetensors", model=model, optimizer=optimizer, dtype=torch.float64)
    twin = tiny()
    state = used(twin).state_dict()

    def factory(params):  # the same groups, by position: Tiny's head holds its last four parameters
        params = list(params)
        rebuilt = torch.optim.Adam([{"params": params[-4:], "lr": 0.05}, {"params": params[:-4]}], lr=0.01, eps=1e-6)
        rebuilt.load_state_dict(state)
        return rebuilt

    from_factory = record(tmp_path / "b.safetensors", model=twin, optimizer=factory, dtype=torch.float64)
    assert from_instance.tensors.keys() == from_factory.tensors.keys()
    for name in from_instance.tensors:
        assert np.array_equal(values(from_instance, name), values(from_factory, name)), name
    # the negative control: the groups' learning rates matter
    plain = record(tmp_path / "c.safetensors", model=twin, optimizer=lambda params: torch.optim.Adam(params, lr=0.01, eps=1e-6), dtype=torch.float64)
    assert not np.array_equal(values(plain, "step1/head.0.weight"), values(from_instance, "step1/head.0.weight"))


def test_an_optimizer_over_tensors_the_model_does_not_hold_needs_a_factory(tmp_path):
    model = tiny()
    stranger = nn.Parameter(torch.zeros(3))
    with pytest.raises(UsageError, match="pass a factory"):
        record(tmp_path / "r.safetensors", model=model, optimizer=torch.optim.SGD([*model.parameters(), stranger], lr=0.1), dtype=torch.float64)
    with pytest.raises(UsageError, match="not a torch.optim.Optimizer"):
        record(tmp_path / "r.safetensors", model=model, optimizer=lambda params: None)
    with pytest.raises(UsageError, match="not the parameters it was given"):  # a factory that ignores its argument
        record(tmp_path / "r.safetensors", model=model, optimizer=lambda params: torch.optim.SGD(model.parameters(), lr=0.1), dtype=torch.float64)
    assert not hooks(model) and list(tmp_path.iterdir()) == []


def test_tied_parameters_are_recorded_once_by_their_first_name(tmp_path):
    model = tiny()
    model.mix.weight = model.fc1.weight  # tied: named_parameters() names it fc1.weight only
    for dtype in (None, torch.float64):
        dump = record(tmp_path / f"r{dtype}.safetensors", model=copy.deepcopy(model), dtype=dtype)
        assert "param/fc1.weight" in dump.tensors and "param/mix.weight" not in dump.tensors
        assert "step2/fc1.weight" in dump.tensors and "grad/mix.weight" not in dump.tensors


def test_only_the_first_forward_pass_is_recorded(tmp_path):
    model, (tokens, targets) = tiny(), batch()
    with pita.torch.Recorder(model) as recorder:
        first = model(tokens)
        model((tokens + 1) % VOCAB)  # a second pass: not recorded
        recorder.loss(1, nn.CrossEntropyLoss()(first, targets))
    assert recorder.execution_order == EXECUTION_ORDER
    assert np.array_equal(recorder.tensors["act/head"].numpy(), first.detach().numpy())
    assert "act/mix#3" not in recorder.tensors
    # a loop that calls the submodules itself: the pass ends when the loss is recorded
    with pita.torch.Recorder(model) as recorder:
        model.fc1(torch.ones(2, WIDTH))
        model.fc1(torch.ones(2, WIDTH))
        recorder.loss(1, torch.tensor(0.5))
        model.fc1(torch.ones(2, WIDTH))
    assert recorder.execution_order == ["act/fc1", "act/fc1#2"]
    with pita.torch.Recorder(model, activations="none") as recorder:  # the negative control
        model(tokens)
    assert recorder.execution_order == [] and not recorder.tensors


def test_hooks_are_removed_on_exit_and_on_an_exception(tmp_path):
    model, (tokens, _) = tiny(), batch()
    with pita.torch.Recorder(model):
        assert len(hooks(model)) == 2 * len(list(model.modules()))  # the negative control: they were there
        assert nn.functional.dropout is not DROPOUT and nn.functional.scaled_dot_product_attention is not ATTENTION
    assert not hooks(model) and nn.functional.dropout is DROPOUT and nn.functional.scaled_dot_product_attention is ATTENTION
    with pytest.raises(RuntimeError, match="boom"), pita.torch.Recorder(model):
        model(tokens)
        raise RuntimeError("boom")
    assert not hooks(model) and nn.functional.dropout is DROPOUT
    with pytest.raises(IndexError):
        pita.torch.record(model, tokens + VOCAB, batch()[1], nn.CrossEntropyLoss(), tmp_path / "r.safetensors")  # token ids out of range
    assert not hooks(model) and list(tmp_path.iterdir()) == []


def test_recorded_values_are_snapshots(tmp_path):
    model, (tokens, targets) = tiny(), batch()
    relu = nn.ReLU(inplace=True)
    with pita.torch.Recorder(model) as recorder:
        recorder.params()
        logits = model(tokens)
        recorded = logits.detach().clone()
        relu(logits)  # in place, after the head's call ended
        loss = nn.CrossEntropyLoss()(logits, targets)
        recorder.loss(1, loss)
        loss.backward()
        recorder.grads()
        before = {name: p.detach().clone() for name, p in model.named_parameters()}
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)
                p.grad.mul_(2.0)
        recorder.step(1)
    assert torch.equal(recorder.tensors["act/head"], recorded) and (recorded < 0).any()  # the ReLU did change the output
    for name, p in model.named_parameters():
        assert torch.equal(recorder.tensors[f"param/{name}"], before[name])
        assert torch.equal(recorder.tensors[f"step1/{name}"], before[name] + 1)
        assert torch.equal(recorder.tensors[f"grad/{name}"], p.grad / 2)
        p.data.zero_()
    path = recorder.write(tmp_path / "r.safetensors")
    assert np.array_equal(values(read_dump(path), "param/fc1.weight"), before["fc1.weight"].numpy())


def test_write_is_atomic_through_the_dump_writer(tmp_path, monkeypatch):
    path = tmp_path / "torch-record.npz"
    record(path)
    old = path.read_bytes()

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(UsageError, match="No space left"):
        record(path, model=tiny(seed=3))
    assert path.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["torch-record.npz"]  # no temporary file left


def test_misuse_is_refused_in_one_line(tmp_path):
    model = tiny()
    with pita.torch.Recorder(model) as recorder:
        recorder.params()
        with pytest.raises(UsageError, match="param/embed.weight is already recorded"):
            recorder.params()
        with pytest.raises(UsageError, match=r"loss 1 has shape \[4\]"):
            recorder.loss(1, torch.ones(4))
        with pytest.raises(UsageError, match="numbered 1, 2"):
            recorder.loss(0, torch.ones(1))
    with pytest.raises(UsageError, match="'steps'"):
        recorder.write(tmp_path / "r.safetensors", steps=3)
    with pytest.raises(UsageError, match="pass the optimizer"):
        pita.torch.Recorder(model, optimizer_state=True).step(1)
    with pytest.raises(UsageError, match="activations"):
        pita.torch.Recorder(model, activations="all")
    with pytest.raises(UsageError, match="floating torch dtype"):
        record(tmp_path / "r.safetensors", dtype=torch.int64)
    assert list(tmp_path.iterdir()) == []


def test_metadata_the_writers_set_is_refused_before_the_run(tmp_path):
    reserved = json.loads((Path(__file__).parent / "data" / "recording-convention.json").read_text())["metadata"]
    model = tiny()
    before = copy.deepcopy(model.state_dict())
    for key in reserved["recorder"] + reserved["provenance"]:
        with pytest.raises(UsageError, match=f"^metadata '{key}': set by the (recorder|dump writer) itself$"):
            pita.torch.Recorder(model).write(tmp_path / "r.safetensors", **{key: "x"})
        if key not in ("steps", "dtype", "optimizer", "loss_fn", "every"):  # record's own parameters
            with pytest.raises(UsageError, match=f"^metadata '{key}': set by the (recorder|dump writer) itself$"):
                record(tmp_path / "r.safetensors", model=model, **{key: "x"})
    for key in reserved["provenance"]:  # framework="jax" would make a torch dump lie about what computed it
        with pytest.raises(UsageError, match=f"^metadata '{key}': set by the dump writer itself$"):
            write_torch_dump(tmp_path / "d.safetensors", {"w": torch.ones(1)}, **{key: "x"})
    write_torch_dump(tmp_path / "d.safetensors", {"w": torch.ones(1)}, backend="mine", **dict.fromkeys(reserved["recorder"], "x"))
    assert read_dump(tmp_path / "d.safetensors").metadata["backend"] == "mine"  # a plain dump may use those keys
    assert all(torch.equal(value, before[name]) for name, value in model.state_dict().items())  # refused before training


def test_importing_pita_torch_needs_no_torch_and_calling_it_says_it_does(tmp_path):
    code = """
import sys
sys.modules["torch"] = None  # as where torch is not installed
import pita.torch
assert "torch" not in [m for m in sys.modules if sys.modules[m] is not None]
try:
    pita.torch.Recorder(object())
except ImportError as error:
    print(error)
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "needs torch" in proc.stdout and "pip install torch" in proc.stdout


class Counted(nn.Module):
    """A Linear whose forward counts its calls: a path refused before the run leaves it at 0."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.fc(x)


def unusable_paths(tmp_path) -> dict:
    """Paths the writer refuses, by what is wrong with them."""
    (tmp_path / "folder.safetensors").mkdir()
    os.mkfifo(tmp_path / "fifo.safetensors")
    (tmp_path / "device.safetensors").symlink_to("/dev/null")
    (tmp_path / "file").write_text("a file, not a folder")
    (tmp_path / "twin.json").mkdir()  # where the JSON form of twin.safetensors would go
    return {"a folder": tmp_path / "folder.safetensors", "a FIFO": tmp_path / "fifo.safetensors",
            "a character device": tmp_path / "device.safetensors", "unknown dump suffix": tmp_path / "r.txt",
            "does not write them": tmp_path / "r.safetensors.index.json", "Not a directory": tmp_path / "file" / "r.safetensors",
            "twin.json: a folder": tmp_path / "twin.safetensors"}


def test_an_unusable_path_is_refused_before_the_first_step(tmp_path):
    for why, path in unusable_paths(tmp_path).items():
        model = Counted()
        with pytest.raises(UsageError, match=why):
            pita.torch.record(model, torch.ones(4, 3), torch.zeros(4, 2), nn.MSELoss(), path, adam, steps=2)
        assert model.calls == 0, why
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo.safetensors").st_mode)  # not replaced by a file
    model = Counted()
    pita.torch.record(model, torch.ones(4, 3), torch.zeros(4, 2), nn.MSELoss(), tmp_path / "new" / "r.safetensors", adam, steps=2)
    assert model.calls == 2 and (tmp_path / "new" / "r.json").is_file()  # a missing folder is created, as the writer does


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_refused_before_the_first_step(tmp_path):
    model, folder = Counted(), tmp_path / "read-only"
    folder.mkdir(mode=0o555)
    with pytest.raises(UsageError, match="permission denied"):
        pita.torch.record(model, torch.ones(4, 3), torch.zeros(4, 2), nn.MSELoss(), folder / "r.safetensors")
    assert model.calls == 0


class Returns(nn.Module):
    """A module returning `make(x)`: a nested structure of tensors."""

    def __init__(self, make):
        super().__init__()
        self.make = make

    def forward(self, x):
        return self.make(x)


class ModelOutput(OrderedDict):
    """As transformers' ModelOutput: an OrderedDict whose None fields are not among its values."""

    def __init__(self, **fields):
        super().__init__((key, value) for key, value in fields.items() if value is not None)


def looped(x):
    output = [None]
    output += [output, (x + 1, x + 2)]
    return output


@pytest.mark.parametrize(("make", "first"), [
    (lambda x: ((x + 1, x + 2), x + 3), 1),
    (lambda x: [[x + 1], x + 2], 1),
    (lambda x: (None, [(), {"a": x + 1}], x + 2), 1),
    (lambda x: {"hidden": (x + 1, x + 2), "logits": x + 3}, 1),
    (lambda x: ModelOutput(loss=None, logits=(x + 1,), hidden_states=x + 2), 1),
    (lambda x: (7, "text", [x + 2, x + 1]), 2),
    (looped, 1),
], ids=["tuple", "list", "empty-and-none", "mapping", "model-output", "not-tensors-first", "holds-itself"])
def test_an_output_is_recorded_by_its_first_tensor_depth_first(tmp_path, make, first):
    model = nn.Sequential(Returns(make), nn.Identity())
    x = torch.arange(3.0)
    with pita.torch.Recorder(model) as recorder:
        model(x)
    assert torch.equal(recorder.tensors["act/0"], x + first)


def test_a_sparse_gradient_is_recorded_dense_and_named(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(VOCAB, WIDTH, sparse=True), nn.Linear(WIDTH, CLASSES))
    tokens, targets = torch.tensor([1, 3, 3, 7]), torch.tensor([0, 1, 2, 3])
    expected = copy.deepcopy(model)
    nn.functional.cross_entropy(expected(tokens), targets).backward()
    path = pita.torch.record(model, tokens, targets, nn.CrossEntropyLoss(), tmp_path / "r.safetensors",
                             torch.optim.SGD(model.parameters(), lr=0.1))
    dump = read_dump(path)
    assert np.array_equal(values(dump, "grad/0.weight"), expected[0].weight.grad.to_dense().numpy())
    assert json.loads(dump.metadata["densified"]) == ["grad/0.weight"]
    assert "densified" not in record(tmp_path / "dense.safetensors").metadata


def test_a_nested_activation_is_refused_at_once_by_its_name(tmp_path):
    model = nn.Sequential(Returns(lambda x: torch.nested.nested_tensor([x, x[:2]], layout=torch.jagged)), nn.Identity())
    with pita.torch.Recorder(model), pytest.raises(UsageError, match="^act/0: a nested tensor"):
        model(torch.arange(3.0))


def forward_order(**selection) -> list[str]:
    model, (tokens, _) = tiny(), batch()
    with pita.torch.Recorder(model, **selection) as recorder:
        model(tokens)
    assert list(recorder.tensors) == recorder.execution_order
    return recorder.execution_order


def test_depth_include_and_exclude_choose_the_modules_recorded():
    assert forward_order() == EXECUTION_ORDER
    assert forward_order(depth=1) == [name for name in EXECUTION_ORDER if not name.startswith("act/head.")]
    assert forward_order(include=["head.*"]) == ["act/head.0", "act/head.1", "act/head.2"]  # not head itself
    assert forward_order(include=["head*"], exclude=["head.1", "mix"]) == ["act/head.0", "act/head.2", "act/head"]
    assert forward_order(include=["fc1"], exclude=["f*"]) == []  # exclude wins
    assert forward_order(depth=1, include=["head*"]) == ["act/head"]


def test_masks_are_named_by_the_innermost_module_whatever_is_selected():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Dropout(0.5)), nn.Linear(WIDTH, CLASSES))
    with pita.torch.Recorder(model, depth=1, exclude=["1"]) as recorder:
        model(torch.ones(BATCH, WIDTH))
    assert set(recorder.tensors) == {"act/0", "mask1/0.1"}


def test_a_selection_that_is_not_one_is_refused(tmp_path):
    model = tiny()
    for selection, message in (({"depth": 0}, "depth must be a positive integer"), ({"depth": True}, "depth must be a positive integer"),
                               ({"depth": "2"}, "depth must be a positive integer"), ({"include": "head"}, "include must be a list"),
                               ({"exclude": [3]}, "exclude must be a list"), ({"include": 7}, "include must be a list"),
                               ({"include": ["head", "haed.*"]}, "include pattern 'haed.*' matches no module of the model"),
                               ({"exclude": ["Head"]}, "exclude pattern 'Head' matches no module")):
        with pytest.raises(UsageError, match=message):
            pita.torch.Recorder(model, **selection)
        with pytest.raises(UsageError, match=message):
            record(tmp_path / "r.safetensors", model=model, **selection)
    with pytest.raises(UsageError, match="activations='none' records none"):
        pita.torch.Recorder(model, activations="none", depth=2)
    with pytest.raises(UsageError, match="the model has no submodules"):
        pita.torch.Recorder(nn.Linear(2, 2), include=["x"])
    assert list(tmp_path.iterdir()) == [] and not hooks(model)
