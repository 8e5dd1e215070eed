"""Claims: what a run must show. Each claim reads the run record (and the dumps in the run
folder) and returns what it expected, what it observed and whether that holds; `pita run`
checks every claim of an experiment, and the record keeps the three for the book.

Claims never hold typed expected numbers: they relate dumps to each other, to the dumps'
metadata, or to what a program printed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pita.diagnose.base import Diagnosis
from pita.dump import read_dump
from pita_lab.record import ClaimResult, RunRecord, last_line
from pita_lab.rust_source import block_methods, locked_file, sources_root


class Claim:
    """What a run must show. Subclasses set `id` and `text` and implement `observe`."""

    id: str
    text: str

    def check(self, record: RunRecord, out: Path) -> ClaimResult:
        """The claim against the run; a claim that cannot observe its fact (a dump, a program, a
        tensor the run did not produce) fails, with the reason as what it observed."""
        try:
            expected, observed, ok = self.observe(record, out)
            facts = self.facts(record, out)
        except Exception as error:
            expected, ok, facts = "an observation", False, None
            observed = f"cannot observe: {_reason(error)}".replace(str(out), "OUT")
        return ClaimResult(id=self.id, text=self.text, expected=expected, observed=observed, ok=ok, facts=facts)

    def observe(self, record: RunRecord, out: Path) -> tuple[str, str, bool]:
        raise NotImplementedError

    def facts(self, record: RunRecord, out: Path) -> dict | None:
        """Structured values the record keeps beside the verdict, for pages built across
        chapters (the defaults table); most claims have none."""
        return None


def _reason(error: Exception) -> str:
    if isinstance(error, StopIteration):
        return "the run has no such program, comparison or compile-fail case"
    if isinstance(error, FileNotFoundError):
        return f"no file {Path(error.filename).name if error.filename else error}"
    if isinstance(error, KeyError):
        return f"no {error.args[0]!r} in the run"
    return f"{type(error).__name__}: {error}"


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
class SideClaim(Claim):
    """A claim about one side's run of one variant (`torch`/`burn`, e.g. `mean`)."""

    id: str
    text: str
    side: str
    variant: str


@dataclass(frozen=True)
class PairClaim(Claim):
    """A claim about a pair of dumps, by name (`torch-mean`, `burn-nomean`): a comparison of them
    or a relation between their tensors or metadata."""

    id: str
    text: str
    reference: str
    candidate: str

    def dumps(self, out: Path):
        """The two dumps, as the run folder holds them."""
        return read_dump(out / f"{self.reference}.safetensors"), read_dump(out / f"{self.candidate}.safetensors")


def ratios_match(ratios: np.ndarray, wanted: float, rtol: float) -> tuple[str, bool]:
    """Whether every element ratio is `wanted` within relative `rtol`, and the observed range."""
    ok = bool(np.all(np.abs(ratios - wanted) <= rtol * wanted))
    return f"ratio in [{float(ratios.min()):.9g}, {float(ratios.max()):.9g}]", ok


@dataclass(frozen=True)
class Raises(SideClaim):
    """A PyTorch variant stops with an exception: the traceback's last line is `error: message`."""

    error: str
    message: str

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        expected = f"{self.error}: {self.message}"
        observed = last_line(run.stderr) if run.exit_code != 0 else f"exit 0: {last_line(run.stdout)}"
        return expected, observed, run.exit_code != 0 and observed == expected


@dataclass(frozen=True)
class Accepts(SideClaim):
    """A variant exits 0 and writes its dump."""

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        observed = f"exit {run.exit_code}, dump {run.dump or 'none'}"
        return f"exit 0, dump {run.name}.safetensors", observed, run.exit_code == 0 and run.dump == f"{run.name}.safetensors"


@dataclass(frozen=True)
class Panics(SideClaim):
    """A burn variant panics (exit 101) with `message` in its panic message."""

    message: str

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        message = panic_message(run.stderr)
        said = message.splitlines()[0] if message else last_line(run.stderr) or last_line(run.stdout) or "no panic, no output"
        observed = f"exit {run.exit_code}: {said}"
        return f"exit 101: …{self.message}", observed, run.exit_code == 101 and self.message in message


@dataclass(frozen=True)
class Matches(PairClaim):
    """`pita compare reference candidate` exits 0 (the fixed port matches)."""

    def observe(self, record, out):
        run = record.comparison(self.reference, self.candidate)
        return "OK, exit 0", f"{run.verdict}, exit {run.exit_code}", run.exit_code == 0 and run.result.ok


@dataclass(frozen=True)
class Mismatches(PairClaim):
    """`pita compare reference candidate` exits 1 with MISMATCH (the negative control)."""

    def observe(self, record, out):
        run = record.comparison(self.reference, self.candidate)
        return "MISMATCH, exit 1", f"{run.verdict}, exit {run.exit_code}", run.exit_code == 1 and not run.result.ok


@dataclass(frozen=True)
class ScaledByMetadata(PairClaim):
    """Every element of `candidate` is `reference` times the number stored under `key` in the
    dumps' metadata (e.g. the batch size), within relative `rtol`. Measured from the dumps."""

    key: str
    rtol: float = 1e-5

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        expected_factor = float(reference.metadata[self.key])
        ratios = np.concatenate([
            (candidate.tensors[name].astype(np.float64).ravel() / reference.tensors[name].astype(np.float64).ravel())
            for name in sorted(reference.tensors)
        ])
        observed, ok = ratios_match(ratios, expected_factor, self.rtol)
        return f"ratio {self.key}={expected_factor:g} ±{self.rtol:g}", observed, ok


@dataclass(frozen=True)
class Diagnosed(PairClaim):
    """compare's diagnosis of `reference` against `candidate` names `kind` on every mismatched
    tensor (or only on `tensors`, if given). With `key`, the finding's `factor` must equal that
    metadata value (e.g. the batch size); `params` must match the finding's parameters."""

    kind: str
    key: str | None = None
    params: tuple[tuple[str, object], ...] = ()
    tensors: tuple[str, ...] = ()

    def observe(self, record, out):
        run = record.comparison(self.reference, self.candidate)
        wanted = dict(self.params)
        if self.key:
            wanted["factor"] = float(read_dump(out / f"{self.reference}.safetensors").metadata[self.key])
        rows = [t for t in run.tensors if (t.name in self.tensors if self.tensors else not t.ok)]
        found = [f"{t.name}: {', '.join(_describe(d) for d in t.diagnosis) or 'none'}" for t in rows]
        ok = bool(rows) and all(any(_fits(d, self.kind, wanted) for d in t.diagnosis) for t in rows)
        expected = self.kind + "".join(f" {k}={v:g}" if isinstance(v, float) else f" {k}={v}" for k, v in wanted.items())
        return f"{expected} on {', '.join(self.tensors) or 'every mismatched tensor'}", "; ".join(found) or "no tensors", ok


def _describe(diagnosis: Diagnosis) -> str:
    factor = diagnosis.params.get("factor")
    return diagnosis.kind + (f" {factor:g}" if isinstance(factor, float) else "")


def _fits(diagnosis: Diagnosis, kind: str, wanted: dict) -> bool:
    if diagnosis.kind != kind:
        return False
    for name, value in wanted.items():
        found = diagnosis.params.get(name)
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


@dataclass(frozen=True)
class TensorsCompare(PairClaim):
    """In `pita compare reference candidate`, each of `tensors` passes (`ok=True`) or fails
    (`ok=False`) the tolerance, whatever the other tensors of the dumps do."""

    tensors: tuple[str, ...]
    ok: bool = True

    def observe(self, record, out):
        rows = {t.name: t for t in record.comparison(self.reference, self.candidate).tensors}
        found = [f"{name} {'OK' if rows[name].ok else 'MISMATCH'} (max|diff| {rows[name].max_abs_diff:.2e})"
                 if name in rows else f"{name} missing" for name in self.tensors]
        holds = all(name in rows and rows[name].ok == self.ok for name in self.tensors)
        verdict = "OK" if self.ok else "MISMATCH"
        return f"{', '.join(self.tensors)}: {verdict}", "; ".join(found), holds


RELATIONS = {
    "identity": lambda values: values,
    "trunc": np.trunc,
    "floor": np.floor,
    # What an int32 holds after computing the value in int64 and casting back (two's complement wrap).
    "wrap_int32": lambda values: values.astype(np.int64).astype(np.int32).astype(np.float64),
}


def _show(values: np.ndarray) -> str:
    return "[" + ", ".join(f"{v:.0f}" if float(v).is_integer() else f"{v:.9g}" for v in values.ravel()) + "]"


@dataclass(frozen=True)
class Relates(Claim):
    """Tensor `tensor` of dump `target` equals `relation` applied to the same tensor of dump
    `source`, element by element: exactly, within `atol`, or within `ulps` float32 ULPs (both
    read from the run's dumps). Bit equality across two frameworks holds on every machine only
    where both sides run the same correctly rounded IEEE operations; elsewhere claim `ulps`."""

    id: str
    text: str
    source: str
    target: str
    tensor: str
    relation: str
    atol: float = 0.0  # 0: exact
    ulps: int | None = None  # within this many float32 ULPs instead

    def observe(self, record, out):
        source = read_dump(out / f"{self.source}.safetensors").tensors[self.tensor].astype(np.float64)
        target = read_dump(out / f"{self.target}.safetensors").tensors[self.tensor].astype(np.float64)
        wanted = RELATIONS[self.relation](source)
        expected = f"{self.target}.{self.tensor} = {self.relation}({self.source}.{self.tensor})"
        observed = f"{self.relation}(…) = {_show(wanted)}; {self.target}: {_show(target)}"
        if wanted.shape != target.shape:
            return expected, f"shapes {list(wanted.shape)} and {list(target.shape)}", False
        if self.ulps is not None:
            from pita.stats import ulp_distance

            apart = int(ulp_distance(wanted.astype(np.float32), target.astype(np.float32)).max(initial=0))
            return f"{expected} within {self.ulps} ulp", f"{observed}; at most {apart} ulp apart", apart <= self.ulps
        ok = bool(np.all(np.abs(wanted - target) <= self.atol))
        return expected + (f" ±{self.atol:g}" if self.atol else ""), observed, ok


@dataclass(frozen=True)
class Warns(SideClaim):
    """A variant exits 0 and its stderr carries `category: …message…` (a Python warning)."""

    category: str
    message: str

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        line = next((text.strip() for text in run.stderr.splitlines() if f"{self.category}: " in text), "")
        found = self.message in line
        observed = f"exit {run.exit_code}: " + (line[line.index(self.category):][:120] if line else "no warning")
        return f"exit 0, {self.category}: …{self.message}…", observed, run.exit_code == 0 and found


@dataclass(frozen=True)
class DiffersOnlyAtKinks(PairClaim):
    """For each op, the candidate's `<op>.grad` differs from the reference's (beyond `atol`)
    exactly at the elements whose input `<op>.x` equals one of the kinks the reference dump
    records under `<op>.kinks`, and `<op>.out` agrees bit for bit everywhere."""

    ops: tuple[str, ...]
    atol: float = 1e-6

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        expected, observed, ok = [], [], True
        for op in self.ops:
            kinks = reference.metadata[f"{op}.kinks"]
            x = reference.tensors[f"{op}.x"]
            on_kink = np.isin(x, np.array([float(k) for k in kinks.split(",")], dtype=x.dtype))
            diff = np.abs(candidate.tensors[f"{op}.grad"].astype(np.float64) - reference.tensors[f"{op}.grad"])
            differs = diff > self.atol
            same_out = np.array_equal(reference.tensors[f"{op}.out"], candidate.tensors[f"{op}.out"])
            ok = ok and bool(np.array_equal(differs, on_kink)) and same_out
            expected.append(f"{op}: grad differs only at x in {{{kinks}}}, out equal")
            observed.append(f"{op}: grad differs at x={[float(v) for v in x[differs]]}, out {'equal' if same_out else 'DIFFERS'}")
        return "; ".join(expected), "; ".join(observed), ok


def program_named(record, name: str):
    """The run of the dump named `side-variant` (`torch-adam`)."""
    side, variant = name.split("-", 1)
    return record.program(side, variant)


@dataclass(frozen=True)
class SameHparam(PairClaim):
    """The hyper-parameter `key` in the metadata of dumps `reference` and `candidate` (each side
    records the value its optimizer actually used) is equal at f32 precision, or differs when
    `same` is False."""

    key: str
    same: bool = True

    def observe(self, record, out):
        ref = program_named(record, self.reference).metadata.get(self.key)
        cand = program_named(record, self.candidate).metadata.get(self.key)
        if ref is None or cand is None:
            return f"{self.key} in both dumps", f"{self.reference}: {ref}, {self.candidate}: {cand}", False
        equal = np.float32(float(ref)) == np.float32(float(cand))
        expected = f"{self.key} {'equal' if self.same else 'differs'}"
        return expected, f"{self.reference} {self.key}={ref}, {self.candidate} {self.key}={cand}", bool(equal == self.same)


@dataclass(frozen=True)
class CountsMultiply(SideClaim):
    """Counts a program recorded in its dump's metadata relate as a product, exactly:
    `key` = the product of `factors` (e.g. micro-batches = scheduler steps × accumulation: the
    schedule advanced once per optimizer update). Integers, so exact on every machine."""

    key: str
    factors: tuple[str, ...]

    def observe(self, record, out):
        metadata = record.program(self.side, self.variant).metadata
        total, parts = int(metadata[self.key]), [int(metadata[factor]) for factor in self.factors]
        expected = f"{self.key} = {' × '.join(self.factors)}"
        observed = f"{self.key}={total}, " + ", ".join(f"{f}={p}" for f, p in zip(self.factors, parts))
        return expected, observed, total == int(np.prod(parts, dtype=np.int64))


@dataclass(frozen=True)
class SmallerInSize(PairClaim):
    """Every element of `tensor` in dump `candidate` is no larger in absolute value than in dump
    `reference`, and at least one is strictly smaller (with `larger=True`: the other way round)."""

    tensor: str
    larger: bool = False

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        ref = np.abs(reference.tensors[self.tensor].astype(np.float64)).ravel()
        cand = np.abs(candidate.tensors[self.tensor].astype(np.float64)).ravel()
        small, big = (ref, cand) if self.larger else (cand, ref)
        ok = bool(np.all(small <= big) and np.any(small < big))
        ratios = ref / np.where(cand == 0, np.nan, cand)
        word = "larger" if self.larger else "smaller"
        observed = f"|{self.reference}| / |{self.candidate}| in [{np.nanmin(ratios):.6g}, {np.nanmax(ratios):.6g}]"
        return f"|{self.candidate}| {word} than |{self.reference}|", observed, ok


@dataclass(frozen=True)
class OnlyTensorsDiffer(PairClaim):
    """`pita compare reference candidate` fails on exactly `tensors` and passes on every other
    tensor (e.g. the forward output agrees, only the gradient differs)."""

    tensors: tuple[str, ...]

    def observe(self, record, out):
        rows = record.comparison(self.reference, self.candidate).tensors
        failing = tuple(sorted(t.name for t in rows if not t.ok))
        passing = sorted(t.name for t in rows if t.ok)
        expected = f"MISMATCH only on {', '.join(sorted(self.tensors))}"
        observed = f"MISMATCH on {', '.join(failing) or 'nothing'}; OK on {', '.join(passing) or 'nothing'}"
        return expected, observed, failing == tuple(sorted(self.tensors)) and bool(passing)


def _listed(run, key: str) -> list[str]:
    """A comma-separated list of paths in a program's dump metadata (absent or empty: none)."""
    return [name for name in run.metadata.get(key, "").split(",") if name]


@dataclass(frozen=True)
class Loaded(Claim):
    """A burn variant's load report (burn-store's `ApplyResult`, recorded in its dump's metadata as
    comma-separated `applied`, `missing` and `unused` paths). `everything=True`: parameters
    applied, none missing, no tensor of the file unused. `everything=False`: nothing applied,
    parameters missing and the file's tensors unused."""

    id: str
    text: str
    variant: str
    everything: bool = True

    def observe(self, record, out):
        run = record.program("burn", self.variant)
        applied, missing, unused = (_listed(run, key) for key in ("applied", "missing", "unused"))
        observed = f"applied {len(applied)}, missing {len(missing)}, unused {len(unused)}"
        if self.everything:
            return "applied > 0, missing 0, unused 0", observed, bool(applied) and not missing and not unused
        return "applied 0, missing > 0, unused > 0", observed, not applied and bool(missing) and bool(unused)


@dataclass(frozen=True)
class KeptInitial(Claim):
    """Which parameters a burn variant's load left at their initial values: its dump's metadata
    lists every parameter path (`parameters`) and those whose bytes were the same after the load
    as before it (`kept_initial`). A copy compared with itself, so the count is exact on any
    machine. `kept=True`: every parameter kept its initial value; `kept=False`: none did."""

    id: str
    text: str
    variant: str
    kept: bool = True

    def observe(self, record, out):
        run = record.program("burn", self.variant)
        parameters, kept = _listed(run, "parameters"), _listed(run, "kept_initial")
        observed = f"{len(kept)} of {len(parameters)} parameters at their initial values"
        if self.kept:
            return "every parameter at its initial value", observed, bool(parameters) and sorted(kept) == sorted(parameters)
        return "no parameter at its initial value", observed, bool(parameters) and not kept


@dataclass(frozen=True)
class DefaultsDiffer(PairClaim):
    """One setting's default differs between PyTorch and burn. Each side reads the value from
    its framework at run time (an optimizer's `defaults`, a config's field, a module's
    attribute) and records it under `key` in its dump's metadata; one dump is PyTorch's, the
    other burn's. Values compare as what they are: numbers at float32 precision (burn keeps
    most hyper-parameters in f32), booleans and `None` by identity, names case-insensitively
    (`relu` and `Relu` name one activation). `setting` names the setting in Chinese; the result
    keeps both values as facts, from which the book's defaults table is built. `maps` names the
    setting in each framework's recording, `("InstanceNorm1d.affine", "InstanceNorm.affine")`
    (PyTorch's `Kind.name`, burn's; `|` joins kinds one row maps alike, an empty name is a
    setting that framework does not have): the settings table (pita/catalog/settings.json) then
    holds a row with both defaults and this chapter, and trace names the chapter by it."""

    key: str
    setting: str
    maps: tuple[str, str] | tuple[()] = ()

    def observe(self, record, out):
        values = self._values(record)
        shown = ", ".join(f"{name} {self.key}={show_default(value, side)}" for name, (side, value) in values.items())
        (_, ref), (_, cand) = values.values()
        return f"{self.key} differs", shown, not same_default(ref, cand)

    def facts(self, record, out):
        by_side = dict(self._values(record).values())
        return {"setting": self.setting, "key": self.key, "torch": by_side["torch"], "burn": by_side["burn"]}

    def _values(self, record) -> dict[str, tuple[str, object]]:
        """dump name -> (side, the recorded default as a value), reference first."""
        values = {}
        for name in (self.reference, self.candidate):
            run = program_named(record, name)
            values[name] = (run.side, parse_default(run.metadata[self.key]))
        if sorted(side for side, _ in values.values()) != ["burn", "torch"]:
            raise ValueError(f"a default compares a torch dump with a burn dump, not {self.reference} with {self.candidate}")
        return values


def parse_default(text: str):
    """A default as the dump metadata recorded it (a string), back as a value: a bool
    (`true`/`True`), None (`None`), a number, or else the name itself."""
    word = text.strip()
    if word.lower() in ("true", "false"):
        return word.lower() == "true"
    if word == "None":
        return None
    try:
        return float(word)
    except ValueError:
        return word


def same_default(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return bool(np.float32(a) == np.float32(b))
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    return type(a) is type(b) and a == b


def show_default(value, side: str) -> str:
    """A default as its side spells it: `True`/`None` in Python, `true` in Rust, 6 digits."""
    if isinstance(value, bool):
        return str(value) if side == "torch" else str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True)
class Traced(PairClaim):
    """`pita trace reference candidate` finds its first divergence in `phase`, at the tensor
    `name` (or one starting with it when it ends in `/` or `.`), diagnosed as `kind` when given.
    With `phase=None` the claim is that trace finds none: every phase matches, exit 0.
    `random_masks`: trace also finds that the candidate drew its own random masks where the
    reference recorded them; `settings`: these optimizer settings are among those that differ."""

    phase: str | None = None
    name: str = ""
    kind: str | None = None
    random_masks: bool = False
    settings: tuple[str, ...] = ()

    def observe(self, record, out):
        run = record.trace(self.reference, self.candidate)
        first = run.result.first_divergence
        if self.phase is None:
            observed = "no divergence" if first is None else f"first divergence {first.phase} {first.name}"
            return "no divergence, exit 0", f"{observed}, exit {run.exit_code}", first is None and run.exit_code == 0
        expected = f"{self.phase} {self.name}" + (f" ({self.kind})" if self.kind else "") + ", exit 1" + self._expected_findings()
        if first is None:
            return expected, f"no divergence, exit {run.exit_code}", False
        kinds = [d.kind for d in first.diagnosis]
        named = first.name.startswith(self.name) if self.name.endswith(("/", ".")) else first.name == self.name
        findings, found = self._findings(run.result)
        ok = run.exit_code == 1 and first.phase == self.phase and named and (self.kind is None or self.kind in kinds) and found
        observed = f"{first.phase} {first.name}" + (f" ({', '.join(kinds)})" if kinds else "") + f", exit {run.exit_code}" + findings
        return expected, observed, ok

    def _expected_findings(self) -> str:
        return ("; random masks not replayed" if self.random_masks else "") + (f"; settings differ: {', '.join(self.settings)}" if self.settings else "")

    def _findings(self, result) -> tuple[str, bool]:
        """What trace found of the random masks and the settings, as far as the claim asks, and whether it holds."""
        text, found = "", True
        if self.random_masks:
            masks = result.random_masks
            text += f"; random masks: {masks['reference']} recorded, {masks['replayed']} replayed" if masks else "; no random-mask finding"
            found = masks is not None
        if self.settings:
            differing = [d["name"] for d in result.setting_differences]
            text += f"; settings differ: {', '.join(differing) or 'none'}"
            found = found and set(self.settings) <= set(differing)
        return text, found


@dataclass(frozen=True)
class BlockDefines(Claim):
    """In the locked source of `crate` (any package of the workspace's Cargo.lock, built or
    not), the `impl`/`trait` block whose first line contains `block` defines `fn method` itself
    (`defines=True`, its body containing `contains` when given) or does not (`defines=False`:
    an impl that inherits the trait's default). Read from the source at run time, so a burn
    upgrade that adds or drops the override fails the claim."""

    id: str
    text: str
    crate: str
    file: str
    block: str
    method: str
    defines: bool = True
    contains: str = ""

    def observe(self, record, out):
        version, source = locked_file(sources_root(), self.crate, self.file)
        methods = block_methods(source, self.block)
        where = f"{self.crate} {version} {self.file}, `{self.block}`"
        wanted = f"fn {self.method}" + (f" with {self.contains!r}" if self.contains else "")
        expected = f"{where}: {'defines' if self.defines else 'no'} {wanted}"
        found = methods.get(self.method)
        if found is None:
            observed = f"no fn {self.method}; defines {', '.join(sorted(methods)) or 'nothing'}"
            return expected, observed, not self.defines
        has = self.contains in found.body
        observed = f"fn {self.method} at line {found.line}" + (f", {'with' if has else 'without'} {self.contains!r}" if self.contains else "")
        return expected, observed, self.defines and has
