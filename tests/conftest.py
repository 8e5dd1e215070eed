import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def p12_run(tmp_path_factory):
    """One real `pita run p12`: PyTorch and burn both run, nothing mocked."""
    out = tmp_path_factory.mktemp("p12")
    proc = subprocess.run(
        [sys.executable, "-m", "pita", "run", "p12", "--out", str(out), "--no-book-record"],
        cwd=ROOT, capture_output=True, text=True,
    )
    return out, proc


def pita(*args, cwd=None):
    """The CLI as a user runs it."""
    return subprocess.run([sys.executable, "-m", "pita", *map(str, args)], cwd=cwd, capture_output=True, text=True)


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)
