"""The catalog: every experiment pita knows, by id."""

from __future__ import annotations

from pita.catalog import p12
from pita.errors import UsageError
from pita.experiment import Experiment

EXPERIMENTS: dict[str, Experiment] = {e.id: e for e in (p12.EXPERIMENT,)}


def get(experiment_id: str) -> Experiment:
    try:
        return EXPERIMENTS[experiment_id]
    except KeyError:
        raise UsageError(f"unknown experiment {experiment_id!r} (known: {', '.join(EXPERIMENTS)})") from None
