"""Deterministic inputs, bit-identical to the Rust crate's `pita::inputs`."""

import hashlib

import numpy as np


def ramp(n: int, start: int = 0) -> np.ndarray:
    """`0.1·k − 0.5` for k = start..start+n, computed in float64 and rounded to float32."""
    k = np.arange(start, start + n, dtype=np.float64)
    return (0.1 * k - 0.5).astype(np.float32)


def inputs_sha256(*inputs) -> str:
    """sha256 (hex) of the little-endian float32 bytes of every input, in the order given."""
    digest = hashlib.sha256()
    for values in inputs:
        digest.update(np.ascontiguousarray(values, dtype="<f4").tobytes())
    return digest.hexdigest()
