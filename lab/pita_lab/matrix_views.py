"""What the book shows of the version matrix (`pita_lab.matrix`), and how a fresh matrix is set
against the committed one (`pita book drift matrix`, and `pita matrix` when it ends)."""

from __future__ import annotations

import re
from pathlib import Path

from pita_lab.drift import DEFAULT_TOLERANCE, Difference, DriftReport, compare_values

STATUS_ZH = {"present": "仍在", "fixed": "已修复", "changed": "行为变了", "n/a": "不适用", "harness": "实验装置出错", "same": "一致"}


def compare_matrices(committed: dict, fresh: dict) -> DriftReport:
    """The fresh matrix against the committed one, over the cells the fresh one ran: statuses,
    notes and claim outcomes exactly, float figures in what a claim observed within the default
    platform tolerance (`pita_lab.drift`). The machine, the cost and the lockfiles' provenance
    are not compared."""
    report = DriftReport("matrix", DEFAULT_TOLERANCE)
    for experiment_id, cells in fresh["cells"].items():
        for version, cell in cells.items():
            old = committed.get("cells", {}).get(experiment_id, {}).get(version)
            where = f"matrix.{experiment_id}@{version}"
            if old is None:
                report.changed.append(Difference(where, "absent", cell["status"], "not in the committed matrix"))
                continue
            compare_values(report, old, cell, where)
    for version, facts in fresh["versions"].items():
        if version in committed.get("versions", {}):
            compare_values(report, committed["versions"][version], facts, f"matrix.versions.{version}")
    return report


def chapter_statuses(matrix: dict | None, experiment_id: str) -> list[dict]:
    """An experiment's cells in version order: version, status, its Chinese word (an n/a cell's
    with the API that version lacks), pinned, and the variants whose API is absent there."""
    if not matrix or experiment_id not in matrix["cells"]:
        return []
    cells = matrix["cells"][experiment_id]
    return [{"version": v, "pinned": facts["pinned"], "status": cells[v]["status"], "word": status_word(cells[v]),
             "absent": cells[v].get("absent", []), "profile": facts.get("profile", "debug"), "unlike_debug": cells[v].get("unlike_debug", [])}
            for v, facts in matrix["versions"].items() if v in cells]


def status_word(cell: dict) -> str:
    """A cell's status in Chinese; n/a names the API that version lacks, a release build the claims
    whose outcome differs from the debug build's."""
    word = STATUS_ZH[cell["status"]]
    if cell["status"] == "n/a" and cell.get("note"):
        word = f"{word}：没有 {cell['note']}"
    if cell.get("unlike_debug"):
        word += "；和 debug 构建不同的断言：" + "、".join(claim["id"] for claim in cell["unlike_debug"])
    return word


def catalog_view(matrix: dict | None) -> dict | None:
    """What the catalog page shows of the matrix: each version with its count of each status and
    the error its shared crates gave (if any), each experiment's cells in version order (None
    where it did not run), and the cells that need a word of explanation."""
    if not matrix:
        return None
    names = list(matrix["versions"])
    versions = []
    for name, facts in matrix["versions"].items():
        statuses = [cells[name]["status"] for cells in matrix["cells"].values() if name in cells]
        versions.append({"burn": name, "pinned": facts["pinned"], "backend": facts["backend"], "plumbing": facts.get("plumbing", ""),
                         "facade_dir": str(Path(facts["facade"]).parent) if facts.get("facade") else "",
                         "counts": {status: statuses.count(status) for status in STATUS_ZH}})
    rows = {i: [cells.get(name) for name in names] for i, cells in matrix["cells"].items()}
    notes = []
    for experiment_id, cells in matrix["cells"].items():
        for name in names:
            cell = cells.get(name)
            if not cell:
                continue
            own_note = bool(cell["note"]) and cell["note"] != matrix["versions"][name].get("plumbing")
            moved, absent, unlike_debug = cell.get("sources_moved", []), cell.get("absent", []), cell.get("unlike_debug", [])
            through_facade = cell.get("through_facade", [])
            if cell["failed"] or own_note or cell["programs"] or cell["sources_not_found"] or moved or absent or unlike_debug or through_facade:
                notes.append({"id": experiment_id, "version": name, "cell": cell, "note": inline_code(cell["note"]) if own_note else "",
                              "sources": [inline_code(s) for s in cell["sources_not_found"]],
                              "moved": [inline_code(s) for s in moved],
                              "absent": [{"program": a["program"], "api": inline_code(a["api"])} for a in absent],
                              "unlike_debug": unlike_debug, "through_facade": through_facade})
    for version in versions:
        version["plumbing"] = inline_code(version["plumbing"]) if version["plumbing"] else ""
    return {"versions": versions, "rows": rows, "notes": notes, "empty_row": [None] * len(names)}


def inline_code(text: str) -> str:
    """`text` as Markdown inline code, fenced by one backtick more than the longest run inside it
    (compiler errors quote `types` in backticks)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"`{text}`"
