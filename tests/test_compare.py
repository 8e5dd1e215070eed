import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pita.compare import Tolerance, compare_dumps
from pita.dump import Dump
from pita.errors import UsageError

from conftest import f32

arrays = hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                    elements=st.floats(-1e6, 1e6, width=32, allow_subnormal=False))


def compare(reference, candidate, tolerance=Tolerance(), ref_meta=None, cand_meta=None):
    return compare_dumps(Dump({"t": reference}, ref_meta or {}), Dump({"t": candidate}, cand_meta or {}), tolerance)


@settings(max_examples=60, deadline=None)
@given(values=arrays)
def test_a_tensor_compared_with_itself_is_ok(values):
    result = compare(values, values.copy())
    assert result.ok and result.worst == 0.0
    assert result.tensors[0].max_ulp == 0 and not result.tensors[0].diagnosis


@settings(max_examples=60, deadline=None)
@given(values=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=5),
                         elements=st.floats(-1e6, 1e6, width=32, allow_subnormal=False)), factor=st.sampled_from([2.0, 4.0, 8.0, 0.25, 0.5, 3.0, -2.0]))
def test_a_scaled_copy_is_diagnosed_with_its_factor(values, factor):
    mags = np.abs(values)
    values = np.where(mags < 1e-3, np.float32(1.0), values).astype(np.float32)  # scale must be visible
    scaled = (values.astype(np.float64) * factor).astype(np.float32)
    result = compare(values, scaled)
    assert not result.ok
    [diagnosis] = [d for d in result.tensors[0].diagnosis if d.kind == "scale"]
    assert diagnosis.params["factor"] == pytest.approx(factor, rel=1e-5)


def test_tolerance_formula_uses_the_reference_magnitude():
    reference, candidate = f32([100.0, 1.0]), f32([100.5, 1.5])
    assert not compare(reference, candidate, Tolerance(atol=0.1, rtol=0.01)).ok  # 1.5 - 1 > 0.1 + 0.01
    assert compare(reference, candidate, Tolerance(atol=0.5, rtol=0.0)).ok
    assert compare(reference[:1], candidate[:1], Tolerance(atol=0.0, rtol=0.005)).ok


def test_nan_never_passes_unless_asked_and_inf_only_against_itself():
    nan = f32([np.nan, 1.0])
    assert not compare(nan, nan.copy()).ok
    assert compare(nan, nan.copy(), Tolerance(equal_nan=True)).ok
    assert not compare(f32([np.nan]), f32([1.0]), Tolerance(equal_nan=True)).ok
    assert compare(f32([np.inf]), f32([np.inf])).ok
    assert not compare(f32([np.inf]), f32([-np.inf])).ok
    assert not compare(f32([np.inf]), f32([3e38])).ok


def test_worst_element_and_ulp_are_located():
    result = compare(f32([[1.0, 2.0], [3.0, 4.0]]), f32([[1.0, 2.0], [3.5, 4.0]]))
    tensor = result.tensors[0]
    assert tensor.worst_index == [1, 0] and tensor.max_ulp_index == [1, 0]
    assert (tensor.worst_reference, tensor.worst_candidate) == (3.0, 3.5)
    assert tensor.mismatched == 1 and tensor.max_abs_diff == 0.5


def test_size_one_axes_are_compared_flat_with_a_note_and_other_shapes_conflict():
    result = compare(f32([[1.0, 2.0, 3.0]]), f32([[1.0], [2.0], [3.0]]))
    assert result.ok and "size-1 axes" in result.tensors[0].notes[0]
    conflict = compare(f32([[1.0, 2.0], [3.0, 4.0]]), f32([1.0, 2.0, 3.0, 4.0]))
    assert not conflict.ok and conflict.tensors[0].candidate_shape == [4]
    from pita.report import render_text

    assert "t SHAPE CONFLICT: reference [2, 2], candidate [4]" in render_text(conflict)


def test_one_sided_names_fail_the_comparison():
    result = compare_dumps(Dump({"a": f32([1]), "b": f32([1])}), Dump({"a": f32([1]), "c": f32([1])}))
    assert not result.ok and result.missing == ["b"] and result.extra == ["c"]


def test_dumps_of_different_inputs_are_refused_unless_allowed():
    ref, cand = Dump({"t": f32([1])}, {"input_sha256": "aa"}), Dump({"t": f32([1])}, {"input_sha256": "bb"})
    with pytest.raises(UsageError, match="input hashes differ"):
        compare_dumps(ref, cand)
    assert compare_dumps(ref, cand, allow_input_mismatch=True).ok
