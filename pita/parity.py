"""`assert_parity`: compare from Python code and tests, with the same report as `pita compare`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from pita.compare import ComparisonResult, compare_dumps
from pita.dtypes import BF16, normalize
from pita.dump import Dump, read_dump
from pita.tolerance import Tolerance


class ParityError(AssertionError):
    """Raised by `assert_parity`; carries the structured result beside the text report."""

    def __init__(self, report: str, result: ComparisonResult):
        super().__init__(report)
        self.result = result


def assert_parity(reference, candidate, *, atol: float | None = None, rtol: float | None = None, ulp: int | None = None,
                  equal_nan: bool = False, rules=None, allow_input_mismatch: bool = False) -> ComparisonResult:
    """Compares two sets of tensors and raises `ParityError` with the full report on a mismatch.

    `reference` and `candidate` are each a dump path (safetensors, JSON, npz or a folder), a
    `Dump`, or a dict of name -> array (numpy arrays, or torch tensors of any dtype, bfloat16
    included: converted without this module importing torch). `rules` is a path to a rules file
    or a loaded `Rules`. Tolerances mean what they mean to `pita compare`: given neither `atol`
    nor `rtol`, float32/float64 use atol=1e-6, rtol=0 and float16/bfloat16 torch.testing's
    defaults; given either, both apply to every float tensor; integers and bools compare exactly.
    A tolerance that is negative or not finite raises `UsageError`, and so do dumps of different
    inputs (their `input_sha256`) unless `allow_input_mismatch=True`."""
    from pita.report import render_text
    from pita.rules import load_rules

    if isinstance(rules, (str, os.PathLike)):
        rules = load_rules(rules)
    tolerance = Tolerance.from_options(atol=atol, rtol=rtol, ulp=ulp, equal_nan=equal_nan)
    result = compare_dumps(_as_dump(reference, "reference"), _as_dump(candidate, "candidate"), tolerance, rules=rules,
                           allow_input_mismatch=allow_input_mismatch)
    if not result.ok:
        raise ParityError(render_text(result), result)
    return result


def _as_dump(value, label: str) -> Dump:
    if isinstance(value, Dump):
        return value
    if isinstance(value, (str, os.PathLike)):
        return read_dump(Path(value))
    if isinstance(value, dict):
        return Dump({str(k): _as_array(v) for k, v in value.items()}, source=label)
    raise TypeError(f"{label}: expected a path, a Dump or a dict of arrays, got {type(value).__name__}")


def _as_array(value) -> np.ndarray:
    """An array in the dtype a dump holds it in (see `pita.dtypes`)."""
    if hasattr(value, "detach"):  # a torch tensor; torch is already imported by whoever made it
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":  # numpy has no bfloat16: keep the bits
            return value.view(sys.modules["torch"].int16).numpy().view(BF16)
        value = value.numpy()
    return normalize(value)
