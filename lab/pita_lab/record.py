"""The run record: everything one `pita run` observed, saved as JSON and reloaded by the book."""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from pita.compare import ComparisonResult, TensorResult
from pita.dump import write_atomically
from pita.report import verdict_line
from pita.trace import TraceResult
from pita_lab.errors import BrokenExperiment

RECORD_FORMAT = "pita-run/1"
# Paths that differ between machines: the cargo registry (CARGO_HOME) and the toolchain's sources.
_MACHINE_PATHS = (
    (re.compile(r"\S*/registry/src/[^/\s]+/"), "$CARGO_REGISTRY/"),
    (re.compile(r"\S*/rustc/[0-9a-f]+/"), "$RUSTC/"),
    (re.compile(r"thread '([^']*)' \(\d+\)"), r"thread '\1'"),  # thread ids change every run
)


def scrub_machine_paths(text: str, root: Path, out: Path | None = None) -> str:
    """Output as any machine would record it: no run folder, checkout path, registry path or
    thread id."""
    if out is not None:
        text = text.replace(str(out), "OUT")
    text = text.replace(str(root) + os.sep, "")
    for pattern, replacement in _MACHINE_PATHS:
        text = pattern.sub(replacement, text)
    return text


@dataclass
class ProgramRun:
    """One side running one variant: what it printed, how it exited, what it dumped."""

    side: str
    variant: str
    command: list[str]
    exit_code: int
    stdout: str
    stderr: str
    dump: str | None = None  # file name inside the run folder
    metadata: dict[str, str] = field(default_factory=dict)  # the dump's provenance
    tensors: dict[str, list] = field(default_factory=dict)  # small tensors' values, for the book

    @property
    def name(self) -> str:
        return f"{self.side}-{self.variant}"


def last_line(text: str) -> str:
    """The last line of printed text that is not blank, stripped."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _fields_of(run) -> dict:
    return {item.name: getattr(run, item.name) for item in fields(run)}


@dataclass
class ComparisonRun:
    """`pita compare REFERENCE CANDIDATE` run as a user runs it, plus its result (None where
    compare could not run: on another burn version, a program that left no dump)."""

    reference: str
    candidate: str
    command: list[str]
    exit_code: int
    stdout: str
    result: ComparisonResult | None

    @property
    def tensors(self) -> list[TensorResult]:
        """The compared tensors; none where compare could not run."""
        return self.result.tensors if self.result is not None else []

    @property
    def verdict(self) -> str:
        """compare's verdict line; where compare could not run, the error it printed."""
        return verdict_line(self.result) if self.result is not None else last_line(self.stdout)

    def to_dict(self) -> dict:
        return {**_fields_of(self), "result": self.result.to_dict() if self.result is not None else None}

    @classmethod
    def from_dict(cls, data: dict) -> ComparisonRun:
        result = data["result"]
        return cls(**{**data, "result": ComparisonResult.from_dict(result) if result is not None else None})


@dataclass
class TraceRun:
    """`pita trace REFERENCE CANDIDATE` run as a user runs it, plus its result."""

    reference: str
    candidate: str
    command: list[str]
    exit_code: int
    stdout: str
    result: TraceResult

    def to_dict(self) -> dict:
        return {**_fields_of(self), "result": self.result.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> TraceRun:
        return cls(**{**data, "result": TraceResult.from_dict(data["result"])})


@dataclass
class CompileFailRun:
    case: str
    exit_code: int
    diagnostic: str  # normalised as the snapshot is: other files' line numbers masked as LL:CC
    snapshot: str
    matches_snapshot: bool
    rendered: str = ""  # rustc's errors with machine paths scrubbed and real line numbers, for the book


@dataclass
class SourceLocation:
    """Where in the pinned burn source a behaviour comes from, found by search, not typed."""

    crate: str
    version: str
    file: str
    line: int
    function: str
    text: str


@dataclass
class ClaimResult:
    id: str
    text: str
    expected: str
    observed: str
    ok: bool
    # Structured values a claim keeps for pages built across chapters (a default on each side);
    # absent from the saved record when None, so records of claims without facts stay as they were.
    facts: dict | None = None


@dataclass
class RunRecord:
    experiment: str
    platform: dict
    input_sha256: str
    programs: list[ProgramRun]
    comparisons: list[ComparisonRun]
    compile_fail: list[CompileFailRun]
    sources: list[SourceLocation]
    claims: list[ClaimResult]
    # `pita trace` runs (a tutorial's): the command as a user runs it, its report, its JSON result.
    traces: list[TraceRun] = field(default_factory=list)
    format: str = RECORD_FORMAT

    @property
    def ok(self) -> bool:
        return all(claim.ok for claim in self.claims)

    def program(self, side: str, variant: str) -> ProgramRun:
        return next(p for p in self.programs if p.side == side and p.variant == variant)

    def comparison(self, reference: str, candidate: str) -> ComparisonRun:
        return self._pair("comparison", self.comparisons, reference, candidate)

    def trace(self, reference: str, candidate: str) -> TraceRun:
        return self._pair("trace", self.traces, reference, candidate)

    def _pair(self, what: str, runs: list, reference: str, candidate: str):
        """The run of this pair; a record without it (older than its experiment) is named, with the re-run."""
        found = next((run for run in runs if (run.reference, run.candidate) == (reference, candidate)), None)
        if found is None:
            raise BrokenExperiment(f"the {self.experiment} record has no {what} of {reference} against {candidate} "
                                   f"(a record from before the experiment had it): re-run `pita run {self.experiment}`")
        return found

    def to_dict(self) -> dict:
        """The record as JSON-ready values, as `save` writes it (`drift` walks this form)."""
        data = asdict(replace(self, comparisons=[], traces=[]))  # the results have their own JSON form
        data.update(comparisons=[c.to_dict() for c in self.comparisons], traces=[t.to_dict() for t in self.traces])
        for claim in data["claims"]:
            if claim["facts"] is None:
                del claim["facts"]
        return {"ok": self.ok, **data}

    def save(self, path: str | Path) -> None:
        write_atomically(path, (json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n").encode())

    @classmethod
    def load(cls, path: str | Path) -> RunRecord:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        data.pop("ok", None)
        return cls(
            experiment=data["experiment"],
            platform=data["platform"],
            input_sha256=data["input_sha256"],
            programs=[ProgramRun(**p) for p in data["programs"]],
            comparisons=[ComparisonRun.from_dict(c) for c in data["comparisons"]],
            compile_fail=[CompileFailRun(**c) for c in data["compile_fail"]],
            sources=[SourceLocation(**s) for s in data["sources"]],
            claims=[ClaimResult(**c) for c in data["claims"]],
            traces=[TraceRun.from_dict(t) for t in data.get("traces", [])],
            format=data.get("format", RECORD_FORMAT),
        )
