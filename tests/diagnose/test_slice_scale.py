"""A factor of its own for each row or channel (a LayerNorm's eps, a per-channel weight), told
from one common factor, from noise, and found in a large file from its sample."""

import numpy as np
import pytest

from pita import diagnose
from pita.compare import Tolerance
from pita.diagnose.base import Context

RNG = np.random.default_rng(5)


def kinds(reference, candidate):
    return {d.kind: d for d in diagnose.explain(reference, candidate, Tolerance(), Context())}


def layer_norm(x: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis in float32, weight 1 and bias 0 (BERT's initial values)."""
    mean = x.mean(-1, keepdims=True, dtype=np.float32)
    centred = x - mean
    variance = (centred * centred).mean(-1, keepdims=True, dtype=np.float32)
    return centred / np.sqrt(variance + np.float32(eps))


# [batch, seq, hidden] with small variances, so that eps 1e-5 against 1e-12 moves each token's
# row by its own factor of about 0.99 (the BERT port's 0.9931 to 0.9964)
HIDDEN = (RNG.standard_normal((4, 12, 384)) * RNG.uniform(0.02, 0.04, (4, 12, 1))).astype(np.float32)
CONV = RNG.standard_normal((2, 8, 6, 6)).astype(np.float32)


def test_a_layer_norm_eps_is_a_factor_per_token_constant_along_the_hidden_axis():
    reference, candidate = layer_norm(HIDDEN, 1e-12), layer_norm(HIDDEN, 1e-5)
    found = kinds(reference, candidate)
    assert list(found) == ["slice_scale"]
    params = found["slice_scale"].params
    ratios = (candidate / reference).reshape(48, -1)
    assert params["constant_along"] == [2] and params["slices"] == 48 and params["support"] == HIDDEN.size
    assert params["min_factor"] == pytest.approx(ratios.min(), rel=1e-5) and params["max_factor"] == pytest.approx(ratios.max(), rel=1e-5)
    assert 0.98 < params["min_factor"] < params["median_factor"] < params["max_factor"] < 1
    assert "LayerNorm whose eps differs" in found["slice_scale"].message and found["slice_scale"].residual < 1e-5


@pytest.mark.parametrize("factor_shape, constant_along", [((1, 8, 1, 1), [0, 2, 3]), ((2, 8, 1, 1), [2, 3])])
def test_a_factor_per_channel_or_per_sample_and_channel(factor_shape, constant_along):
    factors = RNG.uniform(0.9, 1.1, factor_shape).astype(np.float32)
    found = kinds(CONV, CONV * factors)
    assert list(found) == ["slice_scale"]
    assert found["slice_scale"].params["constant_along"] == constant_along
    assert found["slice_scale"].params["slices"] == factors.size


def test_one_common_factor_is_a_scale_and_no_slice_scale():
    found = kinds(CONV, CONV * np.float32(1.01))
    assert list(found) == ["scale"]
    # factors that differ by float32 noise alone are one factor too
    assert "slice_scale" not in kinds(layer_norm(HIDDEN, 1e-12), layer_norm(HIDDEN.astype(np.float64), 1e-12).astype(np.float32))


def test_noise_of_the_same_size_is_no_slice_scale():
    reference, candidate = layer_norm(HIDDEN, 1e-12), layer_norm(HIDDEN, 1e-5)
    size = float(np.max(np.abs(candidate / reference - 1)))
    noisy = (reference * (1 - size * RNG.uniform(0, 1, reference.shape))).astype(np.float32)
    assert kinds(reference, noisy) == {}
    # nor a per-row factor with noise well above rounding on top of it
    assert kinds(reference, (candidate * (1 + 1e-4 * RNG.standard_normal(candidate.shape))).astype(np.float32)) == {}


def test_one_row_off_by_a_factor_among_equal_rows_is_a_slice_scale():
    factors = np.ones((4, 12, 1), dtype=np.float32)
    factors[2, 5] = 1.5
    assert kinds(HIDDEN, HIDDEN * factors)["slice_scale"].params["max_factor"] == pytest.approx(1.5)



def test_a_scale_that_explains_the_pair_leaves_no_slice_scale_beside_it():
    # factors 4 and 4.002 per channel: one factor leaves 0.05% of the error, so it is a `scale`
    factors = np.where(np.arange(8) % 2, np.float32(4.002), np.float32(4.0)).reshape(1, 8, 1, 1)
    found = kinds(CONV, CONV * factors)
    assert list(found) == ["scale"] and found["scale"].params["factor"] == pytest.approx(4.001, rel=1e-3)


def test_factors_no_further_from_each_other_than_the_noise_are_one_factor():
    # a row 1000 times larger than the others, every row with noise of 20 ULPs of its own
    # values: one factor leaves more than noise at the tensor's scale, one per row fits, and the
    # factors differ by noise alone
    rows = RNG.standard_normal((64, 128)).astype(np.float32)
    rows[0] *= 1000
    noisy = (rows * (1 + 20 * 2.0**-23 * RNG.uniform(-1, 1, rows.shape))).astype(np.float32)
    assert "slice_scale" not in kinds(rows, noisy)


def test_a_row_factor_below_the_noise_at_the_tensor_scale_is_not_reported():
    # one small row scaled by 1.00002 beside a row 1000 times larger: at the tensor's scale the
    # difference is float32 noise, and one factor explains the pair
    rows = RNG.standard_normal((64, 128)).astype(np.float32)
    rows[0] *= 1000
    factors = np.ones((64, 1), dtype=np.float32)
    factors[1] = 1.00002
    assert "slice_scale" not in kinds(rows, rows * factors)
