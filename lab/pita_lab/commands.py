"""The lab's commands that span its layers: run experiments or the version matrix (execution),
then set what they wrote against the committed records (drift). The command line (`cli`) calls
these; nothing below imports them, so running never depends on drift or on the book."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from pita_lab import catalog, matrix, repo_root, run
from pita_lab.drift import DriftReport, drift_from_committed, render
from pita_lab.matrix_views import compare_matrices
from pita_lab.store import RecordStore


@dataclass(frozen=True)
class Checked:
    """One experiment's run, and how its record stands against the committed one (None: there is none)."""

    outcome: run.Outcome
    drift: DriftReport | None

    @property
    def ok(self) -> bool:
        return self.outcome.ok


def run_experiments(ids: list[str], out: str | None = None) -> int:
    """Builds every needed binary once, then runs each experiment and checks its claims.

    Writes only under `out`: with one experiment, `out` is its folder (default runs/<id>); with
    several, `out` holds one folder per experiment (default runs/). An experiment that cannot run
    (it does not build, a program's output is unusable) is reported as broken and the rest go on.
    The committed record in book/records/ is never touched (`pita book update` does that); each
    run is set against it and its platform drift shown."""
    experiments = [catalog.get(i) for i in ids]
    store = RecordStore(repo_root())
    unbuilt = run.build(store.root, sorted({e.burn_package for e in experiments}))
    checked = []
    for number, experiment in enumerate(experiments, start=1):
        if len(experiments) > 1:
            run.progress(f"[{number}/{len(experiments)}] {experiment.id} {experiment.title}")
        out_dir = store.run_folder(out, experiment.id, alone=len(experiments) == 1)
        outcome = run.run_one(experiment, store.root, out_dir, unbuilt)
        checked.append(Checked(outcome, against_committed(store, outcome)))
    if len(checked) > 1:
        print(summary_table(checked))
    return 0 if all(c.ok for c in checked) else 1


def against_committed(store: RecordStore, outcome: run.Outcome) -> DriftReport | None:
    """The drift of a run's record from the committed one, shown as one line."""
    if outcome.record is None:
        return None
    drift = drift_from_committed(store, outcome.record)
    if drift is not None:
        run.progress(f"against {store.shown(store.committed_path(outcome.experiment))}: {drift.summary()}")
    return drift


def summary_table(checked: list[Checked]) -> str:
    rows = [("experiment", "claims", "", "against book/records")]
    for c in checked:
        o = c.outcome
        claims = f"{sum(r.ok for r in o.record.claims)}/{len(o.record.claims)}" if o.record else "-"
        verdict = "PASS" if o.ok else ("BROKEN" if o.broken else "FAIL")
        drift = "no record" if c.drift is None else ("CHANGED" if not c.drift.ok else f"same ({len(c.drift.moved)} moved)")
        rows.append((o.experiment, claims, verdict, o.broken or drift))
    width = max(12, *(len(c.outcome.experiment) + 2 for c in checked))
    lines = [f"{a:<{width}}{b:<8}{c:<8}{d}".rstrip() for a, b, c, d in rows]
    failed = [c.outcome.experiment for c in checked if not c.ok]
    lines.append(f"{len(checked) - len(failed)}/{len(checked)} experiments hold" + (f"; failing: {', '.join(failed)}" if failed else ""))
    return "\n".join(lines)


def run_matrix(ids: list[str], version_names: list[str] | None = None, out: str | None = None) -> int:
    """`pita matrix`: runs it and writes it under `out` (`matrix.run_matrix`), then shows how it
    stands against the committed matrix, when there is one."""
    store = RecordStore(repo_root())
    fresh = matrix.run_matrix(store, ids, version_names, out)
    committed = store.committed_matrix()
    if committed is not None:
        sys.stderr.write(render(compare_matrices(committed, fresh)))
    return 0
