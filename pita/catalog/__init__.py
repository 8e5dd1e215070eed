"""The catalog: every experiment pita knows, by id, in main-line order.

Each experiment is a module `pNN.py` (or `pNNx.py`) here that defines `EXPERIMENT`; modules are
discovered, so adding an experiment touches no shared file."""

from __future__ import annotations

import importlib
import pkgutil
import re

from pita.errors import UsageError
from pita.experiment import Experiment

_ID = re.compile(r"^p(\d+)([a-z]?)$")


def _discover() -> dict[str, Experiment]:
    found = {}
    for module in pkgutil.iter_modules(__path__):
        if _ID.match(module.name):
            experiment = importlib.import_module(f"{__name__}.{module.name}").EXPERIMENT
            if experiment.id != module.name:
                raise RuntimeError(f"pita/catalog/{module.name}.py defines experiment {experiment.id!r}")
            found[experiment.id] = experiment
    return dict(sorted(found.items(), key=lambda item: order_key(item[0])))


def order_key(experiment_id: str) -> tuple[int, str]:
    number, letter = _ID.match(experiment_id).groups()
    return int(number), letter


EXPERIMENTS: dict[str, Experiment] = _discover()


def get(experiment_id: str) -> Experiment:
    try:
        return EXPERIMENTS[experiment_id]
    except KeyError:
        raise UsageError(f"unknown experiment {experiment_id!r} (known: {', '.join(EXPERIMENTS)})") from None
