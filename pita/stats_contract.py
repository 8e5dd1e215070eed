"""The statistics contract: what one pass over a tensor pair measures (`TensorStats`) and how
each element pair is judged. Two implementations meet it, neither importing the other: numpy, a
chunk at a time (`pita.stats_numpy`), and the compiled kernel for same-dtype float pairs
(`pita_kernel`, crates/pita-kernel, Rust); the oracle test (tests/test_stats_oracle.py) holds both
to it, and `pita.stats.measure` / `measure_many` pick one.

How an element pair is judged, in this order:

- Floats. A NaN or an infinity on either side is decided by equality, before any tolerance: an
  infinity passes only against the same infinity, NaN only against NaN and only with `equal_nan`.
  A finite pair passes when `|candidate - reference| <= atol + rtol*|reference|` (in float64), or,
  with `ulp` set, when at most `ulp` units in the last place apart.
- ULPs are counted in the tensors' own dtype (F16, BF16, F32, F64); across two float dtypes, in
  the coarser one. A value that is finite in its own dtype but overflows to infinity in the
  coarser one has no finite distance (`ULP_UNBOUNDED`) and never passes by ULPs.
- Integers and bools are compared exactly: an element passes only if both values are equal, and
  no tolerance applies (an integer against a float too: the float must hold exactly that
  integer). Their differences are exact (no overflow at the int64 and uint64 extremes) until
  rounded to float64 for the report, and they have no ULP distance (`max_ulp` is None).

A tolerance is anything with `atol`, `rtol`, `ulp` (None or an int) and `equal_nan` (usually a
`pita.tolerance.Tolerance`). Positions are flat indices in the tensors' order; of equal values
the earlier position is kept. `examples` holds the first EXAMPLES mismatches. What no element
decides is settled (`TensorStats.settled`): with every |diff| 0 the worst position is the first
element, and a float pair has `max_ulp` 0 where no two elements are ULPs apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

EXAMPLES = 5  # mismatch positions kept for the report
ULP_UNBOUNDED = 2**63 - 1  # no finite ULP distance (NaN against a number, an overflow), or one beyond counting


@dataclass
class TensorStats:
    n: int = 0
    mismatched: int = 0
    max_abs_diff: float = 0.0
    worst: int = -1  # flat index of the (first) largest |diff|
    max_rel_diff: float = 0.0
    max_ulp: int | None = None  # None for pairs that are not both floats
    max_ulp_at: int = -1
    examples: list[int] = field(default_factory=list)  # flat indices of the first mismatches
    nan_reference: int = 0
    nan_candidate: int = 0

    def merge(self, other: TensorStats) -> None:
        """Adds the statistics of the elements after these (ties keep the earlier position)."""
        self.n += other.n
        self.mismatched += other.mismatched
        if other.worst >= 0 and (self.worst < 0 or other.max_abs_diff > self.max_abs_diff):
            self.max_abs_diff, self.worst = other.max_abs_diff, other.worst
        self.max_rel_diff = max(self.max_rel_diff, other.max_rel_diff)
        if other.max_ulp_at >= 0 and (self.max_ulp_at < 0 or other.max_ulp > self.max_ulp):
            self.max_ulp, self.max_ulp_at = other.max_ulp, other.max_ulp_at
        self.examples = (self.examples + other.examples)[:EXAMPLES]
        self.nan_reference += other.nan_reference
        self.nan_candidate += other.nan_candidate

    def shift(self, offset: int) -> None:
        """Moves every position by `offset` (statistics of a chunk starting there)."""
        self.worst += offset if self.worst >= 0 else 0
        self.max_ulp_at += offset if self.max_ulp_at >= 0 else 0
        self.examples = [i + offset for i in self.examples]

    def settled(self, floats: bool) -> TensorStats:
        """These statistics with what no element decided set as the module docstring says; `floats`:
        whether both tensors are floats."""
        if self.n and self.worst < 0:  # every difference is 0: the first element is as bad as any
            self.worst = 0
        if floats and self.max_ulp is None:
            self.max_ulp, self.max_ulp_at = 0, 0 if self.n else -1
        return self
