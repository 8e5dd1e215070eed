"""pita trace on light recordings that pita.torch.record writes (`steps=N, every=k`, with its
float64 run): the same run recorded twice stays within the budget at every step; a weight decay
1% larger leaves step 1 within float32 noise and the budget only after several steps. Skips
without torch."""

import json

import pytest

from conftest import pita

STEPS, EVERY = 25, 5


def _record(torch, path, weight_decay: float):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=weight_decay)
    import pita.torch

    return pita.torch.record(model, x, y, torch.nn.CrossEntropyLoss(), path, optimizer=optimizer, steps=STEPS, every=EVERY, float64=True)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    torch = pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("torch-long")
    for name, decay in (("reference", 0.01), ("candidate", 0.01), ("decay", 0.0101)):
        _record(torch, folder / f"{name}.safetensors", decay)
    return folder


def _trace(folder, candidate) -> tuple[int, dict]:
    proc = pita("trace", folder / "reference.safetensors", folder / f"{candidate}.safetensors", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_the_same_run_recorded_twice_is_within_the_budget_at_every_step(recordings):
    code, report = _trace(recordings, "candidate")
    assert (code, report["ok"], report["first_step_beyond_budget"], report["every"]) == (0, True, None, EVERY)
    assert report["judged_by"] == "float64 budget"
    assert [row["step"] for row in report["steps"]] == list(range(1, STEPS + 1))
    assert [row["step"] for row in report["steps"] if row["params"] is not None] == [1, 5, 10, 15, 20, 25]
    assert all(row["gradnorm"]["compared"] == 4 for row in report["steps"])


def test_a_slightly_larger_weight_decay_leaves_the_budget_only_later(recordings):
    code, report = _trace(recordings, "decay")
    first = report["first_step_beyond_budget"]
    assert code == 1 and not report["ok"] and first is not None and first > 1, report["verdict"]
    rows = {row["step"]: row for row in report["steps"]}
    assert rows[1]["within_budget"] and all(rows[k]["within_budget"] for k in range(1, first))
    assert not rows[first]["within_budget"]
    assert f"the run departs from the reference at step {first}" in report["verdict"]
