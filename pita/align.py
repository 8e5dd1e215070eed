"""Alignment: two dumps become a sorted list of name pairs, plus the names found on one side only."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Alignment:
    pairs: list[str]
    missing: list[str]  # in the reference, not in the candidate
    extra: list[str]  # in the candidate, not in the reference

    def describe_unpaired(self) -> str:
        """All one-sided names in one message, or '' when every name is paired."""
        parts = []
        if self.missing:
            parts.append(f"missing from candidate: {', '.join(self.missing)}")
        if self.extra:
            parts.append(f"only in candidate: {', '.join(self.extra)}")
        return "; ".join(parts)


def align(reference_names, candidate_names) -> Alignment:
    reference_names, candidate_names = set(reference_names), set(candidate_names)
    return Alignment(
        pairs=sorted(reference_names & candidate_names),
        missing=sorted(reference_names - candidate_names),
        extra=sorted(candidate_names - reference_names),
    )
