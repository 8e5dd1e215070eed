"""`measure` held to an independent oracle: plain Python over values decoded with `struct`.

The oracle is the contract (`pita.stats_contract`) written out and shares no code with its two
implementations: it reads each element from its bytes, rounds floats to the coarser dtype by
exact rational arithmetic, and counts ULPs by enumerating the format (exponent and
significand), not by reinterpreting bits. Property tests draw pairs full of
infinities, NaN, signed zeros, subnormals and the largest finite values, in every dtype, and
hold both the numpy path and the compiled kernel to it.
"""

import dataclasses
import math
import os
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stats import use_kernel, use_numpy  # the same two paths as there

from pita import stats
from pita.compare import Tolerance
from pita.dtypes import BF16
from pita.errors import UsageError
from pita.files import FileIdentity
from pita.filetensor import FileTensor
from pita.stats import measure, measure_many
from pita.stats_contract import EXAMPLES, ULP_UNBOUNDED, TensorStats

# --- the oracle --------------------------------------------------------------------------------

# (significand bits including the leading one, smallest normal exponent, largest exponent)
FORMATS = {"F64": (53, -1022, 1023), "F32": (24, -126, 127), "F16": (11, -14, 15), "BF16": (8, -126, 127)}
STRUCT_CODES = {"F64": "d", "F32": "f", "F16": "e", "I64": "q", "I32": "i", "U64": "Q", "U8": "B", "BOOL": "?"}
NUMPY_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": BF16, "I64": np.int64,
                "I32": np.int32, "U64": np.uint64, "U8": np.uint8, "BOOL": np.bool_}


def decode(array: np.ndarray, name: str) -> list:
    """The elements as Python numbers, from their little-endian bytes."""
    raw = np.ascontiguousarray(array).tobytes()
    if name == "BF16":
        halves = struct.unpack(f"<{array.size}H", raw)
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in halves]
    values = list(struct.unpack(f"<{array.size}{STRUCT_CODES[name]}", raw))
    return [int(v) for v in values] if name == "BOOL" else values


def round_to(value: float, name: str) -> float:
    """`value` rounded to nearest, ties to even, in format `name`; infinity beyond its range."""
    precision, smallest, largest = FORMATS[name]
    if not math.isfinite(value) or value == 0:
        return value
    exponent = max(math.frexp(abs(value))[1] - 1, smallest)
    quantum = Fraction(2) ** (exponent - precision + 1)
    rounded = round(Fraction(value) / quantum) * quantum  # round() on a Fraction ties to even
    limit = (2 - Fraction(2) ** (1 - precision)) * Fraction(2) ** largest
    return math.copysign(math.inf, value) if abs(rounded) > limit else float(rounded)


def ordinal(value: float, name: str) -> int:
    """Position of a representable value among the format's values: 0 for both zeros, one more
    for each step away from zero, negative below zero."""
    precision, smallest, _ = FORMATS[name]
    magnitude = Fraction(abs(value))
    if magnitude == 0:
        return 0
    exponent = max(math.frexp(abs(value))[1] - 1, smallest)
    steps = magnitude / Fraction(2) ** (exponent - precision + 1)  # an integer: the significand
    assert steps.denominator == 1
    binades = exponent - smallest + (1 if abs(value) >= 2.0**smallest else 0)
    position = binades * 2 ** (precision - 1) + int(steps) - (2 ** (precision - 1) if binades else 0)
    return position if value > 0 else -position


def oracle_ulp(x: float, y: float, names: tuple[str, str]) -> int:
    if not (math.isfinite(x) and math.isfinite(y)):
        return 0 if x == y or (math.isnan(x) and math.isnan(y)) else ULP_UNBOUNDED
    coarse = min(names, key=lambda n: FORMATS[n][0])
    a, b = round_to(x, coarse), round_to(y, coarse)
    if math.isinf(a) or math.isinf(b):
        return ULP_UNBOUNDED
    return min(abs(ordinal(a, coarse) - ordinal(b, coarse)), ULP_UNBOUNDED)


def oracle_element(x, y, names, tolerance):
    """(passed, |diff|, relative diff, ULP distance or None) of one pair, from the rules."""
    floats = all(n in FORMATS for n in names)
    if floats:
        finite = math.isfinite(x) and math.isfinite(y)
        same = x == y or (tolerance.equal_nan and math.isnan(x) and math.isnan(y))
        ulp = oracle_ulp(x, y, names)
        if finite:
            diff = abs(y - x)
            by_ulp = tolerance.ulp is not None and ulp < ULP_UNBOUNDED and ulp <= tolerance.ulp
            passed = same or diff <= tolerance.atol + tolerance.rtol * abs(x) or by_ulp
        else:
            diff, passed = (0.0 if same else math.inf), same
    else:
        ulp = None
        exact = all(isinstance(v, int) or math.isfinite(v) for v in (x, y))
        difference = abs(Fraction(y) - Fraction(x)) if exact else math.inf
        passed, diff = difference == 0, float(difference)
    magnitude = abs(float(x))
    rel = 0.0 if diff == 0 else (math.inf if math.isinf(diff) or magnitude == 0 else diff / magnitude)
    return passed, diff, rel, ulp


def first_max(values: list) -> int:
    return max(range(len(values)), key=values.__getitem__)  # max() keeps the first of equals


def oracle(reference: np.ndarray, candidate: np.ndarray, names: tuple[str, str], tolerance) -> TensorStats:
    xs, ys = decode(reference, names[0]), decode(candidate, names[1])
    rows = [oracle_element(x, y, names, tolerance) for x, y in zip(xs, ys)]
    failed = [k for k, row in enumerate(rows) if not row[0]]
    is_nan = lambda v: isinstance(v, float) and math.isnan(v)
    found = TensorStats(n=len(rows), mismatched=len(failed), examples=failed[:EXAMPLES],
                        nan_reference=sum(map(is_nan, xs)), nan_candidate=sum(map(is_nan, ys)))
    floats = all(n in FORMATS for n in names)
    if floats:
        found.max_ulp = 0
    if rows:
        diffs, rels, ulps = zip(*[row[1:] for row in rows])
        found.worst = first_max(diffs)
        found.max_abs_diff, found.max_rel_diff = diffs[found.worst], max(rels)
        if floats:
            found.max_ulp_at = first_max(ulps)
            found.max_ulp = ulps[found.max_ulp_at]
    return found


# --- the oracle checked by hand -------------------------------------------------------------


def test_the_oracle_counts_ulps_by_enumerating_the_format():
    assert ordinal(2.0**-149, "F32") == 1 and ordinal(2.0**-126, "F32") == 2**23
    assert ordinal(1.0, "F16") == 0x3C00 and ordinal(-1.0, "BF16") == -0x3F80
    assert ordinal(float(np.finfo(np.float32).max), "F32") == 0x7F7FFFFF
    assert round_to(1 + 2**-8, "BF16") == 1.0 and round_to(1 + 2**-8 + 2**-30, "BF16") == 1 + 2**-7
    assert round_to(65520.0, "F16") == math.inf and round_to(65519.0, "F16") == 65504.0
    assert oracle_ulp(1e39, 3e38, ("F64", "F32")) == ULP_UNBOUNDED
    assert oracle_ulp(math.nan, math.nan, ("F32", "F32")) == 0


def test_the_oracle_compares_integers_exactly():
    found = oracle(np.int64([2**53 + 1, -2**63]), np.int64([2**53, 2**63 - 1]), ("I64", "I64"), Tolerance(atol=5))
    assert (found.mismatched, found.max_abs_diff, found.worst, found.max_ulp) == (2, float(2**64 - 1), 1, None)


# --- property tests ---------------------------------------------------------------------------

SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan]


def special_values(name: str) -> list[float]:
    """Signed zeros, infinities, NaN, the smallest subnormal and the largest finite value of a format."""
    precision, smallest, largest = FORMATS[name]
    tiny, huge = 2.0 ** (smallest - precision + 1), float((2 - Fraction(2) ** (1 - precision)) * Fraction(2) ** largest)
    return SPECIAL_FLOATS + [tiny, -tiny, huge, -huge, 2.0**smallest]


def encode(values: list, name: str) -> np.ndarray:
    """Python values (each representable in the format) as a numpy array of that dtype."""
    if name == "BF16":
        return np.array([struct.unpack("<I", struct.pack("<f", v))[0] >> 16 for v in values], dtype=np.uint16).view(BF16)
    return np.array(values, dtype=NUMPY_DTYPES[name])


def values_of(name: str):
    if name in FORMATS:
        width = {"F64": 64, "F32": 32, "F16": 16, "BF16": 32}[name]
        drawn = st.floats(width=width) if name != "BF16" else st.floats(width=32).map(lambda v: round_to(v, "BF16"))
        return st.one_of(st.sampled_from(special_values(name)), drawn)
    if name == "BOOL":
        return st.sampled_from([0, 1])
    info = np.iinfo(NUMPY_DTYPES[name])
    return st.one_of(st.sampled_from([int(info.min), int(info.max), 0, 1, 2**53, 2**53 + 1]).filter(lambda v: info.min <= v <= info.max),
                     st.integers(int(info.min), int(info.max)))


def nearby(value, name: str, steps: int):
    """A value `steps` representable values away (floats) or `steps` away (integers), or itself."""
    if name in FORMATS:
        if not math.isfinite(value):
            return value
        moved = ordinal(value, name) + steps
        return round_to(from_ordinal(moved, name), name)
    info = np.iinfo(NUMPY_DTYPES[name]) if name != "BOOL" else None
    moved = value + steps
    return moved if info is None and moved in (0, 1) or info is not None and info.min <= moved <= info.max else value


def from_ordinal(position: int, name: str) -> float:
    precision, smallest, largest = FORMATS[name]
    magnitude, sign = abs(position), (1 if position >= 0 else -1)
    per_binade = 2 ** (precision - 1)
    binade, offset = divmod(magnitude, per_binade)
    if binade == 0:
        value = Fraction(offset) * Fraction(2) ** (smallest - precision + 1)
    elif smallest + binade - 1 > largest:
        return sign * math.inf
    else:
        value = Fraction(per_binade + offset) * Fraction(2) ** (smallest + binade - 1 - precision + 1)
    return sign * float(value)


DTYPE_PAIRS = [("F32", "F32"), ("F64", "F64"), ("F16", "F16"), ("BF16", "BF16"), ("I64", "I64"), ("BOOL", "BOOL"),
               ("F64", "F32"), ("F32", "BF16"), ("BF16", "F16"), ("F64", "BF16"), ("F16", "F64"),
               ("I64", "F64"), ("F32", "I64"), ("U64", "I64"), ("I32", "U8"), ("BOOL", "F16")]



@dataclasses.dataclass(frozen=True)
class Bounds:
    """What `measure` reads of a tolerance, unchecked: an infinite rtol, which `Tolerance` refuses,
    holds both implementations to the contract at its edge too."""

    atol: float
    rtol: float
    ulp: int | None
    equal_nan: bool


tolerances = st.builds(
    Bounds,
    atol=st.sampled_from([0.0, 1e-6, 1.0, 1e300]),
    rtol=st.sampled_from([0.0, 1e-3, 1.0, 4.0, math.inf]),  # inf: the allowance at a reference of 0 is NaN
    ulp=st.sampled_from([None, 0, 1, 3, 2**40]),
    equal_nan=st.booleans(),
)


@st.composite
def pairs(draw, dtype_pairs=DTYPE_PAIRS, max_size=40):
    """(reference, candidate, dtype names): the candidate mostly near the reference."""
    names = draw(st.sampled_from(dtype_pairs))
    reference = draw(st.lists(values_of(names[0]), max_size=max_size))
    candidate = []
    for value in reference:
        if names[0] == names[1] and draw(st.booleans()):
            candidate.append(nearby(value, names[1], draw(st.integers(-3, 3))))
        else:
            candidate.append(draw(values_of(names[1])))
    return encode(reference, names[0]), encode(candidate, names[1]), names


def assert_same(found: TensorStats, expected: TensorStats):
    assert dataclasses.asdict(found) == dataclasses.asdict(expected)


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(pair=pairs(), tolerance=tolerances)
def test_the_numpy_path_agrees_with_the_oracle(pair, tolerance):
    reference, candidate, names = pair
    with pytest.MonkeyPatch.context() as patch:
        use_numpy(patch)
        assert_same(measure(reference, candidate, tolerance), oracle(reference, candidate, names, tolerance))


SAME_FLOATS = [("F32", "F32"), ("F64", "F64"), ("F16", "F16"), ("BF16", "BF16")]


@PROPERTY
@given(pair=pairs(dtype_pairs=SAME_FLOATS, max_size=300), tolerance=tolerances)
def test_the_kernel_agrees_with_the_oracle(pair, tolerance):
    """Every float dtype, long enough to cross sub-blocks, chunks and threads' shares (see `use_kernel`)."""
    reference, candidate, names = pair
    with pytest.MonkeyPatch.context() as patch:
        use_kernel(patch)
        assert_same(measure(reference, candidate, tolerance), oracle(reference, candidate, names, tolerance))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(st.tuples(pairs(max_size=200), tolerances), max_size=12))
def test_a_batch_gives_what_numpy_gives_pair_by_pair(batch):
    """One call for a batch of every dtype pair (those the kernel does not take go to numpy), its
    threads' shares cutting pairs anywhere: the statistics numpy gives each pair alone."""
    batch_pairs, batch_tolerances = [(r, c) for (r, c, _), _ in batch], [t for _, t in batch]
    with pytest.MonkeyPatch.context() as patch:
        use_numpy(patch)
        expected = [measure(r, c, t) for (r, c), t in zip(batch_pairs, batch_tolerances)]
    with pytest.MonkeyPatch.context() as patch:
        use_kernel(patch, chunk=16, piece=40, sub_block=4, threads=3)
        found = measure_many(batch_pairs, batch_tolerances)
    assert [dataclasses.asdict(f) for f in found] == [dataclasses.asdict(e) for e in expected]


def test_the_kernel_agrees_with_the_oracle_where_maxima_keep_growing(monkeypatch):
    """Each sub-block beats the last on |diff|, relative diff and ULPs, and mismatches arrive
    late: every position must come from a rescan."""
    reference = np.linspace(1, 2, 4096, dtype=np.float32)
    candidate = (reference.view(np.int32) + np.arange(4096, dtype=np.int32) // 16).view(np.float32)
    use_kernel(monkeypatch)
    tolerance = Tolerance(atol=0, ulp=200)
    assert_same(measure(reference, candidate, tolerance), oracle(reference, candidate, ("F32", "F32"), tolerance))


def test_the_kernel_finds_the_largest_relative_difference_when_nothing_else_grows(monkeypatch):
    """One ULP everywhere, on references falling through one binade: |diff| and ULPs stay put,
    only diff/|reference| creeps up, by less than a part in a thousand per sub-block."""
    reference = np.linspace(1.999, 1, 4096, dtype=np.float32)
    candidate = (reference.view(np.int32) + 1).view(np.float32)
    use_kernel(monkeypatch)
    assert_same(measure(reference, candidate, Tolerance()), oracle(reference, candidate, ("F32", "F32"), Tolerance()))


def test_the_kernel_finds_the_largest_ulp_distance_when_nothing_else_grows(monkeypatch):
    """2 ULPs at 1.0 first; 3 ULPs at 0.9 later (in the same thread's range), where a ULP is half
    as large: |diff| and diff/|reference| are smaller there, only the ULP distance grows."""
    reference = np.full(256, 0.75, dtype=np.float32)
    reference[[0, 100]] = 1.0, 0.9
    candidate = reference.copy()
    candidate[[0, 100]] = (reference[[0, 100]].view(np.int32) + np.int32([2, 3])).view(np.float32)
    use_kernel(monkeypatch)
    found = measure(reference, candidate, Tolerance())
    assert (found.max_ulp, found.max_ulp_at, found.worst) == (3, 100, 0)
    assert_same(found, oracle(reference, candidate, ("F32", "F32"), Tolerance()))


def test_with_ulps_the_kernel_counts_only_elements_beyond_both_tolerances(monkeypatch):
    """Far misses first (they fill the example positions), then elements 1 ULP apart, within
    --ulp 1 but not within atol 0: sub-blocks the screen settles alone must not count them."""
    reference = np.linspace(1, 2, 4096, dtype=np.float32)
    candidate = (reference.view(np.int32) + 1).view(np.float32)
    candidate[:100] = reference[:100] + 1
    use_kernel(monkeypatch)
    tolerance = Tolerance(atol=0, ulp=1)
    found = measure(reference, candidate, tolerance)
    assert found.mismatched == 100
    assert_same(found, oracle(reference, candidate, ("F32", "F32"), tolerance))


def test_the_kernel_locates_the_first_mismatches_even_where_they_change_no_maximum(monkeypatch):
    """The first element is off by far more than any later one: the later mismatches only
    count, and the screen must still hand them to a rescan while example positions are wanted."""
    reference = np.ones(1024, dtype=np.float32)
    candidate = reference.copy()
    candidate[[0, 300, 301, 700, 900, 1000]] = [1e30, 1.5, 1.5, 2, 3, 4]
    use_kernel(monkeypatch)
    found = measure(reference, candidate, Tolerance())
    assert found.examples == [0, 300, 301, 700, 900] and found.mismatched == 6
    assert_same(found, oracle(reference, candidate, ("F32", "F32"), Tolerance()))


def far_misses_then(pair, position=100, size=256):
    """Five far misses first (they fill the example positions and set every maximum far above
    what follows), then `pair` at four positions from `position` on; the rest equal."""
    reference, candidate = np.full(size, 0.5, dtype=np.float32), np.full(size, 0.5, dtype=np.float32)
    reference[:5], candidate[:5] = 1e-30, 1e30
    reference[position:position + 4], candidate[position:position + 4] = pair
    return reference, candidate


@pytest.mark.parametrize("pair, atol", [
    ((3.0, 2.0**25), 33554428.5),  # the difference, 33554429, rounds to 33554428 in float32
    ((1.0, 1.5), 0.5 - 2**-30),  # the allowance rounds up to 0.5 in float32
], ids=["difference rounds", "allowance rounds"])
def test_the_float32_screen_defers_where_float32_would_round(monkeypatch, pair, atol):
    reference, candidate = far_misses_then(pair)
    use_kernel(monkeypatch)
    found = measure(reference, candidate, Tolerance(atol=atol))
    assert found.mismatched == 9
    assert_same(found, oracle(reference, candidate, ("F32", "F32"), Tolerance(atol=atol)))


def test_the_float32_screen_defers_where_its_filter_product_is_subnormal(monkeypatch):
    """max_rel 42 * 2**-23 from a first element; later 3 * 2**-19 on a subnormal reference, where
    the float32 filter product rounds up onto the difference itself."""
    reference, candidate = np.full(256, 0.5, dtype=np.float32), np.full(256, 0.5, dtype=np.float32)
    reference[0], candidate[0] = 1.0, 1 + 42 * 2.0**-23
    reference[100], candidate[100] = 2.0**-130, 2.0**-130 + 3 * 2.0**-149
    use_kernel(monkeypatch)
    found = measure(reference, candidate, Tolerance())
    assert found.max_rel_diff == 3 * 2.0**-19
    assert_same(found, oracle(reference, candidate, ("F32", "F32"), Tolerance()))


def test_the_float32_screen_filter_stays_below_max_rel(monkeypatch):
    """max_rel 3 * 2**-23 first (and 5 ULPs elsewhere); later 5 ULPs just below 5/6, where
    max_rel * |reference| rounds in float32 onto the difference, though the quotient is larger."""
    just_below = np.float32(5 / 6)  # rounds down: 6 * just_below < 5
    reference, candidate = np.full(256, 0.5, dtype=np.float32), np.full(256, 0.5, dtype=np.float32)
    reference[:2] = 1.0, 1.999
    reference[100] = just_below
    steps = np.zeros(256, dtype=np.int32)
    steps[[0, 1, 100]] = 3, 5, 5
    candidate = (reference.view(np.int32) + steps).view(np.float32)
    use_kernel(monkeypatch)
    found = measure(reference, candidate, Tolerance())
    assert found.max_rel_diff == 5 * 2.0**-24 / float(just_below)
    assert_same(found, oracle(reference, candidate, ("F32", "F32"), Tolerance()))


def test_the_float64_screen_defers_where_its_filter_product_is_subnormal(monkeypatch):
    """max_rel 1/8 from a first element; later 1/7 on a subnormal reference, where the filter
    product (7/8 of the smallest subnormal) rounds up onto the difference itself."""
    tiny = 2.0**-1074
    reference, candidate = np.full(256, 0.5), np.full(256, 0.5)
    reference[0], candidate[0] = 8.0, 9.0
    reference[100], candidate[100] = 7 * tiny, 8 * tiny
    use_kernel(monkeypatch)
    found = measure(reference, candidate, Tolerance())
    assert found.max_rel_diff == 1 / 7
    assert_same(found, oracle(reference, candidate, ("F64", "F64"), Tolerance()))


# --- every float dtype: where maxima move late, in files, at odd addresses ----------------------

BITS = {"F16": np.uint16, "BF16": np.uint16, "F32": np.uint32, "F64": np.uint64}
ONE_BITS = {"F16": 0x3C00, "BF16": 0x3F80, "F32": 0x3F80_0000, "F64": 0x3FF0_0000_0000_0000}


def from_bits(bits: np.ndarray, name: str) -> np.ndarray:
    return bits.astype(BITS[name]).view(NUMPY_DTYPES[name])


@pytest.mark.parametrize("name", FORMATS)
def test_the_kernel_agrees_with_the_oracle_where_every_maximum_keeps_growing_in_every_dtype(monkeypatch, name):
    """References climbing from 1, candidates one more ULP away every 16 elements: |diff|, ULPs
    and (across binades) relative differences keep growing, so positions come from rescans."""
    steps = np.arange(2048, dtype=np.uint64)
    reference_bits = ONE_BITS[name] + steps
    reference, candidate = from_bits(reference_bits, name), from_bits(reference_bits + steps // 16, name)
    use_kernel(monkeypatch)
    for tolerance in (Tolerance(), Tolerance(atol=0, ulp=60)):
        assert_same(measure(reference, candidate, tolerance), oracle(reference, candidate, (name, name), tolerance))


@pytest.mark.parametrize("name", FORMATS)
def test_the_kernel_finds_the_largest_relative_difference_in_every_dtype(monkeypatch, name):
    """One ULP everywhere on references falling through one binade: only diff/|reference| grows."""
    reference_bits = ONE_BITS[name] + np.arange(2047, -1, -1, dtype=np.uint64) % (1 << min(11, FORMATS[name][0] - 1))
    reference, candidate = from_bits(reference_bits, name), from_bits(reference_bits + 1, name)
    use_kernel(monkeypatch)
    assert_same(measure(reference, candidate, Tolerance()), oracle(reference, candidate, (name, name), Tolerance()))


def awkward(name: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A pair of dtype `name`: the candidate a few ULPs from the reference here and there, NaN,
    infinities, signed zeros, subnormals and the largest values scattered on both sides."""
    rng = np.random.default_rng(seed)
    reference = rng.standard_normal(n).astype(np.float32)
    reference = _cast(reference, name)
    bits = reference.view(BITS[name]).astype(np.int64)
    moved = np.where(rng.random(n) < 0.3, rng.integers(-3, 4, n), 0)
    candidate = from_bits(bits + moved, name)
    specials = encode(special_values(name), name)
    for side in (reference, candidate):
        picks = rng.choice(n, size=min(n, 40), replace=False)
        side[picks] = specials[rng.integers(0, specials.size, picks.size)]
    return reference, candidate


def _cast(values: np.ndarray, name: str) -> np.ndarray:
    if name == "BF16":
        return (values.view(np.uint32) >> 16).astype(np.uint16).view(NUMPY_DTYPES["BF16"])  # rounded towards zero
    return values.astype(NUMPY_DTYPES[name])


def file_tensors(tmp_path, reference: np.ndarray, candidate: np.ndarray, gap: int):
    """Both tensors left in one file, at odd byte offsets (`gap` bytes before each)."""
    path = tmp_path / "pair.bin"
    path.write_bytes(b"\x01" * gap + reference.tobytes() + b"\x02" * gap + candidate.tobytes())
    identity = FileIdentity.of(os.stat(path))
    return (FileTensor(path, gap, reference.dtype, reference.shape, identity),
            FileTensor(path, 2 * gap + reference.nbytes, candidate.dtype, candidate.shape, identity))


def unaligned(values: np.ndarray, shift: int = 1) -> np.ndarray:
    """The same elements at an address `shift` bytes off their alignment."""
    raw = np.zeros(values.nbytes + shift, dtype=np.uint8)
    raw[shift:] = values.view(np.uint8)
    return raw[shift:].view(values.dtype)


@pytest.mark.parametrize("name", FORMATS)
def test_the_kernel_reads_files_and_unaligned_memory_as_numpy_reads_arrays(tmp_path, monkeypatch, name):
    reference, candidate = awkward(name, 3001, seed=len(name))
    tolerance = Tolerance(atol=1e-3, ulp=2)
    with monkeypatch.context() as patch:
        use_numpy(patch)
        expected = dataclasses.asdict(measure(reference, candidate, tolerance))
    in_file = file_tensors(tmp_path, reference, candidate, gap=3)
    odd = unaligned(reference), unaligned(candidate, 3)
    assert odd[0].ctypes.data % reference.itemsize and odd[1].ctypes.data % reference.itemsize
    for grain in ({}, {"threads": None}):  # the smallest pieces, and the kernel's own sizes
        with monkeypatch.context() as patch:
            use_kernel(patch, **grain)
            for pair in (in_file, odd, (in_file[0], odd[1])):
                assert dataclasses.asdict(measure(*pair, tolerance)) == expected


@pytest.mark.parametrize("name", FORMATS)
def test_the_kernel_at_its_own_sizes_agrees_with_numpy_in_every_dtype(monkeypatch, name):
    """Past a piece (4 MiB a side) of several chunks (512 KiB), shared by several threads."""
    reference, candidate = awkward(name, (4 << 20) // np.dtype(NUMPY_DTYPES[name]).itemsize + 4099, seed=5)
    for tolerance in (Tolerance(), Tolerance(atol=0, rtol=1e-2, equal_nan=True), Tolerance(atol=0, ulp=1)):
        with monkeypatch.context() as patch:
            use_numpy(patch)
            expected = dataclasses.asdict(measure(reference, candidate, tolerance))
        with monkeypatch.context() as patch:
            use_kernel(patch, threads=4)
            assert dataclasses.asdict(measure(reference, candidate, tolerance)) == expected


def test_a_file_truncated_under_the_kernel_is_one_usage_error(tmp_path, monkeypatch):
    reference, candidate = file_tensors(tmp_path, np.ones(1000, np.float32), np.ones(1000, np.float32), gap=1)
    beyond = FileTensor(candidate.path, candidate.offset + 8, candidate.dtype, candidate.shape, candidate.identity)
    use_kernel(monkeypatch)
    with pytest.raises(UsageError, match="pair.bin: the file was truncated while being read"):
        measure(reference, beyond, Tolerance())
    os.truncate(reference.path, 2000)
    with pytest.raises(UsageError, match="pair.bin: the file changed while being read"):
        measure(reference, candidate, Tolerance())


def test_measure_many_wants_one_tolerance_per_pair():
    assert measure_many([], []) == []
    with pytest.raises(ValueError, match="one tolerance per pair"):
        measure_many([(np.ones(2), np.ones(2))], [])


@pytest.mark.parametrize("name, large", [("F16", 2.0**15 + 2**5), ("BF16", 2.0**15 + 2**8)])
def test_the_float32_screen_defers_where_a_half_format_difference_rounds_in_float32(monkeypatch, name, large):
    """Far misses first (smallest subnormal against largest value), then 2**-10 against a value
    near 2**15, many binades apart: their difference needs 26 bits, so float32 rounds it up onto
    an atol that float64 keeps just above it."""
    precision, smallest, largest = FORMATS[name]
    tiny, huge = 2.0 ** (smallest - precision + 1), float((2 - Fraction(2) ** (1 - precision)) * Fraction(2) ** largest)
    reference, candidate = [0.5] * 256, [0.5] * 256
    reference[:5], candidate[:5] = [tiny] * 5, [huge] * 5
    reference[100], candidate[100] = 2.0**-10, large
    reference, candidate = encode(reference, name), encode(candidate, name)
    tolerance = Tolerance(atol=large - 2.0**-10)
    use_kernel(monkeypatch)
    found = measure(reference, candidate, tolerance)
    assert found.mismatched == 5
    assert_same(found, oracle(reference, candidate, (name, name), tolerance))


def test_a_batch_over_many_files_holds_few_open(tmp_path, monkeypatch):
    """Pairs in 7 files, at most 3 open per call into the kernel: three calls, numpy's statistics."""
    pairs = []
    for k in range(7):
        folder = tmp_path / str(k)
        folder.mkdir()
        reference, candidate = awkward("F32", 100 + k, seed=k)
        pairs += [file_tensors(folder, reference, candidate, gap=1 + k), (reference, candidate)]
    tolerances = [Tolerance()] * len(pairs)
    with monkeypatch.context() as patch:
        use_numpy(patch)
        expected = [dataclasses.asdict(found) for found in measure_many(pairs, tolerances)]
    use_kernel(monkeypatch)
    kernel, calls = stats._kernel(), []
    monkeypatch.setattr(stats, "_kernel", lambda: lambda batch, *args: calls.append(batch) or kernel(batch, *args))
    monkeypatch.setattr(stats, "MAX_OPEN_FILES", 3)
    assert [dataclasses.asdict(found) for found in measure_many(pairs, tolerances)] == expected
    assert [len(batch) for batch in calls] == [6, 6, 2]


@pytest.mark.parametrize("name", FORMATS)
def test_the_kernel_reads_non_contiguous_arrays_in_their_flat_order(monkeypatch, name):
    reference, candidate = awkward(name, 60 * 70, seed=3)
    pair = reference.reshape(60, 70).T, candidate.reshape(60, 70)[:, ::-1].T
    assert not pair[0].flags.c_contiguous
    with monkeypatch.context() as patch:
        use_numpy(patch)
        expected = dataclasses.asdict(measure(*pair, Tolerance()))
    use_kernel(monkeypatch)
    assert dataclasses.asdict(measure(*pair, Tolerance())) == expected
