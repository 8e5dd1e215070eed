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

from pita.likely import Signature
from pita_lab import claims
from pita_lab.claims import Claim, Mismatches
from pita_lab.kinds import Kind, Stage
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


# The stages and kinds by name, as the declarations' checks list them.
MAINLINE = tuple(stage.value for stage in Stage)
KINDS = tuple(kind.value for kind in Kind)
FLOAT32_EPSILON = 2.0**-23


@dataclass(frozen=True)
class PlatformTolerance:
    """How far a float figure of an experiment may move between machines: `ulps` float32 ULPs
    of the figure itself or of `scale` (the size of the experiment's values), whichever is
    larger. A printed figure may also move by one unit of its last printed digit, since a move
    far below that can still flip the digit."""

    ulps: int = 64
    scale: float = 1.0

    def allowed(self, committed: float, fresh: float) -> float:
        return self.ulps * FLOAT32_EPSILON * max(abs(committed), abs(fresh), self.scale)

    def describe(self) -> str:
        return f"{self.ulps} float32 ULPs of the figure or of {self.scale:g}"


# The settings table's scopes (pita/catalog/settings.json): a module's setting, the loss's, the optimizer's.
MODULE, LOSS_FN, OPTIMIZER = "module", "loss_fn", "optimizer"


@dataclass(frozen=True)
class Mapped:
    """A row of the settings table: PyTorch's `Kind.name` against burn's, both defaults, the
    converter (pita.settings.CONVERTERS) and the chapter, if one documents the setting (set from
    the experiment that declares the row in its `settings`). `|` joins kinds one row maps alike;
    an empty name is a setting that framework does not have."""

    torch: str
    burn: str
    torch_default: object = None
    burn_default: object = None
    convert: str | None = None
    chapter: str | None = None
    scope: str = MODULE


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    mainline: str  # a `Stage` (tutorials and guides may name none)
    kind: Kind  # given as its string, e.g. "silent"
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
    # Reports that touch the divergence without being it (a question, a neighbouring bug); the
    # chapter cites them apart, as 「相关报告」.
    related_reports: tuple[str, ...] = ()
    # What the pitfall's finding looks like (pita.likely.Signature; a tuple if several): trace and
    # compare name the chapter as a likely cause where one fits; `pita run` checks that one fires
    # on each negative control and none elsewhere but `also`.
    signature: Signature | tuple[Signature, ...] = ()
    # Other pitfalls whose signatures are right on this experiment's comparisons too (the chapter names them).
    also: tuple[str, ...] = ()
    # The one-line fix, in the catalog's language, with the code to write: "`loss.mean()` 后再 `backward()`".
    fix: str = ""
    # Rows of the settings table this chapter documents: trace names the chapter when one differs.
    settings: tuple[Mapped, ...] = ()
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
        """The burn program's crate, named like its folder (a port's under ports/: like its id,
        `port-<folder>`); its one binary is named like the id."""
        return self.id if self.folder.startswith("ports/") else self.folder.rsplit("/", 1)[-1]

    @property
    def burn_binary(self) -> str:
        return self.id

    def program_arguments(self, side: str, variant: str, out: str) -> list[str]:
        given = dict(self.arguments).get(f"{side}-{variant}", ("--variant", variant, "--out", "{out}"))
        return [arg.replace("{out}", out) for arg in given]

    @property
    def negative_control(self) -> Mismatches | None:
        """The `Mismatches` claim named `…negative-control`, else the first (the direct port
        against PyTorch, in every experiment of the catalog); None without one."""
        controls = [c for c in self.claims if isinstance(c, Mismatches)]
        named = [c for c in controls if c.id.endswith("negative-control")]
        return (named or controls or [None])[0]

    def __post_init__(self):
        at_a_stage = self.kind not in KINDS or Kind(self.kind).is_pitfall  # an unknown kind is refused below
        if self.mainline not in MAINLINE and at_a_stage:
            raise ValueError(f"{self.id}: main-line stage {self.mainline!r} is not one of {MAINLINE}")
        if self.kind not in KINDS:
            raise ValueError(f"{self.id}: kind {self.kind!r} is not one of {KINDS}")
        object.__setattr__(self, "kind", Kind(self.kind))  # frozen: the string a declaration gives becomes its Kind
        if isinstance(self.signature, Signature):
            object.__setattr__(self, "signature", (self.signature,))  # one signature is a tuple of one
        if self.signature and not self.fix:
            raise ValueError(f"{self.id}: a signature names a likely cause, whose chapter gives its fix: declare `fix=`")
        malformed = [r for r in (*self.reports, *self.related_reports) if not REPORT.match(r)]
        if malformed:
            raise ValueError(f"{self.id}: a report is cited as owner/repo#number, not {', '.join(map(repr, malformed))}")
        if unknown_symptoms(self.symptoms):
            raise ValueError(f"{self.id}: unknown symptom(s) {', '.join(unknown_symptoms(self.symptoms))}; "
                             f"known: {', '.join(SYMPTOM_KEYS)} (pita_lab/symptoms.py)")


def __getattr__(name: str) -> type[Claim]:
    """Every claim of `pita_lab.claims` by name, so a declaration imports its claims from here
    with `Experiment` and a new shared claim needs no list kept here (PEP 562)."""
    found = getattr(claims, name, None)
    if isinstance(found, type) and issubclass(found, Claim):
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
