"""The catalog's signatures (pita.likely) checked on its own runs: every `pita run` adds the claim
`signatures` to an experiment that compares or traces, which holds when each negative control
(a `Mismatches` pair) fires the experiment's own signature, no positive control (a `Matches`
pair, or a tutorial's trace of its correct port) fires any, and nothing fires elsewhere but the experiment's own and those it declares
right too (`also`).

The comparisons are matched as `pita compare` matches them, with the catalog's declared
signatures (not the shipped JSON, which `pita book build` writes from them). The lab's dumps
record a setting under a key of their own (a `DefaultsDiffer` claim's), not as a recording's
`modules`/`optimizer`: each such claim on the pair, with the names it `maps`, becomes the setting
difference trace would report, so a setting signature is checked on the values the run measured.
A trace is matched by `pita trace` itself: its result's `likely`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pita.dump import read_dump
from pita.likely import Entry, comparison_causes, facts_of
from pita_lab import catalog
from pita_lab.claims import Claim, DefaultsDiffer, Matches, Mismatches, Traced, parse_default, program_named, same_default
from pita_lab.experiment import Experiment


@cache
def entries() -> tuple[Entry, ...]:
    """Every experiment with a signature, in catalog order, as pita/catalog/signatures.json holds it."""
    return tuple(entry_of(e) for e in map(catalog.get, catalog.chapter_ids()) if e.signature)


def entry_of(experiment: Experiment) -> Entry:
    return Entry(experiment.id, experiment.title, f"book/{experiment.id}.md", experiment.fix, experiment.signature)


def measured_settings(experiment: Experiment, record, reference: str, candidate: str) -> list[dict]:
    """The settings that differ between two of the run's dumps, in trace's shape
    (`settings.differences`), named as PyTorch names them: a `DefaultsDiffer` claim of the
    experiment says under which metadata key the dumps record a setting and what it `maps` to
    (the claim on this pair, else the first with that key)."""
    by_key: dict[str, DefaultsDiffer] = {}
    for claim in experiment.claims:
        if isinstance(claim, DefaultsDiffer) and claim.maps and claim.maps[0].partition(".")[2]:  # "" : PyTorch has no such setting
            if claim.key not in by_key or (claim.reference, claim.candidate) == (reference, candidate):
                by_key[claim.key] = claim
    differences = []
    for key, claim in by_key.items():
        recorded = [program_named(record, dump).metadata.get(key) for dump in (reference, candidate)]
        if None in recorded:
            continue  # these dumps do not record it
        ours, theirs = map(parse_default, recorded)
        if not same_default(ours, theirs):
            kinds, _, name = claim.maps[0].partition(".")
            differences.append({"module": f"dump metadata {key}", "kind": kinds.split("|")[0], "name": name,
                                "reference": ours, "candidate": theirs, "chapter": experiment.id})
    return differences


def fired(experiment: Experiment, record, out: Path, table: tuple[Entry, ...]) -> dict[str, list[dict]]:
    """`reference/candidate` -> the likely causes found there (as `likely` holds them), for every comparison and trace."""
    found = {}
    for reference, candidate in experiment.comparisons:
        result = record.comparison(reference, candidate).result
        if result is None:  # compare could not run (another burn version's mirror): the claims say why
            continue
        ours, theirs = (read_dump(out / f"{name}.safetensors") for name in (reference, candidate))
        facts = facts_of(ours, theirs, {"differences": measured_settings(experiment, record, reference, candidate)})
        found[f"{reference}/{candidate}"] = [c.to_dict() for c in comparison_causes(result, facts, table)]
    for trace in record.traces:
        found[f"{trace.reference}/{trace.candidate}"] = list(trace.result.likely)
    return found


@dataclass(frozen=True)
class SignaturesFit(Claim):
    """The catalog's signatures on this experiment's comparisons and traces (the module's docstring)."""

    experiment: Experiment
    id: str = "signatures"
    text: str = "catalog 的签名（likely cause）只在该出现的地方出现：反例上报出本章，修好的版本上什么都不报"

    def observe(self, record, out):
        return self._judge(fired(self.experiment, record, out, entries()))

    def facts(self, record, out):
        """`fired`: pair -> the ids found there; `evidence`: pair -> id -> its evidence line (for the chapter)."""
        found = fired(self.experiment, record, out, entries())
        return {"fired": {pair: [c["id"] for c in causes] for pair, causes in found.items()},
                "evidence": {pair: {c["id"]: c["evidence"] for c in causes} for pair, causes in found.items() if causes}}

    def _judge(self, found: dict[str, list[dict]]) -> tuple[str, str, bool]:
        own, allowed = self.experiment.id if self.experiment.signature else None, set(self.experiment.also)
        allowed |= {own} if own else set()
        negative = [f"{c.reference}/{c.candidate}" for c in self.experiment.claims if isinstance(c, Mismatches)]
        positive = {f"{c.reference}/{c.candidate}" for c in self.experiment.claims
                    if isinstance(c, Matches) or (isinstance(c, Traced) and c.phase is None)}  # a tutorial's correct port
        ids = {pair: [c["id"] for c in causes] for pair, causes in found.items()}
        wrong = [f"{pair}: {', '.join(i for i in names if i not in allowed or pair in positive)}" for pair, names in ids.items()
                 if any(i not in allowed or pair in positive for i in names)]
        unfired = [pair for pair in negative if own and pair in ids and own not in ids[pair]]
        checked = [p for p in negative if p in ids]
        expected = (f"{own} on {', '.join(checked)}; " if own and checked else f"{own} where it fits; " if own else "") + "nothing on the fixed pairs" + (
            f"; elsewhere only {', '.join(sorted(allowed))}" if allowed else "; nothing elsewhere")
        shown = [f"{pair}: " + ("; ".join(f"{c['id']} ({c['evidence']})" for c in causes) if causes else "none")
                 for pair, causes in found.items()]
        observed = " | ".join(shown) + "".join(f" | FIRES WRONGLY {w}" for w in wrong) + "".join(f" | SILENT on {p}" for p in unfired)
        return expected, observed, not wrong and not unfired


def signatures_claim(experiment: Experiment) -> SignaturesFit | None:
    """The claim every run of an experiment that compares or traces checks."""
    return SignaturesFit(experiment) if experiment.comparisons or experiment.traces else None
