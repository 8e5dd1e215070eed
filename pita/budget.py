"""The float64 budget: how far a float32 candidate may lie from the float32 reference, given a
float64 run of the same computation (the truth, docs/recording.md).

An absolute tolerance cannot tell float32 noise from a bug: noise grows with depth and with the
values' scale, and a tensor that is zero in exact arithmetic (the gradient of a bias in front of
a BatchNorm) holds nothing but noise. The float64 run measures the noise instead. For each tensor:

- `reference_error` = max |reference - truth|: the reference's own float32 error;
- `scale` = max |truth|, and its floor, `FLOOR_ULPS` ULPs of `scale` in the reference's dtype:
  a reference that happens to land on the truth (a single-element loss, a tensor computed
  exactly) still leaves the candidate the rounding of its own arithmetic;
- the budget: `|candidate - reference| <= BUDGET_FACTOR * max(reference_error, floor)` for every
  element. A candidate as accurate as the reference lies within `2 * reference_error` of it
  (each side within its error of the truth); the factor leaves room for the candidate's own
  summation order, which makes its error a few times the reference's on some tensors.

`candidate_error` (max |candidate - truth|) and its ratio to the reference's are reported beside
the judgement: a ratio below 1 says the port is closer to the truth than PyTorch.

The constants are measured on the ports in ports/ (docs/recording.md, "The float64 budget"):
correct ports stay below the factor on every tensor, and each planted mistake exceeds it at its
first divergence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pita.dtypes import dtype_name
from pita.errors import UsageError
from pita.filetensor import flat_chunks
from pita.recording import param_name, parse, step_name
from pita.stats import measure
from pita.tolerance import Tolerance

BUDGET_FACTOR = 8.0  # how many times the reference's own error (or the floor) the two sides may differ by
FLOOR_ULPS = 1.0  # the least error allowed: this many ULPs of the tensor's scale, in the reference's dtype
# An optimizer step's floor: this share of the update (the step's change of the parameter). burn holds
# its optimizer's settings in float32 (beta_2 = 0.999 is 0.99900001287), which moves Adam's
# bias-corrected update by |float32(beta) - beta| / (1 - beta) of itself (1.3e-5 for 0.999) from
# PyTorch's, a rounding of the settings that neither side can avoid. Read from the recorded betas
# where the reference has them; this where it has none (beta_2 = 0.999's share, rounded up).
UPDATE_SHARE_DEFAULT = 2.0**-16
JUDGED = frozenset({"F32", "F16", "BF16"})  # reference dtypes a float64 run can judge (a float64 reference is its own truth)
EPSILON = {"F32": 2.0**-23, "F16": 2.0**-10, "BF16": 2.0**-7}  # the spacing of 1.0 in each dtype
CHUNK = 1 << 20
LOOKBACK = 10_000  # steps back a light recording's previous checkpoint is looked for (its `every` is at most this)


@dataclass(frozen=True)
class Budget:
    """One tensor's budget from the float64 run."""

    reference_error: float
    scale: float
    floor: float  # FLOOR_ULPS at the scale, or an optimizer step's share of its update, whichever is larger

    @property
    def allowed(self) -> float:
        """The largest |candidate - reference| the budget allows."""
        return BUDGET_FACTOR * max(self.reference_error, self.floor)

    def tolerance(self, nominal: Tolerance) -> Tolerance:
        """The budget as a tolerance on |candidate - reference|, with `nominal`'s NaN policy."""
        return Tolerance(atol=self.allowed, rtol=0.0, equal_nan=nominal.equal_nan)


def judged_by_float64(reference, candidate, exact) -> bool:
    """Whether a float64 run can judge this pair: float on both sides, float64 truth, a narrower reference."""
    names = {dtype_name(reference.dtype), dtype_name(candidate.dtype)}
    return dtype_name(exact.dtype) == "F64" and dtype_name(reference.dtype) in JUDGED and names <= JUDGED | {"F64"}


def budget_of(exact, reference, update_floor: float = 0.0) -> Budget:
    """The reference's own error against the truth, and the floor: at the truth's scale, or
    `update_floor` (an optimizer step's, `update_floor_of`) where larger."""
    reference_error = measure(exact, reference, Tolerance()).max_abs_diff
    scale = max_abs(exact)
    floor = max(FLOOR_ULPS * ulp_at(scale, dtype_name(reference.dtype)), update_floor)
    return Budget(reference_error=reference_error, scale=scale, floor=floor)


def update_share(metadata: dict) -> float:
    """The share of an optimizer's update that float32 settings move (UPDATE_SHARE_DEFAULT's
    comment), from the betas the recording's `optimizer` metadata holds."""
    from pita.settings import optimizer_settings  # here: `pita compare` imports this module to find the float64 run, and starts faster without

    settings = optimizer_settings(metadata)
    betas = settings[1].get("betas") if settings else None
    if not isinstance(betas, list) or not betas or not all(isinstance(b, float) and 0.0 < b < 1.0 for b in betas):
        return UPDATE_SHARE_DEFAULT
    return max(max(abs(float(np.float32(b)) - b) / (1.0 - b) for b in betas), 2.0**-23)


def update_floor_of(name: str, exact_tensors: dict, share: float) -> float:
    """For `step<k>/<path>`: `share` of the largest change the truth's step k made to the
    parameter (from `param/<path>` or `step<k-1>/<path>`; in a light recording, which holds the
    parameters every so many steps, the change since the last recorded step); 0 for any other name."""
    recorded = parse(name)
    if recorded is None or recorded.kind != "step":
        return 0.0
    earlier = [param_name(recorded.path)] if recorded.step == 1 else \
        (step_name(j, recorded.path) for j in range(recorded.step - 1, max(recorded.step - 1 - LOOKBACK, 0), -1))
    before = next((exact_tensors[n] for n in earlier if n in exact_tensors), None)
    after = exact_tensors[name]
    if before is None or tuple(before.shape) != tuple(after.shape) or dtype_name(before.dtype) != "F64":
        return 0.0
    return share * max_abs_difference(after, before)


def ulp_at(scale: float, dtype: str) -> float:
    """The spacing of floats of `dtype` at `scale` (0 for a zero or non-finite scale)."""
    if not math.isfinite(scale) or scale == 0.0:
        return 0.0
    return math.ldexp(EPSILON[dtype], math.frexp(scale)[1] - 1)


def max_abs(tensor) -> float:
    """The largest finite |value| of a float tensor (arrays or `FileTensor`s, a chunk at a time)."""
    return _largest_finite(np.asarray(chunk, dtype=np.float64) for chunk in flat_chunks(tensor, 0, tensor.size, CHUNK))


def max_abs_difference(a, b) -> float:
    """The largest finite |a - b| of two float tensors of one size, a chunk at a time: never a
    float64 copy of a whole tensor (a 50 M-element embedding's would be 400 MB)."""
    chunks = zip(flat_chunks(a, 0, a.size, CHUNK), flat_chunks(b, 0, b.size, CHUNK), strict=True)
    return _largest_finite(np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64) for x, y in chunks)


def _largest_finite(chunks) -> float:
    largest = 0.0
    for chunk in chunks:
        values = np.abs(chunk)
        values = values[np.isfinite(values)]
        if values.size:
            largest = max(largest, float(values.max()))
    return largest


def float64_figures(budget: Budget, exact, candidate) -> dict:
    """What the report shows beside the judgement: each side's error against the truth, their
    ratio, the scale and the budget."""
    candidate_error = measure(exact, candidate, Tolerance()).max_abs_diff
    reference_error = budget.reference_error
    if candidate_error == reference_error:
        ratio = 1.0
    else:
        ratio = candidate_error / reference_error if reference_error else math.inf
    return {"reference_error": reference_error, "candidate_error": candidate_error, "ratio": ratio,
            "scale": budget.scale, "floor": budget.floor, "allowed": budget.allowed}


def named_reference64(reference_path, metadata: dict) -> tuple[Path | None, str | None]:
    """The float64 run a recording names in its metadata (`reference64`, a file name beside it),
    and a note: where it was found, or why it is not used. A name that leaves the folder is refused."""
    named = metadata.get("reference64")
    if not named:
        return None, None
    if Path(named).name != named or named in (".", ".."):
        raise UsageError(f"the reference's metadata reference64 {named[:80]!r} is not a file name: pass --reference64 FILE or --no-reference64")
    folder = Path(reference_path) if Path(reference_path).is_dir() else Path(reference_path).parent
    path = folder / named
    if not path.is_file():
        return None, (f"the reference names its float64 run {named}, which is not beside it: judged by the absolute tolerance "
                      "(pass --reference64 FILE)")
    return path, f"judged against the float64 run {path.name} (the reference's metadata reference64; --no-reference64 judges by the tolerance)"


# --- noise an optimizer amplifies ----------------------------------------------------------------
# Adam-type optimizers divide each gradient element by its own root mean square, so an element
# whose gradient is float32 noise (zero in exact arithmetic, or smaller than the noise) moves by
# about lr in a direction the noise chose, differently in each framework. Such elements are
# excused in step 1, where the gradient is recorded, and what they move later is then not judged.

NOISE_SPREAD = 0.1  # a later tensor is excused only where at most this share of it is beyond its budget


def noise_moved(name: str, reference, candidate, allowed: float, exact_tensors: dict, reference_tensors: dict) -> int:
    """For a `step1/<path>` pair beyond its budget: how many elements are excused because their
    gradient cannot be told from zero (|truth| within the gradient's own budget) and they moved by
    no more than twice the truth's largest update; 0 when any element beyond the budget is not
    such (the pair stays a mismatch) or the name is not a first step."""
    recorded = parse(name)
    if recorded is None or recorded.kind != "step" or recorded.step != 1:
        return 0
    gradient, before = (exact_tensors.get(f"grad/{recorded.path}"), exact_tensors.get(param_name(recorded.path)))
    gradient_reference = reference_tensors.get(f"grad/{recorded.path}")
    after = exact_tensors.get(name)
    if any(t is None or t.size != reference.size for t in (gradient, before, gradient_reference, after)):
        return 0
    gradient_budget = budget_of(gradient, gradient_reference).allowed
    update = max_abs(np.asarray(after, dtype=np.float64) - np.asarray(before, dtype=np.float64))
    diff = np.abs(np.asarray(candidate, dtype=np.float64).ravel() - np.asarray(reference, dtype=np.float64).ravel())
    beyond = diff > allowed
    noise = np.abs(np.asarray(gradient, dtype=np.float64).ravel()) <= gradient_budget
    if not np.all(noise[beyond]) or np.any(diff[beyond] > 2 * update + allowed):
        return 0
    return int(beyond.sum())


def later_step(name: str) -> bool:
    """Whether a tensor comes after the first optimizer step: `loss/<k>`, `step<k>/`, `optim<k>/` with k >= 2."""
    recorded = parse(name)
    return recorded is not None and recorded.kind in ("loss", "step", "optim") and (recorded.step or 0) >= 2
