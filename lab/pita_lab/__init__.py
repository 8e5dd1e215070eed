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
    """The source checkout the lab runs in; a clear error anywhere else (a lab installed from a
    wheel into site-packages, or a checkout missing its experiments or cargo workspace)."""
    missing = [name for name, there in (("Cargo.toml", (_CHECKOUT / "Cargo.toml").is_file()),
                                        ("experiments/", (_CHECKOUT / "experiments").is_dir())) if not there]
    if missing:
        raise UsageError(f"pita's lab runs only from a source checkout, and {_CHECKOUT} is not one "
                         f"(no {' or '.join(missing)}): clone the repository and run scripts/setup, "
                         "which installs the lab editable from it (pita compare needs only the library)")
    return _CHECKOUT
