"""The float64 budget (pita.budget): float32 noise judged against a float64 run, on an MLP computed
three times with numpy (float64: the truth; float32: the reference; float32 summed in another
order: a correct candidate), and planted mistakes that must stay mismatches."""

import json

import numpy as np
import pytest

from conftest import pita
from pita.budget import BUDGET_FACTOR, FLOOR_ULPS, budget_of, named_reference64, ulp_at
from pita.compare import compare_dumps
from pita.dump import Dump, write_dump
from pita.errors import UsageError
from pita.trace import render_trace_text, trace_dumps

RNG = np.random.default_rng(7)
X = (RNG.standard_normal((16, 24)) * 30).astype(np.float32)  # large values: float32 noise far beyond atol 1e-6
TARGET = RNG.standard_normal((16, 8)).astype(np.float32)
INITIAL = {"fc1.weight": RNG.standard_normal((32, 24)), "fc1.bias": RNG.standard_normal(32),
           "fc2.weight": RNG.standard_normal((8, 32)), "fc2.bias": RNG.standard_normal(8)}
ORDER = ["act/fc1", "act/relu", "act/fc2"]


def matmul(a, b, reverse: bool):
    """a @ b, summed in the other order when `reverse` (another port's kernels)."""
    return a[:, ::-1] @ b[::-1, :] if reverse else a @ b


def run(dtype=np.float32, *, reverse=False, slope=0.0, scale_fc2=1.0, lr=1e-3):
    """One SGD step of fc1 -> relu -> fc2 with a mean squared error, in `dtype` arithmetic."""
    p = {k: v.astype(np.float32).astype(dtype) for k, v in INITIAL.items()}
    p["fc2.weight"] = (p["fc2.weight"] * dtype(scale_fc2)).astype(dtype)
    x, target = X.astype(dtype), TARGET.astype(dtype)
    h = matmul(x, p["fc1.weight"].T, reverse) + p["fc1.bias"]
    r = np.where(h > 0, h, dtype(slope) * h)
    y = matmul(r, p["fc2.weight"].T, reverse) + p["fc2.bias"]
    loss = ((y - target) ** 2).mean(dtype=dtype)
    dy = dtype(2) * (y - target) / dtype(y.size)
    dh = matmul(dy, p["fc2.weight"], reverse) * np.where(h > 0, dtype(1), dtype(slope))
    grads = {"fc2.weight": matmul(dy.T, r, reverse), "fc2.bias": dy.sum(0), "fc1.weight": matmul(dh.T, x, reverse), "fc1.bias": dh.sum(0)}
    tensors = {f"param/{k}": v for k, v in p.items()}
    tensors.update({"act/fc1": h, "act/relu": r, "act/fc2": y, "loss/1": np.asarray([loss], dtype=dtype)})
    tensors.update({f"grad/{k}": g for k, g in grads.items()})
    tensors.update({f"step1/{k}": v - dtype(lr) * grads[k] for k, v in p.items()})
    metadata = {"recording": "pita-record/1", "execution_order": json.dumps(ORDER), "steps": "1", "dtype": np.dtype(dtype).name}
    return Dump({k: np.asarray(v, dtype=dtype) for k, v in tensors.items()}, metadata, source="run")


REFERENCE, TRUTH = run(), run(np.float64)


def test_a_correct_port_is_within_the_budget_where_the_tolerance_fails():
    candidate = run(reverse=True)
    assert not trace_dumps(REFERENCE, candidate).ok  # negative control: float32 noise beyond atol 1e-6
    result = trace_dumps(REFERENCE, candidate, reference64=TRUTH)
    assert result.ok and result.judged_by == "float64 budget", render_trace_text(result)
    text = render_trace_text(result)
    assert "F32 (float64 budget)" not in text and text.splitlines()[-1] == "tol=F32:float64 budget OK"


@pytest.mark.parametrize(("mistake", "phase", "name"), [
    ({"scale_fc2": 1 + 1e-4}, "parameters", "param/fc2.weight"),
    ({"slope": 1e-3}, "forward", "act/relu"),
])
def test_a_mistake_is_beyond_the_budget_where_it_is_made(mistake, phase, name):
    result = trace_dumps(REFERENCE, run(reverse=True, **mistake), reference64=TRUTH)
    first = result.first_divergence
    assert not result.ok and (first.phase, first.name, first.introduced) == (phase, name, True)
    assert first.tensor.float64["ratio"] > BUDGET_FACTOR
    assert "beyond float32 noise" in render_trace_text(result)


def test_the_budget_is_the_references_own_error_or_a_floor_at_the_scale():
    exact = np.array([1.0, 3.0, -0.5])
    reference = (exact + [2**-20, 0, 0]).astype(np.float32)
    budget = budget_of(exact, reference)
    assert budget.scale == 3.0 and budget.floor == FLOOR_ULPS * 2.0**-22 and budget.reference_error == pytest.approx(2**-20)
    assert budget.allowed == BUDGET_FACTOR * budget.reference_error
    assert ulp_at(1.0, "F32") == 2.0**-23 and ulp_at(0.75, "BF16") == 2.0**-8 and ulp_at(0.0, "F32") == 0.0


def test_a_single_element_that_lands_on_the_truth_still_leaves_rounding_room():
    """A loss where PyTorch's float32 happens to be within 5e-9 of the truth: the candidate two
    ULPs away is noise, twenty is not (the floor, not the reference's luck, sets the budget)."""
    exact = np.float64([2.3456789])
    reference = exact.astype(np.float32)
    ulp = float(np.spacing(reference[0]))
    for ulps, ok in ((2, True), (20, False)):
        candidate = (reference + np.float32(ulps * ulp)).astype(np.float32)
        result = compare_dumps(Dump({"loss/1": reference}), Dump({"loss/1": candidate}), reference64=Dump({"loss/1": exact}))
        assert result.tensors[0].ok is ok, (ulps, result.tensors[0].float64)


def test_a_tensor_zero_in_exact_arithmetic_is_judged_by_its_noise():
    """The gradient of a bias in front of a BatchNorm: zero exactly, float32 noise on each side,
    which an absolute tolerance of 1e-9 calls a mismatch and the budget does not."""
    noise = np.random.default_rng(1).standard_normal((2, 64)) * 1e-8
    exact = np.zeros(64)
    reference, candidate = noise[0].astype(np.float32), noise[1].astype(np.float32)
    dumps = Dump({"grad/b": reference}), Dump({"grad/b": candidate})
    from pita.tolerance import Tolerance

    assert not compare_dumps(*dumps, Tolerance(atol=1e-9)).ok  # negative control
    result = compare_dumps(*dumps, Tolerance(atol=1e-9), reference64=Dump({"grad/b": exact}))
    assert result.ok and result.tensors[0].float64["ratio"] < BUDGET_FACTOR
    loud = compare_dumps(dumps[0], Dump({"grad/b": candidate * 100}), reference64=Dump({"grad/b": exact}))
    assert not loud.ok  # a hundred times the noise is not noise


def test_a_float64_run_must_hold_float64_tensors():
    with pytest.raises(UsageError, match="a float64 run holds F64 tensors"):
        compare_dumps(REFERENCE, REFERENCE, reference64=REFERENCE)


def test_the_reference_names_its_float64_run(tmp_path):
    write_dump(Dump(dict(REFERENCE.tensors), {**REFERENCE.metadata, "reference64": "run-float64.safetensors"}), tmp_path / "run.safetensors")
    write_dump(run(reverse=True), tmp_path / "port.safetensors")
    path, note = named_reference64(tmp_path / "run.safetensors", {"reference64": "run-float64.safetensors"})
    assert path is None and "not beside it" in note
    bare = pita("trace", "run.safetensors", "port.safetensors", cwd=tmp_path)
    assert bare.returncode == 1 and "not beside it" in bare.stdout  # judged by the tolerance: float32 noise fails
    write_dump(TRUTH, tmp_path / "run-float64.safetensors")
    found = pita("trace", "run.safetensors", "port.safetensors", cwd=tmp_path)
    assert found.returncode == 0, found.stdout
    assert "judged against the float64 run run-float64.safetensors" in found.stdout
    assert pita("trace", "run.safetensors", "port.safetensors", "--no-reference64", cwd=tmp_path).returncode == 1
    assert pita("compare", "run.safetensors", "port.safetensors", cwd=tmp_path).returncode == 0
    both = pita("trace", "run.safetensors", "port.safetensors", "--no-reference64", "--reference64", "run-float64.safetensors", cwd=tmp_path)
    assert both.returncode == 2 and both.stderr.count("\n") == 1


@pytest.mark.parametrize("named", ["../run-float64.safetensors", "/etc/passwd", "..", "a/b"])
def test_a_float64_run_named_outside_the_folder_is_refused(tmp_path, named):
    write_dump(Dump(dict(REFERENCE.tensors), {**REFERENCE.metadata, "reference64": named}), tmp_path / "run.safetensors")
    proc = pita("trace", "run.safetensors", "run.safetensors", cwd=tmp_path)
    assert proc.returncode == 2 and "is not a file name" in proc.stderr and proc.stderr.count("\n") == 1


def test_an_optimizer_step_may_differ_by_what_float32_settings_move():
    """burn holds beta_2 = 0.999 as 0.99900001287: Adam's update moves by ~1.3e-5 of itself. A
    parameter that starts at zero is all update, so that share is far beyond its ULPs; a share of
    1e-3 (an epsilon of 1e-5 against 1e-8 on gradients of 1e-2) is not within it."""
    from pita.budget import update_floor_of, update_share

    adam = {"optimizer": json.dumps({"framework": "torch", "name": "Adam", "groups": [{"betas": [0.9, 0.999]}]})}
    assert update_share(adam) == pytest.approx(1.2874603e-5) and update_share({}) == 2.0**-16
    before, update = np.zeros(64), np.random.default_rng(2).choice([-1e-2, 1e-2], 64) * (1 + np.linspace(0, 1, 64))
    exact = {"param/b": before, "step1/b": before - update}
    assert update_floor_of("step1/b", exact, 1e-5) == pytest.approx(2e-7) and update_floor_of("loss/1", exact, 1e-5) == 0.0
    reference = exact["step1/b"].astype(np.float32)
    for share, ok in ((1.3e-5, True), (1e-3, False)):
        candidate = (before - update * (1 - share)).astype(np.float32)
        result = compare_dumps(Dump({"step1/b": reference}, adam), Dump({"step1/b": candidate}),
                               reference64=Dump({"step1/b": exact["step1/b"], "param/b": before}))
        assert result.tensors[0].ok is ok, (share, result.tensors[0].float64)
