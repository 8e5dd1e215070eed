"""Experiments and their claims.

An experiment names a PyTorch script and a burn binary, the variants each side runs, the dump
comparisons to make, the compile-fail cases to build and the burn source lines that explain the
behaviour. Each claim states what a run must show; `pita run` checks every claim against the
run record, and the record keeps what was observed.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    mainline: str
    kind: str  # "silent", "panic" or "compile": how the divergence shows in a port
    torch_script: str
    burn_binary: str
    torch_variants: tuple[str, ...]
    burn_variants: tuple[str, ...]
    comparisons: tuple[tuple[str, str], ...]  # (reference, candidate) dump names
    compile_fail: tuple[str, ...]
    sources: tuple[SourceRef, ...]
    claims: tuple[Claim, ...]


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
    """compare's diagnosis names `kind` with `factor` equal to the dumps' `key` on every tensor."""

    id: str
    text: str
    reference: str
    candidate: str
    kind: str
    key: str

    def observe(self, record, out):
        run = record.comparison(self.reference, self.candidate)
        reference = read_dump(out / f"{self.reference}.safetensors")
        wanted = float(reference.metadata[self.key])
        found = []
        for tensor in run.result["tensors"]:
            factors = [d.get("factor") for d in tensor["diagnosis"] if d["kind"] == self.kind]
            found.append(f"{tensor['name']}: {', '.join(f'{f:g}' for f in factors) or 'none'}")
        ok = all(
            any(d["kind"] == self.kind and abs(d["factor"] - wanted) <= 1e-4 * wanted for d in t["diagnosis"])
            for t in run.result["tensors"]
        )
        return f"{self.kind} factor {wanted:g} on every tensor", "; ".join(found), ok


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
