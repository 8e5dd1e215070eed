"""Findings that rest on one element stand only where another tensor shows the same finding."""

import numpy as np
import pytest

from conftest import f32
from pita import diagnose
from pita.compare import Tolerance
from pita.diagnose.base import Context, Diagnosis, format_factor


def offset(value: float, tentative: bool) -> Diagnosis:
    return Diagnosis("offset", {"value": value}, f"+ {value}", 0.0, tentative=tentative)


@pytest.mark.parametrize("lone, firm", [(0.00012, 0.00014), (1e-5, -1e-5), (0.5, 0.50004)])
def test_contradicting_parameters_are_two_findings(lone, firm):
    found = [[offset(lone, tentative=True)], [offset(firm, tentative=False)]]
    diagnose.corroborate(found)
    assert found[0] == []


@pytest.mark.parametrize("lone, firm", [(0.5, 0.5), (0.5, 0.5000003), (4.000001, 4.0)])
def test_parameters_equal_within_float32_rounding_are_one_finding(lone, firm):
    found = [[offset(lone, tentative=True)], [offset(firm, tentative=False)]]
    diagnose.corroborate(found)
    assert [d.kind for d in found[0]] == ["offset"] and "same finding" in found[0][0].message


@pytest.mark.parametrize("firm_offset, kept", [(0.00012, True), (0.00014, False), (0.000125, False)])
def test_a_lone_offset_is_kept_only_beside_the_same_offset_elsewhere(firm_offset, kept):
    # 1.00012 - 1 in float32 is 0.000119925: the same offset as 0.00012 within float32's rounding
    tol, context = Tolerance(), Context()
    reference = np.float32([0.1, 0.2, 0.3])
    found = [diagnose.explain(f32([1.0]), f32([1.00012]), tol, context),
             diagnose.explain(reference, reference + np.float32(firm_offset), tol, context)]
    diagnose.corroborate(found)
    assert ("offset" in [d.kind for d in found[0]]) == kept


def test_a_factor_near_one_is_printed_with_the_digits_that_tell_it_from_one():
    assert format_factor(1.0000029) == "1.000003"
    assert format_factor(0.99996) == "0.99996"
    assert (format_factor(4.0000001), format_factor(0.25), format_factor(-3.0)) == ("4", "1/4", "-3")
    found = diagnose.explain(f32([-1.5, -1.4, -1.3, -1.2]), (np.float32([-1.5, -1.4, -1.3, -1.2]) * np.float32(1.0000029)), Tolerance(atol=0), Context())
    assert found[0].kind == "scale" and "candidate = 1 × reference" not in found[0].message
