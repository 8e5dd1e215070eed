"""The library stands alone: importing it loads neither the lab nor torch, the compiled kernel or
jinja2, and without the kernel a large comparison gives exactly what the kernel gives.
(tests/test_install.py checks the same from a wheel in a clean virtual environment.)"""

import importlib.util
import json
import pkgutil
import subprocess
import sys

import numpy as np
import pytest

import pita
from pita.dump import Dump, write_dump

# The compiled kernel (pita_kernel) is imported by the first comparison, not by the library.
HEAVY = ("torch", "pita_kernel", "jinja2", "pita_lab")
# Loaded only when asked for: `python -m pita` (it runs the CLI).
IMPORTED_ON_DEMAND = {"pita.__main__"}


def library_modules() -> list[str]:
    """Every module of the library, found by walking the package."""
    found = pkgutil.walk_packages(pita.__path__, prefix="pita.")
    return ["pita"] + sorted(module.name for module in found if module.name not in IMPORTED_ON_DEMAND)


def test_the_walk_finds_the_modules_a_hand_list_once_missed():
    assert {"pita.trace", "pita.diagnose.sign", "pita.stats_numpy", "pita.tolerance"} <= set(library_modules())


def python(code: str, *args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], check=False, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_importing_the_library_loads_no_lab_torch_kernel_or_jinja2(tmp_path):
    code = (f"import {', '.join(library_modules())}, sys; pita.assert_parity; "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))")
    proc = python(code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# Compares the pair under several tolerances through the library's API and prints the JSON
# reports; argv[1] says whether to make `import pita_kernel` fail first, as where it is not installed.
COMPARE = """
import json, sys
if sys.argv[1] == "blocked":
    sys.modules["pita_kernel"] = None
from pita import stats
from pita.compare import Tolerance, compare_dumps
from pita.dump import read_dump
from pita.report import render_json
reference, candidate = read_dump(sys.argv[2]), read_dump(sys.argv[3])
tolerances = [Tolerance.from_options(), Tolerance.from_options(ulp=2), Tolerance.from_options(atol=0, rtol=1e-3),
              Tolerance.from_options(equal_nan=True)]
reports = [render_json(compare_dumps(reference, candidate, t)) for t in tolerances]
kernel = stats._kernel() is not None
assert kernel == (sys.modules.get("pita_kernel") is not None), "the kernel and its module disagree"
print(kernel)
print(json.dumps(reports))
"""


def large_pair(n: int):
    """float32 with near misses, far misses, NaN on either side and infinities, scattered."""
    rng = np.random.default_rng(7)
    reference = rng.standard_normal(n).astype(np.float32)
    candidate = reference.copy()
    picks = rng.choice(n, size=(6, 40), replace=False)
    candidate[picks[0]] = np.nextafter(candidate[picks[0]], np.float32(np.inf))
    candidate[picks[1]] += np.float32(1e-3)
    reference[picks[2]] = np.nan
    reference[picks[3]] = candidate[picks[3]] = np.nan
    reference[picks[4]], candidate[picks[4]] = np.inf, -np.inf
    candidate[picks[5]] *= np.float32(1 + 2**-20)
    return reference, candidate


LARGE = (1 << 20) + 4321  # several of the kernel's chunks and of numpy's


@pytest.mark.skipif(importlib.util.find_spec("pita_kernel") is None, reason="pita_kernel is not installed: nothing to set the numpy path against")
def test_without_the_kernel_a_large_comparison_reports_exactly_what_the_kernel_reports(tmp_path):
    reference, candidate = large_pair(LARGE)
    meta = {"input_sha256": "ab"}
    write_dump(Dump({"w": reference, "b": np.float32([1, 2])}, meta), tmp_path / "reference.safetensors")
    write_dump(Dump({"w": candidate, "b": np.float32([1, 2])}, meta), tmp_path / "candidate.safetensors")
    runs = {}
    for mode in ("kernel", "blocked"):
        proc = python(COMPARE, mode, tmp_path / "reference.safetensors", tmp_path / "candidate.safetensors", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        kernel, reports = proc.stdout.splitlines()
        runs[mode] = kernel, json.loads(reports)
    assert runs["kernel"][0] == "True" and runs["blocked"][0] == "False"  # each path really ran
    assert runs["blocked"][1] == runs["kernel"][1]  # the reports, character for character
    [w] = [tensor for tensor in json.loads(runs["kernel"][1][0])["tensors"] if tensor["name"] == "w"]
    assert w["ok"] is False and w["mismatched"] > 0 and w["n"] == LARGE  # the pair exercises the comparison
