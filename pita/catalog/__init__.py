"""The catalog: every experiment pita knows, by id, in main-line order.

Each experiment is a module `pNN.py` (or `pNNx.py`) here that defines `EXPERIMENT`; modules are
discovered, so adding an experiment touches no shared file. `get` imports only the module it
needs; `all_experiments` imports every one."""

from __future__ import annotations

import importlib
import pkgutil
import re

from pita.errors import UsageError
from pita.experiment import Experiment

_ID = re.compile(r"^p(\d+)([a-z]?)$")


def ids() -> list[str]:
    """Every experiment id, in main-line order, without importing the modules."""
    found = [m.name for m in pkgutil.iter_modules(__path__) if _ID.match(m.name)]
    return sorted(found, key=order_key)


def _load(experiment_id: str) -> Experiment:
    experiment = importlib.import_module(f"{__name__}.{experiment_id}").EXPERIMENT
    if experiment.id != experiment_id:
        raise RuntimeError(f"pita/catalog/{experiment_id}.py defines experiment {experiment.id!r}")
    return experiment


def order_key(experiment_id: str) -> tuple[int, str]:
    number, letter = _ID.match(experiment_id).groups()
    return int(number), letter


def all_experiments() -> dict[str, Experiment]:
    return {experiment_id: _load(experiment_id) for experiment_id in ids()}


def get(experiment_id: str) -> Experiment:
    if experiment_id not in ids():
        raise UsageError(f"unknown experiment {experiment_id!r} (known: {', '.join(ids())})")
    return _load(experiment_id)
