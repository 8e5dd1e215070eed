"""The peer cases: PyTorch's `torch.testing.assert_close` tests and numpy's `assert_allclose` and
ULP tests, each translated into one `pita compare` of a reference and a candidate dump.

A case is data: the two sides (one tensor, or a dict of named tensors), the peer call and its
options, what the peer's own test expects of that call (`expect`: passes or raises), and, where pita
decides otherwise on purpose, the name of the documented difference (`difference`, a key of
DIFFERENCES, explained once in docs/peer-agreement.md). tests/test_peer_agreement.py runs each
case through the peer and through pita and holds the outcome to this table and to the doc.

How a peer call becomes a `pita compare` (the doc repeats this):

- `torch.testing.assert_close(actual, expected, ...)`: the reference is `expected`, the candidate
  `actual` (torch's tolerance scales with |expected|, pita's with |reference|). atol, rtol and
  equal_nan go to pita as given; a call that gives no tolerance gives pita none either, so each
  side uses its own per-dtype defaults. `check_dtype` has no pita counterpart.
- `numpy.testing.assert_allclose(actual, desired, rtol=1e-7, atol=0, equal_nan=True)`: the
  reference is `desired`; pita gets numpy's effective atol, rtol and equal_nan (numpy's defaults
  spelt out: pita's own defaults are another table). `strict` has no pita counterpart.
- `assert_array_max_ulp(a, b, maxulp)` and `assert_array_almost_equal_nulp(x, y, nulp)`: the
  reference is the first argument; pita gets `ulp=N, atol=0, rtol=0` and its default NaN policy
  (the helpers take no NaN option).

Arrays are built from values at run time: `T(values, dtype)` with pita's dtype names; BF16 needs
torch to round (those cases are torch's only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pita.dtypes import BF16, DTYPES

nan, inf = math.nan, math.inf

TORCH = "torch.testing.assert_close"
ALLCLOSE = "numpy.testing.assert_allclose"
MAX_ULP = "numpy.testing.assert_array_max_ulp"
NULP = "numpy.testing.assert_array_almost_equal_nulp"
PEERS = {TORCH: "torch", ALLCLOSE: "numpy", MAX_ULP: "numpy", NULP: "numpy"}

# The named differences: pita decides these cases otherwise than the peer, on purpose. The why of
# each is in docs/peer-agreement.md (one row per name); the test holds the two lists equal.
DIFFERENCES = (
    "integers-exact",
    "float-defaults",
    "dtype-note",
    "no-broadcasting",
    "broadcast-expanded",
    "size-one-axes-flat",
    "nan-policy",
    "inf-only-equal",
    "empty-nothing-compared",
)


@dataclass(eq=False)
class T:
    """One tensor: values (nested lists, a scalar, or an array) in a dtype as dumps name it;
    with `bits`, the values are the raw bit patterns."""

    values: object
    dtype: str = "F32"
    bits: bool = False

    def numpy(self) -> np.ndarray:
        if self.dtype == "BF16":
            return self.torch().view(_torch().int16).numpy().view(np.uint16).view(BF16)
        if self.bits:
            return np.asarray(self.values, dtype=f"<u{DTYPES[self.dtype].itemsize}").view(DTYPES[self.dtype])
        return np.asarray(self.values, dtype=DTYPES[self.dtype])

    def torch(self):
        torch = _torch()
        if self.dtype == "BF16":  # rounded once, from float64, as torch.tensor(0.99, dtype=torch.bfloat16) does
            return torch.tensor(np.asarray(self.values, dtype=np.float64)).to(torch.bfloat16)
        return torch.from_numpy(self.numpy().copy())


def _torch():
    import torch

    return torch


@dataclass(eq=False)
class Case:
    id: str  # unique: "<peer test>/<k>"
    peer: str  # TORCH, ALLCLOSE, MAX_ULP or NULP
    reference: T | dict[str, T]  # expected / desired / the first argument
    candidate: T | dict[str, T]  # actual / the second argument
    expect: bool  # what the peer's own test says of this call: it passes (True) or raises (False)
    options: dict = field(default_factory=dict)  # the peer call's keyword arguments
    difference: str | None = None  # why pita decides otherwise: a name of DIFFERENCES

    @property
    def group(self) -> str:
        return PEERS[self.peer]

    def pita_options(self) -> dict:
        """The keyword arguments of `Tolerance.from_options` this peer call translates to."""
        given = self.options
        if self.peer == TORCH:
            return {key: given[key] for key in ("atol", "rtol", "equal_nan") if key in given}
        if self.peer == ALLCLOSE:
            return {"atol": given.get("atol", 0.0), "rtol": given.get("rtol", 1e-7), "equal_nan": given.get("equal_nan", True)}
        steps = given["maxulp"] if self.peer == MAX_ULP else given["nulp"]
        return {"ulp": int(steps), "atol": 0.0, "rtol": 0.0}


def _case(cases: list, source: str, peer: str, reference, candidate, expect: bool, difference: str | None = None, **options) -> None:
    cases.append(Case(f"{source}/{len([c for c in cases if c.id.startswith(source + '/')])}", peer, reference, candidate, expect, options, difference))


# --- torch: test/test_testing.py -----------------------------------------------------------------


def torch_cases() -> list[Case]:
    cases: list[Case] = []
    add = lambda source, expected, actual, expect, difference=None, **options: _case(cases, source, TORCH, expected, actual, expect, difference, **options)

    # TestTesting.test_isclose_comparetensors_float (float16, float32, float64; bfloat16 added):
    # each tuple is (actual, expected, close?) through _comparetensors_helper(atol=1e-08, rtol=1e-05).
    basic = ((0, 0, True), (0, -1, False), (inf, inf, True), (-inf, inf, False), (inf, nan, False), (nan, nan, False),
             (0, nan, False), (1, 1, True))
    for dtype in ("F16", "F32", "F64", "BF16"):
        eps = 1e-2 if dtype in ("F16", "BF16") else 1e-6
        bounds = ((0, 1, True), (0, 1 + eps, False), (1, 0, False), (1, 3, True), (1 - eps, 3, False), (-0.25, 0.5, True),
                  (-0.25 - eps, 0.5, False), (0.25, -0.5, True), (0.25 + eps, -0.5, False))
        with_nan = ((0, nan, False), (inf, nan, False), (nan, nan, True))
        source = f"test_isclose_comparetensors_float[{dtype}]"
        for actual, expected, close in basic:
            add(source, T([expected], dtype), T([actual], dtype), close, atol=1e-8, rtol=1e-5, equal_nan=False)
        for actual, expected, close in bounds:  # rtol scales with |expected|: (0, 1) is close, (1, 0) is not
            add(source, T([expected], dtype), T([actual], dtype), close, atol=0.5, rtol=0.5, equal_nan=False)
        for actual, expected, close in with_nan:
            add(source, T([expected], dtype), T([actual], dtype), close, atol=1e-8, rtol=1e-5, equal_nan=True)

    # TestTesting.test_isclose_comparetensors_integer (uint8 .. int64; here int64, int32, uint8):
    # torch applies atol and rtol to integers, pita compares them exactly.
    for dtype in ("I64", "I32", "U8"):
        source = f"test_isclose_comparetensors_integer[{dtype}]"
        for actual, expected, close in ((0, 0, True), (0, 1, False), (1, 0, False)):
            add(source, T([expected], dtype), T([actual], dtype), close, atol=1e-8, rtol=1e-5)
        for actual, expected, close in ((0, 1, True), (1, 0, False), (1, 3, True)):
            add(source, T([expected], dtype), T([actual], dtype), close, None if not close else "integers-exact", atol=0.5, rtol=0.5)
    for dtype in ("I64", "I32"):  # the signed dtypes: (-1, 1) and (1, -1) are close at atol=1.5, rtol=.5
        for actual, expected in ((-1, 1), (1, -1)):
            add(f"test_isclose_comparetensors_integer[{dtype}]", T([expected], dtype), T([actual], dtype), True, "integers-exact", atol=1.5, rtol=0.5)

    # TestTesting.test_isclose_comparetensors_bool
    for actual, expected, close in ((True, True, True), (False, False, True), (True, False, False), (False, True, False)):
        add("test_isclose_comparetensors_bool", T([expected], "BOOL"), T([actual], "BOOL"), close)

    # TestTesting.test_isclose_equality_shortcut: 2**53 and 2**53 + 1 are one apart as integers
    add("test_isclose_equality_shortcut", T(2**53 + 1, "I64"), T(2**53, "I64"), False, rtol=0.0, atol=0.0)
    # TestTesting.test_isclose_nan_equality_shortcut (float dtypes; bfloat16 added)
    for dtype in ("F16", "F32", "F64", "BF16"):
        add(f"test_isclose_nan_equality_shortcut[{dtype}]", T(nan, dtype), T(nan, dtype), True, equal_nan=True, rtol=0.0, atol=0.0)

    # TestTesting.test__comparetensors_legacy: torch's float32 defaults are rtol=1.3e-6, atol=1e-5,
    # pita's atol=1e-6, rtol=0.
    a, b = T([10000000.0]), T([10000002.0])
    add("test__comparetensors_legacy", b, a, True, "float-defaults")
    add("test__comparetensors_legacy", b, a, True, atol=2.0, rtol=0.0)
    add("test__comparetensors_legacy", b, a, False, atol=1.0, rtol=0.0)
    x, y = T([1.0]), T([1.0 + 1e-5])
    add("test__comparetensors_legacy", y, x, True, atol=0.0, rtol=1.05e-5)
    add("test__comparetensors_legacy", y, x, False, atol=0.0, rtol=1e-5)

    # The default tolerance of each dtype (assert_close's table; pita's README table), modelled on
    # test__comparetensors_legacy: no tolerance given to either side.
    add("default_tolerances", T([1.0]), T([1.000001]), True)  # F32: within both tables
    add("default_tolerances", T([100.0]), T([100.0001]), True, "float-defaults")  # within torch's rtol, beyond pita's atol
    add("default_tolerances", T([1.0], "F64"), T([1.0 + 1e-7], "F64"), True)
    add("default_tolerances", T([1000.0], "F64"), T([1000.0 + 1e-5], "F64"), True, "float-defaults")
    add("default_tolerances", T([0.0], "F64"), T([5e-7], "F64"), False, "float-defaults")  # beyond torch's atol 1e-7, within pita's 1e-6
    add("default_tolerances", T([1.0], "F16"), T([1.0009765625], "F16"), True)  # one float16 ULP: within rtol 1e-3
    add("default_tolerances", T([1.0], "F16"), T([1.0029296875], "F16"), False)
    add("default_tolerances", T([1.0], "BF16"), T([1.0078125], "BF16"), True)  # one bfloat16 ULP: within rtol 1.6e-2
    add("default_tolerances", T([1.0], "BF16"), T([1.03125], "BF16"), False)
    add("default_tolerances", T([5, 6], "I64"), T([5, 6], "I64"), True)

    # TestAssertClose: the single-tensor tests.
    add("test_mismatching_shape", T([0.0]), T(0.0), False, "size-one-axes-flat")  # () against (1,)
    add("test_mismatching_shape", T([[1.0, 2.0]]), T([1.0, 2.0]), False, "size-one-axes-flat")  # (2,) against (1, 2)
    add("test_mismatching_shape", T([1.0, 2.0, 3.0]), T([1.0, 2.0]), False)
    add("test_mismatching_shape", T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), T([[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]), False)
    add("test_mismatching_dtype", T(0, "I32"), T(0.0), False, "dtype-note")
    add("test_mismatching_dtype_no_check", T(1, "I32"), T(1.0), True, check_dtype=False)
    add("test_mismatching_values", T(2, "I64"), T(1, "I64"), False)
    add("test_mismatching_values_rtol", T(1.0 + 1e-3), T(1.0), False, rtol=1e-3 / 2, atol=0.0)
    add("test_mismatching_values_atol", T(1e-3), T(0.0), False, rtol=0.0, atol=1e-3 / 2)
    add("test_matching", T(1.0), T(1.0), True)
    add("test_matching_rtol", T(1.0 + 1e-3), T(1.0), True, rtol=1e-3 * 2, atol=0.0)
    add("test_matching_atol", T(1e-3), T(0.0), True, rtol=0.0, atol=1e-3 * 2)
    add("test_matching_nan", T(nan), T(nan), False)
    add("test_matching_nan_with_equal_nan", T(nan), T(nan), True, equal_nan=True)
    add("test_numpy", T([[0.25, 0.5], [0.75, 0.125]]), T([[0.25, 0.5], [0.75, 0.125]]), True)
    for ref_dtype, cand_dtype in (("I64", "I64"), ("I64", "F64"), ("F64", "I64"), ("F64", "F64")):  # test_scalar: int and float
        add("test_scalar", T(7, ref_dtype), T(7, cand_dtype), True, check_dtype=ref_dtype == cand_dtype)
    add("test_bool", T([True, False], "BOOL"), T([True, False], "BOOL"), True)
    add("test_default_tolerance_selection_mismatching_dtypes", T(1.0, "F64"), T(0.99, "BF16"), True, check_dtype=False)

    # Mixed dtypes, modelled on test_default_tolerance_selection_mismatching_dtypes: the looser
    # dtype's default applies (torch and pita alike); with check_dtype (torch's default) torch
    # refuses the pair, pita compares it and notes the dtypes.
    add("mixed_dtypes", T([1.0, 2.0, 3.0]), T([1.004, 2.01, 2.99], "BF16"), True, check_dtype=False)
    add("mixed_dtypes", T([1.0, 2.0, 3.0]), T([1.05, 2.0, 3.0], "BF16"), False, check_dtype=False)
    add("mixed_dtypes", T([1.0, 2.0, 3.0]), T([1.0009765625, 2.0, 3.0], "F16"), True, check_dtype=False)
    add("mixed_dtypes", T([1.0, 2.0, 3.0], "F16"), T([1.0078125, 2.0, 3.0], "BF16"), True, check_dtype=False)
    add("mixed_dtypes", T([1.0, 2.0, 3.0], "F64"), T([1.0, 2.0, 3.0 + 3e-5]), False, check_dtype=False)  # beyond float32's defaults
    add("mixed_dtypes", T([1.0, 2.0, 3.0], "F64"), T([1.0, 2.0, 3.0 + 1e-5]), True, "float-defaults", check_dtype=False)
    add("mixed_dtypes", T([1.0, 2.0, 3.0]), T([1.0, 2.0, 3.0], "BF16"), False, "dtype-note")
    add("mixed_dtypes", T([1.0, 2.0, 3.0], "F64"), T([1.0, 2.0, 3.0]), False, "dtype-note")
    add("mixed_dtypes", T([1.0, 2.0], "F32"), T([1.0, 2.0], "F32"), True, check_dtype=True)

    # Boundaries, exact in binary, modelled on test_matching_atol/test_mismatching_values_atol:
    # |diff| equal to the allowed value passes, one ULP above it fails.
    for dtype in ("F32", "F64"):
        above = float(np.nextafter(np.asarray(0.5, DTYPES[dtype]), np.asarray(1.0, DTYPES[dtype])))
        add(f"atol_boundary[{dtype}]", T([0.0], dtype), T([0.5], dtype), True, atol=0.5, rtol=0.0)
        add(f"atol_boundary[{dtype}]", T([0.0], dtype), T([above], dtype), False, atol=0.5, rtol=0.0)
        add(f"rtol_boundary[{dtype}]", T([2.0], dtype), T([3.0], dtype), True, atol=0.0, rtol=0.5)  # 1 <= 0.5*|2|
        add(f"rtol_boundary[{dtype}]", T([3.0], dtype), T([2.0], dtype), True, atol=0.0, rtol=0.5)  # 1 <= 0.5*|3|
        add(f"rtol_boundary[{dtype}]", T([2.0], dtype), T([1.0], dtype), True, atol=0.0, rtol=0.5)
        add(f"rtol_boundary[{dtype}]", T([1.0], dtype), T([2.0], dtype), False, atol=0.0, rtol=0.5)  # 1 > 0.5*|1|: relative to the reference
        add(f"signed_zeros[{dtype}]", T([0.0, -0.0], dtype), T([-0.0, 0.0], dtype), True, atol=0.0, rtol=0.0)

    # TestAssertCloseErrorMessage: each call fails.
    ints, other = [1, 2, 3, 4], [1, 2, 5, 6]
    add("test_identifier_tensor_likes", T(other, "I64"), T(ints, "I64"), False)
    add("test_not_equal", T(other), T(ints), False, rtol=0.0, atol=0.0)
    for rtol, atol in ((1.3e-6, 0.0), (0.0, 1e-5), (1.3e-6, 1e-5)):
        add("test_not_close", T(other), T(ints), False, rtol=rtol, atol=atol)
    add("test_mismatched_elements", T(other, "I64"), T(ints, "I64"), False)
    add("test_abs_diff", T([[1, 2], [5, 4]], "I64"), T([[1, 2], [3, 4]], "I64"), False)
    add("test_rel_diff", T([[1, 4], [3, 4]], "I64"), T([[1, 2], [3, 4]], "I64"), False)
    add("test_zero_div_zero", T([2.0, 0.0]), T([1.0, 0.0]), False)
    add("test_rtol", T([2, 2], "I64"), T([1, 2], "I64"), False, rtol=1e-3, atol=0.0)
    add("test_atol", T([2, 2], "I64"), T([1, 2], "I64"), False, rtol=0.0, atol=1e-3)

    # TestAssertCloseContainer: a dump is a mapping of names to tensors.
    one, two = T(1, "I64"), T(2, "I64")
    add("test_mapping_mismatching_keys", {}, {"a": T(0.0)}, False)
    add("test_mapping_mismatching_keys", {"a": T(0.0)}, {}, False)
    add("test_mapping_mismatching_values_msg", {"a": one, "b": two}, {"a": one, "b": one}, False)
    add("test_mapping_matching", {"a": one, "b": T([0.5, 1.5])}, {"a": one, "b": T([0.5, 1.5])}, True)
    add("test_mapping_empty", {}, {}, True, "empty-nothing-compared")

    # TestTesting.test_assertEqual_numpy: empty sizes (0,), (0, S), (S, 0), rtol=0, atol=0.
    for shape in ((0,), (0, 10), (10, 0)):
        for dtype in ("F32", "I64", "BOOL"):
            empty = np.zeros(shape, dtype=DTYPES[dtype])
            add(f"test_assertEqual_numpy[{dtype}]", T(empty, dtype), T(empty, dtype), True, rtol=0.0, atol=0.0)
    return cases


# --- numpy: numpy/testing/tests/test_utils.py ----------------------------------------------------


def numpy_cases() -> list[Case]:
    cases: list[Case] = []
    close = lambda source, desired, actual, expect, difference=None, **options: _case(cases, source, ALLCLOSE, desired, actual, expect, difference, **options)
    max_ulp = lambda source, a, b, maxulp, expect, difference=None: _case(cases, source, MAX_ULP, a, b, expect, difference, maxulp=maxulp)
    nulp = lambda source, x, y, steps, expect, difference=None: _case(cases, source, NULP, x, y, expect, difference, nulp=steps)

    # TestAssertAllclose.test_simple (assert_allclose(actual, desired))
    x, y, z = 1e-3, 1e-9, 0.0
    f64 = lambda values: T(values, "F64")
    close("test_simple", f64(y), f64(x), True, atol=1)
    close("test_simple", f64(y), f64(x), False)
    close("test_simple", f64(z), f64(y), False)
    close("test_simple", f64(y), f64(z), False)
    a, b = [x, y, x, y], [x, y, x, x]
    close("test_simple", f64(b), f64(a), True, atol=1)
    close("test_simple", f64(b), f64(a), False)
    b_close = [x, y, x, y * (1 + 1e-8)]
    close("test_simple", f64(b_close), f64(a), True)
    close("test_simple", f64(b_close), f64(a), False, rtol=1e-9)
    close("test_simple", T(10, "I64"), T(6, "I64"), True, "integers-exact", rtol=0.5)
    close("test_simple", T(6, "I64"), T(10, "I64"), False, rtol=0.5)
    close("test_simple", f64(10.0), f64(6.0), True, rtol=0.5)  # the same as floats: rtol scales with |desired|
    close("test_simple", f64(6.0), f64(10.0), False, rtol=0.5)
    c = [x, y, x, z]
    close("test_simple", f64(c), f64([x, y, x, x]), False)
    close("test_simple", f64([x, y, x, x]), f64(c), False)
    # test_min_int, test_report_fail_percentage, test_report_max_relative_error
    close("test_min_int", T([np.iinfo(np.int64).min], "I64"), T([np.iinfo(np.int64).min], "I64"), True)
    close("test_report_fail_percentage", T([1, 1, 1, 2], "I64"), T([1, 1, 1, 1], "I64"), False)
    close("test_report_max_relative_error", T([0, 2], "I64"), T([0, 1], "I64"), False)
    # test_error_message_unsigned: the gap is 4 both ways; atol=4 (added) lets numpy pass
    close("test_error_message_unsigned", T([4, 4, 4], "U8"), T([0, 1, 8], "U8"), False, atol=3)
    close("test_error_message_unsigned", T([4, 4, 4], "U8"), T([0, 1, 8], "U8"), True, "integers-exact", atol=4)
    close("integer_tolerance", T([100, 200], "I32"), T([101, 199], "I32"), True, "integers-exact", rtol=0.01)
    close("integer_tolerance", T([100, 200], "I32"), T([100, 200], "I32"), True, rtol=0.01)
    close("integer_tolerance", T([True, False], "BOOL"), T([True, False], "BOOL"), True)
    close("integer_tolerance", T([True, False], "BOOL"), T([True, True], "BOOL"), False)

    # test_equal_nan, test_not_equal_nan, test_equal_nan_default (real parts only)
    close("test_equal_nan", f64([nan]), f64([nan]), True, equal_nan=True)
    close("test_not_equal_nan", f64([nan]), f64([nan]), False, equal_nan=False)
    close("test_equal_nan_default", f64([nan]), f64([nan]), True)
    for dtype in ("F16", "F32"):
        close(f"test_equal_nan[{dtype}]", T([1.0, nan], dtype), T([1.0, nan], dtype), True, equal_nan=True)
        close(f"test_not_equal_nan[{dtype}]", T([1.0, nan], dtype), T([1.0, nan], dtype), False, equal_nan=False)
    close("nan_positions", f64([1.0, nan]), f64([nan, 1.0]), False)
    close("nan_positions", f64([1.0]), f64([nan]), False)
    close("nan_positions", f64([nan]), f64([1.0]), False, atol=1e300)  # no atol lets a number pass against NaN
    # test_infs (real parts only), in float64 and float32
    for dtype in ("F64", "F32"):
        close(f"test_infs[{dtype}]", T([inf], dtype), T([inf], dtype), True)
        close(f"test_infs[{dtype}]", T([3.0], dtype), T([inf], dtype), False)
        close(f"test_infs[{dtype}]", T([-inf], dtype), T([inf], dtype), False)
        close(f"test_infs[{dtype}]", T([inf], dtype), T([nan], dtype), False)

    # test_strict: numpy broadcasts ones(()) against ones(3); strict refuses that and a dtype change
    close("test_strict", f64(1.0), f64([1.0, 1.0, 1.0]), True, "no-broadcasting")
    close("test_strict", f64(1.0), f64([1.0, 1.0, 1.0]), False, strict=True)
    close("test_strict", f64([1.0, 1.0, 1.0]), f64([1.0, 1.0, 1.0]), True)
    close("test_strict", T([1.0, 1.0, 1.0]), f64([1.0, 1.0, 1.0]), True)  # float64 against float32: pita notes it
    close("test_strict", T([1.0, 1.0, 1.0]), f64([1.0, 1.0, 1.0]), False, "dtype-note", strict=True)
    # Beyond test_strict: numpy broadcasts a 0-d side only; other shapes must be equal
    close("broadcasting", f64([1.0, 2.0, 3.0]), f64([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]), False, "broadcast-expanded")
    close("broadcasting", f64(2.0), f64([[2.0, 2.0], [2.0, 2.0]]), True, "no-broadcasting")
    close("broadcasting", f64(2.0), f64([2.0, 2.5]), False)
    close("broadcasting", f64([[1.0], [2.0], [3.0]]), f64([[1.0, 2.0, 3.0]]), False, "size-one-axes-flat")  # 3x3 pairs in numpy
    close("broadcasting", f64([[1.0], [2.0]]), f64([[1.0, 2.0]]), False, "size-one-axes-flat")
    close("broadcasting", f64([[1.0, 2.0]]), f64([1.0, 2.0]), False, "size-one-axes-flat")
    close("broadcasting", f64([1.0, 2.0]), f64([1.0, 2.0, 3.0]), False)  # shapes that cannot broadcast
    # Empty arrays, as in test_assertEqual_numpy's sizes
    for shape in ((0,), (0, 3), (3, 0)):
        close("empty", T(np.zeros(shape), "F64"), T(np.zeros(shape), "F64"), True)
    close("empty", T(np.zeros((0,), dtype=np.int64), "I64"), T(np.zeros((0,), dtype=np.int64), "I64"), True)
    # Signed zeros and the smallest subnormals
    close("signed_zeros", f64([0.0, -0.0]), f64([-0.0, 0.0]), True, rtol=0.0)
    close("subnormals", f64([5e-324]), f64([0.0]), True, atol=5e-324, rtol=0.0)
    close("subnormals", f64([1e-323]), f64([0.0]), False, atol=5e-324, rtol=0.0)
    # atol/rtol boundaries, exact in binary
    for dtype in ("F64", "F32", "F16"):
        close(f"boundaries[{dtype}]", T([4.0], dtype), T([5.0], dtype), True, atol=0.0, rtol=0.25)
        close(f"boundaries[{dtype}]", T([4.0], dtype), T([5.0], dtype), False, atol=0.0, rtol=0.125)
        close(f"boundaries[{dtype}]", T([5.0], dtype), T([4.0], dtype), True, atol=0.0, rtol=0.25)  # 1 <= 0.25*5
        close(f"boundaries[{dtype}]", T([4.0], dtype), T([5.0], dtype), True, atol=0.5, rtol=0.125)  # 1 <= 0.5 + 0.125*4
        close(f"boundaries[{dtype}]", T([-4.0], dtype), T([-5.0], dtype), True, atol=1.0, rtol=0.0)
        close(f"boundaries[{dtype}]", T([-4.0], dtype), T([-5.25], dtype), False, atol=1.0, rtol=0.0)

    # TestArrayAlmostEqualNulp: test_float{64,32,16}_{pass,fail}, addition and subtraction
    for dtype, (low, high, count) in (("F64", (-20, 20, 50)), ("F32", (-20, 20, 50)), ("F16", (-4, 4, 10))):
        kind = DTYPES[dtype].type
        values = 10 ** np.linspace(low, high, count, dtype=kind)
        values = np.r_[-values, values]
        eps, epsneg = np.finfo(kind).eps, np.finfo(kind).epsneg
        for what, factor in (("pass", 0.5), ("fail", 2.0)):
            source = f"test_float{DTYPES[dtype].itemsize * 8}_{what}"
            nulp(source, T(values, dtype), T(values + values * eps * 5 * factor, dtype), 5, what == "pass")
            nulp(source, T(values, dtype), T(values - values * epsneg * 5 * factor, dtype), 5, what == "pass")
    # test_float{64,32,16}_ignore_nan: NaNs of different payloads are 0 ULP apart in numpy
    for dtype, quiet, offset in (("F64", 0x7FF8000000000000, 0xFFFFFFFF), ("F32", 0x7FC00000, 0xFFFF), ("F16", 0x7E00, 0xFF)):
        max_ulp(f"test_float{DTYPES[dtype].itemsize * 8}_ignore_nan", T([quiet], dtype, bits=True), T([quiet ^ offset], dtype, bits=True), 0, True,
                "nan-policy")

    # TestULP
    rng = np.random.default_rng(17)
    noise = rng.standard_normal(10)
    max_ulp("test_equal", T(noise, "F64"), T(noise, "F64"), 0, True)
    single = (np.ones(10) + 0.01 * noise).astype(np.float32)
    max_ulp("test_single", T(single), T(single + np.finfo(np.float32).eps), 20, True)
    double = np.ones(10) + 0.01 * noise
    max_ulp("test_double", T(double, "F64"), T(double + np.finfo(np.float64).eps, "F64"), 200, True)
    for dtype in ("F32", "F64"):
        big = float(np.finfo(DTYPES[dtype]).max)
        max_ulp(f"test_inf[{dtype}]", T([inf], dtype), T([big], dtype), 200, True, "inf-only-equal")
        maxulp = 1e6 if dtype == "F32" else 1e12
        for other in (inf, big, float(np.finfo(DTYPES[dtype]).tiny), 0.0, -0.0):  # test_nan: NaN is far from all of them
            max_ulp(f"test_nan[{dtype}]", T([nan], dtype), T([other], dtype), maxulp, False)
    # k ULPs apart passes at maxulp=k and fails at k-1, modelled on test_single/test_double
    for dtype in ("F64", "F32", "F16"):
        kind = DTYPES[dtype].type
        start = np.asarray([1.0, -3.0, 1e-3, 0.0], dtype=kind)
        for steps in (1, 3):
            moved = start.copy()
            for _ in range(steps):
                moved = np.nextafter(moved, kind(np.inf))
            max_ulp(f"ulp_steps[{dtype}]", T(start, dtype), T(moved, dtype), steps, True)
            max_ulp(f"ulp_steps[{dtype}]", T(start, dtype), T(moved, dtype), steps - 1, False)
        max_ulp(f"ulp_signed_zeros[{dtype}]", T([0.0], dtype), T([-0.0], dtype), 0, True)
        tiny = float(np.nextafter(kind(0), kind(1)))
        max_ulp(f"across_zero[{dtype}]", T([-tiny], dtype), T([tiny], dtype), 2, True)
        max_ulp(f"across_zero[{dtype}]", T([-tiny], dtype), T([tiny], dtype), 1, False)
        max_ulp(f"inf[{dtype}]", T([inf, -inf], dtype), T([inf, -inf], dtype), 0, True)
        max_ulp(f"inf[{dtype}]", T([inf], dtype), T([-inf], dtype), 1000, False)
    return cases

