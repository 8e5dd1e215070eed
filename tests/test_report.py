import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import f32
from pita.cli import main
from pita.compare import DEFAULT_TOLERANCE, Tolerance, _round_up, compare_dumps
from pita.dtypes import from_float64
from pita.dump import Dump, write_dump
from pita.report import render_json, render_text, verdict_line


def compare(reference, candidate, tolerance=DEFAULT_TOLERANCE):
    return compare_dumps(Dump({"t": reference}, source="r"), Dump({"t": candidate}, source="c"), tolerance)


def test_float32_lines_keep_the_form_the_handbook_quotes():
    text = render_text(compare(f32([[1, 2], [3, 4]]), f32([[1, 3], [2, 4]])))
    assert text.splitlines() == [
        "reference: r (no provenance)",
        "candidate: c (no provenance)",
        "tolerance: |candidate - reference| <= atol + rtol*|reference| (atol=1e-06, rtol=0); NaN never passes; an inf passes only against the same inf",
        "t n= 4 max|diff|=1.00e+00 max_ulp=4194304 at [0, 1] MISMATCH 2/4 (50.0%)",
        "  worst at [0, 1]: reference 2, candidate 3; max rel diff 5.00e-01",
        "  first mismatches: [0, 1] 2 vs 3; [1, 0] 3 vs 2",
        "  would pass with: --atol 1, or --rtol 0.5 --atol 0, or --ulp 4194304",
        "  diagnosis transpose: candidate = reference with axes 0 and 1 swapped (axes [1, 0]; after transposing: max|diff| 0.00e+00)",
        "worst=1.00e+00 tol=1e-06 MISMATCH",
    ]


def test_the_readers_notes_are_printed_near_the_top_and_in_json():
    reference = Dump({"t": f32([1])}, source="r")
    reference.notes = ["skipped readme.md: not a dump"]
    result = compare_dumps(reference, Dump({"t": f32([1])}, source="c"))
    assert render_text(result).splitlines()[3] == "note: reference: skipped readme.md: not a dump"
    assert json.loads(render_json(result))["notes"] == ["reference: skipped readme.md: not a dump"]


def test_integers_are_printed_exactly():
    big = 2**62 + 1
    text = render_text(compare(np.int64([big]), np.int64([big + 2])))
    assert f"reference {big}, candidate {big + 2}" in text and f"[0] {big} vs {big + 2}" in text


def test_a_shape_conflict_prints_its_notes():
    text = render_text(compare(np.float64([[1.0, 2.0], [3.0, 4.0]]), f32([1, 2, 3, 4])))
    assert "t SHAPE CONFLICT: reference [2, 2], candidate [4]\n  note: dtypes differ: reference F64, candidate F32" in text


# --- would pass with ----------------------------------------------------------------------------


def suggestions(text: str) -> list[dict]:
    """Each option of a "would pass with" line as `Tolerance.from_options` arguments."""
    options = []
    for option in text.split(" (")[0].split(", or "):
        words, arguments = option.split(), {}
        while words:
            flag = words.pop(0)
            if flag == "--equal-nan":
                arguments["equal_nan"] = True
            else:
                arguments[flag[2:]] = (int if flag == "--ulp" else float)(words.pop(0))
        options.append(arguments)
    return options


EXTREMES = [0.0, -0.0, 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308,
            3.4028234663852886e38, 1.401298464324817e-45, 65504.0, 5.960464477539063e-08, 1.0, 0.3, -2.5, 1e-3,
            math.inf, -math.inf, math.nan]
numbers = st.one_of(st.sampled_from(EXTREMES), st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))
DTYPE_PAIRS = [("F64", "F64"), ("F32", "F32"), ("F16", "F16"), ("BF16", "BF16"), ("F32", "F64"), ("F16", "F32"), ("BF16", "F32")]


@st.composite
def failing_pairs(draw):
    """Float pairs with zeros, subnormals, extremes and non-finite values, in every float dtype,
    the candidate an element-wise mix of the reference, its neighbours and unrelated values."""
    n = draw(st.integers(1, 6))
    reference = np.array(draw(st.lists(numbers, min_size=n, max_size=n)))
    unrelated = np.array(draw(st.lists(numbers, min_size=n, max_size=n)))
    how = np.array(draw(st.lists(st.sampled_from(["same", "next", "unrelated", "scaled"]), min_size=n, max_size=n)))
    with np.errstate(over="ignore", invalid="ignore"):
        candidate = np.select([how == "same", how == "next", how == "scaled"],
                              [reference, np.nextafter(reference, math.inf), reference * 1.001], unrelated)
    names = draw(st.sampled_from(DTYPE_PAIRS))
    return from_float64(reference, names[0]), from_float64(candidate, names[1])


tolerances = st.builds(Tolerance.from_options, atol=st.sampled_from([None, 0.0, 1e-6, 0.5]), rtol=st.sampled_from([None, 0.0, 1e-3]),
                       ulp=st.sampled_from([None, 0, 2]), equal_nan=st.booleans())


@settings(max_examples=500, deadline=None)
@given(pair=failing_pairs(), tolerance=tolerances)
def test_every_would_pass_suggestion_passes_when_rerun(pair, tolerance):
    reference, candidate = pair
    tensor = compare(reference, candidate, tolerance).tensors[0]
    if tensor.ok:
        return
    if tensor.would_pass.startswith("no tolerance"):
        # NaN on a side (its max|diff| is NaN), or an atol of three digits would be infinite
        assert not math.isfinite(float(_round_up(tensor.max_abs_diff)))
        return
    for option in suggestions(tensor.would_pass):
        assert compare(reference, candidate, Tolerance.from_options(**option)).ok, (tensor.would_pass, option)


small_ratios = st.tuples(st.lists(st.integers(1, 40), min_size=1, max_size=4), st.lists(st.integers(-40, 40), min_size=4, max_size=4),
                         st.integers(-140, 120), st.sampled_from(["F32", "F16", "BF16", "F64"]))


@settings(max_examples=300, deadline=None)
@given(case=small_ratios)
def test_an_rtol_suggested_at_exactly_the_largest_ratio_passes_when_rerun(case):
    # Ratios of small integers (3, 0.25, 1.5, ...) are where "rtol = max rel diff" is printed
    # without rounding up; it must hold there too.
    references, candidates, exponent, name = case
    reference = from_float64(np.ldexp(np.float64(references), exponent), name)
    candidate = from_float64(np.ldexp(np.float64(candidates[:len(references)]), exponent), name)
    tensor = compare(reference, candidate, Tolerance.from_options(atol=0.0)).tensors[0]
    failed_finitely = not tensor.ok and math.isfinite(tensor.max_abs_diff)
    rtol = [option for option in suggestions(tensor.would_pass) if "rtol" in option] if failed_finitely else []
    for option in rtol:
        assert compare(reference, candidate, Tolerance.from_options(**option)).ok, (tensor.would_pass, option)


@pytest.mark.parametrize("reference, candidate, ratio, printed", [
    (1.3880667317845192, 1.804486751319875, 0.3, "0.301"),  # diff/|reference| rounds to 0.3; diff is above 0.3*|reference|
    (1.2391800922664769, 4.337130322932669, 2.5, "2.51"),  # the same for 2.5: float64 products are not exact
])
def test_an_rtol_at_a_rounded_ratio_is_printed_above_it(reference, candidate, ratio, printed):
    reference, candidate = np.float64([reference]), np.float64([candidate])
    tensor = compare(reference, candidate).tensors[0]
    assert tensor.max_rel_diff == ratio and f"--rtol {printed} --atol 0" in tensor.would_pass
    assert not compare(reference, candidate, Tolerance.from_options(atol=0.0, rtol=ratio)).ok
    assert compare(reference, candidate, Tolerance.from_options(atol=0.0, rtol=float(printed))).ok


def test_no_relative_tolerance_is_suggested_against_a_reference_zero():
    tensor = compare(f32([0.0, 1.0]), f32([0.001, 1.5])).tensors[0]
    assert tensor.max_rel_diff == math.inf and tensor.would_pass == f"--atol 0.5, or --ulp {tensor.max_ulp}"


def test_a_nan_against_nan_mismatch_would_pass_with_equal_nan_and_the_same_tolerance():
    tensor = compare(f32([np.nan, 1.0]), f32([np.nan, 1.25]), Tolerance.from_options(atol=0.5)).tensors[0]
    assert tensor.would_pass == "--atol 0.5 --rtol 0.0 --equal-nan (every mismatch is NaN against NaN)"
    assert compare(f32([np.nan]), f32([1.0])).tensors[0].would_pass == "no tolerance (NaN or inf against a number)"


def test_a_rules_file_tolerance_is_suggested_for_its_entry():
    from pita.rules import Rules

    rules = Rules(tolerances={"t": {"atol": 0.1}})
    result = compare_dumps(Dump({"t": f32([1.0])}), Dump({"t": f32([1.5])}), rules=rules)
    assert result.tensors[0].would_pass.endswith("in this tensor's [tolerance] entry of the rules file")
    assert result.tensors[0].would_pass.startswith("[atol = 0.5] or [rtol = 0.5, atol = 0]")


@settings(max_examples=300, deadline=None)
@given(value=st.floats(min_value=0.0, exclude_min=True, allow_infinity=False, allow_subnormal=True), strictly=st.booleans())
def test_tolerances_are_rounded_up_to_three_digits_exactly(value, strictly):
    text = _round_up(value, strictly)
    assert float(text) > value if strictly else float(text) >= value
    assert len(text.split("e")[0].replace(".", "").lstrip("0")) <= 3


@pytest.mark.parametrize("dtype, reference, candidate, flags", [
    ("F64", [0.0], [5e-324], ["--atol", "0"]),  # used to crash with exit 3
    ("F32", [0.0, 1e-45, 3.0], [1e-45, 3e-45, 3.3], ["--atol", "0"]),
    ("F16", [1.0, 2.0], [1.01, 2.5], []),
    ("BF16", [1.0, 0.0], [1.5, 0.25], ["--ulp", "1"]),
    ("F32", [np.nan, 0.1], [np.nan, 0.3], ["--equal-nan"]),
])
def test_the_cli_passes_with_every_suggestion_it_prints(tmp_path, capsys, dtype, reference, candidate, flags):
    paths = []
    for side, values in (("r", reference), ("c", candidate)):
        write_dump(Dump({"t": from_float64(np.array(values), dtype)}), tmp_path / f"{side}.safetensors")
        paths.append(str(tmp_path / f"{side}.safetensors"))
    assert main(["compare", *paths, *flags]) == 1
    [line] = [line for line in capsys.readouterr().out.splitlines() if "would pass with:" in line]
    for option in line.split("would pass with: ")[1].split(" (")[0].split(", or "):
        assert main(["compare", *paths, *option.split()]) == 0, option
        capsys.readouterr()


def test_the_verdict_line_is_the_text_reports_last_line():
    same, scaled = Dump({"w": f32([0.5, 1.0])}), Dump({"w": f32([1.0, 2.0])})
    for result, verdict in ((compare_dumps(same, same), "worst=0.00e+00 tol=1e-06 OK"), (compare_dumps(same, scaled), "worst=1.00e+00 tol=1e-06 MISMATCH")):
        assert verdict_line(result) == verdict == render_text(result).splitlines()[-1]
