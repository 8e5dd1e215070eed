"""pita's lab: the catalog of paired experiments, their runs and claims, and the handbook.

The lab lives in a source checkout: its experiments are the folders under `experiments/`, its
burn programs are crates of the cargo workspace beside them. The library users install is
`pita`; the lab depends on it and never the other way round.
"""

from __future__ import annotations

from pathlib import Path

from pita.errors import UsageError

# lab/pita_lab/__init__.py -> the checkout
_CHECKOUT = Path(__file__).resolve().parents[2]


def repo_root() -> Path:
    """The source checkout the lab runs in; a clear error anywhere else."""
    if not ((_CHECKOUT / "Cargo.toml").is_file() and (_CHECKOUT / "experiments").is_dir()):
        raise UsageError(f"the lab needs a source checkout of pita (experiments/ and the cargo workspace), "
                         f"and {_CHECKOUT} is not one: clone the repository and run scripts/setup")
    return _CHECKOUT
