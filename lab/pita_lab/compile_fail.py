"""Compile-fail checks: build one case of an experiment (`compile_fail/<case>.rs`, an example of
the experiment's crate behind its `compile-fail` feature), capture rustc's diagnostic, compare
it with the `.stderr` snapshot beside the case (trybuild's model). `PITA_OVERWRITE_SNAPSHOTS=1`
rewrites the snapshots instead, to be reviewed as a diff."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from pita.dump import write_atomically
from pita_lab.record import CompileFailRun, scrub_machine_paths

OVERWRITE = "PITA_OVERWRITE_SNAPSHOTS"
_ARROW = re.compile(r"^(\s*(?:-->|:::) )(\S+?):(\d+):(\d+)$")
_TOP_LEVEL = re.compile(r"^(?:error|warning|help|note)(?:\[\w+\])?: ")  # unindented: a new message
_GUTTER = re.compile(r"^(\s*)(\d+)( \|.*)$")


def check(root: Path, experiment, case: str, workspace=None) -> CompileFailRun:
    """Builds `case` in `workspace` (a `run.Workspace`; default the checkout's own)."""
    # `--workspace` and the feature by its crate, not `-p`: the same feature set for burn as every
    # other build, so burn is not compiled again (run._cargo_build).
    command = ["cargo", "build", "--workspace", "--features", f"{experiment.burn_package}/compile-fail", "--example", case, "--message-format=json"]
    if workspace is None:
        proc = subprocess.run(command, cwd=root, capture_output=True, text=True)
    else:  # a mirror names its files by the checkout's relative paths, so the rest is the same
        proc = subprocess.run(command + workspace.cargo_flags(), cwd=workspace.root, capture_output=True, text=True, env=workspace.cargo_env())
    source = f"{experiment.folder}/compile_fail/{case}.rs"
    errors = rendered_errors(proc.stdout)
    diagnostic = normalise(errors, source, root)
    snapshot_path = root / experiment.folder / "compile_fail" / f"{case}.stderr"
    if os.environ.get(OVERWRITE) == "1":
        write_atomically(snapshot_path, diagnostic.encode())
    snapshot = snapshot_path.read_text() if snapshot_path.exists() else ""
    return CompileFailRun(case=case, exit_code=proc.returncode, diagnostic=diagnostic, snapshot=snapshot,
                          matches_snapshot=snapshot == diagnostic, rendered=scrubbed(errors, root))


def rendered_errors(cargo_json: str) -> str:
    """rustc's rendered error messages from cargo's JSON stream, without the closing summary."""
    rendered = []
    for line in cargo_json.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        body = message.get("message") or {}
        if message.get("reason") == "compiler-message" and body.get("level") == "error":
            if not body.get("message", "").startswith("aborting due to"):
                rendered.append(body.get("rendered") or "")
    return "".join(rendered)


def scrubbed(diagnostic: str, root: Path) -> str:
    """The diagnostic as any machine prints it (no checkout or registry path), every line number
    kept: what a reader sees when building the case, while the snapshot masks other files' lines."""
    return "\n".join(line.rstrip() for line in scrub_machine_paths(diagnostic, root).splitlines()).strip("\n") + "\n"


def normalise(diagnostic: str, source: str, root: Path) -> str:
    """Keeps the example's own locations; masks line numbers in other files, which move whenever
    those files change, and the absolute checkout path."""
    lines, foreign = [], False
    for line in scrub_machine_paths(diagnostic, root).splitlines():
        arrow = _ARROW.match(line)
        if _TOP_LEVEL.match(line) and not line.startswith("note: "):
            foreign = False  # an error or a help suggestion shows the example's own code
        if arrow:
            foreign = arrow.group(2) != source
            if foreign:
                line = f"{arrow.group(1)}{arrow.group(2)}:LL:CC"
        elif foreign and _GUTTER.match(line):
            gutter = _GUTTER.match(line)
            line = f"{gutter.group(1)}{'LL'.rjust(len(gutter.group(2)))}{gutter.group(3)}"
        lines.append(line.rstrip())
    return "\n".join(lines).strip("\n") + "\n"
