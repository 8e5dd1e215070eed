"""slice_scale: each slice of the candidate is the reference's slice times a factor of its own.

What it detects
    Axes along which the factor is constant (`constant_along`) such that each slice across
    them (one index of the other axes: a row of the last axis, one token of a
    `[batch, seq, hidden]` activation; a channel of an `[N, C, H, W]` one) satisfies
    `candidate ≈ s × reference` with its own factor `s`, fitted by least squares. The error
    left in every slice is rounding noise at that slice's scale (at most 64 ULPs of its RMS in
    float32 and float64, 4 in float16 and bfloat16, as `rounding` counts them), the factors
    differ by more than that noise, one common factor leaves more (that would be `scale`, which
    is reported instead), and the fit rests on at least 8 sampled nonzero elements per factor
    (`support`). The fewest slices that fit are reported (a per-channel scale also fits per
    sample and channel). `min_factor`, `max_factor`, `median_factor`: the factors' range;
    `slices`: how many were fitted; `hint` names a LayerNorm's eps when the factors lie within 5%
    of 1, one per row of the last axis.

Why it happens in a port
    A normalisation's `eps` differs: LayerNorm divides each row by `sqrt(var + eps)`, so another
    `eps` multiplies each row by its own `sqrt((var + eps) / (var + eps'))`, close to 1
    (0.9931 to 0.9964 per token on a BERT-style port, burn's `LayerNormConfig` default 1e-5
    against BERT's 1e-12); BatchNorm and GroupNorm likewise per channel or group. Also a
    per-channel weight (BatchNorm's gamma, a layer scale) loaded wrong or not at all, a mask or
    loss weight applied per sample on one side only.

Example
    reference rows `[1, 2, 3, …]` and `[4, 5, 6, …]`, candidate rows `[0.99, 1.98, 2.97, …]` and
    `[3.988, 4.985, 5.982, …]`: factors 0.99 and 0.997, constant along axis 1.

Remedy
    Compare the normalisation's `eps` on both sides (`LayerNormConfig::with_epsilon`,
    `BatchNormConfig::with_epsilon`), then the per-channel weights as loaded; when the factors
    vary by sample, the per-sample weights and masks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from pita.diagnose.base import Diagnosis, Pair, explains, format_factor
from pita.diagnose.rounding import noise_ulps

KIND = "slice_scale"
EVIDENCE = 8  # sampled nonzero reference elements per fitted factor, at least
MOST_AXES = 6  # axes of size > 1 beyond which no slicing is tried (2^6 subsets)
LAYER_NORM_SPREAD = 0.05  # factors within this of 1, one per row of the last axis: a LayerNorm's eps


@dataclass
class Fit:
    factors: np.ndarray  # one per slice that holds a nonzero sampled reference element
    residual: float  # max |candidate - s × reference| over the sample
    support: int  # sampled nonzero reference elements


def detect(pair: Pair) -> Diagnosis | None:
    slicings = factor_axes(pair.shape, pair.positions.size)
    if not slicings or not pair.same_shape or not pair.finite or pair.epsilon == 0:
        return None
    r, c = pair.reference_values, pair.candidate_values
    largest = float(np.max(np.abs(r), initial=0.0))
    if largest == 0:
        return None
    r, c = r / largest, c / largest  # the fit is the same; the squares neither overflow nor vanish
    noise = noise_ulps(pair) * pair.epsilon
    if fit_slices(r, c, np.zeros(r.size, dtype=np.int64), 1, noise) is not None:
        return None  # one factor for all: `scale` or `rounding`
    before = float(np.max(np.abs(c - r))) * largest
    index = np.unravel_index(pair.positions, pair.shape)
    for axes in slicings:
        count = int(np.prod([pair.shape[a] for a in axes]))
        fit = fit_slices(r, c, slice_ids(index, axes, pair.shape), count, noise)
        if fit is None or np.ptp(fit.factors) <= noise * float(np.max(np.abs(fit.factors))):
            continue  # no fit, or all factors equal within the noise
        if explains(fit.residual * largest, before, pair.atol):
            return _diagnosis(pair, axes, fit, fit.residual * largest)
    return None


def factor_axes(shape: tuple[int, ...], sampled: int):
    """Sets of axes to give one factor per index, fewest factors first: every set of the axes of
    size > 1 but the empty one and all of them, that the sample can fit with EVIDENCE elements
    per factor."""
    moving = [axis for axis, size in enumerate(shape) if size > 1]
    if len(moving) > MOST_AXES:
        return []
    found = [axes for n in range(1, len(moving)) for axes in itertools.combinations(moving, n)
             if int(np.prod([shape[a] for a in axes])) * EVIDENCE <= sampled]
    return sorted(found, key=lambda axes: (int(np.prod([shape[a] for a in axes])), axes))


def slice_ids(index: tuple[np.ndarray, ...], axes: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Each sampled element's slice: its flat index over `axes` alone."""
    ids = np.zeros(index[0].shape, dtype=np.int64)
    for axis in axes:
        ids = ids * shape[axis] + index[axis]
    return ids


def fit_slices(r: np.ndarray, c: np.ndarray, ids: np.ndarray, count: int, noise: float) -> Fit | None:
    """Each slice's least-squares factor `s = Σrc / Σr²`, or None when the fit rests on fewer than
    EVIDENCE nonzero elements per factor or leaves more than `noise` × the slice's RMS at an
    element (a slice whose reference is all zero must be zero in the candidate too)."""
    squares = np.bincount(ids, r * r, minlength=count)
    held = squares > 0
    support = int(np.count_nonzero(r))
    if support < EVIDENCE * max(1, int(np.count_nonzero(held))):
        return None
    factors = np.divide(np.bincount(ids, r * c, minlength=count), squares, out=np.zeros(count), where=held)
    rms = np.sqrt(squares / np.maximum(np.bincount(ids, minlength=count), 1))
    left = np.abs(c - factors[ids] * r)
    if not np.all(left <= noise * rms[ids]):
        return None
    return Fit(factors[held], float(np.max(left, initial=0.0)), support)


def _diagnosis(pair: Pair, axes: tuple[int, ...], fit: Fit, residual: float) -> Diagnosis:
    constant = [axis for axis, size in enumerate(pair.shape) if size > 1 and axis not in axes]
    low, high, median = (float(f) for f in (fit.factors.min(), fit.factors.max(), np.median(fit.factors)))
    per = f"axis {axes[0]}" if len(axes) == 1 else f"axes {list(axes)}"
    along = f"axis {constant[0]}" if len(constant) == 1 else f"axes {constant}"
    message = (f"candidate = s × reference with one factor s per index of {per} (constant along {along}): {fit.factors.size} factors "
               f"from {format_factor(low)} to {format_factor(high)}, median {format_factor(median)} (after dividing by them: max|diff| {residual:.2e})")
    hint = ""
    if constant == [len(pair.shape) - 1] and max(abs(low - 1), abs(high - 1)) <= LAYER_NORM_SPREAD:
        hint = "factors near 1, one per row of the last axis: the signature of a LayerNorm whose eps differs"
    params = {"constant_along": constant, "slices": int(fit.factors.size), "min_factor": low, "max_factor": high,
              "median_factor": median, "support": fit.support, "hint": hint}
    return Diagnosis(KIND, params, f"{message}; {hint}" if hint else message, residual)
