"""Rounding noise measured at the tensor's scale: an element near zero counts thousands of its
own ULPs for an error of a few at the tensor's RMS."""

import numpy as np

from pita import diagnose
from pita.compare import Tolerance
from pita.diagnose import rounding
from pita.diagnose.base import Context, Pair
from pita.diagnose.rounding import WIDE_NOISE_ULPS

RNG = np.random.default_rng(9)


def kinds(reference, candidate):
    return {d.kind: d for d in diagnose.explain(reference, candidate, Tolerance(), Context())}


def layer_norm(x: np.ndarray, sequential: bool) -> np.ndarray:
    """LayerNorm over the last axis in float32, its sums taken pairwise (numpy's) or one element
    after another (another framework's loop): the same function, rounded differently."""
    total = (lambda v: np.cumsum(v, axis=-1, dtype=np.float32)[..., -1:]) if sequential else (lambda v: v.sum(-1, keepdims=True, dtype=np.float32))
    n = np.float32(x.shape[-1])
    centred = x - total(x) / n
    return centred / np.sqrt(total(centred * centred) / n + np.float32(1e-12))


# rows of mean 3 and deviation 1: x - mean cancels, and the outputs near zero carry an error of
# the rows' size
ROWS = (RNG.standard_normal((16, 384)) + 3).astype(np.float32)
REFERENCE, CANDIDATE = layer_norm(ROWS, sequential=False), layer_norm(ROWS, sequential=True)


def test_noise_at_an_element_near_zero_is_rounding_at_the_tensor_scale():
    found = kinds(REFERENCE, CANDIDATE)
    assert list(found) == ["rounding"]
    params = found["rounding"].params
    assert params["level"] == "ulp" and params["ulps"] > 1000  # of the element's own value
    assert params["ulps_at_rms"] <= WIDE_NOISE_ULPS and abs(params["rms"] - 1) < 1e-3
    assert "ULPs at the tensor's scale (RMS 1)" in found["rounding"].message


def test_a_relative_error_of_a_thousandth_is_no_rounding():
    bug = (REFERENCE * (1 + 1e-3 * RNG.uniform(-1, 1, REFERENCE.shape))).astype(np.float32)
    assert "rounding" not in kinds(REFERENCE, bug)
    near_zero = int(np.argmin(np.abs(REFERENCE)))
    one_element = REFERENCE.copy()
    one_element.flat[near_zero] += np.float32(1e-3)  # about 8,400 ULPs at the tensor's scale
    assert kinds(REFERENCE, one_element) == {}


def test_subnormal_values_whose_scale_has_no_ulp_are_counted_per_element():
    tiny = np.float64([5e-324, 1e-322, 1.5e-323, 4e-323])  # ε × RMS underflows to 0
    found = rounding.detect(Pair(tiny, np.nextafter(tiny, 1.0), Tolerance(atol=0), Context()))
    assert found.params["ulps"] == 1 and found.params["ulps_at_rms"] == float("inf")
