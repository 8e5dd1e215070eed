"""`pita matrix`: where each pitfall of the catalog stands on other burn versions.

Every experiment of a pitfall kind runs on each version of `lab/matrix/versions.toml`, its burn
side built in that version's mirror workspace (`matrix_workspace`), its PyTorch side as always,
its claims checked by `pita run`'s own machinery (`run.collect`). The run then comes to one status
a cell (`classify`):

- `present`: the negative control still mismatches (its claim holds; for a panic or compile
  pitfall, the panics or compile errors still happen too);
- `fixed`: the negative control's comparison now matches: the direct port computes what PyTorch does;
- `changed`: anything else, noted with the claims that failed and what they observed;
- `n/a`: the burn API the pitfall is about does not exist there: the direct port's program (the
  negative control's candidate) exited with `pita_lab::compat::API_ABSENT_EXIT` and named the API
  on stderr (`burn api absent: <api>`), which the cell names. Another variant that exits so (a
  backend that is gone while the port's own is there) leaves the status to the others and is
  listed in `absent`;
- `harness`: the lab's plumbing failed, not burn: a program that did not build (the shims of
  `pita_lab::compat` make every program build on every version), or a run that could not finish;
  noted with the first error. The committed matrix has none;
- `same`: a candidate that showed no divergence (kind `same`) still shows none.

The pin's column comes from the committed records (book/records/<id>.json). A version of
versions.toml with `profile = "release"` is a column of its own (`0.22.1 release`), built with
`--release` in its own mirror; its cells list the claims whose outcome differs from the pin's
debug records (`unlike_debug`). A version built through a facade (`BurnVersion.facade`: burn
0.21, whose API the lab's sources do not speak) does not count compile-fail claims: the compiler
errors name the facade's types, not burn's own; the cell lists them (`through_facade`). The matrix is
written, with every run's record, under `--out` only (default runs/matrix); `pita book update
matrix --from runs/matrix` is the one step that commits it (book/records/matrix.json) with the
lockfiles it was built with (lab/matrix/<version>/Cargo.lock). What the book shows of it, and
how a fresh matrix is set against the committed one, are `pita_lab.matrix_views`."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pita.dump import write_atomically
from pita.errors import UsageError
from pita_lab import catalog
from pita_lab.claims import CompileFails, Panics, last_line, panic_message
from pita_lab.errors import BrokenExperiment
from pita_lab.experiment import Experiment
from pita_lab.kinds import PITFALL_KINDS, Kind
from pita_lab.matrix_workspace import BurnVersion, Mirror, cargo_env, committed_lock, generate, load_versions, pinned_version, root_manifest
from pita_lab.record import RunRecord, scrub_machine_paths
from pita_lab.run import Workspace, claims_table, collect, platform_facts
from pita_lab.run import build as build_pinned
from pita_lab.rust_source import locked_file
from pita_lab.store import MATRIX_FORMAT, RecordStore

STATUSES = ("present", "fixed", "changed", "n/a", "harness", "same")
# A program whose pitfall's burn API this version lacks: `pita_lab::compat::api_absent`.
API_ABSENT_EXIT = 64
API_ABSENT_LINE = re.compile(r"^burn api absent: (\S+)", re.MULTILINE)
# Claims whose failure means the pitfall itself has changed, by kind, besides the negative control.
DEFINING_CLAIMS = {Kind.PANIC: Panics, Kind.COMPILE: CompileFails}


def progress(message: str) -> None:
    print(f"pita matrix: {message}", file=sys.stderr, flush=True)


# -- statuses ---------------------------------------------------------------------------------

@dataclass
class Cell:
    """One experiment on one burn version."""

    status: str
    claims: str = ""  # held/total, when it ran
    failed: list[dict] = field(default_factory=list)  # {id, expected, observed} of each failing claim
    note: str = ""  # n/a: the absent API; harness: the first compiler error, or why the run could not finish
    # Programs that exited otherwise than on the pin: {program, exit, pinned_exit, says} (a panic's first line)
    programs: list[dict] = field(default_factory=list)
    # The burn sources the chapter quotes whose function (or file) this version no longer has: `crate file fn`
    sources_not_found: list[str] = field(default_factory=list)
    # Those whose function is still there but no longer holds the quoted line (it moved or was reworded)
    sources_moved: list[str] = field(default_factory=list)
    # Burn programs that exited as `api_absent` does: {program, api}
    absent: list[dict] = field(default_factory=list)
    # A release build's claims whose outcome differs from the pin's debug run: {id, debug, observed}
    unlike_debug: list[dict] = field(default_factory=list)
    # A facade version's compile-fail claims, not counted (the errors name the facade's types)
    through_facade: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def classify(experiment: Experiment, record: RunRecord, facade: bool = False) -> Cell:
    """The status of one run of `experiment` (see the module docstring). The claims about a
    program whose API is absent are left out of `claims` and `failed`: they observed nothing; so
    are a facade version's compile-fail claims (`facade`), which observed the facade."""
    results = {claim.id: claim for claim in record.claims}
    absent = absent_apis(record)
    gone = {a["program"] for a in absent}
    about_gone = {c.id for c in experiment.claims if claim_programs(c) & gone}
    compiled = [c.id for c in experiment.claims if isinstance(c, CompileFails)] if facade else []
    observed = [c for c in record.claims if c.id not in about_gone and c.id not in compiled]
    failed = [{"id": c.id, "expected": c.expected, "observed": c.observed} for c in observed if not c.ok]
    cell = Cell(status="changed", claims=f"{len(observed) - len(failed)}/{len(observed)}", failed=failed, absent=absent,
                through_facade=compiled)
    cell.sources_not_found = list(dict.fromkeys(f"{s.crate} {s.file} {s.function}" for s in record.sources if s.line == 0))
    control = experiment.negative_control
    burn_programs = {f"burn-{run.variant}" for run in record.programs if run.side == "burn"}
    if gone and (gone >= burn_programs or (control is not None and control.candidate in gone)):
        cell.status = "n/a"
        cell.note = ", ".join(dict.fromkeys(a["api"] for a in cell.absent))
        return cell
    if experiment.kind == Kind.SAME:
        cell.status = "same" if not failed else "changed"
        return cell
    if control is None:
        cell.status = "present" if not failed else "changed"
        return cell
    comparison = next((c for c in record.comparisons if (c.reference, c.candidate) == (control.reference, control.candidate)), None)
    if comparison is not None and comparison.exit_code == 0 and comparison.result.ok:
        cell.status = "fixed"
    elif control.id in results and results[control.id].ok and not _defining_failed(experiment, failed):
        cell.status = "present"
    return cell


def _defining_failed(experiment: Experiment, failed: list[dict]) -> bool:
    """Whether a claim that makes a panic or compile pitfall what it is failed (its `Panics` or
    `CompileFails` claims), which the negative control alone does not show."""
    kind = DEFINING_CLAIMS.get(experiment.kind)
    if kind is None:
        return False
    defining = {c.id for c in experiment.claims if isinstance(c, kind)}
    return any(f["id"] in defining for f in failed)


# The claim fields that name a program (`torch-ref`, `burn-port`); `crate` and the like do not.
PROGRAM_FIELDS = ("reference", "candidate", "source", "target")


def claim_programs(claim) -> set[str]:
    """The programs a claim may read: any of its fields that names one (a comparison's reference
    and candidate, `Relates`' source and target), and `side-variant` (`burn-variant` for a claim
    that names only a burn variant, as `Loaded` does)."""
    named = {getattr(claim, name) for name in PROGRAM_FIELDS if isinstance(getattr(claim, name, None), str)}
    variant = getattr(claim, "variant", None)
    if isinstance(variant, str):
        named.add(f"{getattr(claim, 'side', 'burn')}-{variant}")
    return named


def absent_apis(record: RunRecord) -> list[dict]:
    """The burn programs of `record` that said their burn API is absent: exit `API_ABSENT_EXIT`
    and the `burn api absent: <api>` line; the API as they named it."""
    found = []
    for run in record.programs:
        named = API_ABSENT_LINE.search(run.stderr) if run.side == "burn" and run.exit_code == API_ABSENT_EXIT else None
        if named:
            found.append({"program": f"burn-{run.variant}", "api": named.group(1)})
    return found


def not_built(error: str) -> Cell:
    """A program that did not build: the harness's failure (a missing API is the shim's `api_absent`)."""
    return Cell(status="harness", note=error)


def broken(reason: str) -> Cell:
    return Cell(status="harness", note=reason)


def split_moved_sources(cell: Cell, experiment: Experiment, record: RunRecord, root: Path) -> None:
    """Moves from `sources_not_found` to `sources_moved` each quoted source whose function is still
    defined in that version's file (only the quoted line is gone): the API is there."""
    moved = set()
    for ref, location in zip(experiment.sources, record.sources):
        if location.line == 0 and function_defined(root, ref.crate, ref.file, ref.function):
            moved.add(f"{location.crate} {location.file} {location.function}")
    cell.sources_moved = [s for s in cell.sources_not_found if s in moved]
    cell.sources_not_found = [s for s in cell.sources_not_found if s not in moved]


def function_defined(root: Path, crate: str, file: str, function: str) -> bool:
    """Whether `fn|struct|enum|impl|trait <last part of function>` is in `file` of the crate the
    workspace at `root` locks."""
    try:
        _, text = locked_file(root, crate, file)
    except (BrokenExperiment, UsageError, OSError) as error:  # kept as not found; said, so a failing cargo is seen
        progress(f"{crate} {file}: cannot read it in {root.name} ({error})")
        return False
    name = re.escape(function.split("::")[-1])
    return re.search(rf"\b(?:fn|struct|enum|impl(?:<.*?>)?|trait) {name}\b", text) is not None


# -- building a mirror ------------------------------------------------------------------------

@dataclass
class Build:
    """What building a mirror came to: each member crate that did not build, with its first
    compiler error (or the failure it inherits from a crate it depends on)."""

    errors: dict[str, str]  # member folder (experiments/p12-…) -> "path:line:col: error[…]: …"
    plumbing: str = ""  # the first error of a crate every experiment needs (the `pita` crate, lab/burn, burn)
    lock_error: str = ""  # the lockfile could not be resolved: nothing built
    seconds: float = 0.0


def cargo(mirror: Mirror, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["cargo", *args], cwd=mirror.root, env=cargo_env(mirror.target), capture_output=True, text=True)


def resolve_lock(mirror: Mirror) -> str:
    """Brings the mirror's lockfile (the committed one, when there is one) up to its members
    without moving any registry package: `cargo update --workspace` adds a new experiment and
    leaves every locked version as it is. '' or cargo's error."""
    if not mirror.lock.exists():
        proc = cargo(mirror, "generate-lockfile")
        if proc.returncode != 0:
            return first_cargo_error(proc.stderr, mirror)
    proc = cargo(mirror, "update", "--workspace")
    return "" if proc.returncode == 0 else first_cargo_error(proc.stderr, mirror)


def first_cargo_error(stderr: str, mirror: Mirror) -> str:
    """cargo's own error (not rustc's): the `error: …` line, with its first `Caused by` reason."""
    lines = [line.strip() for line in scrub_machine_paths(stderr, mirror.root).splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if line.startswith("error")), None)
    if start is None:
        return lines[-1] if lines else "cargo failed"
    cause = next((lines[i + 1] for i in range(start, len(lines) - 1) if lines[i] == "Caused by:"), "")
    return lines[start] + (f" ({cause})" if cause else "")


# The lab's crate: the `pita` crate and burn are under it, and every experiment builds on it.
PLUMBING = "pita-lab"
# A build that failed for a reason of this machine, not of the code: no status can be read from it.
MACHINE_FAILURE = re.compile(r"No space left on device|os error 28|Cannot allocate memory|SIGKILL|Too many open files")


def build(mirror: Mirror, packages: list[str]) -> Build:
    """Builds the experiments' programs (debug, as the pin's) in the mirror, held to its lockfile
    (`--locked`), cargo's progress on stderr. The plumbing first and alone: when it fails, every
    experiment fails with its error, and building them would only repeat it. Then every program
    that can be built (`--keep-going`), each failure with its own first error."""
    started = time.monotonic()
    lock_error = resolve_lock(mirror)
    if lock_error:
        return Build(errors={}, lock_error=lock_error, seconds=time.monotonic() - started)
    status, messages, tail = cargo_build(mirror, [*mirror.cargo_profile_flags, "-p", PLUMBING])
    refuse_machine_failure(messages + tail, mirror)
    if status != 0:
        errors = first_errors(messages, mirror)
        plumbing = next(iter(errors.values()), "") or first_cargo_error(tail, mirror)
        return Build(errors={member_of(mirror, p): plumbing for p in packages}, plumbing=plumbing, seconds=time.monotonic() - started)
    status, messages, tail = cargo_build(mirror, [*mirror.cargo_profile_flags, "--bins", "--keep-going", *(a for p in packages for a in ("-p", p))])
    refuse_machine_failure(messages + tail, mirror)
    errors = unbuilt(messages, mirror, packages)
    if status != 0 and not errors:  # cargo stopped before rustc said anything
        lock_error = first_cargo_error(tail, mirror)
    return Build(errors=errors, lock_error=lock_error, seconds=time.monotonic() - started)


def refuse_machine_failure(output: str, mirror: Mirror) -> None:
    """Stops the matrix when cargo failed for a reason of this machine (a full disk, memory): that
    is no first compiler error of the version, and must not be recorded as `n/a`."""
    found = MACHINE_FAILURE.search(output)
    if found:
        raise UsageError(f"pita matrix: building in {mirror.root} failed on this machine ({found.group()}); "
                         "free the resource and run it again (nothing was recorded)")


def cargo_build(mirror: Mirror, arguments: list[str]) -> tuple[int, str, str]:
    """`cargo build --locked --message-format=json ARGUMENTS` in the mirror: its exit status, its
    JSON messages, the tail of its stderr (shown as it comes)."""
    command = ["cargo", "build", "--locked", "--message-format=json", *arguments]
    with tempfile.TemporaryFile("w+") as messages:
        proc = subprocess.Popen(command, cwd=mirror.root, env=cargo_env(mirror.target), stdout=messages, stderr=subprocess.PIPE, text=True)
        tail: list[str] = []
        for line in proc.stderr:
            sys.stderr.write(line)
            tail = (tail + [line])[-40:]
        proc.wait()
        messages.seek(0)
        return proc.returncode, messages.read(), "".join(tail)


def member_of(mirror: Mirror, package: str) -> str:
    """The member folder of an experiment's crate (named like its folder)."""
    return next((m for m in mirror.members if m.rsplit("/", 1)[-1] == package), f"experiments/{package}")


def first_errors(cargo_json: str, mirror: Mirror) -> dict[str, str]:
    """Crate -> its first compiler error, in the order cargo reported them."""
    errors: dict[str, str] = {}
    for message in _messages(cargo_json):
        body = message.get("message") or {}
        if message.get("reason") == "compiler-message" and body.get("level") == "error" and not body.get("message", "").startswith("aborting due to"):
            errors.setdefault(_crate(message, mirror), first_error_line(body, mirror))
    return errors


def _messages(cargo_json: str):
    for line in cargo_json.splitlines():
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            continue


def unbuilt(cargo_json: str, mirror: Mirror, packages: list[str]) -> dict[str, str]:
    """Member folder -> the first compiler error that kept its program from building: its own,
    else that of the first other crate that failed (one it needs)."""
    own = first_errors(cargo_json, mirror)
    built = {_crate(m, mirror) for m in _messages(cargo_json) if m.get("reason") == "compiler-artifact" and m.get("executable")}
    inherited = next((error for crate, error in own.items() if not crate.startswith("experiments/")), "")
    missing = {}
    for package in packages:
        member = member_of(mirror, package)
        if member not in built:
            missing[member] = own.get(member) or inherited or "not built (cargo gave no error for it)"
    return missing


def _crate(message: dict, mirror: Mirror) -> str:
    """The member folder of a message's crate (crates/pita, experiments/p12-…), or a registry
    crate's `name version`."""
    manifest = Path(message.get("manifest_path", ""))
    try:
        return str(manifest.parent.relative_to(mirror.root))
    except ValueError:
        return message.get("package_id", "").rsplit("#", 1)[-1].replace("@", " ")


def first_error_line(diagnostic: dict, mirror: Mirror) -> str:
    """`path:line:col: error[E…]: message: label`, as `cargo build --message-format=short` prints
    it (the label of the primary span says what rustc found there), with no machine path."""
    headline = (diagnostic.get("rendered") or diagnostic.get("message", "")).splitlines()[0].strip()
    span = next((s for s in diagnostic.get("spans", []) if s.get("is_primary")), None)
    where = f"{span['file_name']}:{span['line_start']}:{span['column_start']}: " if span else ""
    label = f": {span['label']}" if span and span.get("label") else ""
    return scrub_machine_paths(where + headline + label, mirror.root)


# -- running the matrix -----------------------------------------------------------------------

def pitfalls(ids: list[str]) -> list[Experiment]:
    """The experiments a matrix covers: `ids`, or every experiment of a pitfall kind."""
    chosen = [catalog.get(i) for i in ids] if ids else [catalog.get(i) for i in catalog.ids()]
    others = [e.id for e in chosen if e.kind not in PITFALL_KINDS]
    if others:
        raise UsageError(f"pita matrix runs pitfalls (kinds {', '.join(PITFALL_KINDS)}), not {', '.join(others)}")
    return [e for e in chosen if e.kind in PITFALL_KINDS]


def choose_versions(root: Path, names: list[str] | None) -> list[BurnVersion]:
    known = load_versions(root)
    if not names:
        return known
    wrong = [n for n in names if n not in {v.column for v in known}]
    if wrong:
        raise UsageError(f"pita matrix: unknown burn version {', '.join(wrong)} (known: {', '.join(repr(v.column) for v in known)}; "
                         "add one to lab/matrix/versions.toml)")
    return [v for v in known if v.column in names]


def run_matrix(store: RecordStore, ids: list[str], version_names: list[str] | None = None, out: str | None = None) -> dict:
    """Runs the matrix and writes it (and every run's record) under `out` (default runs/matrix);
    returns it."""
    root = store.root
    versions = choose_versions(root, version_names)
    experiments = pitfalls(ids)
    out_dir = Path(out) if out else store.matrix_runs_dir
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"pita matrix: --out {out_dir} is not a folder")
    started = time.monotonic()
    matrix = {"format": MATRIX_FORMAT, "platform": platform_facts(), "versions": {}, "cells": {e.id: {} for e in experiments},
              "provenance": {}, "cost": {}}
    for number, version in enumerate(versions, start=1):
        progress(f"[{number}/{len(versions)}] burn {version.column}" + (" (the pin)" if version.pinned else ""))
        run_version(store, version, experiments, out_dir / version.column.replace(" ", "-"), matrix)
    matrix["cost"]["total_seconds"] = round(time.monotonic() - started, 1)
    path = RecordStore.fresh_matrix_path(out_dir)
    RecordStore.save_matrix(matrix, path)
    print(render_table(matrix))
    progress(f"matrix saved to {path} (commit it with `pita book update matrix --from {out_dir}`)")
    return matrix


def run_version(store: RecordStore, version: BurnVersion, experiments: list[Experiment], out: Path, matrix: dict) -> None:
    """Fills the version's column of `matrix`: from the committed records for the pin, from runs
    in its mirror for any other version."""
    root = store.root
    column = version.column
    matrix["versions"][column] = {"pinned": version.pinned, "backend": version.backend, "burn": version.burn, "profile": version.profile,
                                  "features": _features(root, version), "why": version.why, "plumbing": "", "backends": [],
                                  **({"facade": version.facade} if version.facade else {})}
    if version.pinned:
        run_pinned(store, version, experiments, out, matrix)
        return
    mirror = generate(root, version, _all_folders(root))
    progress(f"burn {column}: mirror workspace {mirror.root.relative_to(root)}; building {len(experiments)} program(s)")
    result = build(mirror, [e.burn_package for e in experiments])
    out.mkdir(parents=True, exist_ok=True)
    if mirror.lock.exists():
        shutil.copyfile(mirror.lock, out / "Cargo.lock")
    matrix["provenance"][column] = _provenance(root, mirror, out)
    matrix["versions"][column]["plumbing"] = result.lock_error or result.plumbing
    cost = {"build_seconds": round(result.seconds, 1)}
    run_started = time.monotonic()
    workspace = Workspace(mirror.root, mirror.target, locked=True, mirror=True, profile=version.profile)
    for number, experiment in enumerate(experiments, start=1):
        error = result.lock_error or result.errors.get(experiment.folder)
        if error:
            cell = not_built(error)
        else:
            progress(f"burn {column} [{number}/{len(experiments)}] {experiment.id} {experiment.title}")
            cell = run_cell(store, experiment, out / experiment.id, workspace, matrix["versions"][column])
            progress(f"{experiment.id} on burn {column}: {cell.status}")
        matrix["cells"][experiment.id][column] = cell.to_dict()
    cost["run_seconds"] = round(time.monotonic() - run_started, 1)
    cost["target_bytes"] = disk_usage(mirror.target)
    cost["out_bytes"] = disk_usage(out)
    matrix["cost"][column] = cost


def run_cell(store: RecordStore, experiment: Experiment, out: Path, workspace: Workspace, facts: dict) -> Cell:
    """Runs one experiment with its burn side from the mirror (`pita run`'s `collect`), saves the
    record in `out` and classifies it. A run that cannot finish is `changed`, with the reason."""
    root = store.root
    try:
        out.mkdir(parents=True, exist_ok=True)
        record = collect(experiment, root, out.resolve(), workspace)
    except Exception as error:  # the cell says so, and the rest go on
        if not isinstance(error, (UsageError, BrokenExperiment)):  # a bug in pita or in the experiment: show where
            traceback.print_exc()
        reason = str(error).replace(str(root) + os.sep, "") or type(error).__name__
        progress(f"{experiment.id} could not run: {reason}")
        return broken(reason)
    record.platform["profile"] = workspace.profile
    record.save(RecordStore.fresh_path(out))
    print(claims_table(record), flush=True)
    note_backends(facts, record)
    cell = classify(experiment, record, facade=bool(facts.get("facade")))
    split_moved_sources(cell, experiment, record, workspace.root)
    cell.programs = [p for p in exits_unlike_the_pin(store, record) if p["program"] not in {a["program"] for a in cell.absent}]
    if workspace.profile != "debug":
        cell.unlike_debug = claims_unlike_the_pin(store, record)
    return cell


def _all_folders(root: Path) -> list[str]:
    """Every experiment folder: a mirror's members do not depend on which ids a run picks, so
    its lockfile is the same for every run."""
    return [str(path.relative_to(root)) for path in catalog.folders().values()]


def _features(root: Path, version: BurnVersion) -> list[str]:
    return version.features(root_manifest(root)["workspace"]["dependencies"]["burn"].get("features", []))


def _provenance(root: Path, mirror: Mirror, out: Path) -> dict:
    """Where the version's lockfile came from, and whether the run left it as committed."""
    committed = committed_lock(root, mirror.version.burn)  # the checkout's Cargo.lock for the pin's release build
    resolved = (out / "Cargo.lock").read_bytes() if (out / "Cargo.lock").exists() else b""
    state = "none resolved" if not resolved else ("as committed" if committed.is_file() and committed.read_bytes() == resolved
                                                   else "resolved anew: commit it with `pita book update matrix`")
    if resolved and mirror.version.burn == pinned_version(root).burn:  # the pin's release build: the checkout's lock, less unbuilt members
        state = "the pin's Cargo.lock, held to the mirror's members"
    return {"lockfile": str(committed.relative_to(root)), "state": state, "sha256": hashlib.sha256(resolved).hexdigest() if resolved else ""}


def run_pinned(store: RecordStore, version: BurnVersion, experiments: list[Experiment], out: Path, matrix: dict) -> None:
    """The pin's column: each experiment's committed record (book/records/<id>.json); one that
    has none is run in the checkout's own workspace, into `out`."""
    root = store.root
    missing = [e for e in experiments if not store.has_committed(e.id)]
    unbuilt = build_pinned(root, sorted({e.burn_package for e in missing})) if missing else set()
    for experiment in experiments:
        record = store.committed(experiment.id)
        if record is None and experiment.burn_package in unbuilt:
            matrix["cells"][experiment.id][version.burn] = not_built("does not build in the checkout (see cargo's errors above)").to_dict()
            continue
        if record is None:
            progress(f"burn {version.burn}: {experiment.id} has no committed record; running it")
            (out / experiment.id).mkdir(parents=True, exist_ok=True)
            try:
                record = collect(experiment, root, (out / experiment.id).resolve())
            except Exception as error:
                matrix["cells"][experiment.id][version.burn] = broken(str(error).replace(str(root) + os.sep, "")).to_dict()
                continue
            record.save(RecordStore.fresh_path(out / experiment.id))
        note_backends(matrix["versions"][version.burn], record)
        matrix["cells"][experiment.id][version.burn] = classify(experiment, record).to_dict()
    matrix["provenance"][version.burn] = {"lockfile": "Cargo.lock", "state": "the pin", "records": store.shown(store.committed_dir)}


def claims_unlike_the_pin(store: RecordStore, record: RunRecord) -> list[dict]:
    """The claims of `record` whose outcome differs from the committed record of the pin (a debug
    build): {id, debug, observed} (what the pin's run observed, what this one did)."""
    committed = store.committed(record.experiment)
    if committed is None:
        return []
    pinned = {claim.id: claim for claim in committed.claims}
    return [{"id": c.id, "debug": pinned[c.id].observed, "observed": c.observed}
            for c in record.claims if c.id in pinned and pinned[c.id].ok != c.ok]


def exits_unlike_the_pin(store: RecordStore, record: RunRecord) -> list[dict]:
    """The programs of `record` that exited otherwise than in the committed record of the pin,
    each with what it said (a panic's first line, else its last line on stderr)."""
    committed = store.committed(record.experiment)
    if committed is None:
        return []
    pinned = {run.name: run.exit_code for run in committed.programs}
    found = []
    for run in record.programs:
        if run.name in pinned and run.exit_code != pinned[run.name]:
            says = (panic_message(run.stderr).splitlines() or [last_line(run.stderr) or last_line(run.stdout)])[0]
            found.append({"program": run.name, "exit": run.exit_code, "pinned_exit": pinned[run.name], "says": says[:300]})
    return found


def note_backends(facts: dict, record: RunRecord) -> None:
    """Adds the burn backends a run's dumps say they ran on to its version's `backends`."""
    found = {run.metadata["backend"] for run in record.programs if run.side == "burn" and "backend" in run.metadata}
    facts["backends"] = sorted(set(facts.get("backends", [])) | found)


def disk_usage(path: Path) -> int:
    """Bytes the folder takes on disk, as `du` counts them: blocks allocated, each file once
    (cargo hard-links every binary into two places), links not followed."""
    total, seen = 0, set()
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                facts = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if (facts.st_dev, facts.st_ino) not in seen:
                seen.add((facts.st_dev, facts.st_ino))
                total += facts.st_blocks * 512
    return total


# -- the record -------------------------------------------------------------------------------

def render_table(matrix: dict) -> str:
    """The matrix as text: one row per experiment, one column per version."""
    versions = list(matrix["versions"])
    rows = [("experiment", *versions)] + [(i, *(cells.get(v, {}).get("status", "-") for v in versions)) for i, cells in matrix["cells"].items()]
    widths = [max(len(row[c]) for row in rows) + 2 for c in range(len(rows[0]))]
    lines = ["".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for version in versions:
        counts = {s: sum(cells.get(version, {}).get("status") == s for cells in matrix["cells"].values()) for s in STATUSES}
        lines.append(f"burn {version}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return "\n".join(lines)


def commit(store: RecordStore, runs: Path) -> list[str]:
    """`pita book update matrix --from RUNS`: the cells of the matrix in RUNS (matrix.json) replace
    those of the committed one (`merged`), and each version's resolved lockfile becomes the
    committed lockfile. Returns what it wrote."""
    root = store.root
    source = RecordStore.fresh_matrix_path(runs)
    if not source.exists():
        raise UsageError(f"{runs}: no {source.name} (run `pita matrix --out {runs}` first)")
    fresh = RecordStore.load_matrix(source)
    matrix = merged(store.committed_matrix(), fresh, [v.column for v in load_versions(root)], catalog.ids())
    written = []
    pin = pinned_version(root).burn
    for version, facts in fresh["versions"].items():
        lock = runs / version.replace(" ", "-") / "Cargo.lock"
        if not facts.get("pinned") and facts.get("burn", version) != pin and lock.exists():
            target = committed_lock(root, version)
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, lock.read_bytes())
            written.append(str(target.relative_to(root)))
    written.append(store.shown(store.commit_matrix(matrix)))
    return written


def merged(committed: dict | None, fresh: dict, versions: list[str], ids: list[str]) -> dict:
    """The committed matrix with every cell the fresh one ran replaced (so `pita matrix p40` adds
    one row), in catalog and version order; rows of experiments and columns of versions that are
    gone are dropped. The machine and the cost are the fresh run's; a version's facts are those
    of the last run that built it."""
    if committed is None:
        committed = {**fresh, "versions": {}, "cells": {}, "provenance": {}}
    known = [v for v in versions if v in committed["versions"] or v in fresh["versions"]]
    facts = {v: fresh["versions"].get(v) or committed["versions"][v] for v in known}
    provenance = {v: fresh["provenance"].get(v) or committed.get("provenance", {}).get(v, {}) for v in known}
    cells = {}
    for experiment_id in ids:
        row = {**committed["cells"].get(experiment_id, {}), **fresh["cells"].get(experiment_id, {})}
        if row:
            cells[experiment_id] = {v: row[v] for v in known if v in row}
    return {**fresh, "versions": facts, "provenance": provenance, "cells": cells}
