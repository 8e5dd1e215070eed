"""Tensor dtypes as dumps name them (safetensors' names), and how pita holds each in numpy.

numpy has no bfloat16, so a BF16 tensor is held as `BF16`, numpy's opaque two-byte type over
its raw bits: it keeps its identity through reshape and slicing, and `.astype(float)` refuses
it, so no code can widen it by accident. `widen` gives its exact float32 values.
"""

from __future__ import annotations

import numpy as np

BF16 = np.dtype("V2")

# safetensors dtype name -> the numpy dtype pita holds it in (little-endian).
DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": BF16,
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_NAMES = {dtype: name for name, dtype in DTYPES.items()}
FLOATS = ("F64", "F32", "F16", "BF16")


def dtype_name(dtype: np.dtype) -> str | None:
    """The safetensors name of a numpy dtype pita can hold (`F32`, `BF16`, ...), else None.
    Big-endian dtypes are named like their little-endian twins (`normalize` converts them)."""
    dtype = np.dtype(dtype)
    if dtype == BF16 or dtype.name == "bfloat16":
        return "BF16"
    if dtype.fields is not None or dtype.kind not in "biuf":
        return None
    return _NAMES.get(dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype)


def is_float(dtype: np.dtype) -> bool:
    return dtype_name(dtype) in FLOATS


def normalize(array: np.ndarray) -> np.ndarray:
    """The array in the little-endian dtype pita holds it in: byte order swapped where needed,
    a foreign bfloat16 (ml_dtypes) viewed as `BF16`. Raises `TypeError` for dtypes no dump can
    hold (complex, longdouble, objects, strings)."""
    array = np.asarray(array)
    name = dtype_name(array.dtype)
    if name is None:
        raise TypeError(f"dtype {array.dtype} has no dump name (expected one of {', '.join(DTYPES)})")
    if name == "BF16":
        return array if array.dtype == BF16 else np.ascontiguousarray(array).view(np.uint16).view(BF16)
    wanted = DTYPES[name]
    return array if array.dtype == wanted else array.astype(wanted)


def bits(array: np.ndarray) -> np.ndarray:
    """The raw bits of a float array as unsigned integers of the same width."""
    return array.view(f"<u{array.dtype.itemsize}")


def widen(array: np.ndarray) -> np.ndarray:
    """Values in a numpy dtype arithmetic works on: BF16 as float32 (exact); others unchanged."""
    if array.dtype == BF16:
        return (array.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return array


def from_float64(values: np.ndarray, name: str) -> np.ndarray:
    """float64 values rounded once, to nearest with ties to even, to the float dtype `name`
    (F64, F32, F16 or BF16). Values beyond the dtype's range become infinities."""
    values = np.asarray(values, dtype=np.float64)
    if name == "BF16":
        return from_float32(_float32_rounded_to_odd(values))
    with np.errstate(over="ignore"):
        return values.astype(DTYPES[name])


def _float32_rounded_to_odd(values: np.ndarray) -> np.ndarray:
    """float64 to float32, an inexact result rounded to the neighbour with an odd last bit.

    Rounding to nearest twice (float64 to float32 to bfloat16) rounds some values the wrong way:
    a value just above a bfloat16 midpoint can land on it and then tie to even. Rounding to odd
    keeps the information that the value was not on the midpoint, so rounding it to the 16 bits
    shorter bfloat16 afterwards is exact."""
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = values.astype(np.float32)
        inexact = np.isfinite(values) & (nearest.astype(np.float64) != values)
        away = np.abs(nearest.astype(np.float64)) > np.abs(values)
    toward_zero = np.where(away, np.nextafter(nearest, np.float32(0)), nearest)
    odd = (toward_zero.view(np.uint32) | np.uint32(1)).view(np.float32)
    return np.where(inexact, odd, nearest)


def from_float32(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (round to nearest even, NaN kept NaN), as `BF16`."""
    raw = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (raw + 0x7FFF + ((raw >> 16) & 1)) >> 16
    nan = np.isnan(values)
    rounded = np.where(nan, (raw >> 16) | 0x0040, rounded)
    return rounded.astype(np.uint16).view(BF16)
