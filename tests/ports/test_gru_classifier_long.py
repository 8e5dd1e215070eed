"""The GRU classifier port (ports/gru-classifier/) over a long run: 100 steps of AdamW with
PyTorch's StepLR(step_size=30, gamma=0.1), dropout off (a light trace holds step 1's masks only),
recorded as a light trace on both sides (the loss and the gradient norms every step, the parameters
every 10 steps; docs/recording.md), and `pita trace` follows the run step by step against the
float64 run's budget.

The plant `scheduler-after-step` is a mistake that shows only later: burn's `LrScheduler::step`
returns the rate of the step about to be taken, PyTorch's `scheduler.step()` after
`optimizer.step()` sets the next one's; ported in PyTorch's order, each rate lags one step. The
two runs are the same up to the first update whose rate differs, which the test finds from the
rates both runs print, not from a number written here. The correct port stays
within the budget at every step (trace allows a long run's losses and gradient norms the drift the
optimizer's float32 settings make of it); the plant is the port row for row until its departure,
then beyond the budget there.

Needs torch and cargo (skips without them); after the build, about a minute of CPU."""

import math
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT, cargo_binary, run, trace_json

pytestmark = pytest.mark.integration

PORT = ROOT / "ports" / "gru-classifier"
BINARY = "port-gru-classifier"
STEPS, EVERY = 100, 10
LR, STEP_SIZE, GAMMA = 1e-2, 30, 0.1  # pytorch.py's AdamW rate and StepLR
PLANT = "scheduler-after-step"
LONG = ("--steps", str(STEPS), "--every", str(EVERY), "--no-dropout")  # a light trace holds step 1's masks only


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """The PyTorch side, run once: 100 steps, a light trace with its float64 run."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("gru-long")
    proc = run(sys.executable, PORT / "pytorch.py", "--out", out, *LONG)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def binary() -> Path:
    return cargo_binary(BINARY)


@pytest.fixture(scope="module")
def runs(out, binary) -> dict:
    """plant -> (the rate each step used, as the port printed it; trace's exit code and JSON; its text)."""
    found = {}
    for plant in ("none", PLANT):
        proc = run(binary, "--out", out, "--plant", plant, *LONG)
        assert proc.returncode == 0, proc.stderr[-4000:]
        rates = {int(k): float(lr) for k, lr in re.findall(r"^step (\d+) lr (\S+) loss ", proc.stdout, re.MULTILINE)}
        assert sorted(rates) == list(range(1, STEPS + 1)), proc.stdout[-2000:]
        reference, candidate = out / "torch-record.safetensors", out / f"burn-{'port' if plant == 'none' else plant}.safetensors"
        text = run(sys.executable, "-m", "pita", "trace", reference, candidate).stdout
        found[plant] = (rates, *trace_json(reference, candidate), text)
    return found


def step_lr_rates() -> list[float]:
    """PyTorch's StepLR, stepped after each optimizer step: the rate of steps 1..STEPS."""
    torch = pytest.importorskip("torch")
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=LR)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=STEP_SIZE, gamma=GAMMA)
    rates = []
    for _ in range(STEPS):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def test_the_port_steps_the_rate_as_pytorch_does(runs):
    rates = runs["none"][0]
    assert all(math.isclose(rates[k], expected, rel_tol=1e-12) for k, expected in enumerate(step_lr_rates(), start=1)), rates


def test_the_light_trace_holds_what_contract_5_lists(out, runs):
    from pita.dump import read_dump

    for path in (out / "torch-record.safetensors", out / "burn-port.safetensors"):
        recording = read_dump(path)
        assert (recording.metadata["every"], recording.metadata["steps"]) == (str(EVERY), str(STEPS)), path
        checkpoints = {int(m.group(1)) for name in recording.tensors if (m := re.match(r"step(\d+)/", name))}
        assert checkpoints == {1, *range(EVERY, STEPS + 1, EVERY)}, path
        norms = {int(m.group(1)) for name in recording.tensors if (m := re.match(r"gradnorm(\d+)/", name))}
        assert norms == set(range(1, STEPS + 1)), path


def test_the_correct_port_stays_within_the_budget_for_every_step(runs):
    _, code, report, text = runs["none"]
    assert report["first_step_beyond_budget"] is None, text
    assert (code, report["ok"]) == (0, True), report["verdict"]
    rows = report["steps"]
    assert [row["step"] for row in rows] == list(range(1, STEPS + 1))
    assert all(row["within_budget"] and row["loss"] is not None and row["gradnorm"] is not None for row in rows)
    assert [row["step"] for row in rows if row["params"] is not None] == [1, *range(EVERY, STEPS + 1, EVERY)]


def first_departure(plant_rates: dict, port_rates: dict) -> int:
    """The first step whose parameters the plant leaves elsewhere than the port, and the first
    step trace can see it at: the update of the first step whose rate differs shows in the
    parameters recorded after it when it is a checkpoint, else in the next step's loss and
    gradient norms (computed from those parameters)."""
    update = next(k for k in sorted(port_rates) if not math.isclose(plant_rates[k], port_rates[k], rel_tol=1e-12))
    return update if update % EVERY == 0 or update == STEPS else update + 1


def test_the_plant_is_the_port_until_its_rate_first_differs(runs):
    """Bit for bit the same run up to the first update whose rate differs, then far beyond the
    budget at the first step trace sees: ten times the largest share of its budget the correct
    port reaches at any step (whatever trace's judgement of one step, the two runs separate there)."""
    port_rates, _, port, _ = runs["none"]
    plant_rates, _, plant, text = runs[PLANT]
    # PyTorch's order: the first rate is the optimizer's own, the scheduler's first rate comes one step late
    assert plant_rates[1] == LR and all(plant_rates[k] == port_rates[k - 1] for k in range(2, STEPS + 1))
    expected = first_departure(plant_rates, port_rates)
    assert expected > 1  # the schedule's first change of rate comes after step 1: step 1 matches
    port_rows, plant_rows = ({row["step"]: row for row in report["steps"]} for report in (port, plant))
    assert all(plant_rows[k] == port_rows[k] for k in range(1, expected)), text
    worst_of_port = max(part["ratio"] for row in port_rows.values() for part in (row["loss"], row["gradnorm"], row["params"]) if part)
    departed = plant_rows[expected]
    assert max(part["ratio"] for part in (departed["loss"], departed["gradnorm"], departed["params"]) if part) > 10 * worst_of_port, text


def test_the_scheduler_plant_leaves_the_budget_only_later(runs):
    port_rates = runs["none"][0]
    plant_rates, code, report, text = runs[PLANT]
    expected = first_departure(plant_rates, port_rates)
    assert (code, report["ok"], report["first_step_beyond_budget"]) == (1, False, expected), text
    rows = {row["step"]: row for row in report["steps"]}
    assert all(rows[k]["within_budget"] for k in range(1, expected)), text
    assert f"first step beyond budget: {expected}" in text
