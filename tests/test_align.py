import time

import numpy as np
import pytest

from conftest import f32, pita
from pita.align import BROADCAST, CONFLICT, FLAT, SAME, align, broadcast_side, expanded, mapping_summary, shape_relation, suggest_renames
from pita.compare import Tolerance, compare_dumps
from pita.dump import Dump, read_dump, write_dump
from pita.errors import UsageError
from pita.filetensor import FileTensor
from pita.report import render_text
from pita.rules import MAX_RULES_BYTES, RULE_NAME_CHARS, Rules, load_rules


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


# --- shapes that broadcast -----------------------------------------------------------------------

POSITIONS = np.random.default_rng(3).standard_normal((1, 12, 384)).astype(np.float32)


def test_a_position_embedding_broadcast_to_the_batch_compares_after_expansion(tmp_path):
    batch = np.repeat(POSITIONS, 4, axis=0)
    for reference, candidate, side in ((batch, POSITIONS, "candidate"), (POSITIONS, batch, "reference")):
        result = compare_dumps(Dump({"act/pos": reference}), Dump({"act/pos": candidate}))
        tensor = result.tensors[0]
        assert result.ok and not tensor.shape_conflict and tensor.n == batch.size
        other = "reference" if side == "candidate" else "candidate"
        assert tensor.notes == [f"{side} [1, 12, 384] broadcast to the {other}'s [4, 12, 384]: compared after expansion"]
    write_dump(Dump({"act/pos": batch}), tmp_path / "reference.safetensors")
    write_dump(Dump({"act/pos": POSITIONS}), tmp_path / "candidate.safetensors")
    proc = pita("compare", tmp_path / "reference.safetensors", tmp_path / "candidate.safetensors", "--histogram", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert '"n": 18432' in proc.stdout and '"counts": [\n          18432\n        ]' in proc.stdout  # the histogram counts the expanded pair


def test_a_broadcast_pair_that_differs_is_a_mismatch_located_in_the_expanded_shape():
    batch = np.repeat(POSITIONS, 4, axis=0)
    batch[2, 5, 7] += 1.0
    tensor = compare_dumps(Dump({"act/pos": batch}), Dump({"act/pos": POSITIONS})).tensors[0]
    assert not tensor.ok and not tensor.shape_conflict
    assert (tensor.mismatched, tensor.worst_index, tensor.max_abs_diff) == (1, [2, 5, 7], pytest.approx(1.0))
    assert "broadcast" in tensor.notes[0]


@pytest.mark.parametrize("reference_shape, candidate_shape", [
    ((4, 12, 384), (2, 12, 384)),  # a size other than 1 never repeats
    ((4, 1, 384), (1, 12, 384)),  # each side would repeat: neither broadcasts to the other
    ((4,), ()),  # a single value against many: an unreduced loss, not a broadcast
    ((4, 3), (1, 1)),
    ((0, 3), (1, 3)),  # nothing to compare against
])
def test_shapes_that_do_not_broadcast_stay_a_conflict(reference_shape, candidate_shape):
    tensor = compare_dumps(Dump({"t": np.ones(reference_shape, np.float32)}), Dump({"t": np.ones(candidate_shape, np.float32)})).tensors[0]
    assert tensor.shape_conflict and not tensor.ok and tensor.notes == []
    assert shape_relation(reference_shape, candidate_shape) == CONFLICT


def test_a_size_one_axis_in_the_middle_repeats_along_that_axis():
    per_channel = np.random.default_rng(5).standard_normal((2, 1, 4)).astype(np.float32)
    repeated = np.repeat(per_channel, 3, axis=1)
    assert compare_dumps(Dump({"t": repeated}), Dump({"t": per_channel})).ok
    repeated[1, 2, 3] += 0.5  # one repeat differs
    assert compare_dumps(Dump({"t": repeated}), Dump({"t": per_channel})).tensors[0].worst_index == [1, 2, 3]


def test_shape_relations_follow_numpy_broadcasting_of_size_one_axes():
    assert shape_relation([2, 3], [2, 3]) == SAME
    assert shape_relation([1, 3], [3, 1]) == FLAT  # the same elements: compared flat, not broadcast to [3, 3]
    assert shape_relation([12, 384], [4, 12, 384]) == BROADCAST  # an absent leading axis repeats too
    assert broadcast_side([12, 384], [4, 12, 384]) == "reference"


def test_a_broadcast_too_large_to_expand_stays_a_conflict_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr("pita.align.MAX_BROADCAST_ELEMENTS", 1000)
    tensor = compare_dumps(Dump({"t": np.ones((4, 384), np.float32)}), Dump({"t": np.ones((1, 384), np.float32)})).tensors[0]
    assert tensor.shape_conflict
    assert tensor.notes == ["candidate [1, 384] would broadcast to the reference's [4, 384], but the expansion would hold 1536 elements "
                            "in memory (at most 1000): not compared"]


def test_a_broadcast_side_left_in_its_file_is_expanded_from_one_read(tmp_path):
    big = np.repeat(np.random.default_rng(4).standard_normal((1, 300, 1000)).astype(np.float32), 3, axis=0)
    write_dump(Dump({"t": big}), tmp_path / "big.safetensors")
    write_dump(Dump({"t": big[:1].copy()}), tmp_path / "small.safetensors")
    reference, candidate = read_dump(tmp_path / "big.safetensors").tensors["t"], read_dump(tmp_path / "small.safetensors").tensors["t"]
    assert isinstance(reference, FileTensor) and isinstance(candidate, FileTensor)
    same, expanded_candidate = expanded(reference, candidate)
    assert same is reference and expanded_candidate.shape == big.shape and np.array_equal(expanded_candidate, big)


# --- mappings, tolerances ------------------------------------------------------------------------


def test_a_long_list_of_mappings_is_summarised_in_four_lines():
    mappings = [f"candidate l{i}.gamma -> l{i}.weight (rename '\\\\.gamma$')" for i in range(1180)]
    mappings.append("candidate fc.weight transposed [3, 2] -> [2, 3] (axes [1, 0])")
    lines = mapping_summary(mappings, verbose=False)
    assert lines == ["mapping: 1181 applied by the rules file (1180 renames, 1 transpose); the first 3 (all with --verbose):",
                     *[f"mapping: {m}" for m in mappings[:3]]]
    assert len(mapping_summary(mappings, verbose=True)) == 1181
    assert mapping_summary(mappings[:4], verbose=False) == [f"mapping: {m}" for m in mappings[:4]]  # a summary would save nothing
    assert mapping_summary([], verbose=False) == []


def test_the_text_report_summarises_many_renames(tmp_path):
    names = [f"l{i}.gamma" for i in range(50)]
    mapped = rules(tmp_path, "[[rename]]\npattern = '\\.gamma$'\nreplace = '.weight'\n")
    result = compare_dumps(Dump({n.replace("gamma", "weight"): f32([1]) for n in names}), Dump({n: f32([1]) for n in names}), rules=mapped)
    text = render_text(result)
    assert result.ok and text.count("mapping: ") == 4 and "mapping: 50 applied by the rules file (50 renames)" in text


def test_tolerance_entries_are_listed_as_short_texts(tmp_path):
    loaded = rules(tmp_path, '[tolerance."*.bias"]\natol = 1e-5\nulp = 4\n[tolerance."act/*"]\nrtol = 0.001\nequal_nan = true\n')
    assert loaded.tolerance_texts() == ["'*.bias' → atol=1e-05 ulp=4", "'act/*' → rtol=0.001 equal_nan=true"]
    assert loaded.tolerance_texts(["fc.bias", "fc.weight", "act/fc"]) == ["'*.bias' → atol=1e-05 ulp=4 (1 tensor(s))",
                                                                         "'act/*' → rtol=0.001 equal_nan=true (1 tensor(s))"]
    assert Rules().tolerance_texts() == []


# --- rename suggestions --------------------------------------------------------------------------

EVERY_PHASE = "(?:param|grad|init|act|step\\d+|optim\\d+|mask\\d+)"  # a suggestion renames a path under every recording prefix
BERT_MODULES = ["embeddings.word_embeddings", "embeddings.LayerNorm", "encoder.layer.0.attention.self.query",
                "encoder.layer.1.output.dense", "pooler.dense"]


def bert_names(prefix: str) -> list[str]:
    """Recorded names of a BERT-like model whose encoder sits under `prefix`, with a classifier beside it."""
    names = [f"{kind}/{prefix}{m}.{p}" for m in BERT_MODULES for kind in ("param", "grad", "step1") for p in ("weight", "bias")]
    names += [f"act/{prefix}{m}" for m in BERT_MODULES] + [f"act/{prefix}encoder.layer.0.attention.self.query#2"]
    names += [f"optim1/{prefix}{m}.weight/exp_avg" for m in BERT_MODULES]
    return names + ["param/classifier.weight", "act/classifier", "loss/1"]


def paste(tmp_path, lines: list[str]) -> Rules:
    return rules(tmp_path, "\n".join(lines) + "\n")


def test_a_missing_prefix_gets_a_rename_that_pairs_every_phase_and_leaves_the_rest(tmp_path):
    reference, candidate = Dump({n: f32([1]) for n in bert_names("bert.")}), Dump({n: f32([1]) for n in bert_names("")})
    unpaired = compare_dumps(reference, candidate)
    assert len(unpaired.missing) == len(unpaired.extra) == 41
    lines = suggest_renames(unpaired.missing, unpaired.extra, [t.name for t in unpaired.tensors])
    assert lines == ["[[rename]]  # pairs 41 name(s), e.g. 'act/embeddings.LayerNorm' -> 'act/bert.embeddings.LayerNorm'",
                     f"pattern = '^({EVERY_PHASE}/)(embeddings|encoder|pooler)(?=[.#/]|$)'",
                     "replace = '\\1bert.\\2'"]
    result = compare_dumps(reference, candidate, rules=paste(tmp_path, lines))
    assert result.ok and len(result.tensors) == len(reference.tensors)


def test_a_prefix_the_candidate_has_and_a_changed_suffix_are_both_found(tmp_path):
    reference = [f"param/layers.{i}.{p}" for i in range(3) for p in ("norm.weight", "fc.weight")] + ["param/head.weight"]
    candidate = [f"param/model.layers.{i}.{p}" for i in range(3) for p in ("norm.weight_orig", "fc.weight")] + ["param/model.head.weight"]
    lines = suggest_renames(reference, candidate)
    assert [line for line in lines if not line.startswith("[[")] == [f"pattern = '^({EVERY_PHASE}/)model\\.'", "replace = '\\1'",
                                                                      "pattern = '\\.weight_orig$'", "replace = '.weight'"]
    result = compare_dumps(Dump({n: f32([1]) for n in reference}), Dump({n: f32([1]) for n in candidate}), rules=paste(tmp_path, lines))
    assert result.ok


def test_renames_the_names_cannot_decide_are_not_suggested():
    reference = [f"param/enc.{i}.ln.{p}" for i in range(3) for p in ("weight", "bias")]
    candidate = [name.replace("weight", "gamma").replace("bias", "beta") for name in reference]
    assert suggest_renames(reference, candidate) == []  # gamma -> weight or gamma -> bias: as many pairs either way
    assert suggest_renames(["param/a.w"], ["param/b.a.w"]) == []  # one name is no common difference
    assert suggest_renames(["param/a.w", "param/b.w"], ["param/x.a.w", "param/y.b.w"]) == []


def test_a_suggestion_never_renames_a_name_already_paired(tmp_path):
    reference, candidate = ["param/a.w", "param/b.w", "param/m.c"], ["param/m.a.w", "param/m.b.w", "param/m.c"]
    assert f"pattern = '^({EVERY_PHASE}/)m\\.'" in suggest_renames(reference[:2], candidate[:2])  # it would take m.c too
    lines = suggest_renames(reference[:2], candidate[:2], ["param/m.c"])
    assert f"pattern = '^({EVERY_PHASE}/)m\\.(a|b)(?=[.#/]|$)'" in lines
    assert compare_dumps(Dump({n: f32([1]) for n in reference}), Dump({n: f32([1]) for n in candidate}), rules=paste(tmp_path, lines)).ok


def test_suggested_lines_hold_any_name_as_valid_toml(tmp_path):
    reference = ["net.it's.0.w", "net.it's.1.w"]
    candidate = ["it's.0.w", "it's.1.w"]
    lines = suggest_renames(reference, candidate)
    assert lines[1] == 'pattern = "^(it\'s)(?=[.#/]|$)"'
    assert compare_dumps(Dump({n: f32([1]) for n in reference}), Dump({n: f32([1]) for n in candidate}), rules=paste(tmp_path, lines)).ok
