"""A chapter is listed under a symptom its measurements show: the negative control's comparison in
the committed record (the direct port against PyTorch) must look like the symptom's description.

- 「前向一致，梯度不同」 (`grad-differs`): a gradient mismatches, and every forward tensor (neither
  a gradient nor a value after an optimizer step) matches within the comparison's tolerance.
- 「梯度一致，一步更新就不同」 (`update-differs`): every gradient matches, and something else does not.

Chapters whose record has no such comparison (a tutorial's traces) are not judged here."""

import re

import pytest

from pita_lab import catalog
from pita_lab.store import RecordStore

GRADIENT = re.compile(r"(^|\.)grad($|\.)|\.grad\b")
AFTER_A_STEP = re.compile(r"(^|\.)(step\d*|update|final)($|\.)")


def role(tensor_name: str) -> str:
    if GRADIENT.search(tensor_name):
        return "gradient"
    return "after-step" if AFTER_A_STEP.search(tensor_name) else "forward"


def evidence(tensors) -> dict[str, set[bool]]:
    """role -> the set of `ok` values its tensors had."""
    found: dict[str, set[bool]] = {}
    for tensor in tensors:
        found.setdefault(role(tensor.name), set()).add(tensor.ok)
    return found


def grad_differs(found) -> bool:
    return False in found.get("gradient", set()) and False not in found.get("forward", set())


def update_differs(found) -> bool:
    return False not in found.get("gradient", set()) and any(False in oks for oks in found.values())


RULES = {"grad-differs": grad_differs, "update-differs": update_differs}


def negative_control_tensors(root, experiment):
    control = experiment.negative_control
    record = RecordStore(root).committed(experiment.id)
    if control is None or record is None:
        return None
    run = next((c for c in record.comparisons if (c.reference, c.candidate) == (control.reference, control.candidate)), None)
    return run.tensors if run is not None and run.tensors else None


def test_roles_of_the_catalog_names():
    assert [role(n) for n in ("x.grad", "prelu.weight.grad", "tclamp.max.grad", "w.step1", "out.step1", "w1.update", "bias.final", "gelu(x)", "lr", "w")] == \
        ["gradient", "gradient", "gradient", "after-step", "after-step", "after-step", "after-step", "forward", "forward", "forward"]


@pytest.mark.parametrize("symptom", sorted(RULES))
def test_every_chapter_under_a_symptom_shows_it(root, symptom):
    wrong, judged = {}, 0
    for experiment_id in catalog.chapter_ids():
        experiment = catalog.get(experiment_id)
        if symptom not in experiment.symptoms:
            continue
        tensors = negative_control_tensors(root, experiment)
        if tensors is None:
            continue
        judged += 1
        found = evidence(tensors)
        if not RULES[symptom](found):
            wrong[experiment_id] = {name: sorted(oks) for name, oks in found.items()}
    assert judged and wrong == {}


def test_the_rules_refuse_the_contradicting_listings():
    """Negative controls of the rules, on measured records: p18's gradients differ (so it is not
    「梯度一致」), and p11b's loss itself differs (so it is not 「前向一致」)."""
    from conftest import ROOT
    p18 = evidence(negative_control_tensors(ROOT, catalog.get("p18")))
    p11b = evidence(negative_control_tensors(ROOT, catalog.get("p11b")))
    assert not update_differs(p18) and grad_differs(p18)
    assert not grad_differs(p11b)
