"""A `Tolerance` is checked wherever it is built: the constructor, `from_options`,
`dataclasses.replace`, a rules file's per-tensor entries, and `assert_parity`."""

import dataclasses
import math

import numpy as np
import pytest

import pita
from pita.compare import Tolerance as ReExported
from pita.errors import UsageError
from pita.rules import Rules
from pita.tolerance import Tolerance

REFUSED = [
    ({"atol": -5.0}, "atol must be a finite number, not negative, got -5.0"),
    ({"atol": math.inf}, "atol must be a finite number, not negative, got inf"),
    ({"rtol": math.nan}, "rtol must be a finite number, not negative, got nan"),
    ({"rtol": "0.1"}, "rtol must be a finite number, not negative, got '0.1'"),
    ({"atol": True}, "atol must be a finite number, not negative, got True"),
    ({"atol": 10**400}, "atol must be a finite number, not negative, got 1000"),
    ({"ulp": -1}, "ulp must be an integer from 0 to 9223372036854775807, got -1"),
    ({"ulp": 2.0}, "ulp must be an integer from 0 to 9223372036854775807, got 2.0"),
    ({"ulp": 2**63}, "ulp must be an integer from 0 to 9223372036854775807, got 9223372036854775808"),
    ({"equal_nan": "yes"}, "equal_nan must be true or false, got 'yes'"),
]


@pytest.mark.parametrize("fields, says", REFUSED)
def test_every_way_of_building_a_tolerance_refuses_a_bad_field_naming_it(fields, says):
    builders = [lambda: Tolerance(**fields), lambda: dataclasses.replace(Tolerance(), **fields)]
    if "equal_nan" not in fields:
        builders.append(lambda: Tolerance.from_options(**fields))
    for build in builders:
        with pytest.raises(UsageError) as refused:
            build()
        assert str(refused.value).startswith(says)
        assert refused.value.cli_message == "--" + str(refused.value)  # the command line names its flag


def test_fields_are_held_as_float_int_and_bool_whatever_number_type_was_given():
    tolerance = Tolerance(atol=np.float32(0.5), rtol=0, ulp=np.int64(3), equal_nan=np.True_)
    assert [(type(v), v) for v in (tolerance.atol, tolerance.rtol, tolerance.ulp, tolerance.equal_nan)] == [
        (float, 0.5), (float, 0.0), (int, 3), (bool, True)]
    assert Tolerance.from_options(ulp=None).ulp is None


def test_the_compare_module_still_offers_the_same_class():
    assert ReExported is Tolerance


def test_a_rules_object_built_in_code_is_checked_when_its_tolerance_is_applied():
    rules = Rules(tolerances={"*.bias": {"atol": -1.0}})
    assert rules.tolerance_for("fc.weight", Tolerance()) == Tolerance()
    with pytest.raises(UsageError, match="atol must be a finite number, not negative, got -1.0"):
        rules.tolerance_for("fc.bias", Tolerance())


def test_assert_parity_refuses_a_tolerance_that_would_pass_anything_or_nothing():
    same = {"w": np.float32([1.0, 2.0])}
    with pytest.raises(UsageError, match="^atol must be a finite number, not negative, got -5.0$"):
        pita.assert_parity(same, same, atol=-5.0, rtol=float("nan"))
    with pytest.raises(UsageError, match="^rtol must be a finite number, not negative, got nan$"):
        pita.assert_parity(same, same, rtol=float("nan"))
