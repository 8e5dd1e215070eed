"""Measure: every statistic compare reports, in one streaming pass over a tensor pair, as the
contract in `pita.stats_contract` defines them and judges each element pair.

Same-dtype float pairs (F16, BF16, F32, F64) of any size go through the compiled kernel
(`pita_kernel`, the Rust crate crates/pita-kernel), a whole batch of pairs in one call whose
threads share the batch by bytes; everything else (integers, mixed dtypes), and every pair where
the kernel is not installed or PITA_KERNEL=0, goes through numpy a chunk at a time
(`pita.stats_numpy`). Both give the same statistics. Tensors left in their file (`FileTensor`)
are read a chunk at a time, so comparing two large files holds only a chunk of each in memory.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import numpy as np

from pita.dtypes import dtype_name, is_float
from pita.errors import UsageError
from pita.files import FileIdentity, open_regular, shown
from pita.filetensor import FileTensor
from pita.stats_contract import EXAMPLES, ULP_UNBOUNDED, TensorStats
from pita.stats_numpy import measure_numpy, ulp_distance

__all__ = ["EXAMPLES", "ULP_UNBOUNDED", "TensorStats", "measure", "measure_many", "ulp_distance"]

# The kernel reads elements as little-endian bits.
_NATIVE_ORDERS = "=|<" if sys.byteorder == "little" else "<"
# Files one call into the kernel holds open: a batch over a folder of large dumps takes several
# calls rather than a descriptor per file.
MAX_OPEN_FILES = 16


def measure(reference, candidate, tolerance) -> TensorStats:
    """Statistics of `candidate` against `reference` (arrays or `FileTensor`s with the same number
    of elements, any shapes), judged as `pita.stats_contract` says."""
    return measure_many([(reference, candidate)], [tolerance])[0]


def measure_many(pairs, tolerances) -> list[TensorStats]:
    """`measure` of each `(reference, candidate)` pair with the tolerance at the same position:
    the same statistics, with every pair the kernel takes measured in one call into it."""
    pairs, tolerances = list(pairs), list(tolerances)
    if len(pairs) != len(tolerances):
        raise ValueError(f"measure_many needs one tolerance per pair, got {len(pairs)} pairs and {len(tolerances)} tolerances")
    for reference, candidate in pairs:
        if reference.size != candidate.size:
            raise ValueError(f"measure needs tensors of the same size, got {reference.size} and {candidate.size}")
    kernel = _kernel()
    compiled = [k for k, (reference, candidate) in enumerate(pairs) if kernel and _compiled(reference.dtype, candidate.dtype)]
    found: list[TensorStats | None] = [None] * len(pairs)
    if compiled:
        measured = _measure_compiled(kernel, [pairs[k] for k in compiled], [tolerances[k] for k in compiled])
        for k, stats in zip(compiled, measured):
            found[k] = stats
    for k, (reference, candidate) in enumerate(pairs):
        if found[k] is None:
            found[k] = measure_numpy(reference, candidate, tolerances[k])
    return found


def _compiled(reference_dtype: np.dtype, candidate_dtype: np.dtype) -> bool:
    """Whether the kernel measures a pair of these dtypes: both the same float, little-endian."""
    return reference_dtype == candidate_dtype and is_float(reference_dtype) and reference_dtype.byteorder in _NATIVE_ORDERS


def _measure_compiled(kernel, pairs: list, tolerances: list) -> list[TensorStats]:
    found = []
    for group in _file_groups(pairs):
        found += _measure_group(kernel, pairs[group.start:group.stop], tolerances[group.start:group.stop])
    return found


def _file_groups(pairs: list) -> list[range]:
    """Consecutive runs of the pairs, each reading at most MAX_OPEN_FILES files."""
    groups, start, files = [], 0, set()
    for k, pair in enumerate(pairs):
        own = {(tensor.path, tensor.identity) for tensor in pair if isinstance(tensor, FileTensor)}
        if k > start and len(files | own) > MAX_OPEN_FILES:
            groups.append(range(start, k))
            start, files = k, set()
        files |= own
    return groups + [range(start, len(pairs))]


def _measure_group(kernel, pairs: list, tolerances: list) -> list[TensorStats]:
    with contextlib.ExitStack() as files:
        descriptors: dict = {}

        def side(tensor):
            """What the kernel reads: an open file's (descriptor, byte offset, name), or flat bytes."""
            if not isinstance(tensor, FileTensor):
                return np.ascontiguousarray(np.asarray(tensor).reshape(-1)).view(np.uint8)
            key = (tensor.path, tensor.identity)
            if key not in descriptors:  # each file is opened once for the whole batch
                fd, status = files.enter_context(open_regular(Path(tensor.path)))
                if FileIdentity.of(status) != tensor.identity:
                    raise UsageError(f"{shown(tensor.path)}: the file changed while being read")
                descriptors[key] = fd
            return descriptors[key], tensor.offset, shown(tensor.path)

        batch = [(dtype_name(reference.dtype), reference.size, side(reference), side(candidate)) for reference, candidate in pairs]
        try:
            measured = kernel(batch, [_kernel_tolerance(t) for t in tolerances])
        except EOFError as error:  # a file truncated while being read: the message names it
            raise UsageError(str(error)) from None
    return [TensorStats(n, mismatched, max_abs, worst, max_rel, max_ulp, max_ulp_at, examples, nan_reference, nan_candidate).settled(floats=True)
            for n, mismatched, max_abs, worst, max_rel, max_ulp, max_ulp_at, examples, nan_reference, nan_candidate in measured]


def _kernel_tolerance(tolerance) -> tuple[float, float, int, bool]:
    """(atol, rtol, ULP limit, equal_nan); the limit is -1 without ULPs, and at most one below
    ULP_UNBOUNDED (which never passes)."""
    ulp = -1 if tolerance.ulp is None else max(-1, min(int(tolerance.ulp), ULP_UNBOUNDED - 1))
    return float(tolerance.atol), float(tolerance.rtol), ulp, bool(tolerance.equal_nan)


_KERNEL = None


def _kernel():
    """`pita_kernel.measure_many`, or None where the kernel is not installed or PITA_KERNEL=0."""
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = False
        if os.environ.get("PITA_KERNEL", "1") != "0":
            try:
                import pita_kernel
            except ImportError:
                return None
            _KERNEL = pita_kernel.measure_many
    return _KERNEL or None
