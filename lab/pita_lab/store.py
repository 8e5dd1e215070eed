"""Where run records live: the one module that knows their paths.

Committed records are the book's: `book/records/<id>.json`, one per chapter, and the version
matrix, `book/records/matrix.json`. Fresh ones are what `pita run` and `pita matrix` write under
`--out`: `<out>/record.json` for one experiment, `<runs>/<id>/record.json` for several, and
`<runs>/matrix.json` for a matrix (default `runs/` and `runs/matrix/` in the checkout).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pita.dump import write_atomically
from pita.errors import UsageError
from pita_lab.record import RunRecord

RECORD = "record.json"
MATRIX = "matrix.json"
MATRIX_FORMAT = "pita-matrix/1"


@dataclass(frozen=True)
class RecordStore:
    """The records of one checkout (`root`)."""

    root: Path

    # -- committed ------------------------------------------------------------------------------

    @property
    def committed_dir(self) -> Path:
        return self.root / "book" / "records"

    def committed_path(self, experiment_id: str) -> Path:
        return self.committed_dir / f"{experiment_id}.json"

    def has_committed(self, experiment_id: str) -> bool:
        return self.committed_path(experiment_id).exists()

    def committed(self, experiment_id: str) -> RunRecord | None:
        """The committed record of an experiment, or None when it has none."""
        path = self.committed_path(experiment_id)
        return RunRecord.load(path) if path.exists() else None

    def commit(self, record: RunRecord) -> Path:
        path = self.committed_path(record.experiment)
        record.save(path)
        return path

    @property
    def matrix_path(self) -> Path:
        return self.committed_dir / MATRIX

    def committed_matrix(self) -> dict | None:
        """The committed version matrix, or None without one."""
        return self.load_matrix(self.matrix_path) if self.matrix_path.exists() else None

    def commit_matrix(self, matrix: dict) -> Path:
        self.save_matrix(matrix, self.matrix_path)
        return self.matrix_path

    def shown(self, path: Path) -> str:
        """A path as messages show it: from the checkout (`book/records/p12.json`)."""
        return str(path.relative_to(self.root))

    @staticmethod
    def shown_committed(experiment_id: str) -> str:
        """Where an experiment's committed record is, as messages show it, in any checkout."""
        return str(RecordStore(Path()).committed_path(experiment_id))

    # -- fresh ----------------------------------------------------------------------------------

    @property
    def runs_dir(self) -> Path:
        """Where `pita run` writes without `--out`: one folder per experiment."""
        return self.root / "runs"

    @property
    def matrix_runs_dir(self) -> Path:
        """Where `pita matrix` writes without `--out`."""
        return self.runs_dir / "matrix"

    def run_folder(self, out: str | None, experiment_id: str, alone: bool) -> Path:
        """The folder one experiment's run writes to: `out` itself when it runs `alone` with an
        `--out`, else its own folder inside `out` (default runs/)."""
        base = Path(out) if out else self.runs_dir
        return base if (out and alone) else base / experiment_id

    @staticmethod
    def fresh_path(run_folder: Path) -> Path:
        """The record a run saves in its folder."""
        return run_folder / RECORD

    @staticmethod
    def fresh_paths(runs: Path, known: list[str]) -> dict[str, Path]:
        """experiment id -> record in a folder `pita run` wrote: `runs/<id>/record.json` for each id
        in `known`, and `runs/record.json` itself when `runs` was one experiment's `--out`."""
        found = {path.parent.name: path for path in sorted(runs.glob(f"*/{RECORD}")) if path.parent.name in known}
        alone = RecordStore.fresh_path(runs)
        if alone.exists():
            found.setdefault(RunRecord.load(alone).experiment, alone)
        return found

    @staticmethod
    def fresh_matrix_path(runs: Path) -> Path:
        """The matrix `pita matrix` wrote in its folder."""
        return runs / MATRIX

    @staticmethod
    def save_matrix(matrix: dict, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, (json.dumps(matrix, indent=2, ensure_ascii=False) + "\n").encode())

    @staticmethod
    def load_matrix(path: Path) -> dict:
        try:
            matrix = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise UsageError(f"{path}: not a matrix record ({error})") from None
        if not isinstance(matrix, dict) or matrix.get("format") != MATRIX_FORMAT:
            raise UsageError(f"{path}: not a matrix record (format {MATRIX_FORMAT} expected)")
        return matrix
