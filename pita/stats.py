"""Measure: every statistic compare reports, in one streaming pass over a tensor pair, as the
contract in `pita.stats_contract` defines them and judges each element pair.

Large float32 pairs go through a compiled kernel (`pita.stats_jit`, numba); everything else, and
every pair when numba is missing or PITA_JIT=0, goes through numpy a chunk at a time
(`pita.stats_numpy`). Both give the same statistics. Tensors left in their file (`FileTensor`)
are read a chunk at a time, so comparing two large files holds only a chunk of each in memory.
"""

from __future__ import annotations

import os

import numpy as np

from pita.stats_contract import EXAMPLES, ULP_UNBOUNDED, TensorStats
from pita.stats_numpy import measure_numpy, ulp_distance

__all__ = ["EXAMPLES", "JIT_MIN", "ULP_UNBOUNDED", "TensorStats", "measure", "ulp_distance"]

JIT_MIN = 1 << 20  # below this many elements numpy is faster than importing the kernel


def measure(reference, candidate, tolerance) -> TensorStats:
    """Statistics of `candidate` against `reference` (arrays or `FileTensor`s with the same number
    of elements, any shapes), judged as `pita.stats_contract` says."""
    if reference.size != candidate.size:
        raise ValueError(f"measure needs tensors of the same size, got {reference.size} and {candidate.size}")
    kernel = _jit_kernel() if reference.dtype == candidate.dtype == np.float32 and reference.size >= JIT_MIN else None
    return kernel(reference, candidate, tolerance) if kernel else measure_numpy(reference, candidate, tolerance)


_KERNEL = None


def _jit_kernel():
    """The compiled float32 kernel, or None where numba is missing or PITA_JIT=0."""
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = False
        if os.environ.get("PITA_JIT", "1") != "0":
            try:
                from pita import stats_jit
            except ImportError:
                return None
            _KERNEL = stats_jit.measure_f32
    return _KERNEL or None
