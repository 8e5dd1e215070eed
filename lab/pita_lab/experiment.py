"""Experiments and their claims.

An experiment is a folder (see `pita_lab.catalog`); its declaration names the variants each side
runs, the dump comparisons to make and the burn source lines that explain the behaviour. Each
claim states what a run must show; `pita run` checks every claim against the run record, and the
record keeps what was observed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pita_lab.claims import (  # noqa: F401  (catalog modules import claims from here)
    Accepts,
    BlockDefines,
    Claim,
    CompileFails,
    CountsMultiply,
    DefaultsDiffer,
    Diagnosed,
    DiffersOnlyAtKinks,
    KeptInitial,
    Loaded,
    Matches,
    Mismatches,
    OnlyTensorsDiffer,
    PairClaim,
    Panics,
    Raises,
    Relates,
    SameHparam,
    ScaledByMetadata,
    SideClaim,
    SmallerInSize,
    TensorsCompare,
    Traced,
    Warns,
)
from pita_lab.drift import PlatformTolerance
from pita_lab.record import RunRecord
from pita_lab.symptoms import BY_KEY as SYMPTOM_KEYS
from pita_lab.symptoms import unknown as unknown_symptoms

# A user's report: a GitHub issue or pull request, `tracel-ai/burn#4043`.
REPORT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+#[1-9][0-9]*$")


def report_url(report: str) -> str:
    """`tracel-ai/burn#4043` -> its address (GitHub sends /issues/N on to /pull/N for a pull request)."""
    repository, number = report.split("#")
    return f"https://github.com/{repository}/issues/{number}"


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
# How a divergence shows in a port; "same" marks a candidate whose paired run showed none;
# "tutorial" a worked port under examples/, traced phase by phase rather than one pitfall;
# "guide" a front or reference page under guides/ whose examples run like an experiment's.
KINDS = ("silent", "panic", "compile", "same", "tutorial", "guide")


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    mainline: str  # one of MAINLINE
    kind: str  # one of KINDS
    torch_variants: tuple[str, ...]
    burn_variants: tuple[str, ...]
    comparisons: tuple[tuple[str, str], ...]  # (reference, candidate) dump names, run through `pita compare`
    sources: tuple[SourceRef, ...]
    claims: tuple[Claim, ...]
    # The divergence's size as measured, e.g. "gradients ×4", for the catalog page.
    magnitude: Callable[[RunRecord], str] | None = None
    # How far its float figures may move on another machine (`pita book drift`, the drift test).
    platform_tolerance: PlatformTolerance = PlatformTolerance()
    # (reference, candidate) recordings run through `pita trace` (a tutorial's).
    traces: tuple[tuple[str, str], ...] = ()
    # The command line after the program, per `side-variant`; `{out}` is the run folder.
    # Default: `--variant V --out {out}`, the lab's convention.
    arguments: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # What a reader sees before knowing the cause: keys of `pita_lab.symptoms.SYMPTOMS`; the
    # book's index by symptom lists the chapter under each.
    symptoms: tuple[str, ...] = ()
    # Ids of chapters worth reading next; the book links them both ways (the catalog checks them).
    related: tuple[str, ...] = ()
    # Users' public reports of this divergence, as `owner/repo#number`; the chapter cites each.
    reports: tuple[str, ...] = ()
    # Set by the catalog from the folder: its path from the checkout, its compile-fail cases.
    folder: str = ""
    compile_fail: tuple[str, ...] = ()

    @property
    def torch_script(self) -> str:
        return f"{self.folder}/pytorch.py"

    @property
    def burn_source(self) -> str:
        return f"{self.folder}/burn.rs"

    @property
    def burn_package(self) -> str:
        """The burn program's crate, named like its folder; its one binary is named like the id."""
        return self.folder.rsplit("/", 1)[-1]

    @property
    def burn_binary(self) -> str:
        return self.id

    def program_arguments(self, side: str, variant: str, out: str) -> list[str]:
        given = dict(self.arguments).get(f"{side}-{variant}", ("--variant", variant, "--out", "{out}"))
        return [arg.replace("{out}", out) for arg in given]

    def __post_init__(self):
        if self.mainline not in MAINLINE and self.kind not in ("tutorial", "guide"):
            raise ValueError(f"{self.id}: main-line stage {self.mainline!r} is not one of {MAINLINE}")
        if self.kind not in KINDS:
            raise ValueError(f"{self.id}: kind {self.kind!r} is not one of {KINDS}")
        malformed = [r for r in self.reports if not REPORT.match(r)]
        if malformed:
            raise ValueError(f"{self.id}: a report is cited as owner/repo#number, not {', '.join(map(repr, malformed))}")
        if unknown_symptoms(self.symptoms):
            raise ValueError(f"{self.id}: unknown symptom(s) {', '.join(unknown_symptoms(self.symptoms))}; "
                             f"known: {', '.join(SYMPTOM_KEYS)} (pita_lab/symptoms.py)")
