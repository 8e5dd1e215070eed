"""Alignment: two sets of tensor names become a sorted list of name pairs, plus the names found
on one side only. The explicit mappings applied before (renames, layout adapters) come from a
rules file (`pita.rules`); every one is reported, none is silent.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Alignment:
    pairs: list[str]
    missing: list[str]  # in the reference, not in the candidate
    extra: list[str]  # in the candidate, not in the reference


def align(reference_names, candidate_names) -> Alignment:
    reference_names, candidate_names = set(reference_names), set(candidate_names)
    return Alignment(
        pairs=sorted(reference_names & candidate_names),
        missing=sorted(reference_names - candidate_names),
        extra=sorted(candidate_names - reference_names),
    )
