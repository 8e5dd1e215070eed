"""Optimizer settings (pita.settings) read from both recorders' metadata and compared, and what
trace says with them: settings first, random masks, and steps that differ only in noise."""

import json

import numpy as np
from test_trace import REFERENCE, edited, run

from pita.settings import compare_settings, optimizer_settings, table
from pita.trace import render_trace_text, trace_dumps


def chapter(torch_kind: str, name: str) -> str:
    """The pitfall the settings table names for PyTorch's `kind.name` (read, not typed here)."""
    return next(row.id for row in table() if torch_kind in row.torch_kind.split("|") and row.torch_name == name)


ADAMW = chapter("AdamW", "eps")

TORCH_ADAMW = {"framework": "torch", "name": "AdamW",
               "groups": [{"lr": 0.001, "betas": [0.9, 0.999], "eps": 1e-08, "weight_decay": 0.01, "amsgrad": False, "maximize": False,
                           "foreach": None, "capturable": False, "differentiable": False, "fused": None}]}


def burn_adamw(**config) -> dict:
    # burn keeps these in f32: 1e-8 is written back as 9.99999993922529e-09
    defaults = {"beta_1": 0.8999999761581421, "beta_2": 0.9990000128746033, "epsilon": 9.99999993922529e-06,
                "weight_decay": 9.999999747378752e-05, "cautious_weight_decay": False, "amsgrad": False, "grad_clipping": None}
    return {"framework": "burn", "name": "AdamWConfig", "lr": 0.001, "config": {**defaults, **config}}


def metadata(optimizer: dict) -> dict:
    return {"optimizer": json.dumps(optimizer)}


def test_burns_defaults_against_pytorchs_are_named():
    compared = compare_settings(metadata(TORCH_ADAMW), metadata(burn_adamw()))
    assert {d.name: (d.reference, d.candidate) for d in compared.differences} == {
        "eps": (1e-08, 9.99999993922529e-06), "weight_decay": (0.01, 9.999999747378752e-05)}
    assert compared.not_compared == []
    assert compared.differences[0].text() == "eps: 1e-08 against 1e-05"


def test_settings_configured_alike_match_through_float32():
    port = burn_adamw(epsilon=9.99999993922529e-09, weight_decay=0.009999999776482582)
    compared = compare_settings(metadata(TORCH_ADAMW), metadata(port))
    assert compared.differences == [] and len(compared.settings) == 6  # optimizer, lr, betas, eps, weight_decay, amsgrad


def test_sgd_and_adam_read_burns_optional_parts():
    torch_sgd = {"framework": "torch", "name": "SGD", "groups": [{"lr": 0.1, "momentum": 0.9, "dampening": 0, "nesterov": False,
                                                                   "weight_decay": 0, "maximize": False}]}
    burn_sgd = {"framework": "burn", "name": "SgdConfig", "lr": 0.1,
                "config": {"weight_decay": None, "momentum": {"momentum": 0.9, "dampening": 0.1, "nesterov": False}, "gradient_clipping": None}}
    compared = compare_settings(metadata(torch_sgd), metadata(burn_sgd))
    assert [d.text() for d in compared.differences] == ["dampening: 0 against 0.1"]  # burn's MomentumConfig default
    burn_adam = {"framework": "burn", "name": "AdamConfig", "lr": 0.001, "config": {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-8,
                                                                                 "amsgrad": False, "weight_decay": None, "grad_clipping": None}}
    assert optimizer_settings(metadata(burn_adam))[1]["weight_decay"] == 0.0
    compared = compare_settings(metadata(TORCH_ADAMW), metadata(burn_adam))
    assert compared.differences[0].text() == "optimizer: AdamW against Adam"


def test_what_cannot_be_compared_is_listed_never_dropped():
    clipped = burn_adamw(grad_clipping={"Norm": 1.0})
    assert "grad_clipping (burn only)" in compare_settings(metadata(TORCH_ADAMW), metadata(clipped)).not_compared
    other = {"framework": "burn", "name": "LionConfig", "lr": 0.1, "config": {"beta_1": 0.9}}
    assert any("LionConfig: no mapping" in n for n in compare_settings(metadata(TORCH_ADAMW), metadata(other)).not_compared)
    for broken in ("not json", "[1, 2]", json.dumps({"framework": "torch", "groups": []})):
        assert optimizer_settings({"optimizer": broken}) is None
    assert compare_settings({}, {}) is None
    assert compare_settings({}, metadata(TORCH_ADAMW)).not_compared == ["optimizer (recorded by the candidate only)"]


def with_optimizer(dump, optimizer: dict, **extra):
    return type(dump)(dict(dump.tensors), {**dump.metadata, "optimizer": json.dumps(optimizer), **extra}, source=dump.source)


def test_trace_names_the_setting_when_the_step_differs():
    reference = with_optimizer(REFERENCE, TORCH_ADAMW)
    result = trace_dumps(reference, with_optimizer(run(lr=0.2), burn_adamw()))
    assert result.first_divergence.phase == "step" and "the optimizer's settings differ: eps: 1e-08 against 1e-05" in result.verdict
    headline = render_trace_text(result).splitlines()[0]
    assert headline.startswith(f"settings: 2 differences: eps: 1e-08 against 1e-05 (book/{ADAMW}.md); "
                               f"weight_decay: 0.01 against 0.0001 (book/{ADAMW}.md); 6 compared")
    same = burn_adamw(epsilon=9.99999993922529e-09, weight_decay=0.009999999776482582)
    result = trace_dumps(reference, with_optimizer(run(lr=0.2), same))
    assert "although the optimizer's recorded settings match (6 compared)" in result.verdict


def test_settings_that_differ_fail_even_when_every_tensor_matched():
    result = trace_dumps(with_optimizer(REFERENCE, TORCH_ADAMW), with_optimizer(run(), burn_adamw()))
    assert not result.ok and result.first_divergence is None and "the optimizer's settings differ" in result.verdict
    assert result.to_dict()["settings"]["differences"][0]["name"] == "eps"


def test_a_forward_departure_after_a_random_op_is_the_masks():
    masks = {"mask1/relu": np.ones((5, 3), dtype=bool), "mask2/relu": np.ones((5, 3), dtype=bool)}
    reference = type(REFERENCE)({**REFERENCE.tensors, **masks}, dict(REFERENCE.metadata), source="run")
    candidate = run(relu_slope=0.01)
    result = trace_dumps(reference, candidate)
    assert result.random_masks == {"reference": 2, "first": "mask1/relu", "replayed": 0}
    assert result.verdict.startswith("random masks differ (expected across frameworks)") and "pita::replay" in result.verdict
    assert all(not name.startswith("mask") for p in result.to_dict()["phases"] for name in p["missing"])  # masks are not walked
    replayed = type(candidate)(dict(candidate.tensors), {**candidate.metadata, "masks_replayed": "2"}, source="run")
    result = trace_dumps(reference, replayed)  # the masks were replayed: the port's own mistake
    assert result.random_masks is None and result.verdict.startswith("the forward pass departs at act/relu")


def test_a_step_that_differs_only_where_the_gradient_is_noise_is_said_so():
    noise = np.float32([1e-9, -2e-9, 1e-9])
    reference = edited(REFERENCE, grad__fc1__bias=noise)
    candidate = edited(run(), grad__fc1__bias=-noise, step1__fc1__bias=run().tensors["step1/fc1.bias"] + np.float32(5e-3))
    result = trace_dumps(reference, candidate)
    assert result.first_divergence.name == "step1/fc1.bias" and result.noise_gradients == ["grad/fc1.bias"]
    assert "only where float32 noise decides the gradient (grad/fc1.bias" in result.verdict
    signal = edited(run(), step1__fc1__bias=run().tensors["step1/fc1.bias"] + np.float32(5e-3))
    assert trace_dumps(REFERENCE, signal).noise_gradients == []  # negative control: a gradient of signal


def test_a_tiny_gradient_element_carrying_the_tensors_rounding_is_noise_too():
    """An element 1e-6 of its tensor's largest, whose sides differ by the tensor's rounding: Adam
    normalises each element alone and blows that up. A step that differs where the gradient is
    large, with the gradients equal, is the optimizer's own (the negative control)."""
    gradient = np.float32([0.5, -0.25, 5e-7])
    reference = edited(REFERENCE, grad__fc1__bias=gradient)
    moved = run().tensors["step1/fc1.bias"] + np.float32([0, 0, 5e-3])
    candidate = edited(run(), grad__fc1__bias=gradient + np.float32([0, 0, 2e-9]), step1__fc1__bias=moved)
    assert trace_dumps(reference, candidate).noise_gradients == ["grad/fc1.bias"]
    large = edited(run(), grad__fc1__bias=gradient, step1__fc1__bias=run().tensors["step1/fc1.bias"] + np.float32([5e-3, 0, 0]))
    assert trace_dumps(reference, large).noise_gradients == []


def with_modules(dump, framework: str, modules: dict):
    return type(dump)(dict(dump.tensors), {**dump.metadata, "framework": framework, "modules": json.dumps(modules)}, source=dump.source)


def test_modules_with_one_difference_are_grouped_in_the_text_and_each_listed_in_the_json():
    torch_side = {f"layer.{i}.norm": {"kind": "LayerNorm", "settings": {"eps": 1e-12, "normalized_shape": [3]}} for i in range(3)}
    burn_side = {f"layer.{i}.norm": {"kind": "LayerNorm", "settings": {"epsilon": 1e-05, "d_model": 3}} for i in range(3)}
    result = trace_dumps(with_modules(REFERENCE, "torch", torch_side), with_modules(run(), "burn", burn_side))
    assert [d["module"] for d in result.to_dict()["settings"]["differences"]] == ["layer.0.norm", "layer.1.norm", "layer.2.norm"]
    assert render_trace_text(result).startswith(
        f"settings: 3 differences: layer.0.norm and 2 more LayerNorm (×3) eps: 1e-12 against 1e-05 (book/{chapter('LayerNorm', 'eps')}.md); "
        "6 compared; 6 not compared")
    assert render_trace_text(result).endswith(" MISMATCH\n")
    assert not result.ok and result.first_divergence is None
    same = {path: {"kind": "LayerNorm", "settings": {"epsilon": 1e-12, "d_model": 3}} for path in burn_side}
    assert trace_dumps(with_modules(REFERENCE, "torch", torch_side), with_modules(run(), "burn", same)).ok


def test_one_frameworks_recordings_compare_the_same_names_directly():
    ours = {"drop": {"kind": "Dropout", "settings": {"p": 0.1}}}
    theirs = {"drop": {"kind": "Dropout", "settings": {"p": 0.2}}}
    compared = compare_settings({"framework": "torch", "modules": json.dumps(ours)}, {"framework": "torch", "modules": json.dumps(theirs)})
    assert [d.to_dict() for d in compared.differences] == [
        {"module": "drop", "kind": "Dropout", "name": "p", "reference": 0.1, "candidate": 0.2, "chapter": None}]
    other = {"drop": {"kind": "Identity", "settings": {}}}
    compared = compare_settings({"framework": "torch", "modules": json.dumps(ours)}, {"framework": "torch", "modules": json.dumps(other)})
    assert compared.settings == [] and compared.not_compared == ["drop (Dropout against Identity: not one kind)"]


def test_a_setting_one_framework_does_not_have_is_compared_with_what_it_computes():
    torch_bn = {"bn": {"kind": "BatchNorm2d", "settings": {"eps": 1e-05, "momentum": None, "affine": False, "track_running_stats": True,
                                                           "num_features": 2}}}
    burn_bn = {"bn": {"kind": "BatchNorm", "settings": {"epsilon": 1e-05, "momentum": 0.1, "num_features": 2}}}
    compared = compare_settings({"framework": "torch", "modules": json.dumps(torch_bn)}, {"framework": "burn", "modules": json.dumps(burn_bn)})
    assert sorted((d.name, d.reference, d.candidate, d.chapter) for d in compared.differences) == [
        ("affine", False, True, chapter("BatchNorm2d", "affine")),  # burn's BatchNorm is always affine
        ("momentum", None, 0.1, chapter("BatchNorm2d", "momentum"))]


def test_an_optimizer_difference_is_named_before_a_forward_divergence():
    result = trace_dumps(with_optimizer(REFERENCE, TORCH_ADAMW), with_optimizer(run(relu_slope=0.01), burn_adamw()))
    assert result.first_divergence.phase == "forward"
    assert result.verdict.startswith(f"the settings differ: eps: 1e-08 against 1e-05 (book/{ADAMW}.md); weight_decay: 0.01 against 0.0001 (book/{ADAMW}.md); "
                                     "and in the numbers: the forward pass departs at act/relu")


def test_a_setting_burn_lacks_and_ports_supply_in_code_is_not_compared_but_listed():
    """Embedding.padding_idx: burn's Embedding has none (a port applies it with pita::padding_idx),
    so a value is listed as not compared, with its chapter, and never counts as a difference."""
    torch_side = {"embed": {"kind": "Embedding", "settings": {"num_embeddings": 5, "embedding_dim": 3, "padding_idx": 0}}}
    burn_side = {"embed": {"kind": "Embedding", "settings": {"n_embedding": 5, "d_model": 3}}}
    compared = compare_settings({"framework": "torch", "modules": json.dumps(torch_side)}, {"framework": "burn", "modules": json.dumps(burn_side)})
    assert compared.differences == [] and len(compared.settings) >= 2
    assert [n for n in compared.not_compared if "padding_idx" in n] == [
        f"embed Embedding.padding_idx=0 (burn has no such setting: the port supplies it in code, book/{chapter('Embedding', 'padding_idx')}.md)"]


def test_burns_debug_text_of_an_activation_compares_by_its_leading_word():
    layer = lambda kind, settings: {"layer": {"kind": kind, "settings": settings}}
    for burn_text, differs in (("Gelu(Gelu { approximate: false })", False), ("Relu", True)):
        compared = compare_settings({"framework": "torch", "modules": json.dumps(layer("TransformerEncoderLayer", {"activation": "gelu"}))},
                                    {"framework": "burn", "modules": json.dumps(layer("TransformerEncoderLayer", {"activation": burn_text}))})
        assert bool(compared.differences) == differs, burn_text
