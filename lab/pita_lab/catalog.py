"""The catalog: every experiment pita knows, by id, in main-line order.

Each experiment is a folder `experiments/<id>-<what-goes-wrong>/` holding its declaration
(`experiment.py`, which defines `EXPERIMENT`), its PyTorch script (`pytorch.py`), its burn
program (`burn.rs`, a crate of the workspace), its compile-fail cases (`compile_fail/*.rs` with
their `.stderr` snapshots) and its chapter template (`chapter.md.j2`). Folders are discovered,
so adding an experiment creates one folder and edits no shared file. `get` imports only the
declaration it needs; `all_experiments` imports every one. Tutorials (worked ports under
examples/) and guides (the book's front and reference pages under guides/, folders shaped like an
experiment's) are discovered the same way, and so are the ports of public architectures under
ports/ that declare one; `chapter_ids` lists every id with a chapter."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from functools import cache
from pathlib import Path

from pita.errors import UsageError
from pita_lab import repo_root
from pita_lab.errors import BrokenExperiment
from pita_lab.experiment import Experiment

FOLDER = re.compile(r"^(p(\d+)([a-z]?))-([a-z0-9]+(?:-[a-z0-9]+)*)$")
# What each experiment folder holds; `compile_fail/` is optional.
FILES = ("experiment.py", "pytorch.py", "burn.rs", "Cargo.toml", "chapter.md.j2")
# A tutorial under examples/ is a worked port first: its burn side is a crate of its own layout.
TUTORIAL_FILES = ("experiment.py", "pytorch.py", "chapter.md.j2")
# The folders tutorials live in, each with the prefix of their ids: a worked port under examples/
# is named by its folder; a port under ports/ by its crate and binary, `port-<folder>`.
TUTORIAL_PLACES = {"examples": "", "ports": "port-"}
# A guide under guides/ (a front or reference page of the book) holds what an experiment does.
GUIDE_FILES = FILES


def experiments_dir() -> Path:
    return repo_root() / "experiments"


def examples_dir() -> Path:
    return repo_root() / "examples"


def ports_dir() -> Path:
    return repo_root() / "ports"


@cache
def tutorial_folders(directory: Path | None = None) -> dict[str, Path]:
    """Tutorials: ports under examples/ and ports/ (or under `directory`) that declare an
    `experiment.py` (kind "tutorial"); the id is the folder's name, with its place's prefix
    (`TUTORIAL_PLACES`). The book has a chapter for each."""
    roots = [directory] if directory else [repo_root() / place for place in TUTORIAL_PLACES]
    return {folder_id(path, root.name): path for root in roots if root.is_dir()
            for path in sorted(root.iterdir()) if (path / "experiment.py").is_file()}


def folder_id(folder: Path, place: str) -> str:
    """The id a folder under `place` declares: an experiment's `p<N>` prefix, else its name (a
    port's under ports/ with `port-`)."""
    if place == "experiments":
        return FOLDER.match(folder.name).group(1)
    return TUTORIAL_PLACES.get(place, "") + folder.name


def tutorial_ids() -> list[str]:
    return list(tutorial_folders())


def guides_dir() -> Path:
    return repo_root() / "guides"


@cache
def guide_folders(directory: Path | None = None) -> dict[str, Path]:
    """Guides: the book's front and reference pages under guides/ (kind "guide"), whose
    examples run like an experiment's; the id is the folder's name. Every folder there is one,
    so a half-made guide is refused by `load`, not skipped."""
    root = directory or guides_dir()
    if not root.is_dir():
        return {}
    return {path.name: path for path in sorted(root.iterdir()) if path.is_dir() and not path.name.startswith((".", "_"))}


# The guide every other page assumes has been read; the rest follow by name.
READ_FIRST = "reading"


def guide_ids() -> list[str]:
    return sorted(guide_folders(), key=lambda guide_id: (guide_id != READ_FIRST, guide_id))


def chapter_ids() -> list[str]:
    """Every id with a chapter, in the book's order: the guides (read first), the experiments
    along the main line, the tutorials."""
    return guide_ids() + ids() + tutorial_ids()


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
            raise BrokenExperiment(f"experiments/{path.name}: an experiment folder is named <id>-<what-goes-wrong>, e.g. p12-loss-not-reduced")
        if match.group(1) in found:
            raise BrokenExperiment(f"experiments/{path.name}: id {match.group(1)} is also experiments/{found[match.group(1)].name}")
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


def load(folder: Path, place: str = "experiments") -> Experiment:
    """The experiment declared in `folder` under `place` (experiments, examples, ports or
    guides), with the paths and cases the folder gives it."""
    needed = {**dict.fromkeys(TUTORIAL_PLACES, TUTORIAL_FILES), "guides": GUIDE_FILES}.get(place, FILES)
    missing = [name for name in needed if not (folder / name).is_file()]
    if missing:
        raise BrokenExperiment(f"{place}/{folder.name}: missing {', '.join(missing)} (see docs/adding-an-experiment.md)")
    experiment_id = folder_id(folder, place)
    name = f"pita_lab.experiments.{experiment_id}".replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, folder / "experiment.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a class's module up there
    try:
        spec.loader.exec_module(module)
    except ValueError as error:  # a declaration `Experiment` refuses: unknown stage, kind or symptom
        raise BrokenExperiment(f"{place}/{folder.name}/experiment.py: {error}") from None
    experiment = getattr(module, "EXPERIMENT", None)
    if not isinstance(experiment, Experiment):
        raise BrokenExperiment(f"{place}/{folder.name}/experiment.py defines no EXPERIMENT = Experiment(...)")
    if experiment.id != experiment_id:
        raise BrokenExperiment(f"{place}/{folder.name}/experiment.py defines experiment {experiment.id!r}, not {experiment_id!r}")
    if experiment.kind.place != ("examples" if place in TUTORIAL_PLACES else place):
        raise BrokenExperiment(f"{place}/{folder.name}/experiment.py: kind {experiment.kind.value!r} belongs under "
                               f"{experiment.kind.place}/ (tutorials under examples/ or ports/, guides under guides/, "
                               "every other kind under experiments/)")
    return dataclasses.replace(experiment, folder=f"{place}/{folder.name}", compile_fail=compile_fail_cases(folder))


@cache
def _load(experiment_id: str) -> Experiment:
    if experiment_id in guide_folders():
        return check_related(load(guide_folders()[experiment_id], "guides"))
    if experiment_id in tutorial_folders():
        folder = tutorial_folders()[experiment_id]
        return check_related(load(folder, folder.parent.name))
    return check_related(load(folders()[experiment_id]))


def check_related(experiment: Experiment) -> Experiment:
    """Refuses a `related` id that names no chapter (or the experiment itself)."""
    known = set(chapter_ids())
    wrong = [i for i in experiment.related if i not in known or i == experiment.id]
    if wrong:
        raise BrokenExperiment(f"{experiment.folder}/experiment.py: related {', '.join(map(repr, wrong))} is not another chapter "
                               f"(known: {', '.join(chapter_ids())})")
    return experiment


def related(experiment_id: str) -> list[str]:
    """The chapters linked from `experiment_id`'s: those it declares related and those that
    declare it, in catalog order (a relation is shown on both ends)."""
    everything = chapter_ids()
    linked = set(get(experiment_id).related)
    linked |= {other for other in everything if experiment_id in _load(other).related}
    return sorted(linked, key=everything.index)


def all_experiments() -> dict[str, Experiment]:
    return {experiment_id: _load(experiment_id) for experiment_id in ids()}


def get(experiment_id: str) -> Experiment:
    if experiment_id not in set(chapter_ids()):
        raise UsageError(f"unknown experiment {experiment_id!r} (known: {', '.join(chapter_ids())})")
    return _load(experiment_id)
