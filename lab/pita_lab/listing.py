"""`pita list`: the catalog with each experiment's last recorded run."""

from __future__ import annotations

from pathlib import Path

from pita_lab import catalog, repo_root
from pita_lab.store import RecordStore


def catalog_rows(root: Path | None = None) -> list[dict]:
    store = RecordStore(root or repo_root())
    rows = []
    guides = [catalog.get(i) for i in catalog.guide_ids()]  # the book's front pages, listed first
    for experiment in guides + list(catalog.all_experiments().values()):
        row = {
            "id": experiment.id,
            "title": experiment.title,
            "mainline": experiment.mainline,
            "class": experiment.kind.value,
            "status": "not run",
            "claims": len(experiment.claims),
            "claims_held": None,
            "magnitude": None,
        }
        record = store.committed(experiment.id)
        if record is not None:
            row["claims_held"] = sum(c.ok for c in record.claims)
            row["status"] = "verified" if record.ok else "failing"
            row["magnitude"] = experiment.magnitude(record) if experiment.magnitude and record.ok else None
        rows.append(row)
    return rows


def render_rows(rows: list[dict]) -> str:
    header = ("id", "main line", "class", "status", "title")
    table = [header] + [(r["id"], r["mainline"], r["class"], r["status"], r["title"]) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4] for row in table]
    verified = sum(r["status"] == "verified" for r in rows)
    lines.append(f"{len(rows)} experiments, {verified} verified by their last run")
    return "\n".join(lines) + "\n"
