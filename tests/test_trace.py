"""pita trace on synthetic recordings (docs/recording.md), built with numpy: a two-layer MLP
`fc1 -> relu -> fc2`, one or two steps of SGD, and mistakes planted phase by phase."""

import json

import numpy as np
import pytest

from conftest import pita
from pita.compare import Tolerance
from pita.dump import Dump, write_dump
from pita.errors import UsageError
from pita.rules import load_rules
from pita.trace import PHASES, TraceResult, render_trace_json, render_trace_text, trace_dumps

ORDER = ["act/fc1", "act/relu", "act/fc2"]
RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 4)).astype(np.float32)
TARGET = RNG.standard_normal((5, 2)).astype(np.float32)
INITIAL = {"fc1.weight": RNG.standard_normal((3, 4)), "fc1.bias": RNG.standard_normal(3),
           "fc2.weight": RNG.standard_normal((2, 3)), "fc2.bias": RNG.standard_normal(2)}
PARAMS = {name: value.astype(np.float32) for name, value in INITIAL.items()}


def run(params=PARAMS, *, x=X, lr=0.1, steps=1, grad_scale=1.0, relu_slope=0.0, optim_state=False):
    """A recording of `steps` SGD steps of the MLP on `x` (float32; float64 arithmetic, rounded)."""
    params = {k: v.astype(np.float64) for k, v in params.items()}
    tensors = {f"param/{k}": v.astype(np.float32) for k, v in params.items()}
    for k in range(1, steps + 1):
        h = x @ params["fc1.weight"].T + params["fc1.bias"]
        r = np.where(h > 0, h, relu_slope * h)
        y = r @ params["fc2.weight"].T + params["fc2.bias"]
        loss = ((y - TARGET) ** 2).mean()
        dy = 2 * (y - TARGET) / y.size
        dr = dy @ params["fc2.weight"]
        dh = dr * np.where(h > 0, 1.0, relu_slope)
        grads = {"fc2.weight": dy.T @ r, "fc2.bias": dy.sum(0), "fc1.weight": dh.T @ x, "fc1.bias": dh.sum(0)}
        grads = {name: grad_scale * g for name, g in grads.items()}
        tensors[f"loss/{k}"] = np.float32([loss])
        if k == 1:
            tensors.update({"act/fc1": h.astype(np.float32), "act/relu": r.astype(np.float32), "act/fc2": y.astype(np.float32)})
            tensors.update({f"grad/{name}": g.astype(np.float32) for name, g in grads.items()})
        params = {name: value - lr * grads[name] for name, value in params.items()}
        tensors.update({f"step{k}/{name}": v.astype(np.float32) for name, v in params.items()})
        if optim_state:
            tensors.update({f"optim{k}/{name}/momentum_buffer": g.astype(np.float32) for name, g in grads.items()})
    metadata = {"recording": "pita-record/1", "execution_order": json.dumps(ORDER), "steps": str(steps), "dtype": "float32"}
    return Dump(tensors, metadata, source="run")


def edited(dump: Dump, **changes) -> Dump:
    """A copy with tensors replaced (a value) or removed (None); names use __ for / and . ."""
    tensors = dict(dump.tensors)
    for key, value in changes.items():
        name = key.replace("__", "/", 1).replace("__", ".")
        if value is None:
            del tensors[name]
        else:
            tensors[name] = value
    return Dump(tensors, dict(dump.metadata), source=dump.source)


def phase(report: dict, name: str) -> dict:
    return next(p for p in report["phases"] if p["phase"] == name)


REFERENCE = run()


def test_a_matching_pair_is_ok():
    result = trace_dumps(REFERENCE, run())
    report = result.to_dict()
    assert result.ok and report["ok"] and report["first_divergence"] is None
    assert [p["phase"] for p in report["phases"]] == list(PHASES)
    assert [(p["compared"], p["mismatched"], p["first"]) for p in report["phases"]] == [
        (4, 0, None), (3, 0, None), (1, 0, None), (4, 0, None), (4, 0, None)]
    assert report["load_audit"] == {"missing": [], "unused": [], "still_initial": []}
    assert "every phase matched" in report["verdict"]
    text = render_trace_text(result)
    assert text.splitlines()[0] == "first divergence: none (every phase matched)"
    assert text.splitlines()[-1] == "tol=1e-06 OK"


def test_the_json_has_the_documented_keys():
    candidate = run({**PARAMS, "fc2.weight": 2 * PARAMS["fc2.weight"]})
    report = trace_dumps(REFERENCE, candidate, tolerance=None, rules=None).to_dict()
    assert {"ok", "verdict", "first_divergence", "phases", "load_audit", "reference", "candidate", "tolerance",
            "mappings", "notes"} <= set(report)
    first = report["first_divergence"]
    assert {"phase", "name", "introduced", "inherited_from", "status", "diagnosis", "module_parameters", "notes", "tensor"} <= set(first)
    assert {"phase", "compared", "mismatched", "first", "introduced", "inherited_from", "missing", "extra",
            "mismatches"} <= set(report["phases"][0])
    assert {"kind", "factor"} <= set(first["diagnosis"][0])
    json.dumps(report, allow_nan=False)


def test_a_parameter_mismatch_is_found_first_and_later_phases_inherit_it():
    """A square layer whose weight was loaded transposed (no shape error to catch it)."""
    square = RNG.standard_normal((3, 3)).astype(np.float32)
    reference = run({**PARAMS, "fc1.weight": square}, x=X[:, :3])
    candidate = run({**PARAMS, "fc1.weight": square.T.copy()}, x=X[:, :3])
    result = trace_dumps(reference, candidate)
    report = result.to_dict()
    first = report["first_divergence"]
    assert (first["phase"], first["name"], first["introduced"], first["status"]) == ("parameters", "param/fc1.weight", True, "mismatch")
    assert [d["kind"] for d in first["diagnosis"]] == ["transpose"]
    assert phase(report, "forward")["first"] == "act/fc1"
    assert phase(report, "forward")["introduced"] is False and phase(report, "forward")["inherited_from"] == "param/fc1.weight"
    assert phase(report, "loss")["inherited_from"] == "param/fc1.weight"
    assert "loaded" in report["verdict"]
    headline = render_trace_text(result).splitlines()[0]
    assert headline.startswith("first divergence: parameters param/fc1.weight (introduced): transpose: ")


def test_an_activation_before_the_wrong_parameter_is_introduced_not_inherited():
    """fc2's weight is wrong, which act/fc1 does not use: a mismatch there is the port's own."""
    candidate = run({**PARAMS, "fc2.weight": 2 * PARAMS["fc2.weight"]})
    candidate = edited(candidate, act__fc1=candidate.tensors["act/fc1"] + 1)
    report = trace_dumps(REFERENCE, candidate).to_dict()
    assert report["first_divergence"]["name"] == "param/fc2.weight"
    forward = phase(report, "forward")
    assert forward["first"] == "act/fc1" and forward["introduced"] is True
    mismatches = {m["name"]: m for m in forward["mismatches"]}
    assert mismatches["act/fc2"]["introduced"] is False and mismatches["act/fc2"]["inherited_from"] == "param/fc2.weight"


def test_only_the_wrong_module_and_later_ones_inherit_from_a_parameter():
    candidate = run({**PARAMS, "fc2.bias": PARAMS["fc2.bias"] + 1})
    report = trace_dumps(REFERENCE, candidate).to_dict()
    forward = phase(report, "forward")
    assert [m["name"] for m in forward["mismatches"]] == ["act/fc2"]
    assert forward["inherited_from"] == "param/fc2.bias"


def test_a_forward_mismatch_whose_parameters_match_is_introduced_with_its_module_diagnosed():
    candidate = run(relu_slope=0.01)  # a leaky ReLU where the reference has a ReLU
    result = trace_dumps(REFERENCE, candidate)
    report = result.to_dict()
    first = report["first_divergence"]
    assert (first["phase"], first["name"], first["introduced"]) == ("forward", "act/relu", True)
    assert first["module_parameters"] == []  # a ReLU has none
    assert "act/relu" in report["verdict"] and "computes differently" in report["verdict"]
    assert phase(report, "backward")["inherited_from"] == "act/relu"

    scaled = edited(run(), act__fc2=REFERENCE.tensors["act/fc2"] * 3)
    first = trace_dumps(REFERENCE, scaled).to_dict()["first_divergence"]
    assert first["name"] == "act/fc2" and first["diagnosis"][0]["kind"] == "scale"
    assert [(p["name"], p["status"]) for p in first["module_parameters"]] == [("param/fc2.bias", "ok"), ("param/fc2.weight", "ok")]
    assert "its module's parameters: param/fc2.bias OK, param/fc2.weight OK" in render_trace_text(trace_dumps(REFERENCE, scaled))


def test_the_loss_phase():
    candidate = edited(run(), loss__1=REFERENCE.tensors["loss/1"] * 2)
    report = trace_dumps(REFERENCE, candidate).to_dict()
    assert (report["first_divergence"]["phase"], report["first_divergence"]["name"]) == ("loss", "loss/1")
    assert "loss function" in report["verdict"]


def test_backward_is_walked_in_reverse_execution_order():
    candidate = run(grad_scale=4.0)
    candidate.metadata["batch_size"] = REFERENCE.metadata["batch_size"] = "4"
    try:
        report = trace_dumps(REFERENCE, candidate).to_dict()
    finally:
        del REFERENCE.metadata["batch_size"]
    backward = phase(report, "backward")
    assert [m["name"] for m in backward["mismatches"]] == ["grad/fc2.bias", "grad/fc2.weight", "grad/fc1.bias", "grad/fc1.weight"]
    first = report["first_divergence"]
    assert (first["phase"], first["name"], first["introduced"]) == ("backward", "grad/fc2.bias", True)
    assert first["diagnosis"][0]["kind"] == "scale" and "batch size" in first["diagnosis"][0]["message"]
    assert "gradients differ" in report["verdict"]
    step = phase(report, "step")  # each step inherits from its own gradient
    assert step["first"] == "step1/fc1.bias" and step["inherited_from"] == "grad/fc1.bias"


def test_a_step_only_difference_blames_the_optimizer():
    report = trace_dumps(REFERENCE, run(lr=0.2)).to_dict()
    first = report["first_divergence"]
    assert (first["phase"], first["introduced"]) == ("step", True)
    assert "the optimizer or its hyper-parameters differ" in report["verdict"]
    assert [p["mismatched"] for p in report["phases"]] == [0, 0, 0, 0, 4]


def test_optimizer_state_is_compared_in_the_step_phase():
    reference = run(optim_state=True, steps=2)
    candidate = run(optim_state=True, steps=2)
    candidate.tensors["optim1/fc2.weight/momentum_buffer"] = reference.tensors["optim1/fc2.weight/momentum_buffer"] * 0.9
    report = trace_dumps(reference, candidate).to_dict()
    step = phase(report, "step")
    assert step["compared"] == 2 * 4 + 2 * 4 + 1  # step1, optim1, loss/2, step2, optim2
    assert step["first"] == "optim1/fc2.weight/momentum_buffer" and step["introduced"] is True
    assert "optimizer" in report["verdict"]


def test_later_steps_inherit_from_the_first():
    reference, candidate = run(steps=2), run(steps=2, lr=0.2)
    report = trace_dumps(reference, candidate).to_dict()
    step = phase(report, "step")
    names = [m["name"] for m in step["mismatches"]]
    assert names[:4] == ["step1/fc1.bias", "step1/fc1.weight", "step1/fc2.bias", "step1/fc2.weight"]
    assert names.index("loss/2") == 4 and names[5].startswith("step2/")
    later = {m["name"]: m for m in step["mismatches"]}
    assert later["loss/2"]["inherited_from"] == "step1/fc1.bias" and later["step2/fc2.weight"]["introduced"] is False


def test_the_load_audit_missing_unused_and_still_initial():
    extra = np.float32([1.0, 2.0])
    candidate = edited(run(), param__fc2__bias=None, param__fc2__beta=extra)
    report = trace_dumps(REFERENCE, candidate).to_dict()
    assert report["load_audit"] == {"missing": ["param/fc2.bias"], "unused": ["param/fc2.beta"], "still_initial": []}
    first = report["first_divergence"]
    assert (first["phase"], first["name"], first["status"], first["diagnosis"]) == ("parameters", "param/fc2.bias", "missing", [])
    assert any("[[rename]]" in note for note in first["notes"])  # the unused one of the same module may be it
    assert phase(report, "parameters")["missing"] == ["param/fc2.bias"] and phase(report, "parameters")["extra"] == ["param/fc2.beta"]
    assert "no param/fc2.bias" in report["verdict"]


def test_a_parameter_the_load_never_reached_is_still_initial():
    initial = {name: (value * 0.5).astype(np.float32) for name, value in PARAMS.items()}
    initial["fc1.bias"] = PARAMS["fc1.bias"]  # loaded with its initial value: matches, not flagged
    loaded = {**PARAMS, "fc2.weight": initial["fc2.weight"]}  # never loaded
    candidate = run(loaded)
    candidate.tensors.update({f"init/{name}": value for name, value in initial.items()})
    result = trace_dumps(REFERENCE, candidate)
    report = result.to_dict()
    assert report["load_audit"]["still_initial"] == ["param/fc2.weight"]
    assert report["first_divergence"]["name"] == "param/fc2.weight"
    assert "never loaded" in report["verdict"]
    assert any("init/" in note for note in report["first_divergence"]["notes"])
    assert phase(report, "parameters")["compared"] == 4  # init/ tensors are not compared
    assert "load audit: 1 still initial: param/fc2.weight" in render_trace_text(result)


def test_rules_renames_and_transposes_apply(tmp_path):
    tensors = {}
    for name, value in run().tensors.items():
        name = name.replace("fc1.bias", "fc1.beta")
        tensors[name] = value.T.copy() if name == "param/fc2.weight" else value
    candidate = Dump(tensors, dict(REFERENCE.metadata))
    assert not trace_dumps(REFERENCE, candidate).ok
    rules = tmp_path / "rules.toml"
    rules.write_text("[[rename]]\npattern = '^(.*)\\.beta$'\nreplace = '\\1.bias'\n\n"
                     "[[transpose]]\nname = \"param/fc2.weight\"\n")
    result = trace_dumps(REFERENCE, candidate, rules=load_rules(rules))
    assert result.ok, render_trace_text(result)
    assert any("rename" in mapping for mapping in result.to_dict()["mappings"])


def test_renames_on_the_reference_apply_to_its_execution_order(tmp_path):
    reference = Dump({name.replace("act/relu", "act/act"): value for name, value in REFERENCE.tensors.items()},
                     {**REFERENCE.metadata, "execution_order": json.dumps(["act/fc1", "act/act", "act/fc2"])})
    rules = tmp_path / "rules.toml"
    rules.write_text("[[rename]]\nside = \"reference\"\npattern = '^act/act$'\nreplace = 'act/relu'\n")
    candidate = run(relu_slope=0.01)
    report = trace_dumps(reference, candidate, rules=load_rules(rules)).to_dict()
    assert [n for n in report["notes"] if not n.startswith("judged by the tolerance")] == [] and report["first_divergence"]["name"] == "act/relu"


def test_a_tolerance_loosens_as_in_compare():
    candidate = run({**PARAMS, "fc2.bias": PARAMS["fc2.bias"] + np.float32(1e-3)})
    assert not trace_dumps(REFERENCE, candidate).ok
    assert trace_dumps(REFERENCE, candidate, tolerance=Tolerance.from_options(atol=0.1)).ok


def test_without_execution_order_activations_are_walked_in_name_order_with_a_note():
    reference = Dump(dict(REFERENCE.tensors), {k: v for k, v in REFERENCE.metadata.items() if k != "execution_order"})
    report = trace_dumps(reference, run(relu_slope=0.01)).to_dict()
    assert any("no execution_order" in note for note in report["notes"])
    assert [m["name"] for m in phase(report, "forward")["mismatches"]] == ["act/fc2", "act/relu"]  # name order


def test_an_activation_a_side_did_not_record_is_unobserved_not_a_divergence():
    result = trace_dumps(REFERENCE, edited(run(), act__relu=None))
    report = result.to_dict()
    assert result.ok and report["first_divergence"] is None and report["unobserved"] == ["act/relu"]
    assert phase(report, "forward")["missing"] == ["act/relu"]
    assert "1 activation(s) recorded on one side only were not observed, first act/relu" in report["verdict"]
    strict = trace_dumps(REFERENCE, edited(run(), act__relu=None), strict=True)  # today's rule: a gap fails
    assert not strict.ok and strict.first_divergence is None and strict.to_dict()["unobserved"] == []
    assert "recorded on one side only" in strict.verdict
    gap = trace_dumps(REFERENCE, edited(run(), grad__fc1__bias=None))  # only activations are unobserved: a gradient is a gap
    assert not gap.ok and "recorded on one side only (first grad/fc1.bias)" in gap.verdict
    candidate = edited(run(), act__relu=None)
    candidate.tensors["act/fc2"] = candidate.tensors["act/fc2"] + 1
    first = trace_dumps(REFERENCE, candidate).to_dict()["first_divergence"]
    assert first["name"] == "act/fc2" and any("may have diverged unseen" in note for note in first["notes"])


def test_enclosing_modules_and_repeated_calls():
    """`block.scale` belongs to `block`, whose call ends after its child `block.fc`'s: a child's
    mismatch still inherits from it. `act/fc#2` is fc's second call."""
    w, s = np.eye(2, dtype=np.float32), np.float32([2.0, 2.0])
    x = np.float32([[1.0, 2.0]])
    def recording(scale):
        fc = (x * scale) @ w.T
        return Dump({"param/block.scale": scale, "param/block.fc.weight": w, "act/block.fc": fc, "act/block": fc,
                     "act/fc": fc, "act/fc#2": fc + 1, "param/fc.weight": w, "loss/1": np.float32([fc.sum()])},
                    {"recording": "pita-record/1",
                     "execution_order": json.dumps(["act/block.fc", "act/block", "act/fc", "act/fc#2"])})
    report = trace_dumps(recording(s), recording(s * 3)).to_dict()
    forward = phase(report, "forward")
    assert [m["name"] for m in forward["mismatches"]] == ["act/block.fc", "act/block", "act/fc", "act/fc#2"]
    assert forward["inherited_from"] == "param/block.scale"
    assert [p["name"] for p in report["phases"][0]["mismatches"]] == ["param/block.scale"]


def test_a_dump_that_is_not_a_recording_is_refused():
    plain = Dump({"w": np.float32([1.0])}, source="plain.npz")
    with pytest.raises(UsageError, match="plain.npz is not a recording"):
        trace_dumps(plain, plain)
    other = Dump(dict(REFERENCE.tensors), {**REFERENCE.metadata, "recording": "pita-record/9"}, source="r")
    with pytest.raises(UsageError, match="pita-record/9"):
        trace_dumps(REFERENCE, other)
    with pytest.raises(UsageError, match="input hashes differ"):
        trace_dumps(Dump(REFERENCE.tensors, {**REFERENCE.metadata, "input_sha256": "a" * 64}),
                    Dump(REFERENCE.tensors, {**REFERENCE.metadata, "input_sha256": "b" * 64}))
    assert trace_dumps(Dump(REFERENCE.tensors, {**REFERENCE.metadata, "input_sha256": "a" * 64}),
                       Dump(REFERENCE.tensors, {**REFERENCE.metadata, "input_sha256": "b" * 64}), allow_input_mismatch=True).ok


def test_the_text_report_puts_the_first_divergence_first_and_one_line_per_phase():
    result = trace_dumps(REFERENCE, run({**PARAMS, "fc2.weight": 2 * PARAMS["fc2.weight"]}))
    lines = render_trace_text(result).splitlines()
    assert lines[0].startswith("first divergence: parameters param/fc2.weight (introduced): scale: candidate = 2 × reference")
    assert "    diagnosis scale: candidate = 2 × reference (after dividing by 2: max|diff| 0.00e+00)" in lines
    phase_lines = [line for line in lines if line.split(":")[0] in PHASES]
    assert phase_lines == [
        "parameters: 4 compared, 1 mismatched, first param/fc2.weight (introduced); load audit: clean",
        "forward: 3 compared, 1 mismatched, first act/fc2 (inherited from param/fc2.weight)",
        "loss: 1 compared, 1 mismatched, first loss/1 (inherited from param/fc2.weight)",
        "backward: 4 compared, 4 mismatched, first grad/fc2.bias (inherited from param/fc2.weight)",
        "step: 4 compared, 4 mismatched, first step1/fc1.bias (inherited from grad/fc1.bias)",
    ]
    assert lines[-1] == "tol=1e-06 MISMATCH"


@pytest.fixture
def recordings(tmp_path):
    write_dump(REFERENCE, tmp_path / "torch-record.safetensors")
    write_dump(run(), tmp_path / "same.safetensors")
    write_dump(run(lr=0.2), tmp_path / "lr.npz")
    write_dump(Dump({"w": np.float32([1.0])}), tmp_path / "plain.safetensors")
    return tmp_path


def test_the_cli_exit_codes(recordings):
    ok = pita("trace", "torch-record.safetensors", "same.safetensors", cwd=recordings)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[-1] == "tol=1e-06 OK"
    bad = pita("trace", "torch-record.safetensors", "lr.npz", cwd=recordings)
    assert bad.returncode == 1 and bad.stdout.startswith("first divergence: step step1/")
    assert pita("trace", "torch-record.safetensors", "lr.npz", "--atol", "2", cwd=recordings).returncode == 0
    for args in (("plain.safetensors", "same.safetensors"), ("torch-record.safetensors", "nope.safetensors"),
                 ("torch-record.safetensors", "same.safetensors", "--atol", "-1"),
                 ("torch-record.safetensors", "same.safetensors", "--rules", "nope.toml"),
                 ("torch-record.safetensors", "same.safetensors", "--reference64", "same.safetensors"),
                 ("torch-record.safetensors",)):
        proc = pita("trace", *args, cwd=recordings)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    refused = pita("trace", "plain.safetensors", "same.safetensors", cwd=recordings)
    assert "is not a recording" in refused.stderr


def test_the_cli_json(recordings):
    proc = pita("trace", "torch-record.safetensors", "lr.npz", "--format", "json", cwd=recordings)
    assert proc.returncode == 1
    report = json.loads(proc.stdout, parse_constant=lambda name: pytest.fail(f"non-standard JSON constant {name}"))
    assert report["ok"] is False and report["first_divergence"]["phase"] == "step"
    assert report["tolerance"]["atol"] == 1e-6 and "formula" in report["tolerance"]


def test_a_trace_result_survives_its_json_form_and_prints_the_same():
    scaled_fc2 = run({**PARAMS, "fc2.weight": 2 * PARAMS["fc2.weight"]})
    cases = {"matching": run(), "a wrong parameter, diagnosed": scaled_fc2, "a missing and an unused parameter":
             edited(run(), param__fc2__bias=None, param__fc2__beta=np.float32([1.0, 2.0])), "a step": run(lr=0.2)}
    for name, candidate in cases.items():
        result = trace_dumps(REFERENCE, candidate)
        data = json.loads(render_trace_json(result))
        again = TraceResult.from_dict(data)
        assert again.to_dict() == result.to_dict() == data, name
        assert render_trace_text(again) == render_trace_text(result) and again.ok == result.ok, name
    with pytest.raises(UsageError, match="^not a pita trace result: format 'pita-compare/1'"):
        TraceResult.from_dict({**data, "format": "pita-compare/1"})


def test_the_cli_writes_the_json_result_in_the_same_run(recordings):
    proc = pita("trace", "torch-record.safetensors", "lr.npz", "--json", "result.json", cwd=recordings)
    printed = pita("trace", "torch-record.safetensors", "lr.npz", "--format", "json", cwd=recordings)
    assert proc.stdout.startswith("first divergence: step step1/")
    assert (recordings / "result.json").read_text() == printed.stdout
    refused = pita("trace", "torch-record.safetensors", "lr.npz", "--json", "nowhere/result.json", cwd=recordings)
    assert refused.returncode == 2 and refused.stderr == "error: --json nowhere/result.json: folder nowhere does not exist\n"
