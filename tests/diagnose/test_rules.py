"""Each rule on cases it must find and cases it must not."""

import numpy as np
import pytest

from pita import diagnose
from pita.compare import Tolerance
from pita.diagnose.base import Context
from pita.dtypes import from_float64, widen

RNG = np.random.default_rng(7)
M = RNG.standard_normal((5, 5)).astype(np.float32)
V = RNG.standard_normal(12).astype(np.float32)

MUST_FIND = {
    "sign": (V, -V, {}),
    "offset": (V, V + np.float32(0.25), {"value": pytest.approx(0.25, abs=1e-6)}),
    "transpose": (M, M.T.copy(), {"axes": [1, 0]}),  # square: the shapes agree
    "permutation": (M, M[[2, 0, 1, 4, 3]], {"rows": [2, 0, 1, 4, 3]}),
    "nan": (V, np.where(np.arange(12) == 5, np.nan, V).astype(np.float32), {"count": 1, "first_index": [5], "side": "candidate"}),
    "rounding": (V, V.astype(np.float16).astype(np.float32), {"level": "float16", "side": "candidate"}),
}


def kinds(reference, candidate):
    return {d.kind: d for d in diagnose.explain(np.asarray(reference), np.asarray(candidate), Tolerance(), Context())}


@pytest.mark.parametrize("kind", sorted(MUST_FIND))
def test_rule_finds_its_case_and_nothing_else_claims_it(kind):
    reference, candidate, params = MUST_FIND[kind]
    found = kinds(reference, candidate)
    assert list(found) == [kind]
    for name, value in params.items():
        assert found[kind].params[name] == value


def test_axis_permutations_of_three_axes_and_shape_conflicts():
    cube = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    assert kinds(cube, np.transpose(cube, (1, 2, 0)))["permutation"].params["axes"] == [1, 2, 0]
    assert kinds(cube, np.swapaxes(cube, 1, 2))["transpose"].params["axes"] == [0, 2, 1]


def test_ulp_noise_is_rounding_not_a_bug():
    found = kinds(V, np.nextafter(V, np.float32(np.inf)))
    assert (found["rounding"].params["level"], found["rounding"].params["ulps"]) == ("ulp", 1)


@pytest.mark.parametrize("seed", range(50))
def test_no_rule_explains_unrelated_random_tensors(seed):
    rng = np.random.default_rng(seed)
    reference = rng.standard_normal((6, 6)).astype(np.float32)
    candidate = rng.standard_normal((6, 6)).astype(np.float32)
    assert kinds(reference, candidate) == {}


def test_near_misses_are_not_explained():
    half_scaled = V.copy()
    half_scaled[:6] *= 2
    assert kinds(V, half_scaled) == {}
    assert "offset" not in kinds(V, V + np.linspace(0, 1, 12, dtype=np.float32))
    nearly_transposed = M.T.copy()
    nearly_transposed[0, 1] += 1
    assert kinds(M, nearly_transposed) == {}
    assert "permutation" not in kinds(M, M[[0, 0, 1, 2, 3]])


def test_symmetric_matrices_are_never_called_transposed():
    symmetric = (M + M.T).astype(np.float32)
    assert "transpose" not in kinds(symmetric, symmetric * 2)


def test_a_tiny_consistent_scale_is_a_scale_not_rounding():
    values = np.linspace(0.5, 1.5, 8, dtype=np.float32)
    found = kinds(values, (values.astype(np.float64) * 0.99996).astype(np.float32))
    assert list(found) == ["scale"] and found["scale"].params["factor"] == pytest.approx(0.99996, rel=1e-6)


def test_a_small_semantic_difference_is_not_called_rounding():
    running_var = np.float32([0.905, 0.905, 0.81, 0.77])
    assert kinds(running_var * np.float32(1.0018), running_var) == {} or "rounding" not in kinds(running_var * np.float32(1.0018), running_var)
    bf16 = widen(from_float64(V, "BF16"))
    assert kinds(V, bf16)["rounding"].params["level"] == "bfloat16"


@pytest.mark.parametrize("low", [0.5, 600.0])
def test_integer_valued_data_is_not_called_float16(low):
    # floor() gives values float16 holds exactly, within float16's relative step of the reference
    # when the values are large; they are still not the reference rounded to nearest float16.
    reference = RNG.uniform(low, 2000.0, 256).astype(np.float32)
    assert "rounding" not in kinds(reference, np.floor(reference))
    assert "rounding" not in kinds(np.floor(reference), reference)


def test_rounding_names_the_side_and_the_format_it_was_rounded_to():
    wide = RNG.standard_normal(64)
    assert kinds(widen(from_float64(wide, "F16")), wide)["rounding"].params == {
        "level": "float16", "side": "reference", "max_rel_diff": pytest.approx(2.0**-11, rel=0.5)}
    found = kinds(wide, wide.astype(np.float32))["rounding"]
    assert (found.params["level"], found.params["side"]) == ("float32", "candidate")


def test_a_few_rounded_elements_are_not_enough_to_name_a_format():
    values = np.float32([1.0001, 2.0, 3.0, 4.0, 5.0])
    assert "rounding" not in kinds(values, widen(from_float64(values, "F16")))


def test_ulp_noise_is_counted_over_the_whole_tensor_in_its_own_dtype():
    values = np.linspace(1, 2, 9, dtype=np.float16)
    found = kinds(values, np.nextafter(values, np.float16(3)))["rounding"]
    assert (found.params["level"], found.params["ulps"]) == ("ulp", 1)
    far = values.copy()
    far[4] = np.float16(far[4] + np.float16(8 * 2**-10 * far[4]))  # 8 float16 ULPs is not noise
    assert "rounding" not in kinds(values, far)
