"""[[split]] in a rules file: a packed tensor on one side compared block by block with several
tensors on the other (PyTorch's GRU gates r|z|n in `weight_ih_l0` against a port's per-gate
Linears), in every phase, streamed from the file where the blocks allow it."""

import numpy as np
import pytest

from conftest import f32, pita
from pita.compare import compare_dumps
from pita.dump import Dump, read_dump, write_dump
from pita.errors import UsageError
from pita.filetensor import FileTensor
from pita.rules import MAX_SPLIT_READ_BYTES, Rules, Split, load_rules, mapping_kind

RNG = np.random.default_rng(7)
GATES = ("r", "z", "n")


def rules(tmp_path, text):
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return load_rules(path)


def gru_pair(hidden=4, width=3, swap=False):
    """A reference recording with PyTorch's packed GRU weights (rows r|z|n) in four phases, and a
    candidate holding each gate's block under its own name (`swap`: the r and z blocks exchanged,
    a port that loaded the gates in the wrong order)."""
    reference, candidate = {}, {}
    for phase in ("param/", "grad/", "step1/", "step2/"):
        packed = RNG.standard_normal((3 * hidden, width)).astype(np.float32)
        reference[f"{phase}gru.weight_ih_l0"] = packed
        blocks = np.split(packed, 3)
        if swap:
            blocks[0], blocks[1] = blocks[1], blocks[0]
        candidate.update({f"{phase}gru.{gate}.weight": block.copy() for gate, block in zip(GATES, blocks, strict=True)})
    state = RNG.standard_normal((3 * hidden, width)).astype(np.float32)
    reference["optim1/gru.weight_ih_l0/exp_avg"] = state
    candidate.update({f"optim1/gru.{gate}.weight/exp_avg": block.copy() for gate, block in zip(GATES, np.split(state, 3), strict=True)})
    return Dump(reference), Dump(candidate)


GRU_SPLIT = """
[[split]]
reference = "param/gru.weight_ih_l0"
candidate = ["param/gru.r.weight", "param/gru.z.weight", "param/gru.n.weight"]
axis = 0
"""


def test_a_split_pairs_a_packed_tensor_with_one_tensor_per_block_in_every_phase(tmp_path):
    reference, candidate = gru_pair()
    assert not compare_dumps(reference, candidate).ok
    result = compare_dumps(reference, candidate, rules=rules(tmp_path, GRU_SPLIT))
    assert result.ok and not result.missing and not result.extra
    assert {t.name for t in result.tensors} == set(candidate.tensors)  # each block is reported under its candidate name
    assert len(result.mappings) == 5 and all(mapping_kind(m) == "split" for m in result.mappings)
    assert ("reference optim1/gru.weight_ih_l0/exp_avg [12, 3] split along axis 0 into optim1/gru.r.weight/exp_avg, "
            "optim1/gru.z.weight/exp_avg, optim1/gru.n.weight/exp_avg ([[split]] #1)") in result.mappings


def test_swapped_gate_blocks_mismatch_under_the_gates_names(tmp_path):
    result = compare_dumps(*gru_pair(swap=True), rules=rules(tmp_path, GRU_SPLIT))
    failing = sorted({t.name.split("/")[-1] if t.name.startswith("optim") else t.name.split("/", 1)[1] for t in result.tensors if not t.ok})
    assert not result.ok and failing == ["gru.r.weight", "gru.z.weight"]


def test_the_regex_form_applies_to_every_layer_and_both_packed_weights(tmp_path):
    reference, candidate = {}, {}
    for layer in range(2):
        for side in ("ih", "hh"):
            packed = RNG.standard_normal((6, 2)).astype(np.float32)
            reference[f"param/gru.weight_{side}_l{layer}"] = packed
            candidate.update({f"param/gru.l{layer}.{gate}.{side}": b.copy() for gate, b in zip(GATES, np.split(packed, 3), strict=True)})
    mapped = rules(tmp_path, """
[[split]]
reference = '^param/gru\\.weight_(ih|hh)_l(\\d+)$'
candidate = ['param/gru.l\\2.r.\\1', 'param/gru.l\\2.z.\\1', 'param/gru.l\\2.n.\\1']
regex = true
""")
    result = compare_dumps(Dump(reference), Dump(candidate), rules=mapped)
    assert result.ok and len(result.tensors) == 12 and len(result.mappings) == 4


def test_the_candidate_may_be_the_packed_side_with_unequal_blocks_along_another_axis(tmp_path):
    fused = RNG.standard_normal((2, 7)).astype(np.float32)  # [in, q|k|v] with a narrower k and v (grouped-query attention)
    reference = Dump({"param/attn.q": fused[:, :3].copy(), "param/attn.k": fused[:, 3:5].copy(), "param/attn.v": fused[:, 5:].copy()})
    candidate = Dump({"param/attn.qkv": fused})
    split = """
[[split]]
candidate = "param/attn.qkv"
reference = ["param/attn.q", "param/attn.k", "param/attn.v"]
axis = -1
sizes = [3, 2, 2]
"""
    assert compare_dumps(reference, candidate, rules=rules(tmp_path, split)).ok
    wrong_sizes = split.replace("[3, 2, 2]", "[2, 3, 2]")
    assert not compare_dumps(reference, candidate, rules=rules(tmp_path, wrong_sizes)).ok  # shape conflicts


def test_blocks_of_a_tensor_left_in_its_file_stay_in_the_file(tmp_path):
    packed = RNG.standard_normal((3 * 256, 384)).astype(np.float32)  # 1.2 MB: read lazily
    write_dump(Dump({"param/gru.weight_ih_l0": packed}), tmp_path / "reference.safetensors")
    write_dump(Dump({f"param/gru.{g}.weight": b.copy() for g, b in zip(GATES, np.split(packed, 3), strict=True)}),
               tmp_path / "candidate.safetensors")
    reference = read_dump(tmp_path / "reference.safetensors")
    assert isinstance(reference.tensors["param/gru.weight_ih_l0"], FileTensor)
    blocks, _ = rules(tmp_path, GRU_SPLIT).apply(reference.tensors, "reference")
    assert all(isinstance(block, FileTensor) and block.shape == (256, 384) for block in blocks.values())
    assert np.array_equal(np.asarray(blocks["param/gru.n.weight"]), packed[512:])
    proc = pita("compare", tmp_path / "reference.safetensors", tmp_path / "candidate.safetensors", "--rules", tmp_path / "rules.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "split along axis 0" in proc.stdout


def test_a_split_along_a_later_axis_reads_the_tensor_and_is_bounded(tmp_path, monkeypatch):
    packed = RNG.standard_normal((384, 3 * 256)).astype(np.float32)
    write_dump(Dump({"param/w": packed}), tmp_path / "reference.safetensors")
    lazy = read_dump(tmp_path / "reference.safetensors").tensors
    split = Rules(splits=[Split("reference", "param/w", ("param/a", "param/b", "param/c"), axis=1)])
    blocks, _ = split.apply(lazy, "reference")
    assert np.array_equal(np.asarray(blocks["param/b"]), packed[:, 256:512])
    monkeypatch.setattr("pita.rules.MAX_SPLIT_READ_BYTES", packed.nbytes - 1)
    with pytest.raises(UsageError, match="would read all 1179648 bytes into memory"):
        split.apply(lazy, "reference")
    assert MAX_SPLIT_READ_BYTES >= 1 << 28


def test_names_after_gives_a_split_activations_blocks_in_order(tmp_path):
    mapped = rules(tmp_path, "[[rename]]\nside = 'reference'\npattern = '^act/rnn$'\nreplace = 'act/gru'\n"
                             "[[split]]\nreference = 'act/gru'\ncandidate = ['act/gru.a', 'act/gru.b']\naxis = 1\n")
    assert mapped.names_after(["act/rnn", "act/head"], "reference") == {"act/rnn": ["act/gru.a", "act/gru.b"], "act/head": ["act/head"]}
    assert mapped.names_after(["act/rnn"], "candidate") == {"act/rnn": ["act/rnn"]}


@pytest.mark.parametrize("tensors, says", [
    ({"param/gru.weight_ih_l0": f32(np.ones((4, 2)))}, "does not split into 3 equal blocks"),
    ({"param/gru.weight_ih_l0": f32(np.ones(3)), "param/gru.r.weight": f32([1])}, "names another reference tensor"),
    ({"param/other": f32([1])}, "has no tensor 'param/gru.weight_ih_l0' \\(nor the same parameter under grad/"),
    ({"param/gru.weight_ih_l0": np.float32(1.0)}, "has no axis 0"),
])
def test_a_split_that_does_not_fit_the_tensors_is_refused_with_one_line(tmp_path, tensors, says):
    with pytest.raises(UsageError, match=says) as error:
        rules(tmp_path, GRU_SPLIT).apply(tensors, "reference")
    assert "[[split]] #1" in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("text, says", [
    ("[[split]]\nreference = 'w'\ncandidate = 'v'\n", "one a name"),
    ("[[split]]\nreference = ['w']\ncandidate = ['v', 'u']\n", "one a name"),
    ("[[split]]\nreference = 'w'\n", "one a name"),
    ("[[split]]\nreference = 'w'\ncandidate = ['v']\n", "list of 2 to 64 names"),
    ("[[split]]\nreference = 'w'\ncandidate = ['v', 1]\n", "list of 2 to 64 names"),
    ("[[split]]\nreference = 'w'\ncandidate = ['v', 'v']\n", "must all differ"),
    ("[[split]]\nreference = 'w'\ncandidate = ['w', 'v']\n", "must all differ"),
    ("[[split]]\nreference = 'w'\ncandidate = ['v', \"u\\n\"]\n", "printed on one line"),
    ("[[split]]\nreference = 'param/w'\ncandidate = ['param/v', 'v']\n", "blocks must be named param/"),
    ("[[split]]\nreference = 'w'\ncandidate = ['v', 'u']\naxis = 1.0\n", "axis must be an integer"),
    ("[[split]]\nreference = 'w'\ncandidate = ['v', 'u']\nsizes = [1]\n", "sizes must be a list of 2 positive integers"),
    ("[[split]]\nreference = 'w'\ncandidate = ['v', 'u']\nsizes = [1, 0]\n", "sizes must be"),
    ("[[split]]\nreference = 'w'\ncandidate = ['v', 'u']\nregex = 'yes'\n", "regex must be true or false"),
    ("[[split]]\nreference = '('\ncandidate = ['v', 'u']\nregex = true\n", "missing \\)"),
    ("[[split]]\nreference = 'w'\ncandidate = ['\\2', 'u']\nregex = true\n", "invalid group reference"),
    ("[[split]]\nreference = '^(a+)+$'\ncandidate = ['v', 'u']\nregex = true\n", "ways to match"),
    ("[[split]]\nreference = 'w'\ncandidate = ['v', 'u']\nflags = 1\n", "unknown key"),
    ("split = 1\n", "array of tables"),
])
def test_bad_splits_are_refused_with_one_line_naming_the_file(tmp_path, text, says):
    with pytest.raises(UsageError, match=says) as error:
        rules(tmp_path, text)
    assert str(tmp_path / "rules.toml") in str(error.value) and "\n" not in str(error.value)


def test_a_regex_split_must_name_a_parameters_blocks_as_parameters(tmp_path):
    loose = rules(tmp_path, "[[split]]\nreference = '^param/w$'\ncandidate = ['a', 'b']\nregex = true\n")
    with pytest.raises(UsageError, match="blocks must be named param/"):
        loose.apply({"grad/w": f32([1, 2])}, "reference")
    assert loose.apply({"act/w": f32([1, 2])}, "reference")[0].keys() == {"act/w"}  # a regex that matches nothing is no error


def test_a_real_pytorch_gru_against_a_port_with_one_linear_per_gate(tmp_path):
    """PyTorch's nn.GRU against a hand-written GRU with a Linear per gate and side, as burn's Gru
    is built, both recorded by pita.torch.record (two Adam steps, the optimizer's state): the
    [[split]] pairs every phase, and a port that loads the r and z gates swapped is caught at the
    gates' own parameters."""
    torch = pytest.importorskip("torch")
    import pita.torch
    from pita.trace import render_trace_text, trace_dumps

    nn = torch.nn
    width, hidden = 3, 4

    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_transform, self.hidden_transform = nn.Linear(width, hidden), nn.Linear(hidden, hidden)

    class PortGru(nn.Module):
        def __init__(self):
            super().__init__()
            self.reset_gate, self.update_gate, self.new_gate = Gate(), Gate(), Gate()

        def forward(self, x):
            h, outputs = x.new_zeros(x.shape[0], hidden), []
            for t in range(x.shape[1]):
                r = torch.sigmoid(self.reset_gate.input_transform(x[:, t]) + self.reset_gate.hidden_transform(h))
                z = torch.sigmoid(self.update_gate.input_transform(x[:, t]) + self.update_gate.hidden_transform(h))
                n = torch.tanh(self.new_gate.input_transform(x[:, t]) + r * self.new_gate.hidden_transform(h))
                h = (1 - z) * n + z * h
                outputs.append(h)
            return torch.stack(outputs, 1), h[None]

    class Model(nn.Module):
        def __init__(self, gru):
            super().__init__()
            self.gru, self.head = gru, nn.Linear(hidden, 2)

        def forward(self, x):
            return self.head(self.gru(x)[0][:, -1])

    torch.manual_seed(0)
    reference_model = Model(nn.GRU(width, hidden, batch_first=True)).double()
    x, y = torch.randn(5, 6, width, dtype=torch.float64), torch.randn(5, 2, dtype=torch.float64)

    def port(order):
        model = Model(PortGru()).double()
        with torch.no_grad():
            model.head.load_state_dict(reference_model.head.state_dict())
            for side, transform in (("ih", "input_transform"), ("hh", "hidden_transform")):
                weights = getattr(reference_model.gru, f"weight_{side}_l0").chunk(3)
                biases = getattr(reference_model.gru, f"bias_{side}_l0").chunk(3)
                for gate, block in zip(order, range(3), strict=True):
                    linear = getattr(getattr(model.gru, f"{gate}_gate"), transform)
                    linear.weight.copy_(weights[block])
                    linear.bias.copy_(biases[block])
        return model

    def recorded(model, name):
        path = tmp_path / f"{name}.safetensors"
        pita.torch.record(model, x, y, nn.functional.mse_loss, path, lambda p: torch.optim.Adam(p, lr=0.01), steps=2,
                          float64=False, optimizer_state=True, depth=1)
        return read_dump(path)

    correct_port, swapped_port, unsplit_port = port(("reset", "update", "new")), port(("update", "reset", "new")), port(("reset", "update", "new"))
    reference = recorded(reference_model, "reference")  # trains reference_model: the ports copied its initial weights before
    split = rules(tmp_path, "".join(f"""
[[split]]
reference = '^param/gru\\.(weight|bias)_{side}_l0$'
candidate = ['param/gru.reset_gate.{transform}.\\1', 'param/gru.update_gate.{transform}.\\1', 'param/gru.new_gate.{transform}.\\1']
regex = true
""" for side, transform in (("ih", "input_transform"), ("hh", "hidden_transform"))))
    correct = trace_dumps(reference, recorded(correct_port, "port"), rules=split)
    assert correct.ok, render_trace_text(correct)
    assert {p.phase: p.compared for p in correct.phases} == {"parameters": 14, "forward": 2, "loss": 1, "backward": 14, "step": 85}
    swapped = trace_dumps(reference, recorded(swapped_port, "swapped"), rules=split).to_dict()
    assert not swapped["ok"] and swapped["first_divergence"]["name"].startswith(("param/gru.reset_gate", "param/gru.update_gate"))
    assert not trace_dumps(reference, recorded(unsplit_port, "unsplit")).ok  # without the split nothing pairs


def test_every_rules_file_example_in_the_docs_loads(tmp_path, root):
    """docs/rules.md's TOML blocks are rules files pita accepts; its first block applies to the tensors it names."""
    text = (root / "docs" / "rules.md").read_text()
    blocks = [block.split("```", 1)[0] for block in text.split("```toml\n")[1:]]
    assert len(blocks) >= 4
    loaded = [rules(tmp_path, block) for block in blocks]
    first = loaded[0]
    assert [len(first.renames), len(first.splits), len(first.transposes), len(first.tolerances)] == [1, 1, 1, 1]
    packed = f32(np.arange(12).reshape(6, 2))
    _, mappings = first.apply({"param/gru.weight_ih_l0": packed, "grad/gru.weight_ih_l0": packed}, "reference")
    assert len(mappings) == 2
