"""Every figure as measured: the book's number filters refuse to turn a measured number into
another one.

A template once printed `factor | int` for a measured 3.9999997 and the tutorial said ×3 where
trace found ×4. Rendering (so `pita book build` and `pita book check`) now fails on:
- `| int` of a number that is not an integer;
- `| round` that returns an integer-looking figure for a non-integer, or hides the digits it kept
  (`round(2)` prints exactly two decimals, so a reader sees where it cut);
- `'%d'`, `'%.0f'`, `'%.0e'` of a non-integer through `| format`, and `%g` without `#` when
  rounding dropped trailing zeros (`'%.3g'` of 3.9999997 prints "4"; `'%#.3g'` prints "4.00");
- in template sources, the same format specifications through Python's `%` operator, which no
  filter sees.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import re
import traceback
from pathlib import Path

import jinja2
import numpy as np

from pita_lab.errors import BrokenExperiment

# One printf conversion: flags, width, precision, type (Python's `%` mini-language).
CONVERSION = re.compile(r"%(?:\((?P<key>[^)]*)\))?(?P<flags>[#0\- +]*)(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?[hlL]?(?P<type>[diouxXeEfFgGcrsa%])")
# A string literal formatted with Python's `%` operator inside a template expression: `'%.3g' % x`.
PERCENT_OPERATOR = re.compile(r"""(?P<literal>'[^'\n]*'|"[^"\n]*")\s*%\s*[\w(\[]""")
# How many float64 ULPs a figure computed from settings may carry as arithmetic noise; a float32
# measurement is 2**29 float64 ULPs coarse, so this never hides a measured digit.
FLOAT64_NOISE_ULPS = 8


class FigureChanged(BrokenExperiment):
    """A template would print a number that is not the one measured."""


class IntegerNotMeasured(FigureChanged):
    """A template would print an integer for a non-integer (`| int`, `| round`, `'%d'`, `'%.0f'`)."""


class DigitsHidden(FigureChanged):
    """A `%g` format would strip the zeros of its rounding, so a rounded figure reads as exact."""


# Whether `%g`'s hidden rounding is refused; `integers_only()` turns it off for a render that asks
# about integers alone (the test that moves a record's floats by one ULP: a setting stored as a
# float32 tensor, 0.5, moved to 0.50000006, would otherwise stop the render at its `'%g'`).
_DIGITS_RULE = contextvars.ContextVar("digits_rule", default=True)


@contextlib.contextmanager
def integers_only():
    token = _DIGITS_RULE.set(False)
    try:
        yield
    finally:
        _DIGITS_RULE.reset(token)


def _number(value) -> float | None:
    """The value as a float when it is a measured number (a float, or text holding one); None for
    an int, a bool or anything else, which no rounding can change."""
    if isinstance(value, bool) or isinstance(value, int):
        return None
    if isinstance(value, float):
        return value
    try:
        return float(str(value).strip()) if isinstance(value, str) and not str(value).strip().lstrip("+-").isdigit() else None
    except ValueError:
        return None


def _integral(value: float) -> bool:
    return math.isfinite(value) and value == math.floor(value)


def _identifies(shown: str, number: float) -> bool:
    """Whether the printed text is the measured number itself: for a float32 measurement, the
    same float32 (`1e-06` is float32's 9.99999997e-07 exactly), otherwise the same float64 up to
    the noise of float64 arithmetic on a setting (`1 / (1 - 0.9)` is 10.000000000000002)."""
    if abs(float(shown) - number) <= FLOAT64_NOISE_ULPS * math.ulp(number):
        return True
    single = np.float32(number)
    return bool(float(single) == number and np.float32(shown) == single)


def strict_int(value, default: int = 0, base: int = 10):
    """Jinja's `int` for integers only: an int, an integral float or integer text; a non-integer
    number is refused, since truncating it prints a figure nobody measured."""
    number = _number(value)
    if number is not None and not _integral(number):
        truncated = int(number) if math.isfinite(number) else number
        raise IntegerNotMeasured(f"`| int` of {value!r}: not an integer, truncating it prints {truncated}, which was not measured; "
                                 "print it with `g9` (every digit) or say it is rounded with `'%#.3g' | format(...)`")
    if isinstance(value, str):
        return int(value.strip(), base) if value.strip().lstrip("+-").isdigit() else int(float(value))
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def strict_round(value, precision: int = 0, method: str = "common") -> str | int:
    """Jinja's `round` that shows the digits it keeps: `precision` decimals exactly, as text
    (`0.9 | round(6)` prints 0.900000). Rounding a non-integer to no decimals is refused: the
    result reads as an exact integer. `round(0, 'floor')` and `round(0, 'ceil')` are the integer
    operations themselves (an index `floor(o × step)`), and give an int."""
    number = float(value)
    if method not in ("common", "ceil", "floor"):
        raise FigureChanged(f"`| round`: unknown method {method!r}")
    if precision == 0 and method != "common":
        return math.floor(number) if method == "floor" else math.ceil(number)
    if precision == 0 and not _integral(number):
        raise IntegerNotMeasured(f"`| round` of {value!r} to an integer prints a figure that was not measured; "
                                 "keep decimals (`round(3)`) or print it with `g9`")
    scale = 10 ** precision
    if method == "ceil":
        number = math.ceil(number * scale) / scale
    elif method == "floor":
        number = math.floor(number * scale) / scale
    return f"{number:.{precision}f}"


def check_conversions(spec: str, values: tuple) -> None:
    """Refuses the conversions of `spec` (a printf format) that would show one of `values` as a
    figure it is not: an integer for a non-integer, or %g's rounding with its zeros stripped."""
    arguments = iter(values[0].values()) if len(values) == 1 and isinstance(values[0], dict) else iter(values)
    for match in CONVERSION.finditer(spec):
        kind = match["type"]
        if kind == "%":
            continue
        value = next(arguments, None)
        number = _number(value)
        if number is None or not math.isfinite(number):
            continue
        precision = match["precision"]
        alternate = "#" in match["flags"]
        plain = "%" + match["flags"] + (match["width"] or "").replace("*", "") + (f".{precision}" if precision not in (None, "*") else "") + kind
        shown = plain % number if kind in "eEfFgG" else None
        if kind in "diouxX" and not _integral(number):
            raise IntegerNotMeasured(f"{match.group(0)!r} of {number!r} prints an integer that was not measured")
        if kind in "eEfF" and precision == "0" and not alternate and not _integral(number):
            raise IntegerNotMeasured(f"{match.group(0)!r} of {number!r} prints {shown}, an integer that was not measured; keep a decimal")
        if kind in "gG" and not alternate and shown is not None and _DIGITS_RULE.get() and not _identifies(shown, number):
            kept = len(re.sub(r"[^0-9]", "", shown.split("e")[0].split("E")[0]).lstrip("0"))
            wanted = int(precision) if precision not in (None, "*") else 6
            if kept < max(wanted, 1):
                raise DigitsHidden(f"{plain!r} of {number!r} prints {shown}: rounding dropped its zeros, so it reads as exact; "
                                    f"use '%#{plain[1:]}' (prints {('%#' + plain[1:]) % number}) or g9")


def strict_format(value: str, *args, **kwargs) -> str:
    """Jinja's `format` (printf style) with `check_conversions` first."""
    if args and kwargs:
        raise FigureChanged("`| format`: positional and keyword arguments together")
    check_conversions(value, (kwargs,) if kwargs else args)
    return value % (kwargs or args)


def percent_operators(source: str) -> list[str]:
    """The format literals a template source applies with Python's `%` operator, whose specs
    `check_conversions` cannot see at render time; the loader refuses the unsafe ones."""
    found = []
    for expression in re.findall(r"\{\{(.*?)\}\}|\{%(.*?)%\}", source, flags=re.S):
        for match in PERCENT_OPERATOR.finditer("".join(expression)):
            found.append(match["literal"][1:-1])
    return found


def unsafe_percent_operators(path: Path) -> list[str]:
    """`path`'s `%`-operator formats that may print a rounded figure as exact (`%d`, `%.0f`,
    `%g` without `#`); each must go through `| format`, which checks the value."""
    unsafe = []
    for literal in percent_operators(path.read_text(encoding="utf-8")):
        for match in CONVERSION.finditer(literal):
            kind, alternate = match["type"], "#" in match["flags"]
            if kind in "diouxX" or (kind in "eEfF" and match["precision"] == "0" and not alternate) or (kind in "gG" and not alternate):
                unsafe.append(f"{path}: '{literal}' % …: {match.group(0)} may print a rounded figure as exact; use `'{literal}' | format(…)`, which checks it")
    return unsafe


def located(error: FigureChanged) -> FigureChanged:
    """`error` with the template line that printed the figure, from its traceback (Jinja puts
    the template's file and line into the frames it compiles)."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename.endswith(".j2")]
    return FigureChanged(f"{frames[-1].filename}:{frames[-1].lineno}: {error}") if frames else error


class MeasuredLoader(jinja2.FileSystemLoader):
    """A template loader that refuses a template whose `%` operators may print a rounded figure
    as exact (`unsafe_percent_operators`), so build and check fail on it."""

    def get_source(self, environment, template):
        source, filename, uptodate = super().get_source(environment, template)
        unsafe = unsafe_percent_operators(Path(filename))
        if unsafe:
            raise FigureChanged("; ".join(unsafe))
        return source, filename, uptodate


def install(environment) -> None:
    """Puts the strict filters in place of Jinja's `int`, `round` and `format`."""
    environment.filters.update({"int": strict_int, "round": strict_round, "format": strict_format})
