"""pytest plugin: the `assert_parity` fixture, with defaults from the `pita_atol`, `pita_rtol`
and `pita_ulp` ini options. Loads without importing torch (entry point `pytest11`)."""

from __future__ import annotations

import functools

import pytest


def pytest_addoption(parser):
    # Empty atol and rtol: each float dtype's default, as in `pita compare` (float32: 1e-6, 0).
    parser.addini("pita_atol", "default absolute tolerance for assert_parity (empty: per dtype)", default="")
    parser.addini("pita_rtol", "default relative tolerance for assert_parity (empty: per dtype)", default="")
    parser.addini("pita_ulp", "default ULP tolerance for assert_parity (empty: none)", default="")


@pytest.fixture
def assert_parity(request):
    """`assert_parity(reference, candidate, **overrides)` with this project's default tolerances."""
    from pita.parity import assert_parity as check

    option = lambda name, kind: kind(text) if (text := request.config.getini(name)) else None
    defaults = {"atol": option("pita_atol", float), "rtol": option("pita_rtol", float), "ulp": option("pita_ulp", int)}
    return functools.partial(check, **defaults)
