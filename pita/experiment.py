"""Experiments and their claims.

An experiment names a PyTorch script and a burn binary, the variants each side runs, the dump
comparisons to make, the compile-fail cases to build and the burn source lines that explain the
behaviour. Each claim states what a run must show; `pita run` checks every claim against the
run record, and the record keeps what was observed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pita.dump import read_dump
from pita.record import ClaimResult, RunRecord


@dataclass(frozen=True)
class SourceRef:
    """A line in the pinned burn source, found by searching `pattern` inside `function`."""

    crate: str
    file: str
    function: str
    pattern: str


# The training main line, in order; every experiment sits at one of these stages.
MAINLINE = (
    "tensors and shapes",
    "init and weight layout",
    "forward",
    "loss",
    "loss → backward",
    "backward",
    "clipping and accumulation",
    "optimizer",
    "schedule",
    "train/eval",
    "save/load PyTorch weights",
)
# How a divergence shows in a port; "same" marks a candidate whose paired run showed none.
KINDS = ("silent", "panic", "compile", "same")


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    mainline: str  # one of MAINLINE
    kind: str  # one of KINDS
    torch_script: str
    burn_binary: str
    torch_variants: tuple[str, ...]
    burn_variants: tuple[str, ...]
    comparisons: tuple[tuple[str, str], ...]  # (reference, candidate) dump names
    compile_fail: tuple[str, ...]
    sources: tuple[SourceRef, ...]
    claims: tuple[Claim, ...]
    # The divergence's size as measured, e.g. "gradients ×4", for the catalog page.
    magnitude: Callable[[RunRecord], str] | None = None

    def __post_init__(self):
        if self.mainline not in MAINLINE:
            raise ValueError(f"{self.id}: main-line stage {self.mainline!r} is not one of {MAINLINE}")
        if self.kind not in KINDS:
            raise ValueError(f"{self.id}: kind {self.kind!r} is not one of {KINDS}")


class Claim:
    """What a run must show. Subclasses set `id` and `text` and implement `observe`."""

    id: str
    text: str

    def check(self, record: RunRecord, out: Path) -> ClaimResult:
        expected, observed, ok = self.observe(record, out)
        return ClaimResult(id=self.id, text=self.text, expected=expected, observed=observed, ok=ok)

    def observe(self, record: RunRecord, out: Path) -> tuple[str, str, bool]:
        raise NotImplementedError


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def panic_message(stderr: str) -> str:
    """The panic message: the lines after `thread '…' panicked at …:` up to the backtrace note."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if " panicked at " in line), None)
    if start is None:
        return ""
    body = []
    for line in lines[start + 1:]:
        if line.startswith("note: ") or line.startswith("stack backtrace:"):
            break
        body.append(line)
    return "\n".join(body).strip()


@dataclass(frozen=True)
class Raises(Claim):
    """A PyTorch variant stops with an exception: the traceback's last line is `error: message`."""

    id: str
    text: str
    side: str
    variant: str
    error: str
    message: str

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        expected = f"{self.error}: {self.message}"
        observed = last_line(run.stderr) if run.exit_code != 0 else f"exit 0: {last_line(run.stdout)}"
        return expected, observed, run.exit_code != 0 and observed == expected


@dataclass(frozen=True)
class Accepts(Claim):
    """A variant exits 0 and writes its dump."""

    id: str
    text: str
    side: str
    variant: str

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        observed = f"exit {run.exit_code}, dump {run.dump or 'none'}"
        return f"exit 0, dump {run.name}.safetensors", observed, run.exit_code == 0 and run.dump == f"{run.name}.safetensors"


@dataclass(frozen=True)
class Panics(Claim):
    """A burn variant panics (exit 101) with `message` in its panic message."""

    id: str
    text: str
    side: str
    variant: str
    message: str

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        message = panic_message(run.stderr)
        observed = f"exit {run.exit_code}: " + (message.splitlines()[0] if message else last_line(run.stderr))
        return f"exit 101: …{self.message}", observed, run.exit_code == 101 and self.message in message


@dataclass(frozen=True)
class Matches(Claim):
    """`pita compare reference candidate` exits 0 (the fixed port matches)."""

    id: str
    text: str
    reference: str
    candidate: str

    def observe(self, record, out):
        run = record.comparison(self.reference, self.candidate)
        return "OK, exit 0", f"{last_line(run.stdout)}, exit {run.exit_code}", run.exit_code == 0 and run.result["ok"]


@dataclass(frozen=True)
class Mismatches(Claim):
    """`pita compare reference candidate` exits 1 with MISMATCH (the negative control)."""

    id: str
    text: str
    reference: str
    candidate: str

    def observe(self, record, out):
        run = record.comparison(self.reference, self.candidate)
        verdict = last_line(run.stdout)
        return "MISMATCH, exit 1", f"{verdict}, exit {run.exit_code}", run.exit_code == 1 and verdict.endswith("MISMATCH")


@dataclass(frozen=True)
class ScaledByMetadata(Claim):
    """Every element of `candidate` is `reference` times the number stored under `key` in the
    dumps' metadata (e.g. the batch size), within relative `rtol`. Measured from the dumps."""

    id: str
    text: str
    reference: str
    candidate: str
    key: str
    rtol: float = 1e-5

    def observe(self, record, out):
        reference, candidate = read_dump(out / f"{self.reference}.safetensors"), read_dump(out / f"{self.candidate}.safetensors")
        expected_factor = float(reference.metadata[self.key])
        ratios = np.concatenate([
            (candidate.tensors[name].astype(np.float64).ravel() / reference.tensors[name].astype(np.float64).ravel())
            for name in sorted(reference.tensors)
        ])
        low, high = float(ratios.min()), float(ratios.max())
        ok = bool(np.all(np.abs(ratios - expected_factor) <= self.rtol * expected_factor))
        return f"ratio {self.key}={expected_factor:g} ±{self.rtol:g}", f"ratio in [{low:.9g}, {high:.9g}]", ok


@dataclass(frozen=True)
class Diagnosed(Claim):
    """compare's diagnosis of `reference` against `candidate` names `kind` on every mismatched
    tensor (or only on `tensors`, if given). With `key`, the finding's `factor` must equal that
    metadata value (e.g. the batch size); `params` must match the finding's parameters."""

    id: str
    text: str
    reference: str
    candidate: str
    kind: str
    key: str | None = None
    params: tuple[tuple[str, object], ...] = ()
    tensors: tuple[str, ...] = ()

    def observe(self, record, out):
        run = record.comparison(self.reference, self.candidate)
        wanted = dict(self.params)
        if self.key:
            wanted["factor"] = float(read_dump(out / f"{self.reference}.safetensors").metadata[self.key])
        rows = [t for t in run.result["tensors"] if (t["name"] in self.tensors if self.tensors else not t["ok"])]
        found = [f"{t['name']}: {', '.join(_describe(d) for d in t['diagnosis']) or 'none'}" for t in rows]
        ok = bool(rows) and all(any(_fits(d, self.kind, wanted) for d in t["diagnosis"]) for t in rows)
        expected = self.kind + "".join(f" {k}={v:g}" if isinstance(v, float) else f" {k}={v}" for k, v in wanted.items())
        return f"{expected} on {', '.join(self.tensors) or 'every mismatched tensor'}", "; ".join(found) or "no tensors", ok


def _describe(diagnosis: dict) -> str:
    factor = diagnosis.get("factor")
    return diagnosis["kind"] + (f" {factor:g}" if isinstance(factor, float) else "")


def _fits(diagnosis: dict, kind: str, wanted: dict) -> bool:
    if diagnosis["kind"] != kind:
        return False
    for name, value in wanted.items():
        found = diagnosis.get(name)
        if isinstance(value, float):
            if not isinstance(found, (int, float)) or abs(found - value) > 1e-4 * max(abs(value), 1e-12):
                return False
        elif found != value:
            return False
    return True


@dataclass(frozen=True)
class CompileFails(Claim):
    """A pita-ce case fails to compile with `code` and `detail`, as its snapshot says."""

    id: str
    text: str
    case: str
    code: str
    detail: str

    def observe(self, record, out):
        run = next(c for c in record.compile_fail if c.case == self.case)
        has = f"error[{self.code}]" in run.diagnostic and self.detail in run.diagnostic
        first = run.diagnostic.splitlines()[0] if run.diagnostic else f"exit {run.exit_code}, no error"
        snapshot = "snapshot matches" if run.matches_snapshot else "snapshot DIFFERS"
        expected = f"error[{self.code}] … {self.detail}; snapshot matches"
        observed = f"{first} … {self.detail if self.detail in run.diagnostic else '(detail missing)'}; {snapshot}"
        return expected, observed, run.exit_code != 0 and has and run.matches_snapshot
