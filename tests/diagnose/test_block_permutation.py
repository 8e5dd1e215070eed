"""Gate and projection blocks of a packed tensor in another order, named by the tensor's name."""

import numpy as np
import pytest

from pita import diagnose
from pita.compare import Tolerance
from pita.diagnose.base import Context

RNG = np.random.default_rng(3)
H = 8  # hidden size: each gate's block holds H rows
GRU_WEIGHT = RNG.standard_normal((3 * H, 5)).astype(np.float32)
LSTM_WEIGHT = RNG.standard_normal((4 * H, H)).astype(np.float32)
IN_PROJ_BIAS = RNG.standard_normal(3 * H).astype(np.float32)


def blocks(values: np.ndarray, order, axis: int = 0) -> np.ndarray:
    """`values` with its equal blocks along `axis` in `order` (candidate block i = block order[i])."""
    return np.concatenate([part for part in (np.split(values, len(order), axis=axis)[i] for i in order)], axis=axis)


def kinds(reference, candidate, name=""):
    return {d.kind: d for d in diagnose.explain(reference, candidate, Tolerance(), Context(), name=name)}


@pytest.mark.parametrize("name", ["param/gru.weight_ih_l0", "step1/gru.weight_hh_l2_reverse", "param/rnn.bias_hh_l0"])
def test_swapped_gru_gates_r_and_z_are_named(name):
    reference = GRU_WEIGHT if "weight" in name else GRU_WEIGHT[:, 0].copy()
    found = kinds(reference, blocks(reference, [1, 0, 2]), name)
    assert list(found) == ["block_permutation"]  # and not again as `permutation` rows
    finding = found["block_permutation"]
    assert finding.params == {"axis": 0, "k": 3, "permutation": [1, 0, 2], "layout": "GRU", "names": ["r", "z", "n"]}
    assert finding.message.startswith("gate blocks r and z swapped (GRU packs r|z|n along axis 0") and finding.residual == 0


def test_swapped_attention_projections_q_and_k_are_named():
    found = kinds(IN_PROJ_BIAS, blocks(IN_PROJ_BIAS, [1, 0, 2]), "param/encoder.layers.0.self_attn.in_proj_bias")
    assert found["block_permutation"].message.startswith("projection blocks q and k swapped (MultiheadAttention packs q|k|v")


def test_lstm_gates_in_another_order_are_named_by_the_four_blocks():
    name = "param/lstm.weight_ih_l0"
    assert kinds(LSTM_WEIGHT, blocks(LSTM_WEIGHT, [1, 0, 2, 3]), name)["block_permutation"].message.startswith("gate blocks i and f swapped")
    halves = kinds(LSTM_WEIGHT, blocks(LSTM_WEIGHT, [2, 3, 0, 1]), name)["block_permutation"]
    assert halves.params["permutation"] == [2, 3, 0, 1] and "gate blocks in the order g|o|i|f (LSTM packs i|f|g|o" in halves.message


def test_without_a_packing_name_the_blocks_are_numbered():
    found = kinds(GRU_WEIGHT, blocks(GRU_WEIGHT, [2, 0, 1]))["block_permutation"]
    assert found.params == {"axis": 0, "k": 3, "permutation": [2, 0, 1], "layout": "", "names": []}
    assert found.message.startswith("blocks in the order 2|0|1 (3 equal blocks along axis 0")


def test_blocks_along_the_last_axis():
    found = kinds(LSTM_WEIGHT, blocks(LSTM_WEIGHT, [1, 0], axis=1), "param/lstm.weight_ih_l0")["block_permutation"]
    assert found.params == {"axis": 1, "k": 2, "permutation": [1, 0], "layout": "", "names": []}


def test_noise_and_a_shuffle_that_is_not_blockwise_are_no_block_permutation():
    noisy = GRU_WEIGHT + np.float32(1e-3) * RNG.standard_normal(GRU_WEIGHT.shape).astype(np.float32)
    assert kinds(GRU_WEIGHT, noisy, "param/gru.weight_ih_l0") == {}
    shuffle = RNG.permutation(3 * H)
    found = kinds(GRU_WEIGHT, GRU_WEIGHT[shuffle], "param/gru.weight_ih_l0")
    assert list(found) == ["permutation"] and found["permutation"].params["rows"] == shuffle.tolist()
    # a block swap with noise on top is no exact reordering
    assert kinds(GRU_WEIGHT, blocks(noisy, [1, 0, 2]), "param/gru.weight_ih_l0") == {}


def test_rows_one_wide_are_a_row_order_not_blocks():
    batch = RNG.standard_normal((4, 6)).astype(np.float32)
    found = kinds(batch, batch[[1, 0, 2, 3]])
    assert list(found) == ["permutation"] and found["permutation"].params["rows"] == [1, 0, 2, 3]
