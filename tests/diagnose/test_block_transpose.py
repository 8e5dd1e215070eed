"""Square blocks of a packed weight transposed (a GRU's weight_hh split into burn's Linears
without transposing), named by the tensor's name, told from a whole-tensor transpose and noise."""

import numpy as np
import pytest

from pita import diagnose
from pita.compare import Tolerance
from pita.diagnose.base import Context

RNG = np.random.default_rng(7)
H = 8  # hidden size: each gate's block is H × H
GRU_HH = RNG.standard_normal((3 * H, H)).astype(np.float32)
LSTM_HH = RNG.standard_normal((4 * H, H)).astype(np.float32)
IN_PROJ = RNG.standard_normal((3 * H, H)).astype(np.float32)


def packed(values: np.ndarray, order, transposed) -> np.ndarray:
    """Candidate block i = reference block order[i], transposed when i is in `transposed`."""
    parts = np.split(values, len(order))
    return np.concatenate([parts[j].T if i in transposed else parts[j] for i, j in enumerate(order)])


def kinds(reference, candidate, name=""):
    return {d.kind: d for d in diagnose.explain(reference, candidate, Tolerance(), Context(), name=name)}


@pytest.mark.parametrize("name", ["param/gru.weight_hh_l0", "step1/rnn.weight_hh_l1_reverse"])
def test_every_gru_gate_block_transposed_is_named(name):
    found = kinds(GRU_HH, packed(GRU_HH, [0, 1, 2], {0, 1, 2}), name)
    assert list(found) == ["block_transpose"]
    finding = found["block_transpose"]
    assert finding.params == {"axis": 0, "k": 3, "transposed": [0, 1, 2], "permutation": [0, 1, 2], "layout": "GRU", "names": ["r", "z", "n"]}
    assert finding.message.startswith("every gate block transposed (GRU packs r|z|n along axis 0;") and finding.residual == 0


def test_one_gate_block_transposed_is_named_and_its_rows_are_not_said_again():
    found = kinds(GRU_HH, packed(GRU_HH, [0, 1, 2], {2}), "param/gru.weight_hh_l0")
    assert list(found) == ["block_transpose"] and found["block_transpose"].params["transposed"] == [2]
    assert found["block_transpose"].message.startswith("gate block n transposed (GRU packs r|z|n along axis 0")
    # one LSTM block of four: its rows are a quarter of the rows, which alone `rows` would report
    lstm = kinds(LSTM_HH, packed(LSTM_HH, [0, 1, 2, 3], {2}), "param/lstm.weight_hh_l0")
    assert list(lstm) == ["block_transpose"]
    assert lstm["block_transpose"].message.startswith("gate block g transposed (LSTM packs i|f|g|o")


def test_blocks_swapped_and_transposed_are_one_finding():
    found = kinds(LSTM_HH, packed(LSTM_HH, [1, 0, 2, 3], {0, 3}), "param/lstm.weight_hh_l0")["block_transpose"]
    assert (found.params["permutation"], found.params["transposed"]) == ([1, 0, 2, 3], [0, 3])
    assert found.message.startswith("gate blocks i and f swapped, and gate blocks f and o transposed (LSTM packs i|f|g|o")


def test_attention_projections_and_unnamed_blocks():
    found = kinds(IN_PROJ, packed(IN_PROJ, [0, 1, 2], {0}), "param/encoder.layers.0.self_attn.in_proj_weight")
    assert found["block_transpose"].message.startswith("projection block q transposed (MultiheadAttention packs q|k|v")
    halves = RNG.standard_normal((2 * H, H)).astype(np.float32)
    unnamed = kinds(halves, packed(halves, [0, 1], {1}))["block_transpose"]
    assert unnamed.params == {"axis": 0, "k": 2, "transposed": [1], "permutation": [0, 1], "layout": "", "names": []}
    assert unnamed.message.startswith("block 1 transposed (2 equal blocks along axis 0;")


def test_a_whole_square_tensor_transposed_stays_a_transpose():
    square = RNG.standard_normal((H, H)).astype(np.float32)
    assert list(kinds(square, square.T.copy(), "param/gru.weight_hh_l0")) == ["transpose"]


def test_blocks_moved_but_none_transposed_are_a_block_permutation():
    assert list(kinds(GRU_HH, packed(GRU_HH, [1, 0, 2], set()), "param/gru.weight_hh_l0")) == ["block_permutation"]


def test_noise_and_transposed_blocks_with_noise_are_no_block_transpose():
    noise = np.float32(1e-3) * RNG.standard_normal(GRU_HH.shape).astype(np.float32)
    assert kinds(GRU_HH, GRU_HH + noise, "param/gru.weight_hh_l0") == {}
    assert kinds(GRU_HH, packed(GRU_HH, [0, 1, 2], {0, 1, 2}) + noise, "param/gru.weight_hh_l0") == {}
    # blocks that are not square are never transposed in place
    wide = RNG.standard_normal((3 * H, H + 1)).astype(np.float32)
    assert "block_transpose" not in kinds(wide, wide[::-1].copy(), "param/gru.weight_ih_l0")


def test_a_block_equal_to_its_transpose_counts_as_not_transposed():
    symmetric = GRU_HH.copy()
    symmetric[:H] = symmetric[:H] + symmetric[:H].T
    found = kinds(symmetric, packed(symmetric, [0, 1, 2], {0, 1, 2}), "param/gru.weight_hh_l0")["block_transpose"]
    assert found.params["transposed"] == [1, 2] and found.message.startswith("gate blocks z and n transposed")


def test_a_block_copied_twice_is_no_block_transpose():
    parts = np.split(GRU_HH, 3)
    twice = np.concatenate([parts[1], parts[1].T, parts[2]])  # block r lost, z in twice
    assert "block_transpose" not in kinds(GRU_HH, twice, "param/gru.weight_hh_l0")
