"""Book: chapters rendered from run records and the sources they quote.

`pita book build` writes book/<id>.md for every experiment with a record in book/records/;
`pita book check` renders the same in memory and fails when a committed chapter differs, so
a chapter can never drift from what the code and the last run say.
"""

from __future__ import annotations

import difflib
import sys
import textwrap
from pathlib import Path

import numpy as np

from pita.diagnose import reference_page
from pita.dump import write_atomically
from pita.errors import UsageError
from pita.stats import ulp_distance
from pita_lab import catalog, matrix, repo_root
from pita_lab.book.causes import recognition, render_causes_page
from pita_lab.book.defaults import render_defaults_page
from pita_lab.book.environment import KIND_ZH, MAINLINE_ZH, book_dir, environment
from pita_lab.book.figures import chapter_figures, render_figures
from pita_lab.book.lint import render_lint_catalog
from pita_lab.book.measured import FigureChanged, located
from pita_lab.book.navigation import chapter_links, render_diagnosis_page, render_symptoms_page
from pita_lab.book.settings_table import render_settings_table
from pita_lab.book.signatures import render_signatures
from pita_lab.drift import drift_from_committed, render
from pita_lab.errors import BrokenExperiment
from pita_lab.experiment import report_url
from pita_lab.kinds import PITFALL_KINDS
from pita_lab.listing import catalog_rows
from pita_lab.matrix_views import STATUS_ZH, catalog_view, chapter_statuses, compare_matrices
from pita_lab.record import RunRecord
from pita_lab.store import RecordStore

# A chapter that quotes code from here quotes the user-facing crate, and says how to add it.
PITA_CRATE_SOURCES = "crates/pita/src/"
# The pages beyond the chapters and the catalog (reference pages, images): each renderer takes
# the checkout and returns path -> text, so `book check` covers them too.
PAGE_RENDERERS = (render_defaults_page, render_symptoms_page, render_diagnosis_page, render_figures, render_settings_table, render_lint_catalog,
                  render_signatures, render_causes_page)
# What `pita book drift` and `pita book update` take for the version matrix, in place of ids.
MATRIX = "matrix"


def render_all(root: Path, ids: list[str] | None = None) -> dict[Path, str]:
    """Chapter path -> rendered text, for every experiment that has a record (or only `ids`,
    without the catalog page)."""
    try:
        return _render_all(root, ids)
    except FigureChanged as error:
        raise located(error) from error


def _render_all(root: Path, ids: list[str] | None) -> dict[Path, str]:
    chapters, store = {}, RecordStore(root)
    for experiment_id in ids or catalog.chapter_ids():
        record = store.committed(experiment_id)
        if record is not None:
            chapters[book_dir(root) / f"{experiment_id}.md"] = render_chapter(root, record)
        elif ids:
            raise UsageError(f"no run record {store.shown(store.committed_path(experiment_id))}: run `pita run {experiment_id}` first")
    if not chapters:
        raise UsageError(f"no run records in {store.shown(store.committed_dir)}/: run `pita run p12` first")
    if not ids:
        chapters[book_dir(root) / "README.md"] = render_catalog(root)
        chapters[root / "docs" / "diagnosis.md"] = reference_page()
        for render_pages in PAGE_RENDERERS:
            chapters.update(render_pages(root))
    return chapters


def render_catalog(root: Path) -> str:
    """The catalog page: every chapter along the main line with its measured magnitude, and
    the candidates whose paired run showed no divergence."""
    rows, store = catalog_rows(root), RecordStore(root)
    return environment().get_template("catalog.md.j2").render(
        rows=rows,
        matrix=catalog_view(store.committed_matrix()),
        status_zh=STATUS_ZH,
        mainline_zh=MAINLINE_ZH,
        kind_zh=KIND_ZH,
        pitfall_kinds=[kind.value for kind in PITFALL_KINDS],
        experiments=catalog.all_experiments(),
        tutorials={i: catalog.get(i) for i in catalog.tutorial_ids() if store.has_committed(i)},
        records={r["id"]: store.committed(r["id"]) for r in rows if r["status"] != "not run"},
    )


def render_chapter(root: Path, record: RunRecord) -> str:
    experiment = catalog.get(record.experiment)
    template = environment().get_template(f"{Path(experiment.folder).name}/chapter.md.j2")
    return template.render(
        mainline_zh=MAINLINE_ZH,
        experiment=experiment,
        record=record,
        versions=versions(record),
        program=record.program,
        comparison=record.comparison,
        compile_fail={c.case: c for c in record.compile_fail},
        source={s.crate: s for s in record.sources},
        snippet=lambda path, name: snippet(root / path, name),
        element_ulps=element_ulps,
        ratios=ratios,
        quotes_pita_crate=PITA_CRATE_SOURCES in Path(template.filename).read_text(encoding="utf-8"),
        links=chapter_links(root, experiment.id),
        report_url=report_url,
        figures=chapter_figures(experiment, record),
        matrix=chapter_statuses(RecordStore(root).committed_matrix(), experiment.id),
        recognition=recognition(root, experiment, record),
    )


def versions(record: RunRecord) -> dict:
    """framework -> version and backend, as the dumps recorded them; `torch_release` and
    `torch_build` split PyTorch's local build tag (`2.15.0+cu132`: a CUDA build) from its release,
    and `burn_backends` lists every burn backend the experiment ran on, in order."""
    found: dict = {"burn_backends": []}
    for run in record.programs:
        if run.metadata:
            found[run.side] = run.metadata.get("framework_version", "?")
            found[f"{run.side}_backend"] = run.metadata.get("backend", "?")
            if run.side == "burn" and found["burn_backend"] not in found["burn_backends"]:
                found["burn_backends"].append(found["burn_backend"])
    if "torch" in found:
        found["torch_release"], found["torch_build"] = torch_build(found["torch"])
    return found


TORCH_BUILDS = (("cu", "CUDA 构建"), ("rocm", "ROCm 构建"), ("cpu", "CPU 构建"), ("xpu", "XPU 构建"))


def torch_build(version: str) -> tuple[str, str]:
    """`2.15.0+cu132` -> (`2.15.0`, `CUDA 构建`): the release, and which build the local tag
    after `+` names ('' without a tag, the tag itself when it is not a known one)."""
    release, _, tag = version.partition("+")
    return release, next((words for prefix, words in TORCH_BUILDS if tag.startswith(prefix)), tag)


def snippet(path: Path, name: str) -> str:
    """The lines between `book:begin <name>` and `book:end` in a source file, dedented."""
    lines = path.read_text(encoding="utf-8").splitlines()
    begin = next((i for i, line in enumerate(lines) if line.strip().endswith(f"book:begin {name}")), None)
    if begin is None:
        raise BrokenExperiment(f"{path}: no snippet marker 'book:begin {name}'")
    end = next(i for i in range(begin + 1, len(lines)) if lines[i].strip().endswith("book:end"))
    return textwrap.dedent("\n".join(lines[begin + 1:end]))


def element_ulps(reference: list[float], candidate: list[float]) -> list[int]:
    """Per-element ULP distances between two recorded float32 value lists."""
    distance = ulp_distance(np.array(reference, dtype=np.float32), np.array(candidate, dtype=np.float32))
    return [int(d) for d in distance]


def ratios(reference: dict[str, list], candidate: dict[str, list]) -> tuple[float, float]:
    """Smallest and largest element ratio candidate/reference over every recorded tensor."""
    quotients = [c / r for name in reference for r, c in zip(reference[name], candidate[name]) if r]
    return min(quotients), max(quotients)


def build(ids: list[str] | None = None, root: Path | None = None) -> int:
    """Writes the pages the records of `root` (default the checkout) render."""
    root = root or repo_root()
    for path, text in render_all(root, ids).items():
        write_atomically(path, text.encode())
        print(f"wrote {path.relative_to(root)}", file=sys.stderr)
    return 0


def check(ids: list[str] | None = None, root: Path | None = None) -> int:
    root, stale = root or repo_root(), 0
    for path, text in render_all(root, ids).items():
        committed = path.read_text(encoding="utf-8") if path.exists() else ""
        if committed != text:
            stale += 1
            diff = difflib.unified_diff(committed.splitlines(), text.splitlines(), str(path.relative_to(root)), "rendered", lineterm="")
            print("\n".join(diff))
    print(f"book check: {stale} chapter(s) differ from their records" if stale else "book check: every chapter matches its record", file=sys.stderr)
    return 1 if stale else 0


def _run_records(runs: Path, ids: list[str]) -> dict[str, Path]:
    """experiment id -> its record in a folder `pita run` wrote (`RecordStore.fresh_paths`), for
    `ids` (default every one found), in catalog order."""
    everything = catalog.chapter_ids()
    found = RecordStore.fresh_paths(runs, everything)
    missing = [i for i in ids if i not in found]
    if missing:
        raise UsageError(f"{runs}: no run record for {', '.join(missing)} (run `pita run {' '.join(missing)}` first)")
    if not found:
        raise UsageError(f"{runs}: no run records (run `pita run p12` or `pita run --all` first)")
    return {i: found[i] for i in (ids or sorted(found, key=everything.index))}


def drift(ids: list[str] | None, runs: str | Path = "runs", root: Path | None = None) -> int:
    """Sets fresh run records against the committed ones: prints the machines and the platform
    differences, and exits 1 when anything changed beyond the experiment's platform tolerance."""
    store, changed = RecordStore(root or repo_root()), []
    if ids == [MATRIX]:  # the version matrix `pita matrix` wrote in `runs`, against the committed one
        committed = store.committed_matrix()
        if committed is None:
            raise UsageError(f"no committed matrix ({store.shown(store.matrix_path)}): run `pita matrix`, then `pita book update matrix`")
        report = compare_matrices(committed, RecordStore.load_matrix(RecordStore.fresh_matrix_path(Path(runs))))
        sys.stdout.write(render(report))
        return 0 if report.ok else 1
    for experiment_id, path in _run_records(Path(runs), ids or []).items():
        report = drift_from_committed(store, RunRecord.load(path))
        if report is None:
            print(f"{experiment_id}: no committed record ({store.shown(store.committed_path(experiment_id))}) to set it against")
            changed.append(experiment_id)
            continue
        sys.stdout.write(render(report))
        if not report.ok:
            changed.append(experiment_id)
    print(f"book drift: changed beyond platform noise: {', '.join(changed)}" if changed
          else "book drift: every record agrees with the committed one within its platform tolerance", file=sys.stderr)
    return 1 if changed else 0


def update(ids: list[str] | None, runs: str | Path = "runs", root: Path | None = None) -> int:
    """Makes fresh run records the committed ones (book/records/ of `root`, default the checkout)
    and renders the book from them: the one step that changes what the book says. Records with a
    failing claim are refused. `matrix` (alone) commits the version matrix `pita matrix` wrote in
    `runs`, with its lockfiles."""
    store = RecordStore(root or repo_root())
    if ids and MATRIX in ids:
        if ids != [MATRIX]:
            raise UsageError("pita book update matrix: the matrix is committed on its own (no other ids)")
        for path in matrix.commit(store, Path(runs)):
            print(f"updated {path}", file=sys.stderr)
        return build(None, store.root)
    records = {i: RunRecord.load(p) for i, p in _run_records(Path(runs), ids or []).items()}
    failing = [i for i, r in records.items() if not r.ok]
    if failing:
        print(f"book update: not updated: {', '.join(failing)} hold(s) a failing claim; fix the run first", file=sys.stderr)
        return 1
    for record in records.values():
        print(f"updated {store.shown(store.commit(record))}", file=sys.stderr)
    return build(None, store.root)
