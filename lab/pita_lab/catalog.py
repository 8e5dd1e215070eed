"""The catalog: every experiment pita knows, by id, in main-line order.

Each experiment is a folder `experiments/<id>-<what-goes-wrong>/` holding its declaration
(`experiment.py`, which defines `EXPERIMENT`), its PyTorch script (`pytorch.py`), its burn
program (`burn.rs`, a crate of the workspace), its compile-fail cases (`compile_fail/*.rs` with
their `.stderr` snapshots) and its chapter template (`chapter.md.j2`). Folders are discovered,
so adding an experiment creates one folder and edits no shared file. `get` imports only the
declaration it needs; `all_experiments` imports every one."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from functools import cache
from pathlib import Path

from pita.errors import UsageError
from pita_lab import repo_root
from pita_lab.experiment import Experiment

FOLDER = re.compile(r"^(p(\d+)([a-z]?))-([a-z0-9]+(?:-[a-z0-9]+)*)$")
# What each experiment folder holds; `compile_fail/` is optional.
FILES = ("experiment.py", "pytorch.py", "burn.rs", "Cargo.toml", "chapter.md.j2")
# A tutorial under examples/ is a worked port first: its burn side is a crate of its own layout.
TUTORIAL_FILES = ("experiment.py", "pytorch.py", "chapter.md.j2")


def experiments_dir() -> Path:
    return repo_root() / "experiments"


def examples_dir() -> Path:
    return repo_root() / "examples"


@cache
def tutorial_folders(directory: Path | None = None) -> dict[str, Path]:
    """Tutorials: worked ports under examples/ that declare an `experiment.py` (kind
    "tutorial"); the id is the folder's name. The book has a chapter for each."""
    root = directory or examples_dir()
    if not root.is_dir():
        return {}
    return {path.name: path for path in sorted(root.iterdir()) if (path / "experiment.py").is_file()}


def tutorial_ids() -> list[str]:
    return list(tutorial_folders())


@cache
def folders(directory: Path | None = None) -> dict[str, Path]:
    """experiment id -> its folder under `directory` (default experiments/), in main-line
    order, without importing anything."""
    found = {}
    for path in sorted((directory or experiments_dir()).iterdir()):
        if not path.is_dir() or path.name.startswith((".", "_")):
            continue
        match = FOLDER.match(path.name)
        if not match:
            raise UsageError(f"experiments/{path.name}: an experiment folder is named <id>-<what-goes-wrong>, e.g. p12-loss-not-reduced")
        if match.group(1) in found:
            raise UsageError(f"experiments/{path.name}: id {match.group(1)} is also experiments/{found[match.group(1)].name}")
        found[match.group(1)] = path
    return {i: found[i] for i in sorted(found, key=order_key)}


def ids() -> list[str]:
    """Every experiment id, in main-line order, without importing the declarations."""
    return list(folders())


def order_key(experiment_id: str) -> tuple[int, str]:
    number, letter = re.match(r"^p(\d+)([a-z]?)$", experiment_id).groups()
    return int(number), letter


def compile_fail_cases(folder: Path) -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in (folder / "compile_fail").glob("*.rs")))


def load(folder: Path, tutorial: bool = False) -> Experiment:
    """The experiment declared in `folder`, with the paths and cases the folder gives it."""
    place = "examples" if tutorial else "experiments"
    needed = TUTORIAL_FILES if tutorial else FILES
    missing = [name for name in needed if not (folder / name).is_file()]
    if missing:
        raise UsageError(f"{place}/{folder.name}: missing {', '.join(missing)} (see docs/adding-an-experiment.md)")
    experiment_id = folder.name if tutorial else FOLDER.match(folder.name).group(1)
    name = f"pita_lab.experiments.{experiment_id}".replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, folder / "experiment.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a class's module up there
    spec.loader.exec_module(module)
    experiment = getattr(module, "EXPERIMENT", None)
    if not isinstance(experiment, Experiment):
        raise UsageError(f"{place}/{folder.name}/experiment.py defines no EXPERIMENT = Experiment(...)")
    if experiment.id != experiment_id:
        raise UsageError(f"{place}/{folder.name}/experiment.py defines experiment {experiment.id!r}, not {experiment_id!r}")
    if (experiment.kind == "tutorial") != tutorial:
        raise UsageError(f"{place}/{folder.name}/experiment.py: kind 'tutorial' belongs under examples/, every other kind under experiments/")
    return dataclasses.replace(experiment, folder=f"{place}/{folder.name}", compile_fail=compile_fail_cases(folder))


@cache
def _load(experiment_id: str) -> Experiment:
    if experiment_id in tutorial_folders():
        return load(tutorial_folders()[experiment_id], tutorial=True)
    return load(folders()[experiment_id])


def all_experiments() -> dict[str, Experiment]:
    return {experiment_id: _load(experiment_id) for experiment_id in ids()}


def get(experiment_id: str) -> Experiment:
    if experiment_id not in folders() and experiment_id not in tutorial_folders():
        raise UsageError(f"unknown experiment {experiment_id!r} (known: {', '.join(ids() + tutorial_ids())})")
    return _load(experiment_id)
