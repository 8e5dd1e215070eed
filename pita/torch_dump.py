"""The PyTorch side of a dump: write named torch tensors with the provenance pita records.

Usable from any training script: `write_torch_dump(out / "torch-step1.safetensors", {...},
experiment="myport", variant="step1", input_sha256=...)`. Imports torch only when called.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pita.dump import Dump, write_dump


def write_torch_dump(path: str | Path, tensors: dict, **metadata) -> Path:
    """Writes `path` (.safetensors, .json or .npz) and, for safetensors, the JSON form beside it."""
    import torch

    arrays = {name: t.detach().cpu().contiguous().numpy() for name, t in tensors.items()}
    provenance = {"format": "pita-dump/1", "framework": "torch", "framework_version": torch.__version__, "backend": "cpu"}
    dump = Dump(tensors=arrays, metadata={**provenance, **{k: str(v) for k, v in metadata.items()}})
    path = write_dump(dump, path)
    if path.suffix == ".safetensors":
        write_dump(dump, path.with_suffix(".json"))
    return path


def experiment_args(variants: tuple[str, ...]) -> argparse.Namespace:
    """The command line every PyTorch experiment script shares: `--variant NAME --out DIR`."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", required=True, choices=variants)
    parser.add_argument("--out", required=True, type=Path)
    return parser.parse_args()
