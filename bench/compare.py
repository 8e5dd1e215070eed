"""Benchmark: `pita compare` against its peers on the same data, in the same run.

For each scenario, writes two safetensors files of N float32 elements each (default 5e7, 200 MB
apiece), then times
  - pita: read both files (from the page cache, a chunk at a time) and compute every statistic
    it reports, checking that it found what the data holds;
  - torch.testing.assert_close, numpy.testing.assert_allclose and
    numpy.testing.assert_array_max_ulp on the same values, already in memory, with the same
    tolerance (every tool passes the pair);
and prints throughput (GB/s of input read) and pita's speed-up over each peer, against the targets.
pita measures through its compiled kernel (`pita_kernel`, crates/pita-kernel) where installed, else
through numpy (also with PITA_KERNEL=0): the first line says which. The wall time of a whole
`pita compare` process on each pair (start-up included) is set against its target, and its peak
memory is measured on each pair and on a mismatching one (candidate = 4 × reference, where compare
also diagnoses), and set against the input file size.

    .venv/bin/python bench/compare.py [--elements N] [--repeat R] [--dir DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pita import stats
from pita.compare import Tolerance, compare_dumps
from pita.dump import Dump, read_dump, write_dump

TARGETS = {"torch.testing.assert_close": 10.0, "numpy.testing.assert_array_max_ulp": 40.0}
SMALL_TARGET_SECONDS = 0.3  # a whole `pita compare` process on two small dumps
LARGE_TARGET_SECONDS = 0.3  # a whole `pita compare` process on the scenario's pair (2 × 200 MB at the default size)
MEMORY_BUDGET = (1.25, 100e6)  # peak resident memory <= 1.25 × one input file + 100 MB


@dataclass(frozen=True)
class Scenario:
    name: str
    every: int  # every how many elements differ
    max_offset: int  # each differing element is 1..max_offset ULPs away (drawn at random)
    atol: float  # tolerance every tool checks (rtol 0); the scenario's pair passes it


SCENARIOS = [
    # A port that matches: most elements bit-identical, some 1 ULP apart.
    Scenario("mostly equal", every=97, max_offset=1, atol=1e-6),
    # A port after a few training steps: every element a few ULPs away (summation order everywhere).
    Scenario("every element 1-3 ULPs apart", every=1, max_offset=3, atol=1e-5),
]


@dataclass(frozen=True)
class Inputs:
    reference: Path
    candidate: Path
    mismatched: int  # elements beyond atol, counted here with numpy
    max_ulp: int


def make_inputs(directory: Path, n: int, scenario: Scenario) -> Inputs:
    rng = np.random.default_rng(0)
    reference = rng.standard_normal(n, dtype=np.float32)
    bits = reference.view(np.int32).copy()
    offsets = rng.integers(1, scenario.max_offset + 1, size=bits[::scenario.every].size, dtype=np.int32)
    bits[::scenario.every] += offsets  # one more in the bits is one ULP further from zero, either sign
    candidate = bits.view(np.float32)
    mismatched = int(np.count_nonzero(~(np.abs(candidate.astype(np.float64) - reference) <= scenario.atol)))
    paths = directory / "reference.safetensors", directory / "candidate.safetensors"
    write_dump(Dump({"t": reference}), paths[0])
    write_dump(Dump({"t": candidate}), paths[1])
    return Inputs(*paths, mismatched=mismatched, max_ulp=int(offsets.max()))


def best_of(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def pita_compare(inputs: Inputs, scenario: Scenario) -> None:
    result = compare_dumps(read_dump(inputs.reference), read_dump(inputs.candidate), Tolerance(atol=scenario.atol))
    tensor = result.tensors[0]
    expected = (inputs.mismatched == 0, inputs.mismatched, inputs.max_ulp)
    assert (result.ok, tensor.mismatched, tensor.max_ulp) == expected, (tensor, expected)


def peers(inputs: Inputs, scenario: Scenario) -> dict:
    r = np.array(read_dump(inputs.reference).tensors["t"])
    c = np.array(read_dump(inputs.candidate).tensors["t"])
    found = {
        "numpy.testing.assert_allclose": lambda: np.testing.assert_allclose(c, r, rtol=0, atol=scenario.atol),
        "numpy.testing.assert_array_max_ulp": lambda: np.testing.assert_array_max_ulp(r, c, maxulp=scenario.max_offset),
    }
    try:
        import torch
    except ImportError:
        print("torch not installed: torch.testing.assert_close skipped", file=sys.stderr)
    else:
        tr, tc = torch.from_numpy(r), torch.from_numpy(c)
        found["torch.testing.assert_close"] = lambda: torch.testing.assert_close(tc, tr, rtol=0, atol=scenario.atol)
    return found


# VmHWM, not ru_maxrss: the latter also counts the benchmark's own pages, which the child
# shares between fork and exec.
PEAK = ("import sys; from pita.cli import main; rc = main(sys.argv[1:]); "
        "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0], file=sys.stderr); sys.exit(rc)")


def peak_memory_of_cli(reference: Path, candidate: Path, atol: float, expected_exit: int) -> int:
    """Peak resident memory (bytes) of one whole `pita compare` process, as it reports itself."""
    command = [sys.executable, "-c", PEAK, "compare", str(reference), str(candidate), "--atol", str(atol)]
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == expected_exit, proc.stdout + proc.stderr
    return int(proc.stderr.strip().splitlines()[-1]) * 1024


def memory_line(what: str, peak: int, size: int) -> tuple[str, bool]:
    budget = MEMORY_BUDGET[0] * size + MEMORY_BUDGET[1]
    met = peak <= budget
    return (f"peak memory of `pita compare` ({what}): {peak / 1e6:.0f} MB; budget 1.25 × {size / 1e6:.0f} MB + 100 MB"
            f" = {budget / 1e6:.0f} MB ({'met' if met else 'MISSED'})"), met


def small_compare_seconds(directory: Path, repeat: int) -> float:
    """Wall time of a whole `pita compare` process on two 4-element dumps (start-up included)."""
    small = directory / "small-reference.safetensors", directory / "small-candidate.json"
    write_dump(Dump({"weight.grad": np.float32([[0.1075, 0.0425, -0.0225]]), "bias.grad": np.float32([-0.65])}), small[0])
    write_dump(Dump({"weight.grad": np.float32([[0.43], [0.17], [-0.09]]), "bias.grad": np.float32([-2.6])}), small[1])
    command = [sys.executable, "-m", "pita", "compare", str(small[0]), str(small[1])]
    return best_of(repeat, lambda: subprocess.run(command, capture_output=True))


def mismatching_pair_memory(directory: Path, n: int) -> tuple[str, bool]:
    """Peak memory where compare fails and diagnoses: the candidate is 4 × the reference."""
    reference = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    paths = directory / "reference-x4.safetensors", directory / "candidate-x4.safetensors"
    write_dump(Dump({"t": reference}), paths[0])
    write_dump(Dump({"t": reference * np.float32(4)}), paths[1])
    del reference
    peak = peak_memory_of_cli(*paths, atol=1e-6, expected_exit=1)
    line = memory_line("candidate = 4 × reference, diagnosed", peak, paths[0].stat().st_size)
    for path in paths:
        path.unlink()
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=float, default=5e7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where to write the inputs (default: a temporary folder)")
    args = parser.parse_args()
    n = int(args.elements)
    ok = True
    print("pita measures through", "its compiled kernel (pita_kernel)" if stats._kernel() else "numpy (pita_kernel not installed, or PITA_KERNEL=0)")
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        for scenario in SCENARIOS:
            inputs = make_inputs(Path(folder), n, scenario)
            ok &= report(scenario, inputs, n, args.repeat)
            inputs.reference.unlink(), inputs.candidate.unlink()
        line, met = mismatching_pair_memory(Path(folder), n)
        print(f"\n{line}")
        ok &= met
        small = small_compare_seconds(Path(folder), args.repeat)
    print(f"small comparison, whole process: {small:.3f} s (target ≤{SMALL_TARGET_SECONDS} s: {'met' if small <= SMALL_TARGET_SECONDS else 'MISSED'})")
    return 0 if ok and small <= SMALL_TARGET_SECONDS else 1


def report(scenario: Scenario, inputs: Inputs, n: int, repeat: int) -> bool:
    size = inputs.reference.stat().st_size
    input_bytes = 2 * n * 4
    pita_compare(inputs, scenario)  # warm-up: fills the page cache
    timings = {"pita compare": best_of(repeat, lambda: pita_compare(inputs, scenario))}
    for name, run in peers(inputs, scenario).items():
        timings[name] = best_of(repeat, run)
    print(f"\n{scenario.name}: {n:.3g} float32 elements per file ({size / 1e6:.0f} MB), atol {scenario.atol:g}, "
          f"{inputs.mismatched} beyond it, best of {repeat}")
    print(f"{'':38}{'seconds':>9}{'GB/s':>8}{'pita is':>10}")
    ok = True
    for name, seconds in timings.items():
        speedup = seconds / timings["pita compare"]
        target = TARGETS.get(name)
        verdict = "" if target is None else f"  (target ≥{target:g}×: {'met' if speedup >= target else 'MISSED'})"
        ok &= target is None or speedup >= target
        shown = "" if name == "pita compare" else f"{speedup:9.1f}×"
        print(f"{name:38}{seconds:9.3f}{input_bytes / seconds / 1e9:8.2f}{shown:>10}{verdict}")
    command = [sys.executable, "-m", "pita", "compare", str(inputs.reference), str(inputs.candidate), "--atol", str(scenario.atol)]
    whole = best_of(repeat, lambda: subprocess.run(command, capture_output=True, check=True))
    fast = whole <= LARGE_TARGET_SECONDS
    print(f"`pita compare`, whole process: {whole:.3f} s, {input_bytes / whole / 1e9:.2f} GB/s "
          f"(target ≤{LARGE_TARGET_SECONDS} s: {'met' if fast else 'MISSED'})")
    line, met = memory_line(scenario.name, peak_memory_of_cli(inputs.reference, inputs.candidate, scenario.atol, 0), size)
    print(line)
    return ok and fast and met


if __name__ == "__main__":
    raise SystemExit(main())
