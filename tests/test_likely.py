"""pita.likely: the catalog's signatures matched to compare's and trace's findings, on small dumps
built with numpy (no torch): each kind of signature fires on the finding it describes and stays
silent on correct numbers and on findings that only look alike."""

import json

import numpy as np
import pytest
from test_trace import REFERENCE, run

from conftest import pita
from pita.compare import ComparisonResult, compare_dumps
from pita.dump import Dump, write_dump
from pita.likely import Entry, Facts, Signature, catalog, comparison_causes, likely_causes, tensor_finding, trace_causes
from pita.trace import TraceResult, render_trace_text, trace_dumps

RNG = np.random.default_rng(1)
W = RNG.standard_normal((3, 3)).astype(np.float32)
X = RNG.standard_normal((8, 16)).astype(np.float32)


def dump(tensors: dict, **metadata) -> Dump:
    return Dump({name: np.asarray(value, dtype=np.float32) for name, value in tensors.items()}, {k: str(v) for k, v in metadata.items()},
                source="dump")


def owners(**fields) -> list[str]:
    """The shipped catalog's pitfalls (catalog order) with a signature of these fields: a test
    finds its chapter by what the signature says, so no list of ids is typed here."""
    found = [e.id for e in catalog() if any(all(getattr(s, k) == v for k, v in fields.items()) for s in e.signatures)]
    assert found, f"no signature in the catalog has {fields}"
    return found


def owner(**fields) -> str:
    found = owners(**fields)
    assert len(found) == 1, f"{found} all have a signature with {fields}"
    return found[0]


def setting_owners(setting: str) -> list[str]:
    """The pitfalls whose setting signature names PyTorch's `Kind.name`."""
    kind, name = setting.split(".")
    found = [e.id for e in catalog() if any(kind in named.split(".")[0].split("|") and named.split(".")[1] == name
                                            for s in e.signatures for named in s.settings)]
    assert found, f"no setting signature in the catalog names {setting}"
    return found


def setting_owner(setting: str) -> str:
    found = setting_owners(setting)
    assert len(found) == 1, f"{found} all have a setting signature naming {setting}"
    return found[0]


BATCH_SIZE = owner(diagnosis="scale", factor="batch_size", phase="backward")
COUNT_IN_GRADIENT = owner(diagnosis="scale", factor="count", phase="backward")
COUNT_IN_LOSS = owner(diagnosis="scale", factor="count", phase="loss")
ELEMENT_COUNT = owner(diagnosis="scale", factor="elements")
BIASED_VARIANCE = owner(factor="biased_variance")
AXES_PERMUTED = owner(diagnosis="permutation")
NORM_EPS = setting_owner("LayerNorm.eps")


def ids(result) -> list[str]:
    return [cause["id"] for cause in result.likely]


def evidence(result, pitfall: str) -> str:
    return next(cause["evidence"] for cause in result.likely if cause["id"] == pitfall)


# --- compare, with the catalog the library ships --------------------------------------------------


def test_a_gradient_scaled_by_the_batch_size_is_the_batch_size_chapter():
    reference = dump({"weight.grad": W[0], "bias.grad": [0.5]}, batch_size=4)
    candidate = dump({"weight.grad": 4 * W[0], "bias.grad": [2.0]}, batch_size=4)
    result = compare_dumps(reference, candidate)
    assert ids(result) == [BATCH_SIZE]
    assert evidence(result, BATCH_SIZE).endswith("candidate = 4 × reference, and 4 is the batch size recorded in the dumps")
    assert set(result.likely[0]) == {"id", "title", "chapter", "fix", "evidence"} and result.likely[0]["chapter"] == f"book/{BATCH_SIZE}.md"


def test_a_gradient_scaled_by_a_count_other_than_the_batch_size_is_the_count_chapter():
    reference = dump({"weight.grad": W[0]}, batch_size=3)
    result = compare_dumps(reference, dump({"weight.grad": 2 * W[0]}, batch_size=3))
    assert BATCH_SIZE not in ids(result) and COUNT_IN_GRADIENT in ids(result)
    assert "2 is an integer count other than the batch size (the batch size is 3)" in evidence(result, COUNT_IN_GRADIENT)


def test_a_gradient_scaled_by_its_element_count_names_the_element_count_chapter_first():
    result = compare_dumps(dump({"pred.grad": W[:2]}), dump({"pred.grad": 6 * W[:2]}))
    assert ids(result)[0] == ELEMENT_COUNT and "6 is the tensor's element count" in evidence(result, ELEMENT_COUNT)


def test_a_loss_scaled_by_a_count_is_the_loss_count_chapter():
    result = compare_dumps(dump({"loss": [0.7], "logits.grad": W}, batch_size=2), dump({"loss": [2.1], "logits.grad": 3 * W}, batch_size=2))
    assert COUNT_IN_LOSS in ids(result) and evidence(result, COUNT_IN_LOSS).startswith("loss: candidate = 3 × reference")


def test_a_running_var_between_biased_and_unbiased_is_the_biased_variance_chapter_only_while_running_mean_matches():
    stats = {"bn.running_mean": [0.1, -0.2], "bn.running_var": [1.2, 0.9]}
    biased = {**stats, "bn.running_var": [1.2 * 0.998, 0.9 * 0.998]}
    result = compare_dumps(dump(stats, batch_size=4), dump(biased, batch_size=4))
    assert ids(result) == [BIASED_VARIANCE]
    assert "(n−1)/n = 0.75 and 1 for the batch size n = 4" in evidence(result, BIASED_VARIANCE)
    assert "while bn.running_mean matches" in evidence(result, BIASED_VARIANCE)
    moved = {**biased, "bn.running_mean": [0.2, -0.1]}
    assert BIASED_VARIANCE not in ids(compare_dumps(dump(stats, batch_size=4), dump(moved, batch_size=4)))
    assert BIASED_VARIANCE not in ids(compare_dumps(dump(stats, batch_size=1000), dump(biased, batch_size=1000)))  # 0.998 < 999/1000


def test_a_transposed_linear_weight_names_both_chapters():
    result = compare_dumps(dump({"fc.weight": W}), dump({"fc.weight": W.T}))
    assert ids(result) == owners(diagnosis="transpose")
    assert compare_dumps(dump({"fc.weight": W[0]}), dump({"fc.weight": W[0][::-1]})).likely == []  # not a matrix
    assert compare_dumps(dump({"param/fc.lora_a": W}), dump({"param/fc.lora_a": W.T})).likely == []  # a parameter, not a weight


def test_a_transposed_weight_of_another_rank_is_not_a_linear_weight():
    conv = RNG.standard_normal((2, 2, 3, 3)).astype(np.float32)
    result = compare_dumps(dump({"conv.weight": conv}), dump({"conv.weight": conv.transpose(0, 1, 3, 2).copy()}))
    assert not result.ok and result.likely == []


def test_compare_reads_the_settings_where_the_dumps_recorded_them():
    torch_side = json.dumps({"ln": {"kind": "LayerNorm", "settings": {"eps": 1e-12}}})
    burn_side = json.dumps({"ln": {"kind": "LayerNorm", "settings": {"epsilon": 1e-05}}})
    reference = dump({"out": X}, framework="torch", modules=torch_side)
    assert ids(compare_dumps(reference, dump({"out": X + 1}, framework="burn", modules=burn_side))) == [NORM_EPS]
    assert compare_dumps(reference, dump({"out": X}, framework="burn", modules=burn_side)).likely == []  # nothing fails: no cause


def test_axes_reordered_in_the_forward_are_the_permutation_chapter():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    assert ids(compare_dumps(dump({"out": x}), dump({"out": x.transpose(2, 0, 1).copy()}))) == [AXES_PERMUTED]


def test_nothing_is_likely_on_a_passing_comparison_or_a_difference_without_a_finding():
    assert compare_dumps(dump({"weight.grad": W}, batch_size=3), dump({"weight.grad": W}, batch_size=3)).likely == []
    noise = W + RNG.standard_normal(W.shape).astype(np.float32)
    assert compare_dumps(dump({"weight.grad": W}), dump({"weight.grad": noise})).likely == []


def test_compare_prints_the_likely_cause_after_its_verdict_and_its_json_reads_back(tmp_path):
    write_dump(dump({"bias.grad": [0.5, -0.25]}, batch_size=4), tmp_path / "ref.safetensors")
    write_dump(dump({"bias.grad": [2.0, -1.0]}, batch_size=4), tmp_path / "cand.safetensors")
    text = pita("compare", tmp_path / "ref.safetensors", tmp_path / "cand.safetensors")
    lines = text.stdout.splitlines()
    assert text.returncode == 1 and lines[-3].endswith("MISMATCH")
    entry = next(e for e in catalog() if e.id == BATCH_SIZE)
    assert lines[-2] == f"likely cause: {BATCH_SIZE} {entry.title} (book/{BATCH_SIZE}.md); fix: {entry.fix}"
    assert lines[-1] == "  evidence: bias.grad: candidate = 4 × reference, and 4 is the batch size recorded in the dumps"
    as_json = pita("compare", tmp_path / "ref.safetensors", tmp_path / "cand.safetensors", "--format", "json")
    data = json.loads(as_json.stdout)
    assert [c["id"] for c in data["likely"]] == [BATCH_SIZE]
    assert ComparisonResult.from_dict(data).likely == data["likely"]


# --- trace: settings, the first divergence's module ------------------------------------------------


def with_modules(recording: Dump, framework: str, modules: dict) -> Dump:
    return Dump(dict(recording.tensors), {**recording.metadata, "framework": framework, "modules": json.dumps(modules)}, source="run")


def test_trace_names_a_norm_epsilon_setting_with_both_values():
    torch_side = {f"layer.{i}.norm": {"kind": "LayerNorm", "settings": {"eps": 1e-12, "normalized_shape": [3]}} for i in range(3)}
    burn_side = {f"layer.{i}.norm": {"kind": "LayerNorm", "settings": {"epsilon": 1e-05, "d_model": 3}} for i in range(3)}
    result = trace_dumps(with_modules(REFERENCE, "torch", torch_side), with_modules(run(), "burn", burn_side))
    assert [c["id"] for c in result.likely] == [NORM_EPS]
    assert result.likely[0]["evidence"] == "LayerNorm eps 1e-12 against 1e-05 in layer.0.norm and 2 more"
    text = render_trace_text(result).splitlines()
    verdict = next(i for i, line in enumerate(text) if line.startswith("verdict: "))
    assert text[verdict + 1].startswith(f"likely cause: {NORM_EPS} ") and text[verdict + 1].endswith(f"; fix: {result.likely[0]['fix']}")
    assert TraceResult.from_dict(result.to_dict()).likely == result.likely
    same = {path: {"kind": "LayerNorm", "settings": {"epsilon": 1e-12, "d_model": 3}} for path in burn_side}
    assert trace_dumps(with_modules(REFERENCE, "torch", torch_side), with_modules(run(), "burn", same)).likely == []


def norm_recording(step: float) -> Dump:
    """A recording of one module's output, each row scaled by 1 - step × (row + 1)."""
    scale = 1 - step * np.arange(1, 9, dtype=np.float64)[:, None]
    tensors = {"param/ln.weight": np.ones(16, np.float32), "act/ln": (X * scale).astype(np.float32)}
    return Dump(tensors, {"recording": "pita-record/1", "execution_order": json.dumps(["act/ln"])}, source="run")


@pytest.mark.parametrize("kind, step, fires", [("LayerNorm", 1e-3, True), ("RMSNorm", 1e-3, True), ("Linear", 1e-3, False), (None, 1e-3, False),
                                               ("LayerNorm", 0.05, False)])
def test_rows_scaled_near_one_are_a_norm_epsilon_only_in_a_norm_module(kind, step, fires):
    reference = norm_recording(0)
    if kind is not None:
        reference.metadata["modules"] = json.dumps({"ln": {"kind": kind, "settings": {}}})
    result = trace_dumps(reference, norm_recording(step))
    assert result.first_divergence.name == "act/ln"
    norm_eps = setting_owner(f"{kind}.eps") if kind in ("LayerNorm", "RMSNorm") else NORM_EPS  # each norm's epsilon has its chapter
    assert (norm_eps in [c["id"] for c in result.likely]) == fires
    if fires:
        assert result.likely[0]["evidence"].startswith(f"act/ln in ln ({kind}): candidate = s × reference, one factor per slice")


# --- the matcher on its own ------------------------------------------------------------------------

ENTRY = lambda *signatures: (Entry("pX", "a pitfall", "book/pX.md", "the fix", signatures),)


def test_a_setting_signature_names_the_setting_with_both_values():
    facts = Facts(settings=[{"module": "optimizer", "kind": "AdamW", "name": "eps", "reference": 1e-08, "candidate": 1e-05, "chapter": "pY"}])
    [cause] = likely_causes([], facts, None, ENTRY(Signature("setting", settings=("Adam|AdamW.eps",))))
    assert cause.evidence == "AdamW eps 1e-08 against 1e-05"
    assert likely_causes([], facts, None, ENTRY(Signature("setting", settings=("AdamW.weight_decay",)))) == []


def test_a_masks_signature_fires_only_on_masks_not_replayed():
    masks = ENTRY(Signature("masks"))
    [cause] = likely_causes([], Facts(), {"reference": 2, "first": "mask1/drop", "replayed": 0}, masks)
    assert cause.evidence == "the reference recorded 2 random mask(s) (first mask1/drop) and the candidate drew its own"
    assert likely_causes([], Facts(), None, masks) == []


def test_two_pitfalls_are_ordered_by_how_much_of_each_matched():
    loose = Entry("pA", "loose", "book/pA.md", "", (Signature("diagnosis", diagnosis="scale"),))
    tight = Entry("pB", "tight", "book/pB.md", "", (Signature("diagnosis", diagnosis="scale", factor="batch_size", phase="backward"),))
    result = compare_dumps(dump({"w.grad": W}, batch_size=2), dump({"w.grad": 2 * W}, batch_size=2))
    causes = comparison_causes(result, Facts(batch_sizes={2}), (loose, tight))
    assert [c.id for c in causes] == ["pB", "pA"]
    assert [tensor_finding(t).phase for t in result.tensors] == ["backward"]


def test_a_trace_that_is_ok_has_no_likely_cause():
    result = trace_dumps(REFERENCE, run())
    assert result.ok and trace_causes(result, Facts(), entries=ENTRY(Signature("diagnosis", diagnosis="scale"))) == []


@pytest.mark.parametrize("arguments, message", [
    ({"finding": "number"}, "is not one of"),
    ({"finding": "setting"}, "names its settings"),
    ({"finding": "setting", "settings": ("eps",)}, "is named `Kind.name`"),
    ({"finding": "diagnosis"}, "names the diagnosis kind"),
    ({"finding": "diagnosis", "diagnosis": "scale", "factor": "two"}, "factor 'two'"),
])
def test_a_malformed_signature_is_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        Signature(**arguments)


def test_the_shipped_catalog_reads_back_and_names_each_chapter_and_fix():
    entries = catalog()
    assert {BATCH_SIZE, BIASED_VARIANCE, NORM_EPS, *owners(diagnosis="transpose"), *setting_owners("AdamW.eps")} <= {e.id for e in entries}
    for entry in entries:
        assert entry.chapter == f"book/{entry.id}.md" and entry.fix and entry.signatures
        assert all(Signature.from_dict(s.to_dict()) == s for s in entry.signatures)
