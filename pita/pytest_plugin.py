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


_DEFAULTS = pytest.StashKey[dict]()  # the ini tolerances, read once per run


def pytest_configure(config):
    # Read once, before any test runs: a value that is not a number stops the run with one line.
    config.stash[_DEFAULTS] = {"atol": _ini(config, "pita_atol", float), "rtol": _ini(config, "pita_rtol", float),
                               "ulp": _ini(config, "pita_ulp", int)}


@pytest.fixture
def assert_parity(request):
    """`assert_parity(reference, candidate, **overrides)` with this project's default tolerances."""
    from pita.parity import assert_parity as check

    return functools.partial(check, **request.config.stash[_DEFAULTS])



def _ini(config, name: str, kind: type):
    """An ini option as `kind`, None when empty; otherwise pytest's usage error naming the option."""
    text = config.getini(name)
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        raise pytest.UsageError(f"{name} = {text!r} in the pytest ini file: not {'an integer' if kind is int else 'a number'}") from None
