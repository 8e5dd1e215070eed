"""Benchmark: the 300 M-parameter pair. ports/gpt2 at GPT-2 medium's shape (24 layers, width 1024,
16 heads, vocabulary 50257: 355 M parameters, one sequence of 32 tokens) trained two AdamW steps
and recorded on both sides, then `pita trace` over the pair.

    .venv/bin/python bench/large_port.py                  # --size medium; builds the burn port in release
    .venv/bin/python bench/large_port.py --size tiny --burn target/debug/port-gpt2   # the test suite's small version

Runs, each as its own process under `/usr/bin/time`:
  1. torch: `ports/gpt2/pytorch.py --out DIR --size SIZE` (the weights, the batch, the recording
     and its float64 run, one after the other; pita.torch.record's shards of 256 MiB);
  2. burn: the port, `port-gpt2 --out DIR --size SIZE [--shard-bytes S]` (release build by
     default: `cargo build --release -p port-gpt2`; a debug build of burn takes far too long at
     this size);
  3. trace: `pita trace torch-record.safetensors burn-port.safetensors --format json`;
and prints for each its wall time, peak resident memory and the bytes it wrote, then whether trace
kept within TRACE_MEMORY_LIMIT and found the pair matching. Checks the free disk space first, and
removes DIR afterwards unless `--keep` (the medium pair writes about 25 GB).
Exit status: 0 when every step ran, trace's exit code was 0 and its peak memory within the limit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PORT = ROOT / "ports" / "gpt2"
TRACE_MEMORY_LIMIT = 500e6  # bytes: the bound on trace over the 300 M pair
# Bytes on disk per parameter, both sides together: torch's recording (param/, grad/, step1/, step2/
# in float32: 16) and its float64 run (32), burn's (the same four and init/: 20), the weights (4).
DISK_BYTES_PER_PARAMETER = 72
PARAMETERS = {"tiny": 0.1e6, "medium": 355e6}  # about (a bound for tiny), for the disk check


@dataclass
class Measured:
    """One process of the measurement."""

    name: str
    seconds: float
    peak_bytes: int
    written_bytes: int
    exit_code: int


def timed(name: str, command: list, out: Path, written: str | None) -> Measured:
    """Runs `command` under /usr/bin/time (wall seconds, peak RSS) from the checkout's root; the
    bytes written are those of the files in `out` whose names start with `written`."""
    figures = out / f".time-{name}"
    print(f"$ {' '.join(map(str, command))}", file=sys.stderr, flush=True)
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", str(figures), *map(str, command)], cwd=ROOT,
                          capture_output=True, text=True)
    if proc.returncode not in ((0, 1) if name == "trace" else (0,)):  # trace exits 1 on a divergence: its JSON says which
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
    seconds, peak_kb = figures.read_text().split()[-2:]
    figures.unlink()
    size = sum(f.stat().st_size for f in out.iterdir() if written is not None and f.name.startswith(written) and f.is_file())
    if name == "trace":
        (out / "trace.json").write_text(proc.stdout)
    return Measured(name, float(seconds), int(peak_kb) * 1024, size, proc.returncode)


def burn_binary(given: Path | None) -> Path:
    """`given`, or the release build of the port (`cargo build --release -p port-gpt2`)."""
    if given is not None:
        return given
    command = ["cargo", "build", "--release", "-p", "port-gpt2", "--message-format=json"]
    print(f"$ {' '.join(command)}", file=sys.stderr, flush=True)
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"large_port: the burn port did not build:\n{proc.stderr[-4000:]}")
    for line in proc.stdout.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("reason") == "compiler-artifact" and message["target"]["name"] == "port-gpt2" and message.get("executable"):
            return Path(message["executable"])
    sys.exit("large_port: cargo built no port-gpt2 executable")


def check_disk(out: Path, size: str) -> None:
    need = DISK_BYTES_PER_PARAMETER * PARAMETERS[size]
    free = shutil.disk_usage(out).free
    if free < 1.2 * need:
        sys.exit(f"large_port: {out} has {free / 1e9:.1f} GB free; the {size} pair needs about {need / 1e9:.1f} GB (and a fifth more to spare)")


def remove_run(out: Path, made: bool) -> None:
    """The run's files: the whole folder where this script made it, else the files in it."""
    if made:
        shutil.rmtree(out)
        return
    for file in out.iterdir():
        if file.is_file():
            file.unlink()


def measure(out: Path, size: str, burn: Path, shard_bytes: int | None) -> list[Measured]:
    sharding = [] if shard_bytes is None else ["--shard-bytes", shard_bytes]
    torch_side = timed("torch", [sys.executable, PORT / "pytorch.py", "--out", out, "--size", size], out, "torch-record")
    if torch_side.exit_code != 0:
        return [torch_side]
    burn_side = timed("burn", [burn, "--out", out, "--size", size, *sharding], out, "burn-port")
    if burn_side.exit_code != 0:
        return [torch_side, burn_side]
    reference, candidate = out / "torch-record.safetensors", out / "burn-port.safetensors"
    trace = timed("trace", [sys.executable, "-m", "pita", "trace", reference, candidate, "--format", "json"], out, None)
    return [torch_side, burn_side, trace]


def report(size: str, rows: list[Measured], out: Path) -> dict:
    lines = [f"ports/gpt2 --size {size}: two AdamW steps recorded on each side, then pita trace",
             f"{'':6} {'time':>9} {'peak memory':>12} {'written':>10} {'exit':>5}"]
    lines += [f"{r.name:6} {r.seconds:8.1f}s {r.peak_bytes / 1e6:10.0f} MB {r.written_bytes / 1e6:7.0f} MB {r.exit_code:5d}" for r in rows]
    summary = {"size": size, "processes": [asdict(r) for r in rows], "trace_memory_limit": TRACE_MEMORY_LIMIT}
    trace = next((r for r in rows if r.name == "trace"), None)
    if trace is not None:
        result = json.loads((out / "trace.json").read_text() or "null")
        summary["trace_ok"] = bool(result and result.get("ok"))
        summary["trace_within_memory"] = trace.peak_bytes <= TRACE_MEMORY_LIMIT
        lines.append(f"trace: {'the pair matches' if summary['trace_ok'] else 'the pair does not match'}; peak memory "
                     f"{trace.peak_bytes / 1e6:.0f} MB, {'within' if summary['trace_within_memory'] else 'BEYOND'} {TRACE_MEMORY_LIMIT / 1e6:.0f} MB")
        if result and not result.get("ok"):
            lines.append(f"  verdict: {result.get('verdict')}")
    print("\n".join(lines))
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=PARAMETERS, default="medium", help="ports/gpt2's shape (default medium)")
    parser.add_argument("--burn", type=Path, help="the port-gpt2 executable (default: built with cargo build --release -p port-gpt2)")
    parser.add_argument("--shard-bytes", type=int, help="the burn recorder's shard size in bytes (default its own, 256 MiB)")
    parser.add_argument("--out", type=Path, help="folder for the run (default a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the folder's files (default: removed after measuring)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    args = parser.parse_args()

    burn = burn_binary(args.burn)
    out = args.out or Path(tempfile.mkdtemp(prefix="large-port-"))
    out.mkdir(parents=True, exist_ok=True)
    check_disk(out, args.size)
    try:
        rows = measure(out, args.size, burn, args.shard_bytes)
        summary = report(args.size, rows, out)
    finally:
        if not args.keep:
            remove_run(out, made=args.out is None)
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=2))
    done = len(rows) == 3 and all(r.exit_code == 0 for r in rows)
    return 0 if done and summary["trace_within_memory"] else 1


if __name__ == "__main__":
    sys.exit(main())
