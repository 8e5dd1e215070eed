"""The PyTorch side of a dump: write named torch tensors with the provenance pita records.

Usable from any training script: `write_torch_dump(out / "torch-step1.safetensors", {...},
experiment="myport", variant="step1", input_sha256=...)`. Imports torch only when called.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from pita.dtypes import BF16
from pita.dump import FORMAT, MAX_JSON_ELEMENTS, Dump, write_dump
from pita.errors import UsageError
from pita.recording import check_metadata


def write_torch_dump(path: str | Path, tensors: dict, **metadata) -> Path:
    """Writes `path` (.safetensors, .json or .npz) and, for safetensors, the JSON form beside it
    when the dump fits one (at most `MAX_JSON_ELEMENTS` elements). bfloat16 tensors stay BF16.
    `metadata` may not set the provenance this writes itself (`format`, `framework`,
    `framework_version`: `pita.recording.PROVENANCE_KEYS`); `backend` it may."""
    check_metadata(metadata, recording=False)
    import torch

    arrays = {name: _as_numpy(torch, name, tensor) for name, tensor in tensors.items()}
    devices = sorted({str(tensor.device) for tensor in tensors.values()}) or ["cpu"]
    provenance = {"format": FORMAT, "framework": "torch", "framework_version": torch.__version__, "backend": ", ".join(devices)}
    dump = Dump(tensors=arrays, metadata={**provenance, **{k: str(v) for k, v in metadata.items()}})
    path = write_dump(dump, path)
    if path.suffix.lower() == ".safetensors":
        elements = sum(array.size for array in arrays.values())
        if elements <= MAX_JSON_ELEMENTS:
            write_dump(dump, path.with_suffix(".json"))
        else:
            warnings.warn(f"{path}: no JSON form written beside it ({elements} elements; the JSON form holds at most {MAX_JSON_ELEMENTS})",
                          stacklevel=2)
    return path


def _as_numpy(torch, name: str, tensor) -> np.ndarray:
    """The tensor's values in memory; bfloat16 as `BF16`, its raw bits (numpy has no bfloat16)."""
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(BF16)
    try:
        return tensor.numpy()
    except TypeError as error:  # float8, quantized and other dtypes numpy has no twin for
        raise UsageError(f"tensor {name!r}: {error}") from None

