"""Mismatches confined to a few rows (an Embedding's padding_idx row), told from mismatches spread
over the rows, stray elements, rows that hold nothing, a row order and noise."""

import numpy as np
import pytest

from pita import diagnose
from pita.compare import Tolerance
from pita.diagnose.base import Context

RNG = np.random.default_rng(13)
VOCAB, EMBED, PAD = 40, 32, 0
USED = RNG.choice(np.arange(1, VOCAB), 30, replace=False)  # the tokens a batch holds: only their rows get a gradient


def embedding_gradient() -> np.ndarray:
    """An embedding's gradient as PyTorch gives it with padding_idx 0: rows of the tokens used,
    zero elsewhere, and zero at the padding row although the batch holds padding."""
    gradient = np.zeros((VOCAB, EMBED), dtype=np.float32)
    gradient[USED] = RNG.standard_normal((USED.size, EMBED)).astype(np.float32) * np.float32(0.01)
    return gradient


GRADIENT = embedding_gradient()
BATCH = RNG.standard_normal((64, 16)).astype(np.float32)


def kinds(reference, candidate, name="", tolerance=None):
    return {d.kind: d for d in diagnose.explain(reference, candidate, tolerance or Tolerance(), Context(), name=name)}


def with_rows(values: np.ndarray, rows) -> np.ndarray:
    """`values` with `rows` replaced by other values."""
    changed = values.copy()
    changed[rows] = RNG.standard_normal(changed[rows].shape).astype(values.dtype)
    return changed


def test_the_padding_row_of_an_embedding_gradient_is_named():
    candidate = GRADIENT.copy()
    candidate[PAD] = RNG.standard_normal(EMBED).astype(np.float32) * np.float32(0.01)  # burn trains the padding row
    candidate[USED] += np.float32(1e-9) * RNG.standard_normal((USED.size, EMBED)).astype(np.float32)  # within atol
    found = kinds(GRADIENT, candidate, "grad/embed.weight")
    assert list(found) == ["rows"]
    finding = found["rows"]
    assert {key: finding.params[key] for key in ("rows", "count", "share")} == {"rows": [0], "count": 1, "share": 1 / VOCAB}
    assert 0 < finding.residual <= 1e-6
    assert finding.message.startswith("mismatches confined to row 0 (1 of 40 rows); every other row matches")
    assert finding.params["hint"].startswith("the reference's row 0 is zero: an Embedding's padding_idx row")
    assert "pita::padding_idx" in finding.message


@pytest.mark.parametrize("name", ["grad/fc.weight", ""])
def test_without_an_embedding_name_there_is_no_padding_hint(name):
    candidate = with_rows(GRADIENT, [PAD])
    assert kinds(GRADIENT, candidate, name)["rows"].params["hint"] == ""


def test_an_embedding_row_that_is_not_zero_in_the_reference_has_no_padding_hint():
    row = int(USED[0])
    found = kinds(GRADIENT, with_rows(GRADIENT, [row]), "step1/transformer.wte.weight")["rows"]
    assert found.params["rows"] == [row] and found.params["hint"] == ""


def test_several_rows_are_listed_up_to_eight():
    found = kinds(BATCH, with_rows(BATCH, [2, 5, 9]))["rows"]
    assert (found.params["rows"], found.params["count"]) == ([2, 5, 9], 3)
    assert found.message.startswith("mismatches confined to rows 2, 5 and 9 (3 of 64 rows)")
    many = kinds(BATCH, with_rows(BATCH, list(range(0, 60, 6))))["rows"]
    assert many.params["rows"] == list(range(0, 48, 6)) and many.params["count"] == 10
    assert many.message.startswith("mismatches confined to rows 0, 6, 12, 18, 24, 30, 36, 42, … (10 of 64 rows)")


def test_other_rows_within_the_tolerance_in_ulps_match():
    candidate = with_rows(BATCH, [4])
    others = np.arange(64) != 4
    candidate[others] = np.nextafter(np.nextafter(candidate[others], np.inf), np.inf)  # 2 ULPs
    found = kinds(BATCH, candidate, tolerance=Tolerance(atol=0.0, ulp=4))
    assert found["rows"].params["rows"] == [4]
    # without the ULP allowance, every row fails: no `rows`
    assert "rows" not in kinds(BATCH, candidate, tolerance=Tolerance(atol=0.0))


def test_mismatches_spread_over_many_rows_are_no_rows():
    assert "rows" not in kinds(BATCH, with_rows(BATCH, list(range(20))))  # 20 of 64
    assert kinds(BATCH, BATCH + np.float32(1e-3) * RNG.standard_normal(BATCH.shape).astype(np.float32)) == {}


def test_stray_elements_in_rows_that_otherwise_match_are_no_rows():
    candidate = BATCH.copy()
    candidate[3, 7] += 1
    candidate[40, 0] -= 1
    assert "rows" not in kinds(BATCH, candidate)


def test_rows_zero_on_both_sides_are_no_evidence():
    # a gradient that differs in every row it holds (3 tokens used, all three rows wrong): the
    # other 37 rows match only because they are zero on both sides
    sparse = np.zeros((VOCAB, EMBED), dtype=np.float32)
    sparse[[3, 8, 20]] = RNG.standard_normal((3, EMBED)).astype(np.float32)
    assert "rows" not in kinds(sparse, sparse * np.float32(1.5), "grad/embed.weight")


def test_a_row_order_and_rounding_say_more_than_rows():
    swapped = BATCH[np.r_[0:3, 7, 4:7, 3, 8:64]]
    found = kinds(BATCH, swapped)
    assert list(found) == ["permutation"] and found["permutation"].params["rows"][3] == 7
    noisy = BATCH.copy()
    noisy[5] = np.nextafter(noisy[5], np.inf)  # one ULP in one row
    assert list(kinds(BATCH, noisy, tolerance=Tolerance(atol=0.0))) == ["rounding"]


@pytest.mark.parametrize("shape", [(64,), (64, 1)])
def test_rows_of_one_element_are_no_rows(shape):
    column = BATCH[:, :1].reshape(shape).copy()
    candidate = column.copy()
    candidate[3] += 1
    assert "rows" not in kinds(column, candidate)


def test_other_rows_matching_only_by_a_loose_rtol_leave_too_much_error():
    candidate = BATCH * np.float32(1.005)  # within rtol 1e-2, and far more than 1% of row 4's error
    candidate[4] = BATCH[4] * np.float32(1.05)
    assert "rows" not in kinds(BATCH, candidate, tolerance=Tolerance(atol=0.0, rtol=1e-2))


def test_a_row_of_nan_is_a_nan():
    candidate = BATCH.copy()
    candidate[4] = np.nan
    assert list(kinds(BATCH, candidate)) == ["nan"]


def test_on_a_sample_the_whole_tensors_mismatches_must_fit_in_the_rows():
    # 1024 rows of 128: diagnosed on a sample, without stats (so the sample is the seeded spread
    # alone). Row 5 differs; so do elements in other rows that the sample does not hold, which
    # only the full count (`measure`) sees.
    from pita.diagnose.base import Pair

    reference = RNG.standard_normal((1024, 128)).astype(np.float32)
    candidate = with_rows(reference, [5])
    assert list(kinds(reference, candidate)) == ["rows"]
    sampled = Pair(reference, candidate, Tolerance(), Context()).positions
    unsampled = np.setdiff1d(np.arange(200 * 128, reference.size), sampled)[::50][:300]
    candidate.reshape(-1)[unsampled] += 1
    assert np.unique(unsampled // 128).size > 64  # spread over many rows
    assert "rows" not in kinds(reference, candidate)


def test_a_scalar_has_no_rows():
    assert "rows" not in kinds(np.array(1.0, dtype=np.float32), np.array(2.0, dtype=np.float32))
