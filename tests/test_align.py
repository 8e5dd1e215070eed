import numpy as np
import pytest

from pita.align import align, load_rules
from pita.compare import Tolerance, compare_dumps
from pita.dump import Dump, read_dump, write_dump
from pita.errors import UsageError

from conftest import f32, pita


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


@pytest.mark.parametrize("text", ["[[rename]]\npattern = '('\nreplace = 'x'\n", "[[transpose]]\naxes = [1, 0]\n",
                                  "[bogus]\n", "[tolerance.w]\nslack = 1\n", "not toml ["])
def test_bad_rules_are_refused(tmp_path, text):
    with pytest.raises(UsageError):
        rules(tmp_path, text)


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
