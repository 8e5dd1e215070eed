"""The PyTorch side of a dump: write named torch tensors with the provenance pita records.

Usable from any training script: `write_torch_dump(out / "torch-step1.safetensors", {...},
experiment="myport", variant="step1", input_sha256=...)`. Imports torch only when called.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from pita.dtypes import BF16
from pita.dump import FORMAT, MAX_JSON_ELEMENTS, Dump, check_destination, check_dump_path, write_dump
from pita.errors import UsageError, warn_user
from pita.files import shown
from pita.recording import check_metadata


def write_torch_dump(path: str | Path, tensors: dict, **metadata) -> Path:
    """Writes `path` (.safetensors, .json or .npz) and, for safetensors, the JSON form beside it
    when the dump fits one (at most `MAX_JSON_ELEMENTS` elements). bfloat16 tensors stay BF16.
    `metadata` may not set the provenance this writes itself (`format`, `framework`,
    `framework_version`: `pita.recording.PROVENANCE_KEYS`); `backend` it may.

    The JSON form beside a `.safetensors` file is always this dump's: written fresh, or, when
    the dump is too large for it or writing it fails, removed (a file left from an earlier dump
    would hold other tensors). A failed JSON write is a `UsageError` saying so."""
    check_metadata(metadata, recording=False)
    path = check_torch_dump_path(path)
    import torch

    arrays = {name: _as_numpy(torch, name, tensor) for name, tensor in tensors.items()}
    devices = sorted({str(tensor.device) for tensor in tensors.values()}) or ["cpu"]
    own = {**provenance(torch), "backend": ", ".join(devices)}
    dump = Dump(tensors=arrays, metadata={**own, **{k: str(v) for k, v in metadata.items()}})
    path = write_dump(dump, path)
    if path.suffix.lower() == ".safetensors":
        _write_twin(dump, path, sum(array.size for array in arrays.values()))
    return path


def provenance(torch) -> dict[str, str]:
    """The provenance keys a torch dump's writer sets itself."""
    return {"format": FORMAT, "framework": "torch", "framework_version": torch.__version__}


def streamed_writer(path: Path, shard_bytes: int, sharded: bool | None, recording: str):
    """A `pita.sharded_writer.ShardedWriter` for a recording of torch tensors at `path`: shards
    carry the provenance and `recording`; a recording within one shard gets its JSON form beside
    it, as `write_torch_dump` writes it."""
    import torch

    from pita.sharded_writer import ShardedWriter

    def twin(dump: Dump, written: Path) -> None:
        _write_twin(dump, written, sum(array.size for array in dump.tensors.values()))

    return ShardedWriter(path, shard_bytes=shard_bytes, sharded=sharded, shard_metadata={**provenance(torch), "recording": recording},
                         after_single=twin)


def as_numpy(name: str, tensor) -> np.ndarray:
    """A host tensor's values as a numpy array (`_as_numpy`), for a streamed recording."""
    import torch

    return _as_numpy(torch, name, tensor)


def check_torch_dump_path(path: str | Path) -> Path:
    """`path` as `write_torch_dump` checks it before writing anything (`pita.dump.check_dump_path`,
    and for `.safetensors` the place of its JSON form too): what `pita.torch.record` checks
    before the run."""
    path = check_dump_path(path)
    if path.suffix.lower() == ".safetensors":
        check_destination(path.with_suffix(".json"))
    return path


def _write_twin(dump: Dump, path: Path, elements: int) -> None:
    """The JSON form of `dump` beside `path`, written fresh or removed, never left from before."""
    twin = path.with_suffix(".json")
    if elements > MAX_JSON_ELEMENTS:
        removed = _remove(twin, path)
        warn_user(f"{shown(path)}: no JSON form written beside it ({elements} elements; the JSON form holds at most "
                  f"{MAX_JSON_ELEMENTS})" + (f"; the {shown(twin.name)} an earlier dump left beside it was removed" if removed else ""))
        return
    try:
        write_dump(dump, twin)
    except UsageError as error:
        _remove(twin, path)
        raise UsageError(f"{shown(path)} is written, but not its JSON form, and no earlier one is left beside it: {error}") from None


def _remove(twin: Path, path: Path) -> bool:
    """Removes a JSON form left beside `path` by an earlier dump; whether there was one."""
    try:
        os.unlink(twin)
    except FileNotFoundError:
        return False
    except OSError as error:
        raise UsageError(f"{shown(path)} is written, but {shown(twin)}, left from an earlier dump, cannot be removed "
                         f"({error.strerror or error}): remove it") from None
    return True


def _as_numpy(torch, name: str, tensor) -> np.ndarray:
    """The tensor's values in memory; bfloat16 as `BF16`, its raw bits (numpy has no bfloat16).
    A sparse or nested tensor is refused, naming it: a dump holds dense tensors, and densifying
    is the caller's choice to make and to say (`pita.torch.Recorder` does, in `densified`)."""
    if tensor.is_nested:
        raise UsageError(f"tensor {name!r}: a nested tensor; a dump holds dense tensors (pad it: torch.nested.to_padded_tensor)")
    if tensor.layout != torch.strided:
        layout = str(tensor.layout).removeprefix("torch.")
        raise UsageError(f"tensor {name!r}: a {layout} tensor; a dump holds dense tensors (densify it: tensor.to_dense())")
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(BF16)
    try:
        return tensor.numpy()
    except TypeError as error:  # float8, quantized and other dtypes numpy has no twin for
        raise UsageError(f"tensor {name!r}: {error}") from None

