"""Fuzz target: mutated dumps and rules files must give a `UsageError` (one line, exit 2) or a
readable result, never another exception, and reading must never allocate from an unchecked
size or run long.

Seeds are valid safetensors, JSON and npz dumps in every dtype (big-endian and deflated npz
among them) and rules files; each input applies a few random mutations (bit flips, byte edits,
truncation, insertion, duplicated spans, header-length rewrites, edits of the JSON numbers and
tokens, of the zip headers' compression methods and sizes, and of the npy headers' dtypes). A
dump that reads is compared with itself, sometimes inside a folder; a rules file that loads is
applied. Each run first tries the special files a reader must refuse without reading them: a
FIFO, links to /dev/zero and /dev/null, a socket, a symlink loop, a folder that links to itself.

    .venv/bin/python fuzz/readers.py [--iterations N] [--seconds S] [--seed K]

Prints how many inputs were tried, how many were refused cleanly and how many read; exits 1
and writes the offending input to fuzz/crashes/ on any other outcome, or on an input that takes
longer than `SLOW_SECONDS`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

import numpy as np

from pita.compare import compare_dumps
from pita.dtypes import BF16
from pita.dump import Dump, _json_bytes, _npz_bytes, _safetensors_bytes, read_dump, write_dump
from pita.errors import UsageError
from pita.rules import load_rules

CRASHES = Path(__file__).parent / "crashes"
SLOW_SECONDS = 5.0

RULES = [
    b"[[rename]]\npattern = '^linear\\.(.*)$'\nreplace = 'fc.\\1'\n[[transpose]]\nname = 'fc.weight'\naxes = [1, 0]\n",
    b"[tolerance.\"*.bias\"]\natol = 1e-5\nrtol = 0.0\nulp = 4\nequal_nan = true\n",
    b"[[rename]]\nside = 'reference'\npattern = '(.*)a(.*)b'\nreplace = '\\2'\n",
]


def seeds() -> dict[str, list[bytes]]:
    every_dtype = {
        "f64": np.array([0.1, -0.0, np.inf], np.float64), "f32": np.array([[np.nan, 1e-45]], np.float32),
        "f16": np.array([65504, 6e-8], np.float16), "bf16": np.array([0x3F80, 0x7FC1], np.uint16).view(BF16),
        "i64": np.array([-(2**63)], np.int64), "u64": np.array([2**64 - 1], np.uint64), "i8": np.arange(-2, 2, dtype=np.int8),
        "u8": np.zeros((2, 0), np.uint8), "b": np.array(True),
    }
    dumps = [
        Dump({"w.grad": np.array([[0.5, -0.25, 0.75]], np.float32), "b": np.array([0.1], np.float32)}, {"batch_size": "4"}),
        Dump({"x": np.arange(12, dtype=np.int64).reshape(3, 4), "h": np.ones(3, np.float16), "e": np.zeros((0, 2), np.float32)}),
        Dump({"s": np.array(3.5, np.float64), "m": np.array([True, False])}, {"input_sha256": "ab" * 32}),
        Dump(every_dtype, {"framework": "torch"}),
    ]
    return {
        ".safetensors": [_safetensors_bytes(d) for d in dumps],
        ".json": [_json_bytes(d) for d in dumps],
        ".npz": [_npz_bytes(d) for d in dumps] + [_foreign_npz(every_dtype)],
        ".toml": RULES,
    }


def _foreign_npz(arrays: dict[str, np.ndarray]) -> bytes:
    """An npz as other tools write it: deflated, and big-endian where the dtype has an order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            npy = io.BytesIO()
            np.lib.format.write_array(npy, array.astype(array.dtype.newbyteorder(">")) if array.dtype.kind in "fiu" else array)
            archive.writestr(f"{name}.npy", npy.getvalue())
    return buffer.getvalue()


def mutate(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(10)
        if not data:
            data = bytearray(rng.randbytes(rng.randint(0, 16)))
        elif choice == 0:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif choice == 1:
            data[rng.randrange(len(data))] = rng.choice([0, 0xFF, 0x7F, 0x80, ord("9"), ord("-"), ord('"'), ord("["), ord("\n")])
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
        elif choice == 6:
            data = bytearray(_edit_token(bytes(data), rng))
        elif choice == 7:
            data = bytearray(_edit_zip_header(bytes(data), rng))
        elif choice == 8:
            data = bytearray(_edit_npy_dtype(bytes(data), rng))
        else:
            data = bytearray(_edit_number(bytes(data), rng))
    return bytes(data)


def _edit_number(data: bytes, rng: random.Random) -> bytes:
    numbers = list(re.finditer(rb"-?\d+", data[:4096]))
    if not numbers:
        return data
    match = rng.choice(numbers)
    value = rng.choice([b"0", b"-1", b"1", b"4294967296", b"99999999999999999999", b"9" * 30, b"1e400", b"1.5",
                        b"-0", b"true", str(int(match.group()) + rng.randint(-9, 9)).encode()])
    return data[:match.start()] + value + data[match.end():]


# JSON (and TOML) tokens a reader must not take loosely.
_TOKENS = [b"NaN", b"Infinity", b"true", b"false", b"null", b'"\\ud800"', b'"a\\nb"', b"[" * 3000, b"{}", b"[]",
           b'"NaN"', b'"Infinity"', b'"F32"', b'"BF16"', b'"BOOL"', b'"U64"', b'"F8_E4M3"', b"'(a+)+$'", b"'\\9'", b"nan", b"inf"]


def _edit_token(data: bytes, rng: random.Random) -> bytes:
    tokens = list(re.finditer(rb'"[^"\\]{0,40}"|-?\d+(?:\.\d+)?(?:e-?\d+)?|true|false|null|\'[^\']{0,40}\'', data[:8192]))
    if not tokens:
        return data
    match = rng.choice(tokens)
    return data[:match.start()] + rng.choice(_TOKENS + [match.group() * 2]) + data[match.end():]


def _edit_zip_header(data: bytes, rng: random.Random) -> bytes:
    """A compression method or a size field of a zip local or central header rewritten."""
    headers = [(m.start(), 8 if m.group() == b"PK\x03\x04" else 10) for m in re.finditer(rb"PK\x03\x04|PK\x01\x02", data)]
    if not headers:
        return data
    start, method_at = rng.choice(headers)
    data = bytearray(data)
    if rng.random() < 0.5 and start + method_at + 2 <= len(data):
        struct.pack_into("<H", data, start + method_at, rng.choice([zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, 99, zipfile.ZIP_DEFLATED, 0]))
    elif start + method_at + 18 <= len(data):  # compressed or uncompressed size, 4 bytes each
        offset = start + method_at + 10 + rng.choice([0, 4])
        struct.pack_into("<I", data, offset, rng.choice([0, 1, 0xFFFFFFFF, 0xFFFFFFFE, rng.randrange(2**32)]))
    return bytes(data)


def _edit_npy_dtype(data: bytes, rng: random.Random) -> bytes:
    """The descr of one npy header swapped for a dtype a dump may or may not hold."""
    descrs = list(re.finditer(rb"'descr': '[^']*'", data))
    if not descrs:
        return data
    match = rng.choice(descrs)
    descr = rng.choice([b"<f16", b"<c8", b"|O", b">f4", b">f2", b"<U3", b"|V2", b"|V4", b"<M8[s]", b"|b1", b">u8", b"<f4"])
    return data[:match.start()] + b"'descr': '" + descr + b"'" + data[match.end():]


def special_inputs(parent: Path) -> list[Path]:
    """Paths that are not regular files, or lead nowhere: each must be refused without reading."""
    folder = parent / "special"
    folder.mkdir()
    os.mkfifo(folder / "fifo.safetensors")
    (folder / "zero.json").symlink_to("/dev/zero")
    (folder / "zero.npz").symlink_to("/dev/zero")
    (folder / "null.safetensors").symlink_to("/dev/null")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(folder / "socket.npz"))
    (folder / "loop-a.json").symlink_to("loop-b.json")
    (folder / "loop-b.json").symlink_to("loop-a.json")
    (folder / "fifo.toml").symlink_to("fifo.safetensors")
    looped = folder / "looped"
    write_dump(Dump({"w": np.ones(2, np.float32)}), looped / "a.npz")
    (looped / "again").symlink_to(looped)
    return [folder / name for name in ("fifo.safetensors", "zero.json", "zero.npz", "null.safetensors", "socket.npz",
                                       "loop-b.json", "fifo.toml", "looped")]


def exercise(path: Path) -> str:
    """'refused', 'read', or raises whatever a reader should never raise."""
    try:
        if path.suffix == ".toml":
            rules = load_rules(path)
            dump = Dump({"linear.weight": np.ones((2, 3), np.float32), "fc.weight": np.ones((3, 2), np.float32), "a.bias": np.ones(1)})
            compare_dumps(dump, dump, rules=rules)
            return "read"
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
        specials = special_inputs(Path(folder))
        while (iterations is None or counts["tried"] < iterations) and (deadline is None or time.monotonic() < deadline):
            if specials:
                path, data = specials.pop(0), b""
            else:
                path, data = _next_input(Path(folder), corpus, rng)
            try:
                with _time_limit(SLOW_SECONDS):
                    counts[exercise(path)] += 1
            except Exception:
                _report_crash(seed, counts, path, data)
                counts["crashed"] = 1
                return counts
            counts["tried"] += 1
    if not quiet:
        print(f"fuzz: {counts['tried']} inputs tried (seed {seed}): {counts['refused']} refused with one line, {counts['read']} read; 0 crashes")
    return counts


class Hang(Exception):
    """Not a TimeoutError: that is an OSError, which a reader would turn into a refusal."""


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Raises `Hang` wherever the reader is after `seconds`: a hang is a finding too (a signal
    also interrupts a blocking system call, such as opening a FIFO)."""
    def expire(signum, frame):
        raise Hang(f"the input took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _next_input(folder: Path, corpus: dict[str, list[bytes]], rng: random.Random) -> tuple[Path, bytes]:
    """A mutated seed written to a file, alone or (one time in eight) beside a valid dump in a folder."""
    suffix = rng.choice(sorted(corpus))
    data = mutate(rng.choice(corpus[suffix]), rng)
    if suffix != ".toml" and rng.randrange(8) == 0:
        pair = folder / "pair"
        for stale in pair.glob("*"):
            stale.unlink()
        pair.mkdir(exist_ok=True)
        (pair / "good.npz").write_bytes(corpus[".npz"][0])
        (pair / f"input{rng.choice([suffix, suffix.upper()])}").write_bytes(data)
        return pair, data
    path = folder / f"input{suffix}"
    path.unlink(missing_ok=True)  # not truncated in place: ext4 flushes a file truncated and rewritten on close
    path.write_bytes(data)
    return path, data


def _report_crash(seed: int, counts: dict[str, int], path: Path, data: bytes) -> None:
    CRASHES.mkdir(exist_ok=True)
    kept = CRASHES / f"crash-{seed}-{counts['tried']}{path.suffix}"
    kept.write_bytes(data)
    traceback.print_exc()
    print(f"fuzz: unexpected outcome on input {counts['tried']} ({path.name}), saved to {kept}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description="Fuzz pita's dump and rules readers.")
    parser.add_argument("--iterations", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.iterations is None and args.seconds is None:
        args.seconds = 60.0
    return 1 if "crashed" in run(args.iterations, args.seconds, args.seed) else 0


if __name__ == "__main__":
    raise SystemExit(main())
