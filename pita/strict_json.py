"""Strict JSON's spelling of the floats it has no literal for: NaN and the infinities are written
as the strings "NaN", "Infinity" and "-Infinity" (as in the dump format), and read back."""

from __future__ import annotations

import math

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def spelt(value):
    """`value` with every non-finite float, at any depth, as its string."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: spelt(item) for key, item in value.items()}
    if isinstance(value, list):
        return [spelt(item) for item in value]
    return value


def unspelt(value):
    """The inverse of `spelt`: those strings back as floats, at any depth. Only for values that
    hold numbers: a name or a message is never passed through it."""
    if isinstance(value, str):
        return _NON_FINITE.get(value, value)
    if isinstance(value, dict):
        return {key: unspelt(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unspelt(item) for item in value]
    return value
