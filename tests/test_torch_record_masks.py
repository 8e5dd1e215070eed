"""pita.torch: dropout keep-masks recorded as `mask<k>/<module>[#n]` in every step, and replayed."""

import warnings

import numpy as np
import pytest

from pita.dump import read_dump
from pita.errors import UsageError

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import pita.torch  # noqa: E402
import pita.torch_masks  # noqa: E402

BATCH, WIDTH, CLASSES = 4, 8, 3
P_FIRST, P_SECOND, P_MODULE = 0.3, 0.2, 0.5
DROPOUT = F.dropout  # torch's own, as the recorder must leave it
MASKS = {f"mask{k}/{name}" for k in (1, 2) for name in ("block", "block#2", "drop")}


class Block(nn.Module):
    """A Linear, then functional dropout twice: the masks of one module's two calls (`#2`)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        x = F.dropout(self.fc(x), P_FIRST, self.training)
        return F.dropout(x, P_SECOND, self.training)


class Dropper(nn.Module):
    """Block → nn.Dropout → Linear."""

    def __init__(self):
        super().__init__()
        self.block = Block()
        self.drop = nn.Dropout(P_MODULE)
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, x):
        return self.head(self.drop(self.block(x)))


def dropper(seed=0) -> Dropper:
    torch.manual_seed(seed)
    return Dropper()


def batch():
    generator = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, WIDTH, generator=generator), torch.randint(0, CLASSES, (BATCH,), generator=generator)


def record(path, model=None, seed=0, steps=2, **options):
    """Two SGD steps of Dropper (built with `seed`), the generator seeded with `seed` + 100 first."""
    model = model or dropper(seed)
    inputs, targets = batch()
    torch.manual_seed(seed + 100)
    options.setdefault("float64", False)
    return read_dump(pita.torch.record(model, inputs, targets, nn.CrossEntropyLoss(), path,
                                       torch.optim.SGD(model.parameters(), lr=0.5), steps, **options))


def values(dump, name) -> np.ndarray:
    return np.asarray(dump.tensors[name])


def test_every_dropout_call_of_every_step_records_its_mask_by_its_innermost_module(tmp_path):
    dump = record(tmp_path / "r.safetensors")
    masks = {name for name in dump.tensors if name.startswith("mask")}
    assert masks == MASKS
    for name in masks:
        assert values(dump, name).dtype == np.bool_ and values(dump, name).shape == (BATCH, WIDTH), name
    assert not np.array_equal(values(dump, "mask1/drop"), values(dump, "mask2/drop"))  # each step draws its own
    kept = np.mean([values(dump, name).mean() for name in masks if "drop" in name])
    assert 0.2 < kept < 0.8  # p = 0.5 keeps about half
    assert "masks_replayed" not in dump.metadata and "act/drop" in dump.tensors


def test_a_recorded_mask_reproduces_the_real_output_bit_for_bit_and_leaves_the_run_as_it_was():
    model, (inputs, _) = dropper(), batch()
    torch.manual_seed(7)
    with pita.torch.Recorder(model) as recorder:
        output = model(inputs)
        after = torch.rand(3)  # the generator is where the real calls left it
    torch.manual_seed(7)
    assert torch.equal(model(inputs), output) and torch.equal(torch.rand(3), after)  # the same run without a recorder
    block, dropped, mask = recorder.tensors["act/block"], recorder.tensors["act/drop"], recorder.tensors["mask1/drop"]
    assert torch.equal(dropped, block * (mask.to(block.dtype) / (1 - P_MODULE)))
    assert not torch.equal(dropped, block * (recorder.tensors["mask1/block"].to(block.dtype) / (1 - P_MODULE)))  # another mask does not


def test_masks_drawn_after_loss_k_belong_to_step_k_plus_1():
    model, (inputs, _) = dropper(), batch()
    with pita.torch.Recorder(model) as recorder:
        for k in (1, 2, 3):  # no optimizer step: the loss alone moves the step on
            recorder.loss(k, model(inputs).sum())
    assert set(recorder.masks()) == {f"mask{k}/{name}" for k in (1, 2, 3) for name in ("block", "block#2", "drop")}


def test_no_mask_without_randomness():
    model, (inputs, _) = dropper(), batch()
    model.eval()
    with pita.torch.Recorder(model) as recorder:
        model(inputs)
    assert not recorder.masks()
    model.train()
    model.drop.p = 0.0
    with pita.torch.Recorder(model) as recorder:
        model(inputs)
    assert set(recorder.masks()) == {"mask1/block", "mask1/block#2"}  # the negative control: the functional ones still draw


def record_with_replay(path, masks_from, seed=3, steps=2):
    """Dropper's two SGD steps through a Recorder replaying `masks_from`, the generator seeded
    otherwise than the reference's, so that only the replay can align them."""
    model, (inputs, targets) = dropper(), batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    torch.manual_seed(seed + 100)
    with pita.torch.Recorder(model, masks_from=masks_from) as recorder:
        recorder.params()
        for k in range(1, steps + 1):
            model.zero_grad(set_to_none=True)
            loss = nn.CrossEntropyLoss()(model(inputs), targets)
            recorder.loss(k, loss)
            loss.backward()
            if k == 1:
                recorder.grads()
            optimizer.step()
            recorder.step(k, optimizer)
    return read_dump(recorder.write(path))


@pytest.mark.parametrize("source", ["path", "dump", "mapping"])
def test_replayed_masks_make_a_run_with_another_seed_the_same(tmp_path, source):
    reference = record(tmp_path / "reference.safetensors")
    masks_from = {"path": tmp_path / "reference.safetensors", "dump": reference, "mapping": reference.tensors}[source]
    replayed = record_with_replay(tmp_path / "replayed.safetensors", masks_from)
    assert replayed.tensors.keys() == reference.tensors.keys()
    for name in reference.tensors:
        assert np.array_equal(values(replayed, name), values(reference, name)), name
    assert replayed.metadata["masks_replayed"] == str(len(MASKS))


def test_without_replay_another_seed_draws_other_masks(tmp_path):
    reference = record(tmp_path / "reference.safetensors")
    other = record(tmp_path / "other.safetensors", seed=1, model=dropper(0))
    assert not np.array_equal(values(other, "mask1/drop"), values(reference, "mask1/drop"))
    assert not np.array_equal(values(other, "act/drop"), values(reference, "act/drop"))
    assert np.array_equal(values(other, "act/block.fc"), values(reference, "act/block.fc"))  # before any dropout: the same


def test_replay_arithmetic_is_pytorchs_in_the_inputs_dtype():
    model, (inputs, _) = dropper().double(), batch()
    mask = torch.rand(BATCH, WIDTH, generator=torch.Generator().manual_seed(2)) < 0.5
    masks = {"mask1/block": mask, "mask1/block#2": ~mask, "mask1/drop": mask}
    with pita.torch.Recorder(model, masks_from=masks) as recorder:
        model(inputs.double())
    block = recorder.tensors["act/block"]
    assert block.dtype == torch.float64
    assert torch.equal(recorder.tensors["act/drop"], block * (mask.double() / (1 - P_MODULE)))
    assert recorder.dropouts.replayed == 3 and torch.equal(recorder.tensors["mask1/block#2"], ~mask)


def test_replay_refuses_a_missing_mask_or_another_shape_by_its_name(tmp_path):
    one_step = record(tmp_path / "one.safetensors", steps=1)
    with pytest.raises(UsageError, match="^mask2/block: the masks replayed .* hold no such mask"):
        record_with_replay(tmp_path / "r.safetensors", one_step)
    wide = {name: torch.ones(BATCH + 1, WIDTH, dtype=torch.bool) for name in MASKS}
    with pytest.raises(UsageError, match=r"^mask1/block: the mask replayed has shape \[5, 8\], the dropout's input \[4, 8\]"):
        record_with_replay(tmp_path / "r.safetensors", wide)
    assert not (tmp_path / "r.safetensors").exists() and F.dropout is DROPOUT


def test_masks_from_that_holds_no_usable_mask_is_refused(tmp_path):
    model = dropper()
    with pytest.raises(UsageError, match="holds no mask<k>/ tensor"):
        pita.torch.Recorder(model, masks_from={"act/drop": torch.ones(2)})
    with pytest.raises(UsageError, match="mask1/drop is float32; a keep-mask is BOOL"):
        pita.torch.Recorder(model, masks_from={"mask1/drop": torch.ones(BATCH, WIDTH)})
    with pytest.raises(UsageError, match="masks_from must be a recording"):
        pita.torch.Recorder(model, masks_from=3)
    with pytest.raises(UsageError):
        pita.torch.Recorder(model, masks_from=tmp_path / "absent.safetensors")


class Direct(nn.Module):
    """Dropout in the model's own forward: no module path names its mask."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(WIDTH, CLASSES)

    def forward(self, x):
        return self.fc(F.dropout(x, 0.5, self.training))


def test_a_dropout_outside_every_submodule_is_not_recorded_and_says_so():
    model, (inputs, _) = Direct(), batch()
    with pytest.warns(UserWarning, match="outside every submodule") as caught, pita.torch.Recorder(model) as recorder:
        model(inputs)
        model(inputs)
    assert not recorder.masks() and recorder.dropouts.unrecorded == 2
    assert caught[0].filename == __file__  # the model's forward, not pita's hook


def test_a_mask_the_dropout_output_does_not_reproduce_is_not_recorded_and_says_so(monkeypatch):
    """As CUDA's fused kernel: the mask drawn again does not give the output. Simulated by
    drawing it again from where the call left the generator (a pita helper patched; torch is not)."""
    monkeypatch.setattr(pita.torch_masks, "_set_rng_states", lambda torch, tensor, states: None)
    model, (inputs, _) = dropper(), batch()
    with pytest.warns(UserWarning, match=r"^mask1/block: the dropout in block does not compute input \* mask"), \
            pita.torch.Recorder(model) as recorder:
        model(inputs)
    assert not recorder.masks() and recorder.dropouts.unrecorded == 3


class Attending(nn.Module):
    def __init__(self, dropout_p):
        super().__init__()
        self.dropout_p = dropout_p
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        q = self.fc(x).reshape(1, 1, BATCH, WIDTH)
        return F.scaled_dot_product_attention(q, q, q, dropout_p=self.dropout_p)


def test_attention_that_draws_inside_its_kernel_is_warned_about():
    inputs = batch()[0]
    model = nn.Sequential(Attending(0.1))
    with pytest.warns(UserWarning, match=r"scaled_dot_product_attention with dropout_p=0.1 in 0 .*attn_implementation=\"eager\""), \
            pita.torch.Recorder(model):
        model(inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the negative control: no dropout, no warning
        with pita.torch.Recorder(nn.Sequential(Attending(0.0))) as recorder:
            recorder.model(inputs)


def test_one_recorder_records_at_a_time():
    model, (inputs, _) = dropper(), batch()
    with pita.torch.Recorder(model) as recorder:
        with pytest.raises(UsageError, match="another pita.torch.Recorder is recording"):
            pita.torch.Recorder(dropper()).__enter__()
        model(inputs)
    assert set(recorder.masks()) == {"mask1/block", "mask1/block#2", "mask1/drop"}  # the first one kept recording
    assert not [hook for m in model.modules() for hook in (*m._forward_hooks.values(), *m._forward_pre_hooks.values())]
    with pita.torch.Recorder(model):  # and a later one can
        pass


def test_a_module_that_raises_leaves_no_module_executing():
    model, (inputs, _) = dropper(), batch()

    class Fails(nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    model.head = nn.Sequential(Fails())
    with pita.torch.Recorder(model) as recorder:
        with pytest.raises(RuntimeError, match="boom"):
            model(inputs)
        with pytest.warns(UserWarning, match="outside every submodule"):
            F.dropout(inputs, 0.5)  # not in head.0, which raised
    assert set(recorder.masks()) == {"mask1/block", "mask1/block#2", "mask1/drop"} and recorder.dropouts.unrecorded == 1


def test_a_transformers_gpt2_with_eager_attention_records_and_replays_its_attention_dropout():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=20, n_positions=8, bos_token_id=0, eos_token_id=0,
                                     attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).train()
    ids = torch.randint(0, 20, (2, 5), generator=torch.Generator().manual_seed(4))

    def logits(seed, masks_from=None):
        torch.manual_seed(seed)
        with pita.torch.Recorder(model, masks_from=masks_from) as recorder:
            output = model(ids).logits
        return output, recorder

    reference, recorder = logits(1)
    assert {"mask1/transformer.h.0.attn", "mask1/transformer.drop", "mask1/transformer.h.0.mlp.dropout"} <= set(recorder.masks())
    replayed, _ = logits(2, recorder.masks())
    assert torch.equal(replayed, reference)
    assert not torch.equal(logits(2)[0], reference)  # the negative control


class SelfAttention(nn.Module):
    def __init__(self, need_weights):
        super().__init__()
        self.need_weights = need_weights
        self.attn = nn.MultiheadAttention(WIDTH, 2, dropout=0.2, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=self.need_weights)[0]


def test_multihead_attention_records_its_attention_dropout_when_it_computes_the_weights():
    torch.manual_seed(0)
    model, inputs = SelfAttention(need_weights=True), torch.randn(2, 3, WIDTH)
    with pita.torch.Recorder(model) as recorder:
        model(inputs)
    assert set(recorder.masks()) == {"mask1/attn"} and recorder.masks()["mask1/attn"].shape == (2 * 2, 3, 3)  # the weights: [batch × heads, T, T]
    model.need_weights = False  # the fused path: scaled_dot_product_attention draws the mask
    with pytest.warns(UserWarning, match="scaled_dot_product_attention with dropout_p=0.2 in attn"), pita.torch.Recorder(model) as recorder:
        model(inputs)
    assert not recorder.masks()
