"""Fuzz target: mutated dumps must give a `UsageError` (one line, exit 2) or a readable dump,
never another exception, and reading must never allocate from an unchecked size.

Seeds are valid safetensors, JSON and npz dumps; each input applies a few random mutations
(bit flips, byte edits, truncation, insertion, duplicated spans, header-length rewrites and
edits of the JSON header's numbers). A dump that reads is then compared with itself.

    .venv/bin/python fuzz/readers.py [--iterations N] [--seconds S] [--seed K]

Prints how many inputs were tried, how many were refused cleanly and how many read; exits 1
and writes the offending input to fuzz/crashes/ on any other outcome.
"""

from __future__ import annotations

import argparse
import random
import re
import struct
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from pita.compare import compare_dumps
from pita.dump import Dump, _json_bytes, _npz_bytes, _safetensors_bytes, read_dump
from pita.errors import UsageError

CRASHES = Path(__file__).parent / "crashes"


def seeds() -> dict[str, list[bytes]]:
    dumps = [
        Dump({"w.grad": np.array([[0.5, -0.25, 0.75]], np.float32), "b": np.array([0.1], np.float32)}, {"batch_size": "4"}),
        Dump({"x": np.arange(12, dtype=np.int64).reshape(3, 4), "h": np.ones(3, np.float16), "e": np.zeros((0, 2), np.float32)}),
        Dump({"s": np.array(3.5, np.float64), "m": np.array([True, False])}, {"input_sha256": "ab" * 32}),
    ]
    return {
        ".safetensors": [_safetensors_bytes(d) for d in dumps],
        ".json": [_json_bytes(d) for d in dumps],
        ".npz": [_npz_bytes(d) for d in dumps],
    }


def mutate(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(7)
        if not data:
            data = bytearray(rng.randbytes(rng.randint(0, 16)))
        elif choice == 0:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif choice == 1:
            data[rng.randrange(len(data))] = rng.choice([0, 0xFF, 0x7F, 0x80, ord("9"), ord("-"), ord('"')])
        elif choice == 2:
            del data[rng.randrange(len(data)):]
        elif choice == 3:
            i = rng.randrange(len(data) + 1)
            data[i:i] = rng.randbytes(rng.randint(1, 8))
        elif choice == 4:
            i, j = sorted(rng.randrange(len(data) + 1) for _ in range(2))
            data[i:i] = data[i:j]
        elif choice == 5 and len(data) >= 8:
            data[:8] = struct.pack("<Q", rng.choice([0, len(data), len(data) - 7, 2**63, rng.randrange(2**32)]))
        else:
            data = bytearray(_edit_number(bytes(data), rng))
    return bytes(data)


def _edit_number(data: bytes, rng: random.Random) -> bytes:
    numbers = list(re.finditer(rb"-?\d+", data[:4096]))
    if not numbers:
        return data
    match = rng.choice(numbers)
    value = rng.choice([b"0", b"-1", b"1", b"4294967296", b"99999999999999999999", str(int(match.group()) + rng.randint(-9, 9)).encode()])
    return data[:match.start()] + value + data[match.end():]


def exercise(path: Path) -> str:
    """'refused', 'read', or raises whatever a reader should never raise."""
    try:
        dump = read_dump(path)
        compare_dumps(dump, dump)
        return "read"
    except UsageError as error:
        assert "\n" not in str(error), f"multi-line error: {error!r}"
        return "refused"


def run(iterations: int | None, seconds: float | None, seed: int, quiet: bool = False) -> dict[str, int]:
    rng = random.Random(seed)
    corpus = seeds()
    counts = {"tried": 0, "refused": 0, "read": 0}
    deadline = time.monotonic() + seconds if seconds else None
    with tempfile.TemporaryDirectory() as folder:
        while (iterations is None or counts["tried"] < iterations) and (deadline is None or time.monotonic() < deadline):
            suffix = rng.choice(sorted(corpus))
            data = mutate(rng.choice(corpus[suffix]), rng)
            path = Path(folder) / f"input{suffix}"
            path.write_bytes(data)
            try:
                counts[exercise(path)] += 1
            except Exception:
                CRASHES.mkdir(exist_ok=True)
                kept = CRASHES / f"crash-{seed}-{counts['tried']}{suffix}"
                kept.write_bytes(data)
                traceback.print_exc()
                print(f"fuzz: unexpected exception on input {counts['tried']}, saved to {kept}", file=sys.stderr)
                counts["crashed"] = 1
                return counts
            counts["tried"] += 1
    if not quiet:
        print(f"fuzz: {counts['tried']} inputs tried (seed {seed}): {counts['refused']} refused with one line, {counts['read']} read; 0 crashes")
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description="Fuzz pita's dump readers.")
    parser.add_argument("--iterations", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.iterations is None and args.seconds is None:
        args.seconds = 60.0
    return 1 if "crashed" in run(args.iterations, args.seconds, args.seed) else 0


if __name__ == "__main__":
    raise SystemExit(main())
