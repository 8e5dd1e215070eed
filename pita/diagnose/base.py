"""What every diagnosis rule shares: the pair it examines, the finding it returns, the context."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from pita.dtypes import dtype_name, widen
from pita.filetensor import take
from pita.stats import measure
from pita.stats_numpy import ulp_distance
from pita.strict_json import unspelt

SAMPLE = 1 << 16  # elements read from each side of a larger tensor; smaller ones are read whole
SCREEN = 256  # elements a hypothesis must fit before the whole sample is read for it
EPSILON = {"F64": 2.0**-52, "F32": 2.0**-23, "F16": 2.0**-10, "BF16": 2.0**-7}  # spacing of values near 1


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
    sample: int | None = None  # elements the finding rests on, when fewer than the whole tensor
    precision: float = 0.0  # how closely the data's rounding lets its numeric parameters be known

    def to_dict(self) -> dict:
        return {"kind": self.kind, **self.params, "message": self.message, "residual": self.residual, "sample": self.sample}

    @classmethod
    def from_dict(cls, data: dict) -> Diagnosis:
        """A finding from its JSON form: every key but the four shared ones is a parameter
        (`tentative` and `precision`, which only rank findings, are not saved)."""
        params = {key: value for key, value in data.items() if key not in ("kind", "message", "residual", "sample")}
        return cls(kind=data["kind"], params=unspelt(params), message=data["message"],
                   residual=unspelt(data["residual"]), sample=data["sample"])

    def __getitem__(self, name: str):
        """A parameter by name, as the JSON form holds it beside `kind` (a chapter's `d.factor`)."""
        return self.params[name]


class Pair:
    """A failing tensor pair as the rules see it: in memory or left in its file (`FileTensor`),
    of any size, and read only at `positions` (every element, or a spread of at most SAMPLE) and
    through `residual_under`, so that diagnosing never holds more than a sample of either side.

    A candidate whose shape differs from the reference's only in size-1 axes is read in the
    reference's shape. `stats` (what `measure` found, over every element) lets the sample include
    the worst elements; without it, it is measured when a rule asks for it. `name` is the
    tensor's name as compared ('' when unknown): a rule may read what it holds off it."""

    def __init__(self, reference, candidate, tolerance, context: Context, stats=None, name: str = ""):
        self.reference, self.candidate, self.tolerance, self.context = reference, candidate, tolerance, context
        self.name = name
        self._measured = stats
        self.atol = tolerance.atol
        self.shape = tuple(reference.shape)
        self.size = int(reference.size)
        flat_alike = differ_only_in_size_one_axes(self.shape, candidate.shape)
        self.candidate_shape = self.shape if flat_alike else tuple(candidate.shape)
        self.comparable = self.size == int(candidate.size) and self.size > 0

    @property
    def same_shape(self) -> bool:
        return self.shape == self.candidate_shape

    @cached_property
    def stats(self):
        """What `measure` finds over the whole pair (a streaming pass), or None if the shapes conflict."""
        if self._measured is None and self.same_shape and self.comparable:
            self._measured = measure(self.reference, self.candidate, self.tolerance)
        return self._measured

    @property
    def sampled(self) -> bool:
        return self.positions.size < self.size

    @cached_property
    def positions(self) -> np.ndarray:
        """Flat positions every rule reads: all of them, or one random position in each of SAMPLE
        equal strata (seeded: the same tensor gets the same sample) plus the elements `stats` found
        worst, which a sample would otherwise likely miss."""
        if self.size <= SAMPLE:
            return np.arange(self.size, dtype=np.int64)
        known = self._measured
        found = [] if known is None else [known.worst, known.max_ulp_at, *known.examples]
        found = np.unique(np.array([i for i in found if 0 <= i < self.size], dtype=np.int64))
        strata = SAMPLE - found.size
        starts = np.arange(strata, dtype=np.int64) * self.size // strata
        widths = np.diff(np.append(starts, self.size))
        spread = starts + np.random.default_rng(0).integers(0, widths)
        return np.unique(np.concatenate([spread, found]))

    @cached_property
    def reference_values(self) -> np.ndarray:
        return read(self.reference, self.positions)

    @cached_property
    def candidate_values(self) -> np.ndarray:
        return read(self.candidate, self.positions)

    @property
    def epsilon(self) -> float:
        """The relative rounding step of the coarser float dtype (0 between integers): what the
        last place of a value is worth, and so how closely a parameter read off values is known."""
        return max((EPSILON.get(dtype_name(t.dtype), 0.0) for t in (self.reference, self.candidate)), default=0.0)

    @cached_property
    def finite(self) -> bool:
        """Whether both sides' sampled values are all finite (most rules need that)."""
        return bool(np.all(np.isfinite(self.reference_values)) and np.all(np.isfinite(self.candidate_values)))

    @cached_property
    def failing(self) -> np.ndarray:
        """Which sampled elements fail the tolerance, judged as `pita.stats_contract` judges an
        element pair (a NaN or an infinity by equality)."""
        r, c, tolerance = self.reference_values, self.candidate_values, self.tolerance
        finite = np.isfinite(r) & np.isfinite(c)
        with np.errstate(invalid="ignore", over="ignore"):
            passed = (r == c) | (tolerance.equal_nan & np.isnan(r) & np.isnan(c))
            passed |= finite & (np.abs(c - r) <= tolerance.atol + tolerance.rtol * np.abs(r))
        if tolerance.ulp is not None:
            ulps = ulp_distance(take(self.reference, self.positions), take(self.candidate, self.positions))
            if ulps is not None:
                passed |= finite & (ulps <= tolerance.ulp)
        return ~passed

    def residual_under(self, reference_positions, limit: float, among: np.ndarray | None = None) -> float | None:
        """The largest |candidate - reference| when each sampled candidate element is set against
        the reference element at `reference_positions(candidate positions)`, or None above `limit`;
        `among`: only these indices into `positions` (one block, say), else all of them.
        A few elements are checked first, so that a wrong hypothesis costs little to reject."""
        indices = np.arange(self.positions.size) if among is None else among
        screen = indices[np.unique(np.linspace(0, indices.size - 1, min(SCREEN, indices.size)).astype(np.int64))]
        for chosen in (screen, slice(None) if among is None else among):
            reference = read(self.reference, reference_positions(self.positions[chosen]))
            residual = float(np.max(np.abs(self.candidate_values[chosen] - reference), initial=0.0))
            if not residual <= limit:  # NaN fails too
                return None
        return residual


def differ_only_in_size_one_axes(shape, other) -> bool:
    """Whether two shapes hold the same elements in the same flat order ([1, 3] and [3, 1])."""
    return [d for d in shape if d != 1] == [d for d in other if d != 1]


def read(tensor, flat_positions: np.ndarray) -> np.ndarray:
    """Elements of an array or a `FileTensor` as float64 (BF16 widened exactly)."""
    return widen(take(tensor, flat_positions)).astype(np.float64)


EXPLAINED = 1e-2  # an explanation must leave at most this fraction of the original error


def explained_limit(before: float, atol: float) -> float:
    """The largest residual an explanation may leave of an error `before`."""
    return max(atol, EXPLAINED * before)


def explains(residual: float, before: float, atol: float) -> bool:
    """Whether an explanation that leaves `residual` (from `before`) accounts for the difference."""
    return residual <= explained_limit(before, atol)


def format_factor(factor: float) -> str:
    """4 -> '4', 0.25 -> '1/4', anything else to 6 significant digits, and a factor near 1 with
    as many as it takes to tell it from 1 (1.0000029 is not '1')."""
    nearest = round(factor)
    if nearest and abs(nearest) != 1 and abs(factor - nearest) <= 1e-4 * abs(factor):
        return str(nearest)
    inverse = round(1 / factor)
    if inverse and abs(inverse) != 1 and abs(1 / factor - inverse) <= 1e-4 * abs(1 / factor):
        return f"1/{inverse}" if inverse > 0 else f"-1/{-inverse}"
    digits = 6
    while digits < 17 and float(f"{factor:.{digits}g}") in (1.0, -1.0) and factor not in (1.0, -1.0):
        digits += 1
    return f"{factor:.{digits}g}"
