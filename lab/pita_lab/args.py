"""The command line every PyTorch experiment script shares: `--variant NAME --out DIR`
(`pita_lab::args` is the burn side's)."""

from __future__ import annotations

import argparse
from pathlib import Path


def experiment_args(variants: tuple[str, ...]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", required=True, choices=variants)
    parser.add_argument("--out", required=True, type=Path)
    return parser.parse_args()
