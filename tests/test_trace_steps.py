"""pita trace over a long run (docs/recording.md, "Long runs"): light recordings (`every`) of a
numpy MLP trained by SGD for 30 steps, written with pita.dump.write_dump as pita.torch.record
writes them: step 1 in full, then `loss/<k>` and `gradnorm<k>/<path>` at every step, and the
parameters at every 10th step and the last. The reference runs in float32 arithmetic, its float64
run in float64; the candidate computes in float32 in another order (its matrix products rounded
once from float64), and the mistaken one also decays its weights from step 5's update on, which
shows from step 6 (step 5's loss and gradients come before its update)."""

import json

import numpy as np
import pytest

from conftest import pita
from pita.dump import Dump, write_dump
from pita.errors import UsageError
from pita.trace import TraceResult, render_trace_text, trace_dumps

STEPS, EVERY, LR = 30, 10, 0.1
ORDER = ["act/fc1", "act/relu", "act/fc2"]
RNG = np.random.default_rng(7)
X = RNG.standard_normal((8, 16))
TARGET = RNG.standard_normal((8, 4))
INITIAL = {"fc1.weight": RNG.standard_normal((32, 16)) / 4, "fc1.bias": RNG.standard_normal(32) / 4,
           "fc2.weight": RNG.standard_normal((4, 32)) / 6, "fc2.bias": RNG.standard_normal(4) / 4}


def _reference_product(a, b):
    return a @ b


def _other_product(a, b):
    """float32 operands, the product rounded once from float64: another order than numpy's float32 sums."""
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


def run(dtype=np.float32, *, product=_reference_product, decay_from=None, steps=STEPS, every=EVERY) -> Dump:
    """A light recording of `steps` SGD steps of `fc1 -> relu -> fc2` with a mean squared error,
    computed in `dtype`; from step `decay_from`'s update on, weight decay 0.05 (the mistake)."""
    cast = lambda value: np.asarray(value, dtype=dtype)
    params = {name: cast(value) for name, value in INITIAL.items()}
    x, target = cast(X), cast(TARGET)
    tensors = {f"param/{name}": value for name, value in params.items()}
    for k in range(1, steps + 1):
        h = product(x, params["fc1.weight"].T) + params["fc1.bias"]
        r = np.maximum(h, cast(0))
        y = product(r, params["fc2.weight"].T) + params["fc2.bias"]
        loss = ((y - target) ** 2).mean(dtype=dtype)
        dy = cast(2) * (y - target) / cast(y.size)
        dh = product(dy, params["fc2.weight"]) * (h > 0)
        grads = {"fc2.weight": product(dy.T, r), "fc2.bias": dy.sum(0), "fc1.weight": product(dh.T, x), "fc1.bias": dh.sum(0)}
        tensors[f"loss/{k}"] = cast([loss])
        tensors.update({f"gradnorm{k}/{name}": cast(np.linalg.norm(g)) for name, g in grads.items()})
        if k == 1:
            tensors.update({"act/fc1": h, "act/relu": r, "act/fc2": y})
            tensors.update({f"grad/{name}": g for name, g in grads.items()})
        decay = cast(0.05 if decay_from is not None and k >= decay_from else 0.0)
        params = {name: cast(value - cast(LR) * (grads[name] + decay * value)) for name, value in params.items()}
        if k == 1 or k % every == 0 or k == steps:
            tensors.update({f"step{k}/{name}": value for name, value in params.items()})
    metadata = {"recording": "pita-record/1", "execution_order": json.dumps(ORDER), "steps": str(steps),
                "dtype": np.dtype(dtype).name, "every": str(every)}
    return Dump(tensors, metadata, source="run")


REFERENCE, REFERENCE64 = run(), run(np.float64)
CORRECT = run(product=_other_product)
MISTAKEN = run(product=_other_product, decay_from=5)


def test_the_recordings_hold_what_a_light_recording_holds():
    names = set(REFERENCE.tensors)
    assert {f"loss/{k}" for k in range(1, STEPS + 1)} <= names
    assert {f"gradnorm{k}/fc1.weight" for k in range(1, STEPS + 1)} <= names
    assert sorted({int(name[4:].partition("/")[0]) for name in names if name.startswith("step")}) == [1, 10, 20, 30]
    assert not any(name.startswith(("act/", "grad/")) and name.endswith("#2") for name in names)
    assert REFERENCE.tensors["gradnorm3/fc1.bias"].shape == ()


def test_a_correct_port_stays_within_the_budget_at_every_step():
    result = trace_dumps(REFERENCE, CORRECT, reference64=REFERENCE64)
    assert [row.step for row in result.steps] == list(range(1, STEPS + 1))
    assert result.first_step_beyond_budget is None
    assert result.ok, render_trace_text(result)
    assert all(row.within_budget for row in result.steps)
    # the candidate differs from the reference (float32 in another order): the section measures it
    assert any(row.loss.max_abs_diff > 0 for row in result.steps)
    checkpoints = [row.step for row in result.steps if row.params is not None]
    assert checkpoints == [1, 10, 20, 30]
    row = result.steps[9]
    assert (row.loss.name, row.loss.compared, row.gradnorm.compared, row.params.compared) == ("loss/10", 1, 4, 4)
    assert row.loss.allowed > 0 and row.loss.ratio <= 1
    assert row.loss.reference == pytest.approx(float(REFERENCE.tensors["loss/10"][0]))
    assert row.loss.candidate == pytest.approx(float(CORRECT.tensors["loss/10"][0]))


def test_a_port_that_drifts_after_step_5_leaves_the_budget_at_step_6():
    result = trace_dumps(REFERENCE, MISTAKEN, reference64=REFERENCE64)
    assert result.first_step_beyond_budget == 6
    assert not result.ok
    assert all(row.within_budget for row in result.steps[:5])
    row = result.steps[5]
    assert not row.within_budget and row.loss.beyond == 1 and row.loss.ratio > 1 and row.gradnorm.beyond >= 1
    assert row.params is None  # step 6 is not a checkpoint
    assert result.steps[9].params.beyond == 4
    # the error grows: the loss's share of its budget at the last step is beyond the one at step 6
    assert result.steps[-1].loss.ratio > result.steps[5].loss.ratio
    # the walk's first divergence is step 6's loss, and the verdict says where the run departs
    assert result.first_divergence.name == "loss/6"
    assert "step 1 matches in every phase and the run departs from the reference at step 6 (loss/6)" in result.verdict


def test_the_walk_puts_a_steps_gradient_norms_after_its_loss_and_before_its_parameters():
    result = trace_dumps(REFERENCE, CORRECT, reference64=REFERENCE64)
    order = [w.name for w in result.walked]
    assert order.index("loss/10") < order.index("gradnorm10/fc1.weight") < order.index("step10/fc1.weight")
    assert "step9/fc1.weight" not in order
    assert order.index("grad/fc1.weight") < order.index("gradnorm1/fc1.weight") < order.index("step1/fc1.weight")
    assert {w.phase for w in result.walked if w.name.startswith("gradnorm")} == {"step"}


def test_the_text_shows_the_first_step_beyond_and_how_error_grows():
    text = render_trace_text(trace_dumps(REFERENCE, MISTAKEN, reference64=REFERENCE64))
    lines = text.splitlines()
    assert "steps: 30 recorded (loss and gradient norms at each; parameters and buffers at 1, 10, 20, 30), judged by the float64 budget" in lines
    first = next(line for line in lines if line.startswith("first step beyond budget:"))
    assert first.startswith("first step beyond budget: 6 (loss ") and "gradnorm " in first
    rows = [line for line in lines if line.startswith("  step ")]
    assert [row.split(":")[0].strip() for row in rows] == ["step 1", "step 6", "step 10", "step 20", "step 30"]
    assert rows[0].endswith(" within") and rows[1].endswith(" BEYOND")
    assert "params " in rows[2] and "params " not in rows[1]


def test_the_json_has_every_step_and_reads_back():
    result = trace_dumps(REFERENCE, MISTAKEN, reference64=REFERENCE64)
    report = json.loads(json.dumps(result.to_dict()))
    assert report["first_step_beyond_budget"] == 6 and report["every"] == EVERY and report["ok"] is False
    assert len(report["steps"]) == STEPS
    row = report["steps"][5]
    assert set(row) == {"step", "loss", "gradnorm", "params", "within_budget"}
    assert row["step"] == 6 and row["within_budget"] is False and row["params"] is None
    assert set(row["loss"]) == {"name", "max_abs_diff", "allowed", "ratio", "compared", "beyond", "reference", "candidate"}
    again = TraceResult.from_dict(report)
    assert again.to_dict()["steps"] == report["steps"] and again.first_step_beyond_budget == 6


def test_a_recording_without_every_has_no_steps_section():
    full = Dump(dict(REFERENCE.tensors), {k: v for k, v in REFERENCE.metadata.items() if k != "every"}, source="run")
    result = trace_dumps(full, Dump(dict(CORRECT.tensors), dict(full.metadata), source="run"), reference64=REFERENCE64)
    assert result.steps == [] and "steps" not in result.to_dict() and "first_step_beyond_budget" not in result.to_dict()
    assert not any(line.startswith("steps:") for line in render_trace_text(result).splitlines())


def test_without_a_float64_run_the_steps_are_judged_by_the_tolerance():
    result = trace_dumps(REFERENCE, MISTAKEN)
    assert result.first_step_beyond_budget == 6
    assert all(row.loss.allowed is None and row.loss.ratio is None for row in result.steps)
    text = render_trace_text(result)
    assert "judged by the tolerance (no float64 run)" in text and "first step beyond tolerance: 6" in text
    assert "  step 6: loss |diff|=" in text


def test_a_malformed_every_is_refused():
    metadata = {**REFERENCE.metadata, "every": "ten"}
    with pytest.raises(UsageError, match="metadata every 'ten' is not a step count"):
        trace_dumps(Dump(dict(REFERENCE.tensors), metadata, source="run"), CORRECT)


def test_the_command_line_exits_1_where_a_step_leaves_the_budget(tmp_path):
    for name, dump in (("reference", REFERENCE), ("correct", CORRECT), ("mistaken", MISTAKEN)):
        if name == "reference":
            dump = Dump(dict(dump.tensors), {**dump.metadata, "reference64": "reference-float64.safetensors"})
        write_dump(dump, tmp_path / f"{name}.safetensors")
    write_dump(REFERENCE64, tmp_path / "reference-float64.safetensors")
    ok = pita("trace", tmp_path / "reference.safetensors", tmp_path / "correct.safetensors")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "first step beyond budget: none" in ok.stdout
    bad = pita("trace", tmp_path / "reference.safetensors", tmp_path / "mistaken.safetensors", "--format", "json")
    assert bad.returncode == 1, bad.stderr
    assert json.loads(bad.stdout)["first_step_beyond_budget"] == 6


def test_a_kinds_worst_is_one_beyond_its_budget_before_one_excused_further_out():
    """A tensor excused as float32 noise (ok, though beyond its budget) is not the step's worst
    while another is beyond its budget unexcused."""
    from pita.compare import TensorResult
    from pita.trace import Entry, _step_error

    def entry(name, ok, diff):
        result = TensorResult(name, ok=ok, n=1, shape=[], candidate_shape=[], max_abs_diff=diff, float64={"allowed": 1.0})
        return Entry(name, "step", "ok" if ok else "mismatch", result)

    worst = _step_error([entry("gradnorm4/a", True, 3.0), entry("gradnorm4/b", False, 1.5), entry("gradnorm4/c", True, 0.5)], None)
    assert (worst.name, worst.ratio, worst.beyond, worst.compared) == ("gradnorm4/b", 1.5, 1, 3)


def test_trace_shows_its_progress_on_a_terminal_only(tmp_path):
    write_dump(REFERENCE, tmp_path / "reference.safetensors")
    write_dump(CORRECT, tmp_path / "candidate.safetensors")
    write_dump(REFERENCE64, tmp_path / "reference-float64.safetensors")
    args = ("trace", tmp_path / "reference.safetensors", tmp_path / "candidate.safetensors", "--reference64", tmp_path / "reference-float64.safetensors")
    quiet = _pita_bytes({}, *args)  # stderr is a pipe: nothing drawn
    assert quiet.returncode == 0 and quiet.stderr == ""
    forced = _pita_bytes({"PITA_PROGRESS": "1"}, *args)
    assert forced.returncode == 0 and forced.stdout == quiet.stdout
    frames = [frame.rstrip() for frame in forced.stderr.split("\r") if frame.strip()]
    assert frames[0] == "[1/177] trace float64 budget act/fc1…"  # the budgets first, then the pairs' results
    assert "[1/177] trace act/fc1…" in frames
    assert forced.stderr.endswith("\r") and "\n" not in forced.stderr  # each line cleared: nothing left on the terminal


def _pita_bytes(env: dict, *args):
    """The CLI with `env` added, its output decoded without turning carriage returns into newlines."""
    import os
    import subprocess
    import sys

    inherited = {key: value for key, value in os.environ.items() if key != "PITA_PROGRESS"}
    proc = subprocess.run([sys.executable, "-m", "pita", *map(str, args)], capture_output=True, env={**inherited, **env})
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def _with_loss(dump: Dump, k: int, shift: float) -> Dump:
    return Dump({**dump.tensors, f"loss/{k}": dump.tensors[f"loss/{k}"] + np.float32(shift)}, dict(dump.metadata), source="run")


def test_a_later_loss_is_allowed_the_drift_of_the_optimizers_float32_settings():
    """loss/<k>, k >= 2, of a long run: one scalar's own error is one sample, so its floor is the
    share of each update that float32 settings move (2^-16 without recorded betas) times the
    truth's total variation so far; a shift within it passes, twice it does not."""
    from pita.budget import BUDGET_FACTOR, UPDATE_SHARE_DEFAULT

    truth = [float(REFERENCE64.tensors[f"loss/{k}"][0]) for k in range(1, 16)]
    drift = BUDGET_FACTOR * UPDATE_SHARE_DEFAULT * sum(abs(b - a) for a, b in zip(truth, truth[1:]))
    tight = trace_dumps(REFERENCE, CORRECT, reference64=REFERENCE64).steps[14].loss.allowed
    assert drift == pytest.approx(tight, rel=1e-9)  # the budget at step 15 is the drift's
    within = trace_dumps(REFERENCE, _with_loss(CORRECT, 15, 0.5 * drift), reference64=REFERENCE64)
    assert within.ok and within.first_step_beyond_budget is None
    beyond = trace_dumps(REFERENCE, _with_loss(CORRECT, 15, 2 * drift), reference64=REFERENCE64)
    assert beyond.first_step_beyond_budget == 15 and beyond.first_divergence.name == "loss/15"
    # a recording of every step (no `every`) keeps one scalar's own budget: the same shift is beyond it
    full = {k: v for k, v in REFERENCE.metadata.items() if k != "every"}
    strict = trace_dumps(Dump(dict(REFERENCE.tensors), full, source="run"),
                         Dump(dict(_with_loss(CORRECT, 15, 0.5 * drift).tensors), full, source="run"), reference64=REFERENCE64)
    assert not strict.ok and strict.first_divergence.name == "loss/15"


def test_a_checkpoints_update_floor_is_the_change_since_the_last_checkpoint():
    from pita.budget import update_floor_of

    exact = REFERENCE64.tensors
    since = np.abs(exact["step20/fc1.weight"] - exact["step10/fc1.weight"]).max()
    assert update_floor_of("step20/fc1.weight", exact, 0.5) == pytest.approx(0.5 * since)
    assert update_floor_of("step10/fc1.weight", exact, 0.5) == pytest.approx(0.5 * np.abs(exact["step10/fc1.weight"] - exact["step1/fc1.weight"]).max())
    assert update_floor_of("step1/fc1.weight", exact, 0.5) == pytest.approx(0.5 * np.abs(exact["step1/fc1.weight"] - exact["param/fc1.weight"]).max())
