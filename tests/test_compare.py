import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conftest import f32
from pita.compare import DEFAULT_TOLERANCE, ComparisonResult, Tolerance, compare_dumps
from pita.dtypes import dtype_name, from_float64, widen
from pita.dump import Dump, read_dump, write_dump
from pita.errors import UsageError
from pita.filetensor import FileTensor
from pita.report import render_json, render_text
from pita.rules import Rules

arrays = hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                    elements=st.floats(-1e6, 1e6, width=32, allow_subnormal=False))


def compare(reference, candidate, tolerance=DEFAULT_TOLERANCE, ref_meta=None, cand_meta=None):
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
    with pytest.raises(UsageError, match="input hashes differ.*; pass allow_input_mismatch=True to compare anyway$") as refused:
        compare_dumps(ref, cand)
    assert refused.value.cli_message.endswith("; pass --allow-input-mismatch to compare anyway")
    assert compare_dumps(ref, cand, allow_input_mismatch=True).ok


# --- dtypes -------------------------------------------------------------------------------------


def test_every_dump_dtype_is_compared_bfloat16_included():
    values = np.float32([1.0, -2.5, 3.25])
    bf16 = from_float64(values, "BF16")
    assert compare(bf16, bf16.copy()).ok
    result = compare(bf16, from_float64(values * 2, "BF16")).tensors[0]
    assert not result.ok and (result.dtype, result.candidate_dtype) == ("BF16", "BF16")
    assert result.worst_reference == 3.25 and [d.kind for d in result.diagnosis] == ["scale"]


@pytest.mark.parametrize("reference, candidate", [
    (np.float32([1.0, 2.0]), np.float64([1.0, 2.0])),
    (np.bool_([True, False]), np.uint8([1, 0])),
])
def test_a_dtype_difference_is_reported_in_text_and_json(reference, candidate):
    result = compare(reference, candidate)
    tensor = result.tensors[0]
    names = (dtype_name(reference.dtype), dtype_name(candidate.dtype))
    assert (tensor.dtype, tensor.candidate_dtype) == names
    assert f"dtypes differ: reference {names[0]}, candidate {names[1]}" in tensor.notes
    data = result.to_dict()["tensors"][0]
    assert (data["dtype"], data["candidate_dtype"]) == names


def test_tensors_of_one_dtype_carry_no_dtype_note():
    assert not compare(f32([1.0]), f32([1.0])).tensors[0].notes


# --- tolerances per dtype -----------------------------------------------------------------------


def test_half_formats_get_torch_testing_defaults_unless_a_tolerance_is_given():
    reference = np.float16([1.0, 2.0, 4.0])
    candidate = np.float16([1.0, 2.0, 4.003])  # within float16's default rtol of 1e-3, far beyond 1e-6
    by_dtype = compare(reference, candidate)
    assert by_dtype.ok and by_dtype.tensors[0].tolerance == "1e-05+0.001*|reference|"
    assert "default tolerance for F16 (torch.testing's)" in by_dtype.tensors[0].notes[0]
    assert not compare(reference, candidate, Tolerance.from_options(atol=1e-6)).ok
    bf16 = lambda v: from_float64(np.float64(v), "BF16")
    assert compare(bf16([1.0, 3.0]), bf16([1.0, 3.0 * 1.015])).ok  # bfloat16: rtol 1.6e-2


def test_float32_and_float64_keep_the_defaults_the_handbook_quotes():
    for dtype in (np.float32, np.float64):
        result = compare(dtype([1.0]), dtype([1.0 + 2e-6]))
        assert not result.ok and result.tolerance.formula().startswith("|candidate - reference| <= atol + rtol*|reference| (atol=1e-06, rtol=0)")
        assert result.tensors[0].tolerance is None and not result.tensors[0].notes


def test_a_mixed_pair_gets_the_larger_of_its_dtypes_defaults():
    result = compare(np.float32([4.0]), np.float16([4.003]))
    assert result.ok and result.tensors[0].tolerance == "1e-05+0.001*|reference|"


@pytest.mark.parametrize("reference, candidate", [
    (np.int64([1, 2]), np.int64([1, 3])),
    (np.bool_([True]), np.bool_([False])),
    (np.int32([1]), np.float32([1.5])),
])
def test_integers_and_bools_compare_exactly_under_any_tolerance(reference, candidate):
    result = compare(reference, candidate, Tolerance.from_options(atol=10.0, rtol=10.0))
    tensor = result.tensors[0]
    assert not result.ok and tensor.tolerance == "exact"
    assert tensor.would_pass == "no tolerance (integers and bools compare exactly)"


def test_the_rules_file_cannot_loosen_an_integer_tensor():
    rules = Rules(tolerances={"t": {"atol": 5.0}})
    result = compare_dumps(Dump({"t": np.int64([1])}), Dump({"t": np.int64([2])}), rules=rules)
    assert not result.ok and "the rules file's tolerance does not apply" in result.tensors[0].notes[0]


# --- shapes, files, the float64 run -------------------------------------------------------------


def test_size_one_axes_are_compared_flat_in_files_too(tmp_path):
    n = 1 << 18  # 1 MiB of float32: left in the file
    values = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    write_dump(Dump({"t": values.reshape(1, n)}), tmp_path / "r.safetensors")
    write_dump(Dump({"t": (values * 2).reshape(n, 1)}), tmp_path / "c.safetensors")
    write_dump(Dump({"t": values.reshape(n, 1)}), tmp_path / "same.safetensors")
    reference = read_dump(tmp_path / "r.safetensors")
    assert isinstance(reference.tensors["t"], FileTensor)
    assert compare_dumps(reference, read_dump(tmp_path / "same.safetensors")).ok
    tensor = compare_dumps(reference, read_dump(tmp_path / "c.safetensors")).tensors[0]
    assert not tensor.ok and "size-1 axes" in tensor.notes[0] and [d.kind for d in tensor.diagnosis] == ["scale"]


@pytest.mark.parametrize("shape", [(3,), (1, 4), (4, 1)])
def test_a_float64_run_of_another_shape_is_a_usage_error(shape):
    reference, candidate = Dump({"t": f32([1, 2, 3, 4])}), Dump({"t": f32([1, 2, 3, 5])})
    with pytest.raises(UsageError, match="^reference64: tensor 't' has shape") as refused:  # the parameter; the CLI names its flag
        compare_dumps(reference, candidate, reference64=Dump({"t": np.ones(shape)}))
    assert refused.value.cli_message == "--" + str(refused.value)


def test_the_float64_run_judges_files_and_every_float_dtype(tmp_path):
    exact = np.linspace(0.1, 1.0, 1 << 18)
    write_dump(Dump({"t": exact}), tmp_path / "r64.safetensors")
    write_dump(Dump({"t": exact.astype(np.float32)}), tmp_path / "r.safetensors")
    write_dump(Dump({"t": widen(from_float64(exact, "BF16")).reshape(-1, 1)}), tmp_path / "c.safetensors")
    write_dump(Dump({"t": from_float64(exact, "BF16").reshape(-1, 1)}), tmp_path / "c16.safetensors")
    reference, reference64 = read_dump(tmp_path / "r.safetensors"), read_dump(tmp_path / "r64.safetensors")
    for candidate in ("c", "c16"):
        f = compare_dumps(reference, read_dump(tmp_path / f"{candidate}.safetensors"), reference64=reference64).tensors[0].float64
        assert f["reference_error"] <= 2.0**-24 and 2.0**-10 < f["candidate_error"] <= 2.0**-9 and f["ratio"] > 1000


# --- what the readers said ----------------------------------------------------------------------


def test_the_dump_readers_notes_are_kept_with_their_side():
    reference, candidate = Dump({"t": f32([1])}), Dump({"t": f32([1])})
    reference.notes = ["skipped notes.txt: not a dump"]
    result = compare_dumps(reference, candidate)
    assert result.notes == ["reference: skipped notes.txt: not a dump"] and result.to_dict()["notes"] == result.notes


def test_a_recordings_init_tensors_are_left_to_the_load_audit():
    recording = {"recording": "pita-record/1"}
    reference = Dump(tensors={"param/w": f32([1, 2])}, metadata=recording)
    candidate = Dump(tensors={"param/w": f32([1, 2]), "init/w": f32([0, 0])}, metadata=recording)
    result = compare_dumps(reference, candidate)
    assert result.ok and not result.extra
    assert any("1 init/ tensor(s) not compared" in note for note in result.notes)
    plain = Dump(tensors=dict(candidate.tensors), metadata={})  # not a recording: init/w is just a name
    assert compare_dumps(reference, plain).extra == ["init/w"]


def test_a_recordings_random_masks_are_left_to_trace():
    """A port that replays PyTorch's dropout masks records none of its own: the reference's
    mask<k>/ tensors are not one-sided names of a comparison."""
    recording = {"recording": "pita-record/1"}
    masks = {"mask1/drop": np.ones(2, dtype=bool), "mask2/drop": np.zeros(2, dtype=bool)}
    reference = Dump(tensors={"param/w": f32([1, 2]), **masks}, metadata=recording)
    candidate = Dump(tensors={"param/w": f32([1, 2])}, metadata=recording)
    result = compare_dumps(reference, candidate)
    assert result.ok and not result.missing
    assert any("2 mask tensor(s) not compared" in note for note in result.notes)
    plain = Dump(tensors=dict(reference.tensors), metadata={})  # not a recording: mask1/drop is just a name
    assert compare_dumps(plain, candidate).missing == ["mask1/drop", "mask2/drop"]


def round_trip_cases() -> dict:
    """Real comparisons of every kind the JSON form must carry back."""
    reference = Dump({"w": f32([0.1, 0.2, 0.3, 0.4]), "i": np.int64([1, 2, 3]), "nan": f32([1.0, np.nan, np.inf]), "gone": f32([1.0])})
    candidate = Dump({"w": f32([0.4, 0.8, 1.2, 1.6]), "i": np.int64([1, 2, 4]), "nan": f32([1.0, 2.0, -np.inf]), "new": f32([1.0])})
    same = Dump({"w": f32([0.1, 0.2, 0.3, 0.4])})
    return {
        "matching": compare_dumps(same, same),
        "mismatching, diagnosed, NaN, ints, missing and extra": compare_dumps(reference, candidate),
        "histograms and error maps": compare_dumps(reference, candidate, distributions=True),
        "reference64": compare_dumps(same, Dump({"w": f32([0.1, 0.2, 0.3, 0.41])}), reference64=Dump({"w": np.float64([0.1, 0.2, 0.3, 0.4])})),
    }


def test_a_result_survives_its_json_form():
    for name, result in round_trip_cases().items():
        data = result.to_dict()
        again = ComparisonResult.from_dict(data)
        assert json.dumps(again.to_dict()) == json.dumps(data), name  # NaN is not equal to itself: compared as text
        assert json.loads(render_json(again)) == json.loads(render_json(result)), name
        strict = ComparisonResult.from_dict(json.loads(render_json(result)))  # "NaN" and "Infinity" read back as floats
        assert json.dumps(strict.to_dict()) == json.dumps(data), name
        assert render_text(strict) == render_text(result), name


def test_the_round_trip_cases_hold_what_they_are_named_for():
    cases = round_trip_cases()
    assert cases["matching"].ok
    mixed = cases["mismatching, diagnosed, NaN, ints, missing and extra"]
    assert mixed.missing == ["gone"] and mixed.extra == ["new"]
    by_name = {t.name: t for t in mixed.tensors}
    assert by_name["w"].diagnosis and by_name["i"].dtype == "I64" and math.isnan(by_name["nan"].max_abs_diff)  # |NaN - 2| is undefined
    assert any(t.ulp_histogram and t.error_map for t in cases["histograms and error maps"].tensors)
    assert cases["reference64"].tensors[0].float64


def test_a_dict_of_another_format_or_none_is_refused():
    data = compare_dumps(Dump({"w": f32([1.0])}), Dump({"w": f32([1.0])})).to_dict()
    assert data["format"] == "pita-compare/1"
    with pytest.raises(UsageError, match=r"^not a pita compare result: format 'pita-trace/1', expected 'pita-compare/1'$"):
        ComparisonResult.from_dict({**data, "format": "pita-trace/1"})
    with pytest.raises(UsageError, match=r"format None"):
        ComparisonResult.from_dict({key: value for key, value in data.items() if key != "format"})


# --- every pair in one batch ---------------------------------------------------------------------


def mixed_pairs():
    """Pairs of every kind compare handles: floats that pass and fail, integers, a pair compared flat,
    one after broadcasting, a shape conflict."""
    reference = {"pass": f32([1.0, 2.0, 3.0]), "fail": f32([[1.0, 2.0], [3.0, 4.0]]), "steps": np.arange(4, dtype=np.int64),
                 "flat": f32([[0.5, 0.25]]), "broadcast": f32([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]), "conflict": f32([1.0, 2.0, 3.0])}
    candidate = {"pass": f32([1.0, 2.0, 3.0]), "fail": f32([[2.0, 4.0], [6.0, 8.0]]), "steps": np.array([0, 1, 2, 4]),
                 "flat": f32([0.5, 0.25]), "broadcast": f32([1.0, 2.0, 3.5]), "conflict": f32([1.0, 2.0])}
    return Dump(reference), Dump(candidate)


def test_every_pair_of_equal_size_is_measured_in_one_batch_with_the_results_of_one_at_a_time(monkeypatch):
    import pita.compare
    from pita import stats

    batches = []

    def counted(pairs, tolerances):
        batches.append(len(pairs))
        return stats.measure_many(pairs, tolerances)

    monkeypatch.setattr(pita.compare, "measure_many", counted)
    batched = compare_dumps(*mixed_pairs())
    assert batches == [4]  # pass, fail, steps, flat: the broadcast pair is measured once expanded, the conflict never
    monkeypatch.setattr(pita.compare, "measure_many", lambda pairs, tolerances: [stats.measure(*p, t) for p, t in zip(pairs, tolerances)])
    one_at_a_time = compare_dumps(*mixed_pairs())
    assert render_json(batched) == render_json(one_at_a_time)
    by_name = {t.name: t for t in batched.tensors}
    assert [name for name, t in by_name.items() if not t.ok] == ["broadcast", "conflict", "fail", "steps"]
    assert by_name["broadcast"].n == 6 and by_name["broadcast"].mismatched == 2 and by_name["fail"].worst_index == [1, 1]
    assert [d.kind for d in by_name["fail"].diagnosis] == ["scale"] and by_name["steps"].examples == [{"index": [3], "reference": 3, "candidate": 4}]
