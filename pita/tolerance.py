"""A tolerance: the named formula an element pair is judged by, checked wherever it is built.

An element passes when `|candidate - reference| <= atol + rtol*|reference|`, or, with `ulp` set,
when at most `ulp` units in the last place apart. atol and rtol are finite numbers, not negative;
ulp an integer from 0 to ULP_MAX; equal_nan true or false. `Tolerance(...)`, `from_options`,
`dataclasses.replace` and `for_dtypes` all refuse anything else with a `UsageError` naming the
field, so a tolerance that exists can be printed and trusted. Integers and bools compare exactly.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from reprlib import repr as brief

import numpy as np

from pita.dtypes import FLOATS, dtype_name
from pita.errors import UsageError

DEFAULT_ATOL, DEFAULT_RTOL = 1e-6, 0.0  # float32 and float64; the handbook quotes them
# (atol, rtol) when the user gives neither: torch.testing's for the half formats.
DTYPE_DEFAULTS = {"F16": (1e-5, 1e-3), "BF16": (1e-5, 1.6e-2)}
ULP_MAX = 2**63 - 1  # ULP distances are counted in 64 bits
FIELDS = ("atol", "rtol", "ulp", "equal_nan")
INF_POLICY = "an inf passes only against the same inf"


@dataclass(frozen=True)
class Tolerance:
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL
    ulp: int | None = None  # when set, an element also passes within this many ULPs
    equal_nan: bool = False
    dtype_defaults: bool = False  # atol/rtol were not given: float16/bfloat16 use DTYPE_DEFAULTS

    def __post_init__(self):
        for name in FIELDS:
            if name != "ulp" or self.ulp is not None:
                object.__setattr__(self, name, checked(name, getattr(self, name)))

    @classmethod
    def from_options(cls, atol: float | None = None, rtol: float | None = None, ulp: int | None = None,
                     equal_nan: bool = False) -> Tolerance:
        """The tolerance a command line or an API call asks for (None: not given). Given neither
        atol nor rtol, each float dtype gets its default; given either, both apply to every float
        tensor, the other one at its float32 default."""
        return cls(atol=DEFAULT_ATOL if atol is None else atol, rtol=DEFAULT_RTOL if rtol is None else rtol,
                   ulp=ulp, equal_nan=equal_nan, dtype_defaults=atol is None and rtol is None)

    def for_dtypes(self, reference_dtype, candidate_dtype) -> Tolerance:
        """The tolerance for one pair: exact where integers or bools take part; with
        `dtype_defaults`, the larger of the two dtypes' defaults (as torch.testing does)."""
        names = (dtype_name(reference_dtype), dtype_name(candidate_dtype))
        if compares_exactly(*names):
            return replace(self, atol=0.0, rtol=0.0, ulp=None, dtype_defaults=False)
        if not self.dtype_defaults:
            return self
        defaults = [DTYPE_DEFAULTS.get(name, (self.atol, self.rtol)) for name in names]
        return replace(self, atol=max(a for a, _ in defaults), rtol=max(r for _, r in defaults))

    def formula(self) -> str:
        return f"|candidate - reference| <= atol + rtol*|reference| {self.bounds()}; {self.nan_policy()}; {INF_POLICY}"

    def bounds(self) -> str:
        """`(atol=1e-06, rtol=0)`, with `, or ULP distance <= N` when `ulp` is set."""
        ulp = f", or ULP distance <= {self.ulp}" if self.ulp is not None else ""
        return f"(atol={self.atol:g}, rtol={self.rtol:g}){ulp}"

    def nan_policy(self) -> str:
        return "NaN passes only against NaN" if self.equal_nan else "NaN never passes"

    def short(self) -> str:
        text = f"{self.atol:g}" if self.rtol == 0 else f"{self.atol:g}+{self.rtol:g}*|reference|"
        return text + (f" or {self.ulp} ulp" if self.ulp is not None else "")


def compares_exactly(*dtype_names: str) -> bool:
    """Integers and bools (`I64`, `BOOL`, ...) compare exactly, also against floats: no tolerance
    applies unless both sides are floats."""
    return not all(name in FLOATS for name in dtype_names)


def checked(name: str, value):
    """`value` as the `name` field of a `Tolerance` (atol and rtol as float, ulp as int), or a
    `UsageError` saying why it cannot be; the command line's message names the flag (`--atol`)."""
    reason = _refusal(name, value)
    if reason:
        raise UsageError(f"{name} {reason}", cli_message=f"--{name} {reason}")
    return {"atol": float, "rtol": float, "ulp": int, "equal_nan": bool}[name](value)


def _refusal(name: str, value) -> str:
    """Why `value` cannot be the `name` field, or '' when it can."""
    if name == "equal_nan":
        return "" if isinstance(value, (bool, np.bool_)) else f"must be true or false, got {brief(value)}"
    if name == "ulp":
        fits = _is_number(value, numbers.Integral) and 0 <= value <= ULP_MAX
        return "" if fits else f"must be an integer from 0 to {ULP_MAX}, got {brief(value)}"
    return "" if _is_number(value, numbers.Real) and _finite_not_negative(value) else f"must be a finite number, not negative, got {brief(value)}"


def _is_number(value, kind) -> bool:
    return isinstance(value, kind) and not isinstance(value, (bool, np.bool_))


def _finite_not_negative(value) -> bool:
    try:
        number = float(value)
    except OverflowError:  # an integer beyond float64
        return False
    return math.isfinite(number) and number >= 0
