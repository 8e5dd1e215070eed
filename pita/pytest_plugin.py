"""pytest plugin: the `assert_parity` fixture, with defaults from the `pita_atol`, `pita_rtol`
and `pita_ulp` ini options. Loads without importing torch (entry point `pytest11`)."""

from __future__ import annotations

import functools

import pytest


def pytest_addoption(parser):
    parser.addini("pita_atol", "default absolute tolerance for assert_parity", default="1e-6")
    parser.addini("pita_rtol", "default relative tolerance for assert_parity", default="0")
    parser.addini("pita_ulp", "default ULP tolerance for assert_parity (empty: none)", default="")


@pytest.fixture
def assert_parity(request):
    """`assert_parity(reference, candidate, **overrides)` with this project's default tolerances."""
    from pita.parity import assert_parity as check

    config = request.config
    ulp = config.getini("pita_ulp")
    defaults = {"atol": float(config.getini("pita_atol")), "rtol": float(config.getini("pita_rtol")),
                "ulp": int(ulp) if ulp else None}
    return functools.partial(check, **defaults)
