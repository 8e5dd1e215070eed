import time

import numpy as np
import pytest

from conftest import f32, pita
from pita.align import align
from pita.compare import Tolerance, compare_dumps
from pita.dump import Dump, read_dump, write_dump
from pita.errors import UsageError
from pita.rules import MAX_RULES_BYTES, RULE_NAME_CHARS, load_rules


def rules(tmp_path, text):
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return load_rules(path)


def test_align_sorts_pairs_and_reports_both_sides():
    alignment = align(["b", "a", "c"], ["c", "a", "d"])
    assert (alignment.pairs, alignment.missing, alignment.extra) == (["a", "c"], ["b"], ["d"])


def test_rename_and_transpose_make_a_burn_linear_match_torch_and_are_reported(tmp_path):
    torch_side = Dump({"fc.weight": f32([[1, 2, 3], [4, 5, 6]])})
    burn_side = Dump({"linear.weight": f32([[1, 4], [2, 5], [3, 6]])})
    assert not compare_dumps(torch_side, burn_side).ok
    mapped = rules(tmp_path, """
[[rename]]
pattern = '^linear\\.'
replace = 'fc.'
[[transpose]]
name = "fc.weight"
""")
    result = compare_dumps(torch_side, burn_side, rules=mapped)
    assert result.ok
    assert result.mappings == ["candidate linear.weight -> fc.weight (rename '^linear\\\\.')",
                               "candidate fc.weight transposed [3, 2] -> [2, 3] (axes [1, 0])"]


def test_per_tensor_tolerance_overrides_apply_by_glob(tmp_path):
    loose = rules(tmp_path, '[tolerance."*.bias"]\natol = 0.1\n')
    reference, candidate = Dump({"fc.bias": f32([1.0]), "fc.w": f32([1.0])}), Dump({"fc.bias": f32([1.05]), "fc.w": f32([1.05])})
    result = compare_dumps(reference, candidate, rules=loose)
    assert [t.ok for t in result.tensors] == [True, False]
    assert loose.tolerance_for("fc.bias", Tolerance()).atol == 0.1


@pytest.mark.parametrize("text, says", [
    ("[[rename]]\npattern = '('\nreplace = 'x'\n", "missing \\)"),
    ("[[rename]]\npattern = 'a'\nreplace = '\\9'\n", "invalid group reference 9"),
    ("[[rename]]\npattern = 5\nreplace = 'x'\n", "pattern must be a string"),
    ("[[rename]]\npattern = 'a'\nreplace = ['x']\n", "replace must be a string"),
    ("[[rename]]\npattern = 'a'\n", "replace is missing"),
    ("[[rename]]\nside = 'both'\npattern = 'a'\nreplace = 'b'\n", "side must be one of"),
    ("[[rename]]\npattern = 'a'\nreplace = 'b'\nflags = 'i'\n", "unknown key"),
    ("[[rename]]\npattern = 'a'\nreplace = \"b\\nworst=0 OK\"\n", "printed on one line"),
    ("rename = 5\n", "array of tables"),
    ("[[transpose]]\naxes = [1, 0]\n", "name is missing"),
    ("[[transpose]]\nname = 'w'\naxes = '10'\n", "axes must be a non-empty list of integers"),
    ("[[transpose]]\nname = 'w'\naxes = [1.0, 0]\n", "axes must be"),
    ("[[transpose]]\nname = 'w'\naxes = [true, false]\n", "axes must be"),
    ("[[transpose]]\nname = 'w'\naxes = []\n", "axes must be"),
    ("[[transpose]]\nname = 'w'\n[[transpose]]\nname = 'w'\n", "transposed twice"),
    ("[bogus]\n", "unknown section"),
    ("tolerance = 5\n", "table of tables"),
    ("[tolerance]\nw = 5\n", "table of tables"),
    ("[tolerance.w]\nslack = 1\n", "unknown key"),
    ("[tolerance.w]\nequal_nan = 'false'\n", "equal_nan must be true or false"),
    ("[tolerance.w]\nequal_nan = 0\n", "equal_nan must be true or false"),
    ("[tolerance.w]\natol = nan\n", "atol must be a finite number"),
    ("[tolerance.w]\natol = inf\n", "atol must be a finite number"),
    ("[tolerance.w]\natol = -1e-6\n", "atol must be a finite number"),
    ("[tolerance.w]\natol = '1e-5'\n", "atol must be a finite number"),
    ("[tolerance.w]\nrtol = true\n", "rtol must be a finite number"),
    ("[tolerance.w]\nrtol = " + "9" * 400 + "\n", "rtol must be a finite number"),
    ("[tolerance.w]\nulp = 1.5\n", "ulp must be an integer"),
    ("[tolerance.w]\nulp = -1\n", "ulp must be an integer"),
    ("[tolerance.w]\nulp = true\n", "ulp must be an integer"),
    ("[tolerance.w]\nulp = 18446744073709551616\n", "ulp must be an integer"),
    ("not toml [", "not valid TOML"),
    ("a = " + "[" * 5000 + "]" * 5000 + "\n", "not valid TOML"),
    ("a = " + "9" * 5000 + "\n", "not valid TOML"),
])
def test_bad_rules_are_refused_with_one_line_naming_the_file(tmp_path, text, says):
    with pytest.raises(UsageError, match=says) as error:
        rules(tmp_path, text)
    assert str(tmp_path / "rules.toml") in str(error.value) and "\n" not in str(error.value)


def test_good_rule_values_keep_their_types(tmp_path):
    loaded = rules(tmp_path, "[tolerance.w]\natol = 1\nrtol = 0.5\nulp = 4\nequal_nan = false\n")
    tolerance = loaded.tolerance_for("w", Tolerance(equal_nan=True))
    assert (tolerance.atol, tolerance.rtol, tolerance.ulp, tolerance.equal_nan) == (1.0, 0.5, 4, False)
    assert type(tolerance.atol) is float


@pytest.mark.parametrize("pattern", [
    "^(a+)+$",  # nested repetition: 2**n ways
    "(a|aa)*$",  # repeated alternation
    "(\\w+\\s?)+$",
    "(.*a){12}",  # a fixed repeat of a repeat: n**12
    "^(a|a){24}b",  # 2**24 ways without any unbounded repeat, each slow
    "\\d*\\d*\\d*x",  # unanchored repeats side by side: n**4
    "a" * 257,
])
def test_patterns_that_could_backtrack_for_seconds_are_refused_before_they_run(tmp_path, pattern):
    started = time.perf_counter()
    with pytest.raises(UsageError, match="pattern"):
        rules(tmp_path, f"[[rename]]\npattern = '{pattern}'\nreplace = 'x'\n")
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("pattern, name", [
    ("^(.*)\\.gamma$", "a." * 127 + "x"),
    ("(.*)a(.*)b", "a" * RULE_NAME_CHARS),  # the costliest kind accepted: two unanchored repeats
    ("^(.*)a(.*)a(.*)b", "a" * RULE_NAME_CHARS),
    ("^layers\\.(\\d+)\\.(.*)$", "layers." + "1" * (RULE_NAME_CHARS - 8) + "x"),
    ("^(.*)\\.(\\d+)\\.(.*)$", "1." * (RULE_NAME_CHARS // 2)),
    ("^(encoder|decoder)\\.layers\\.(\\d+)\\.(self|cross)_attn\\.(q|k|v)_proj\\.(weight|bias)$", "encoder.layers." + "1" * 200),
    ("(x|xy)z", "x" * RULE_NAME_CHARS),
])
def test_accepted_patterns_run_in_bounded_time_on_the_longest_hostile_names(tmp_path, pattern, name):
    loaded = rules(tmp_path, f"[[rename]]\npattern = '{pattern}'\nreplace = 'x'\n")
    started = time.perf_counter()
    loaded.apply({name: f32([1])}, "candidate")
    assert time.perf_counter() - started < 0.5


def test_names_longer_than_rules_match_are_refused_when_rules_match_names(tmp_path):
    long_name = "w" * (RULE_NAME_CHARS + 1)
    with pytest.raises(UsageError, match=f"name of {RULE_NAME_CHARS + 1} characters"):
        rules(tmp_path, "[[rename]]\npattern = 'w'\nreplace = 'v'\n").apply({long_name: f32([1])}, "candidate")
    with pytest.raises(UsageError, match="at most 256"):
        rules(tmp_path, "[tolerance.w]\natol = 1\n").apply({long_name: f32([1])}, "reference")
    assert list(rules(tmp_path, "[[transpose]]\nname = 'v'\n").apply({long_name: f32([1])}, "reference")[0]) == [long_name]
    lengthening = rules(tmp_path, "[[rename]]\npattern = '^.*$'\nreplace = '" + "\\g<0>" * 30 + "'\n[[rename]]\npattern = 'x'\nreplace = 'y'\n")
    with pytest.raises(UsageError, match="name of 300 characters"):
        lengthening.apply({"w" * 10: f32([1])}, "candidate")


def test_a_rules_file_must_be_small(tmp_path):
    """(FIFOs and devices as rules files: tests/test_hostile_inputs.py, under a time limit.)"""
    (tmp_path / "big.toml").write_text("#" * (MAX_RULES_BYTES + 1))
    with pytest.raises(UsageError, match="more than the"):
        load_rules(tmp_path / "big.toml")
    with pytest.raises(UsageError, match="No such file"):
        load_rules(tmp_path / "missing.toml")


def test_rename_collisions_and_unknown_transposes_are_refused(tmp_path):
    collide = rules(tmp_path, "[[rename]]\npattern = '.*'\nreplace = 'x'\n")
    with pytest.raises(UsageError, match="two candidate tensors"):
        compare_dumps(Dump({"x": f32([1])}), Dump({"a": f32([1]), "b": f32([1])}), rules=collide)
    with pytest.raises(UsageError, match="does not have"):
        compare_dumps(Dump({"x": f32([1])}), Dump({"x": f32([1])}), rules=rules(tmp_path, "[[transpose]]\nname = 'y'\n"))


def test_directories_are_compared_file_by_file_and_name_by_name(tmp_path):
    for side, scale in (("a", 1.0), ("b", 2.0)):
        write_dump(Dump({"w": f32([1.0, 2.0]) * scale}), tmp_path / side / "step1.safetensors")
        write_dump(Dump({"w": f32([1.0, 2.0]) * scale}), tmp_path / side / "step1.json")
        write_dump(Dump({"v": f32([3.0])}), tmp_path / side / "step2.npz")
    write_dump(Dump({"v": f32([3.0])}), tmp_path / "b" / "step3.npz")
    assert sorted(read_dump(tmp_path / "a").tensors) == ["step1/w", "step2/v"]
    proc = pita("compare", tmp_path / "a", tmp_path / "b")
    assert proc.returncode == 1
    assert "only in candidate: step3/v" in proc.stdout and "step1/w" in proc.stdout and "scale" in proc.stdout
    (tmp_path / "empty").mkdir()
    assert pita("compare", tmp_path / "empty", tmp_path / "b").returncode == 2


def test_reference64_tells_which_side_drifted():
    exact = np.array([1 / 3, 2 / 3], dtype=np.float64)
    reference = exact.astype(np.float32)
    candidate = (exact + 1e-5).astype(np.float32)
    result = compare_dumps(Dump({"t": reference}), Dump({"t": candidate}), reference64=Dump({"t": exact}))
    errors = result.tensors[0].float64
    assert errors["candidate_error"] > 100 * errors["reference_error"] and errors["ratio"] > 100
