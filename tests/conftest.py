import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def tracked_digest(root: Path) -> str:
    """A digest of every file git tracks (and of what it reports as changed), to prove that a
    run leaves the checkout as it found it."""
    listing = subprocess.run(["git", "ls-files", "-s", "--others", "--exclude-standard"], cwd=root, capture_output=True, text=True).stdout
    files = [line.split("\t")[-1] for line in listing.splitlines()]
    digest = hashlib.sha256()
    for name in files:
        path = root / name
        digest.update(name.encode() + (path.read_bytes() if path.is_file() else b""))
    return digest.hexdigest()


@pytest.fixture(scope="session")
def p12_run(tmp_path_factory):
    """One real `pita run p12`: PyTorch and burn both run, nothing mocked. Also returns whether
    the checkout was left as it was."""
    out = tmp_path_factory.mktemp("p12")
    before = tracked_digest(ROOT)
    proc = subprocess.run([sys.executable, "-m", "pita", "run", "p12", "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    return out, proc, tracked_digest(ROOT) == before


def pita(*args, cwd=None):
    """The CLI as a user runs it."""
    return subprocess.run([sys.executable, "-m", "pita", *map(str, args)], cwd=cwd, capture_output=True, text=True)


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)
