"""What every diagnosis rule shares: the finding it returns and the context it may use."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Context:
    """Facts from the dumps' metadata that can turn a finding into a likely cause."""

    batch_sizes: set[int] = field(default_factory=set)


@dataclass
class Diagnosis:
    """One explanation of why a tensor differs, with the error left after applying it."""

    kind: str
    params: dict
    message: str
    residual: float
    tentative: bool = False  # too little evidence alone; kept only if another tensor agrees

    def to_dict(self) -> dict:
        return {"kind": self.kind, **self.params, "message": self.message, "residual": self.residual}


EXPLAINED = 1e-2  # an explanation must leave at most this fraction of the original error


def explains(residual: float, before: float, atol: float) -> bool:
    """Whether an explanation that leaves `residual` (from `before`) accounts for the difference."""
    return residual <= atol or residual <= EXPLAINED * before


def format_factor(factor: float) -> str:
    """4 -> '4', 0.25 -> '1/4', anything else to 6 significant digits."""
    nearest = round(factor)
    if nearest and abs(factor - nearest) <= 1e-4 * abs(factor):
        return str(nearest)
    inverse = round(1 / factor)
    if inverse and abs(1 / factor - inverse) <= 1e-4 * abs(1 / factor):
        return f"1/{inverse}" if inverse > 0 else f"-1/{-inverse}"
    return f"{factor:.6g}"
