"""Benchmark: `pita compare` against its peers on the same data, in the same run.

Writes two safetensors files of N float32 elements each (default 5e7, 200 MB apiece), then times
  - pita: read both files (memory-mapped, streamed) and compute every statistic it reports;
  - torch.testing.assert_close, numpy.testing.assert_allclose and
    numpy.testing.assert_array_max_ulp on the same values, already in memory;
and prints throughput (GB/s of input read) and pita's speed-up over each peer. Peak memory of a
whole `pita compare` process is measured separately and set against the input file size.

    .venv/bin/python bench/compare.py [--elements N] [--repeat R] [--dir DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pita.compare import Tolerance, compare_dumps
from pita.dump import Dump, read_dump, write_dump

TARGETS = {"torch.testing.assert_close": 5.0, "numpy.testing.assert_array_max_ulp": 20.0}
SMALL_TARGET_SECONDS = 0.3  # a whole `pita compare` process on two small dumps


SCENARIOS = {
    # A port that matches: most elements bit-identical, some 1 ULP apart.
    "mostly equal": 97,
    # A port whose every element differs by a ULP (summation order everywhere): the slow path.
    "all differ": 1,
}


def make_inputs(directory: Path, n: int, every: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    reference = rng.standard_normal(n, dtype=np.float32)
    candidate = reference.copy()
    candidate[::every] = np.nextafter(candidate[::every], np.float32(np.inf))  # 1 ULP: passes every check
    paths = directory / f"reference-{every}.safetensors", directory / f"candidate-{every}.safetensors"
    write_dump(Dump({"t": reference}), paths[0])
    write_dump(Dump({"t": candidate}), paths[1])
    return paths


def best_of(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def pita_compare(reference: Path, candidate: Path):
    result = compare_dumps(read_dump(reference), read_dump(candidate), Tolerance())
    assert result.ok and result.tensors[0].max_ulp == 1, result.tensors[0]


def peers(reference: Path, candidate: Path):
    r = np.array(read_dump(reference).tensors["t"])
    c = np.array(read_dump(candidate).tensors["t"])
    found = {
        "numpy.testing.assert_allclose": lambda: np.testing.assert_allclose(c, r, rtol=0, atol=1e-6),
        "numpy.testing.assert_array_max_ulp": lambda: np.testing.assert_array_max_ulp(r, c, maxulp=1),
    }
    try:
        import torch
    except ImportError:
        print("torch not installed: torch.testing.assert_close skipped", file=sys.stderr)
    else:
        tr, tc = torch.from_numpy(r), torch.from_numpy(c)
        found["torch.testing.assert_close"] = lambda: torch.testing.assert_close(tc, tr, rtol=0, atol=1e-6)
    return found


# VmHWM, not ru_maxrss: the latter also counts the benchmark's own pages, which the child
# shares between fork and exec.
PEAK = ("import sys; from pita.cli import main; rc = main(sys.argv[1:]); "
        "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0], file=sys.stderr); sys.exit(rc)")


def peak_memory_of_cli(reference: Path, candidate: Path) -> int:
    """Peak resident memory (bytes) of one whole `pita compare` process, as it reports itself."""
    proc = subprocess.run([sys.executable, "-c", PEAK, "compare", str(reference), str(candidate)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return int(proc.stderr.strip().splitlines()[-1]) * 1024


def small_compare_seconds(directory: Path, repeat: int) -> float:
    """Wall time of a whole `pita compare` process on two 4-element dumps (start-up included)."""
    small = directory / "small-reference.safetensors", directory / "small-candidate.json"
    write_dump(Dump({"weight.grad": np.float32([[0.1075, 0.0425, -0.0225]]), "bias.grad": np.float32([-0.65])}), small[0])
    write_dump(Dump({"weight.grad": np.float32([[0.43], [0.17], [-0.09]]), "bias.grad": np.float32([-2.6])}), small[1])
    command = [sys.executable, "-m", "pita", "compare", str(small[0]), str(small[1])]
    return best_of(repeat, lambda: subprocess.run(command, capture_output=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=float, default=5e7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where to write the inputs (default: a temporary folder)")
    args = parser.parse_args()
    n = int(args.elements)
    ok = True
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        for scenario, every in SCENARIOS.items():
            reference, candidate = make_inputs(Path(folder), n, every)
            ok &= report(scenario, reference, candidate, n, args.repeat)
            reference.unlink(), candidate.unlink()
        small = small_compare_seconds(Path(folder), args.repeat)
    print(f"small comparison, whole process: {small:.3f} s (target ≤{SMALL_TARGET_SECONDS} s: {'met' if small <= SMALL_TARGET_SECONDS else 'MISSED'})")
    return 0 if ok and small <= SMALL_TARGET_SECONDS else 1


def report(scenario: str, reference: Path, candidate: Path, n: int, repeat: int) -> bool:
    size = reference.stat().st_size
    input_bytes = 2 * n * 4
    pita_compare(reference, candidate)  # warm-up: compiles (or loads) the kernel, fills the page cache
    timings = {"pita compare": best_of(repeat, lambda: pita_compare(reference, candidate))}
    for name, run in peers(reference, candidate).items():
        timings[name] = best_of(repeat, run)
    peak = peak_memory_of_cli(reference, candidate)
    print(f"\n{scenario}: {n:.3g} float32 elements per file ({size / 1e6:.0f} MB), best of {repeat}")
    print(f"{'':38}{'seconds':>9}{'GB/s':>8}{'pita is':>10}")
    ok = True
    for name, seconds in timings.items():
        speedup = seconds / timings["pita compare"]
        target = TARGETS.get(name)
        verdict = "" if target is None else f"  (target ≥{target:g}×: {'met' if speedup >= target else 'MISSED'})"
        ok &= target is None or speedup >= target
        shown = "" if name == "pita compare" else f"{speedup:9.1f}×"
        print(f"{name:38}{seconds:9.3f}{input_bytes / seconds / 1e9:8.2f}{shown:>10}{verdict}")
    budget = 1.25 * size + 100e6
    print(f"peak memory of `pita compare`: {peak / 1e6:.0f} MB; budget 1.25 × {size / 1e6:.0f} MB + 100 MB = {budget / 1e6:.0f} MB"
          f" ({'met' if peak <= budget else 'MISSED'})")
    return ok and peak <= budget


if __name__ == "__main__":
    raise SystemExit(main())
