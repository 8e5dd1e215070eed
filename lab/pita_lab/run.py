"""Run: build once, run both sides of an experiment, compare, build the compile-fail cases,
locate the burn source behind the behaviour, check every claim, and save the run record."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from pita.compare import ComparisonResult
from pita.dump import read_dump
from pita.errors import UsageError
from pita.trace import TraceResult
from pita_lab import compile_fail, rust_source
from pita_lab.errors import BrokenExperiment
from pita_lab.experiment import Experiment, SourceRef
from pita_lab.lint_check import lint_claim
from pita_lab.matrix_workspace import cargo_env
from pita_lab.record import ComparisonRun, ProgramRun, RunRecord, SourceLocation, TraceRun, scrub_machine_paths
from pita_lab.rust_source import locked_file
from pita_lab.signatures import signatures_claim
from pita_lab.store import RecordStore

SMALL_TENSOR = 64  # tensors up to this many elements are kept in the record for the book


def progress(message: str) -> None:
    print(f"pita: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Workspace:
    """The cargo workspace an experiment's burn side is built and run from: the checkout's own
    (the pin), or a mirror `pita matrix` generates for another burn version, with its own lockfile
    (`locked`: held to it) and target directory. Its Cargo.lock names the burn sources the record
    quotes; in a mirror a quoted line that moved is recorded as not found rather than an error."""

    root: Path
    target: Path
    locked: bool = False
    mirror: bool = False
    profile: str = "debug"  # `release`: a matrix column of the pin built with `--release`

    @classmethod
    def checkout(cls, root: Path) -> Workspace:
        return cls(root, root / "target")

    def binary(self, name: str) -> Path:
        return self.target / self.profile / name

    def cargo_env(self) -> dict | None:
        """The environment cargo runs in: the checkout's as it is; a mirror's, its own target
        directory and build settings (`matrix_workspace.cargo_env`)."""
        if not self.mirror:
            return None
        return cargo_env(self.target)

    def cargo_flags(self) -> list[str]:
        return ["--locked"] if self.locked else []


@dataclass
class Outcome:
    """What one experiment's run came to: its record, or why it could not run."""

    experiment: str
    record: RunRecord | None = None
    broken: str = ""

    @property
    def ok(self) -> bool:
        return self.record is not None and self.record.ok


def run_one(experiment: Experiment, root: Path, out_dir: Path, unbuilt: set[str]) -> Outcome:
    """Runs one experiment into `out_dir` and saves its record there; an experiment that cannot
    run (it does not build, a program's output is unusable) comes back broken, with the reason."""
    outcome = Outcome(experiment.id)
    try:
        if experiment.burn_package in unbuilt:
            raise BrokenExperiment(f"burn program {experiment.burn_source} does not build (see cargo's errors above)")
        out_dir.mkdir(parents=True, exist_ok=True)
        outcome.record = collect(experiment, root, out_dir.resolve())
    except Exception as error:
        if not isinstance(error, (UsageError, BrokenExperiment)):  # a bug in pita or in the experiment: show where
            traceback.print_exc()
        outcome.broken = str(error).replace(str(root) + os.sep, "") or type(error).__name__
        progress(f"{experiment.id} is broken: {outcome.broken}")
        return outcome
    saved = RecordStore.fresh_path(out_dir)
    outcome.record.save(saved)
    print(claims_table(outcome.record), flush=True)
    progress(f"record saved to {saved}")
    return outcome


def build(root: Path, packages: list[str]) -> set[str]:
    """Builds the experiments' burn programs (debug, like the handbook) with cargo's progress
    shown; returns the crates that do not build (after trying each alone when building all at
    once fails). burn itself is built once, in the workspace's shared target directory."""
    if shutil.which("cargo") is None:
        raise UsageError("cargo not found: install Rust (rustup), then run scripts/setup")
    progress(f"building {len(packages)} burn program(s) (cargo, debug)")
    if _cargo_build(root, packages):
        return set()
    progress("the build failed; building each experiment alone to find which")
    return {name for name in packages if not _cargo_build(root, [name])}


def _cargo_build(root: Path, packages: list[str]) -> bool:
    """Builds the named crates' programs, selecting the whole workspace and naming each program
    (`--workspace --bin NAME`), never `-p NAME`: cargo unifies features over the packages it
    selects, so `-p` would build burn with another feature set than setup's `cargo build
    --workspace` and compile it a second time (ARCHITECTURE.md, "One feature set")."""
    programs = workspace_programs(root)
    unknown = [name for name in packages if name not in programs]
    if unknown:
        progress(f"no crate {', '.join(unknown)} in the cargo workspace")
        return False
    named = [arg for name in packages for program in programs[name] for arg in ("--bin", program)]
    if not named:  # without a `--bin`, `--workspace` would build every member
        return True
    return subprocess.run(["cargo", "build", "--workspace", *named], cwd=root).returncode == 0


def workspace_programs(root: Path) -> dict[str, list[str]]:
    """Each workspace member -> the names of its binaries (`cargo metadata`, no dependencies)."""
    proc = subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(f"cargo metadata failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr else ''}")
    return {package["name"]: [target["name"] for target in package["targets"] if "bin" in target["kind"]]
            for package in json.loads(proc.stdout)["packages"]}


def collect(experiment: Experiment, root: Path, out: Path, workspace: Workspace | None = None) -> RunRecord:
    """Runs one experiment (its burn side built in `workspace`, default the checkout's) and
    checks its claims."""
    workspace = workspace or Workspace.checkout(root)
    _remove_stale_dumps(experiment, out)
    programs = [run_torch(experiment, root, out, v) for v in experiment.torch_variants]
    programs += [run_burn(experiment, root, out, v, workspace) for v in experiment.burn_variants]
    comparisons = [_compared(out, ref, cand, workspace) for ref, cand in experiment.comparisons]
    traces = [run_trace(out, ref, cand) for ref, cand in experiment.traces]
    progress(f"building compile-fail cases: {', '.join(experiment.compile_fail) or 'none'}")
    compile_failures = [compile_fail.check(root, experiment, case, workspace) for case in experiment.compile_fail]
    record = RunRecord(
        experiment=experiment.id,
        platform=platform_facts(),
        input_sha256=_input_sha256(programs),
        programs=programs,
        comparisons=comparisons,
        compile_fail=compile_failures,
        sources=[locate(workspace.root, ref, strict=not workspace.mirror) for ref in experiment.sources],
        claims=[],
        traces=traces,
    )
    with rust_source.sources_of(workspace.root):  # claims that read burn's source read this workspace's
        record.claims = [claim.check(record, out) for claim in experiment.claims]
    if (fit := signatures_claim(experiment)) is not None:  # the catalog's signatures, on every run (pita_lab.signatures)
        record.claims.append(fit.check(record, out))
    if (lint := lint_claim(experiment, root)) is not None:  # the catalog's lint rules on its burn.rs (pita_lab.lint_check)
        record.claims.append(lint.check(record, out))
    return record


def _remove_stale_dumps(experiment: Experiment, out: Path) -> None:
    names = [f"torch-{v}" for v in experiment.torch_variants] + [f"burn-{v}" for v in experiment.burn_variants]
    for name in names:
        for suffix in (".safetensors", ".json"):
            (out / f"{name}{suffix}").unlink(missing_ok=True)


def run_torch(experiment: Experiment, root: Path, out: Path, variant: str) -> ProgramRun:
    command = [sys.executable, experiment.torch_script, *experiment.program_arguments("torch", variant, str(out))]
    return _run_program("torch", variant, command, root, out)


def run_burn(experiment: Experiment, root: Path, out: Path, variant: str, workspace: Workspace | None = None) -> ProgramRun:
    binary = (workspace or Workspace.checkout(root)).binary(experiment.burn_binary)
    command = [str(binary), *experiment.program_arguments("burn", variant, str(out))]
    return _run_program("burn", variant, command, root, out)


def _run_program(side: str, variant: str, command: list[str], root: Path, out: Path) -> ProgramRun:
    progress(f"running {side}-{variant}")
    env = {**os.environ, "RUST_BACKTRACE": "0", "PYTHONHASHSEED": "0"}
    proc = subprocess.run(command, cwd=root, capture_output=True, text=True, env=env)
    dump_path = out / f"{side}-{variant}.safetensors"
    run = ProgramRun(
        side=side,
        variant=variant,
        command=[_display_path(arg, root, out) for arg in command],
        exit_code=proc.returncode,
        stdout=scrub_machine_paths(proc.stdout, root, out),
        stderr=scrub_machine_paths(proc.stderr, root, out),
    )
    if dump_path.exists():
        run.dump = dump_path.name
        dump = read_dump(dump_path)
        run.metadata = dict(sorted(dump.metadata.items()))
        run.tensors = {name: t.ravel().tolist() for name, t in dump.tensors.items() if t.size <= SMALL_TENSOR}
    return run


def _run_cli(out: Path, verb: str, reference: str, candidate: str, *extra: str) -> tuple[subprocess.CompletedProcess, list[str], dict]:
    """`pita <verb> REFERENCE CANDIDATE` run once in the run folder as a user runs it, its result
    also written as JSON (`--json`, to a file outside the run folder); what it printed and how it
    exited, the command as the book shows it (without the options only the record needs), and
    the JSON. Exit 2 (the dumps are unusable) makes the experiment broken."""
    files = [f"{reference}.safetensors", f"{candidate}.safetensors"]
    with tempfile.TemporaryDirectory(prefix="pita-result-") as folder:
        result_path = Path(folder) / "result.json"
        command = [sys.executable, "-m", "pita", verb, *files, *extra, "--json", str(result_path)]
        proc = subprocess.run(command, cwd=out, capture_output=True, text=True)
        if proc.returncode == 2:
            raise BrokenExperiment(f"{verb} {reference} {candidate} could not run: {proc.stderr.strip()}")
        return proc, ["pita", verb, *files], json.loads(result_path.read_text(encoding="utf-8"))


def run_compare(out: Path, reference: str, candidate: str) -> ComparisonRun:
    """Runs the CLI once as a user would: its printed lines and exit code, and its result, with
    each tensor's ULP histogram and each failing tensor's error map for the book's figures."""
    progress(f"comparing {reference} with {candidate}")
    proc, display, result = _run_cli(out, "compare", reference, candidate, "--histogram")
    return ComparisonRun(reference=reference, candidate=candidate, command=display, exit_code=proc.returncode, stdout=proc.stdout,
                         result=ComparisonResult.from_dict(result))


def _compared(out: Path, reference: str, candidate: str, workspace: Workspace) -> ComparisonRun:
    """`run_compare`; on another burn version (a mirror) a comparison that cannot run (a program
    left no dump) is kept with exit 2, compare's error and no result, so the claims say what
    happened there instead of the run stopping; on the pin it makes the experiment broken."""
    try:
        return run_compare(out, reference, candidate)
    except BrokenExperiment as error:
        if not workspace.mirror:
            raise
        command = ["pita", "compare", f"{reference}.safetensors", f"{candidate}.safetensors"]
        return ComparisonRun(reference, candidate, command, exit_code=2, stdout=f"{error}\n", result=None)


def run_trace(out: Path, reference: str, candidate: str) -> TraceRun:
    """`pita trace` run once as a user runs it: its report, its exit code and its result."""
    progress(f"tracing {candidate} against {reference}")
    proc, display, result = _run_cli(out, "trace", reference, candidate)
    return TraceRun(reference=reference, candidate=candidate, command=display, exit_code=proc.returncode, stdout=proc.stdout,
                    result=TraceResult.from_dict(result))


def _input_sha256(programs: list[ProgramRun]) -> str:
    hashes = {p.metadata.get("input_sha256", "") for p in programs if p.dump}
    return hashes.pop() if len(hashes) == 1 else f"DIFFERENT: {sorted(hashes)}"


def _display_path(arg: str, root: Path, out: Path) -> str:
    if arg == sys.executable:
        return "python"
    if arg == str(out):
        return "OUT"
    return arg.replace(str(root) + os.sep, "")


def platform_facts() -> dict:
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "os": platform.platform(terse=True),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "rustc": rustc,
        "profile": "debug",
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def locate(root: Path, ref: SourceRef, strict: bool = True) -> SourceLocation:
    """Finds `ref.pattern` after `fn|struct|enum|impl|trait <last part of ref.function>` (an
    `impl<…>` with generics too) in the locked crate source (a struct for `#[config(default = …)]`
    fields): any package of the Cargo.lock, also backends the workspace does not build. Not
    `strict` (another burn version's mirror): a line that is not there is recorded at line 0."""
    if not strict:
        try:
            return locate(root, ref)
        except (BrokenExperiment, UsageError, OSError) as error:  # UsageError: cargo metadata failed there
            return SourceLocation(ref.crate, "", ref.file, 0, ref.function, f"not found: {error}".replace(str(root) + os.sep, ""))
    version, text = locked_file(root, ref.crate, ref.file)
    lines = text.splitlines()
    fn_name = ref.function.split("::")[-1]
    inside = False
    for number, line in enumerate(lines, start=1):
        if re.search(rf"\b(?:fn|struct|enum|impl(?:<.*?>)?|trait) {re.escape(fn_name)}\b", line):  # impl<B: …> Ops
            inside = True
        if inside and ref.pattern in line:
            return SourceLocation(ref.crate, version, ref.file, number, ref.function, line.strip())
    raise BrokenExperiment(f"{ref.crate} {version} {ref.file}: {ref.pattern!r} not found in fn {fn_name}; the pinned source moved")


def claims_table(record: RunRecord) -> str:
    rows = [("claim", "expected", "observed", "")] + [
        (c.id, c.expected, c.observed, "PASS" if c.ok else "FAIL") for c in record.claims
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3] for row in rows]
    passed = sum(c.ok for c in record.claims)
    lines.append(f"{record.experiment}: {passed}/{len(record.claims)} claims hold")
    return "\n".join(line.rstrip() for line in lines)
