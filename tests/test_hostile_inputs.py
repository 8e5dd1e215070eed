"""Hostile and unusual inputs through the real command line, each within explicit bounds.

Every case runs `pita.cli.main` in one child process whose address space is capped
(`MEMORY_LIMIT`) and which is killed after `BATCH_TIMEOUT`; each case must finish within
`CASE_SECONDS`. A refusal must be exit 2 with exactly one line on stderr, naming the file;
never a traceback (exit 3), a hang or an out-of-memory death.
"""

import json
import os
import resource
import shutil
import socket
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from pita.dtypes import BF16
from pita.dump import MAX_TENSORS, Dump, write_dump

MEMORY_LIMIT = 2 << 30
BATCH_TIMEOUT = 300
CASE_SECONDS = 15

RUNNER = r"""
import contextlib, io, json, sys, time
from pita.cli import main

for line in sys.stdin:
    case = json.loads(line)
    out, err = io.StringIO(), io.StringIO()
    print(json.dumps({"started": case["name"]}), flush=True)
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(case["args"])
    seconds = time.perf_counter() - started
    print(json.dumps({"name": case["name"], "rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue(), "seconds": seconds}), flush=True)
"""


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _safetensors(header, data: bytes = b"") -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def _json_dump(tensors: dict, metadata: dict | None = None) -> str:
    return json.dumps({"format": "pita-dump/1", "metadata": metadata or {}, "tensors": tensors})


def _npz(arrays: dict, method=zipfile.ZIP_STORED) -> bytes:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in arrays.items():
            npy = io.BytesIO()
            np.lib.format.write_array(npy, array, allow_pickle=True)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy"), npy.getvalue(), compress_type=method)
    return buffer.getvalue()


def _zero_length_tensors(count: int) -> bytes:
    entries = b",".join(b'"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}' % i for i in range(count))
    return _safetensors(b"{" + entries + b"}")


def build_cases(folder: Path) -> dict[str, tuple[list[str], int, str | None]]:
    """name -> (command line, expected exit code, text the one stderr line must hold)."""
    good = write_dump(Dump({"w": np.float32([1.0, 2.0])}), folder / "good.safetensors")
    made: dict[str, Path] = {}

    def file(name: str, data: bytes | str) -> Path:
        path = folder / name
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    def link(name: str, target: str) -> Path:
        (folder / name).symlink_to(target)
        return folder / name

    for suffix in (".safetensors", ".json", ".npz"):
        os.mkfifo(folder / f"fifo{suffix}")
        made[f"fifo {suffix}"] = folder / f"fifo{suffix}"
        made[f"/dev/zero as {suffix}"] = link(f"zero{suffix}", "/dev/zero")
    made["/dev/null as .json"] = link("null.json", "/dev/null")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(folder / "socket.npz"))
    made["a socket"] = folder / "socket.npz"
    link("loop-a.json", "loop-b.json")
    made["a symlink loop"] = link("loop-b.json", "loop-a.json")
    made["a parent that is a file"] = good / "x.safetensors"
    made["a name too long"] = folder / ("n" * 300 + ".json")
    made["a newline in the file name"] = file("two\nlines.json", "{")
    made["deep JSON"] = file("deep.json", "[" * 200_000)
    made["deep safetensors header"] = file("deep.safetensors", _safetensors(b"[" * 100_000 + b"]" * 100_000))
    made["a 5000-digit integer in JSON"] = file("digits.json", _json_dump({"t": {"dtype": "I64", "shape": [1], "values": ["X"]}}).replace('"X"', "9" * 5000))
    made["a 5000-digit offset"] = file("digits.safetensors", _safetensors(b'{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,' + b"9" * 5000 + b"]}}"))
    made["1e400 in JSON"] = file("inf.json", _json_dump({"t": {"dtype": "F64", "shape": [1], "values": ["X"]}}).replace('"X"', "1e400"))
    made["a shape numpy cannot hold"] = file("shape.safetensors", _safetensors({"t": {"dtype": "F32", "shape": [0, 2**62, 2**62], "data_offsets": [0, 0]}}))
    made[f"{MAX_TENSORS + 1} zero-length tensors"] = file("many.safetensors", _zero_length_tensors(MAX_TENSORS + 1))
    made["a million zero-length tensors"] = file("million.safetensors", _zero_length_tensors(1_000_000))
    empty = {"dtype": "U8", "shape": [0], "values": []}
    made[f"{MAX_TENSORS + 1} JSON tensors"] = file("many.json", _json_dump({f"t{i}": empty for i in range(MAX_TENSORS + 1)}))
    forged = {"w\nworst=0.00e+00 tol=1e-06 OK": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}
    made["a newline in a tensor name"] = file("name.safetensors", _safetensors(forged, b"\0" * 4))
    made["F32 1e39"] = file("big1.json", _json_dump({"w": {"dtype": "F32", "shape": [2], "values": [1.0, 1e39]}}))
    made["I64 1.5"] = file("half.json", _json_dump({"w": {"dtype": "I64", "shape": [1], "values": [1.5]}}))
    made["bzip2 npz member"] = file("bz.npz", _npz({"w": np.zeros(1 << 20, np.uint8)}, zipfile.ZIP_BZIP2))
    made["lzma npz member"] = file("lzma.npz", _npz({"w": np.zeros(1 << 16, np.uint8)}, zipfile.ZIP_LZMA))
    for kind, array in {"longdouble": np.zeros(2, np.longdouble), "complex": np.zeros(2, np.complex128),
                        "object": np.array([{"a": 1}], dtype=object), "string": np.array(["w"]), "datetime": np.zeros(2, "M8[s]")}.items():
        made[f"{kind} npz array"] = file(f"{kind}.npz", _npz({"w": array}))
    made["garbage npz"] = file("garbage.npz", b"PK\x05\x06" + b"\xff" * 18)
    cases = {name: (["compare", str(good), str(path)], 2, str(path) if "newline" not in name else None) for name, path in made.items()}

    # Sharded checkpoints: the index names its shards, which must be plain files beside it.
    shards = folder / "shards"
    shards.mkdir()
    write_dump(Dump({"a": np.float32([1.0])}), shards / "one.safetensors")
    write_dump(Dump({"a": np.float32([1.0]), "b": np.float32([2.0])}), shards / "two.safetensors")
    os.mkfifo(shards / "fifo.safetensors")

    def index(name: str, weight_map) -> Path:
        return file(f"shards/{name}.safetensors.index.json", json.dumps({"metadata": {"total_size": 4}, "weight_map": weight_map}))

    huge = shards / "huge.safetensors.index.json"
    with open(huge, "wb") as sparse:
        sparse.truncate((16 << 20) + 1)
    sharded = {
        "index: ../ in a shard name": (index("up", {"a": "../good.safetensors"}), "not a plain file name"),
        "index: an absolute shard path": (index("absolute", {"a": str(good)}), "not a plain file name"),
        "index: a missing shard": (index("missing", {"a": "gone.safetensors"}), "gone.safetensors: No such file"),
        "index: a tensor in two shards": (index("twice", {"a": "one.safetensors", "b": "two.safetensors"}),
                                          "shard two.safetensors holds tensor 'a': the index puts it in one.safetensors"),
        "index: a FIFO shard": (index("fifo-shard", {"a": "fifo.safetensors"}), "fifo.safetensors: a FIFO"),
        "index: a shard that is a folder": (index("folder", {"a": "sub.safetensors"}), "sub.safetensors: a folder"),
        "index: 16 MiB and a byte": (huge, "more than the 16777216 pita reads in a sharded checkpoint's index"),
        f"index: {MAX_TENSORS + 1} tensors": (index("many", {f"t{i}": "one.safetensors" for i in range(MAX_TENSORS + 1)}),
                                              f"more than the {MAX_TENSORS} pita reads"),
        "index: deep JSON": (file("shards/deep.safetensors.index.json", "[" * 200_000), "not valid JSON"),
        "index: a FIFO": (shards / "fifo.safetensors.index.json", "a FIFO"),
    }
    (shards / "sub.safetensors").mkdir()
    os.mkfifo(shards / "fifo.safetensors.index.json")
    for name, (path, says) in sharded.items():
        cases[name] = (["compare", str(good), str(path)], 2, says)
    cases["trace: not a recording"] = (["trace", str(good), str(good)], 2, "is not a recording")
    cases["trace: a shard path traversal"] = (["trace", str(good), str(sharded["index: ../ in a shard name"][0])], 2, "not a plain file name")

    rules = {
        'equal_nan = "false"': '[tolerance."*"]\nequal_nan = "false"\n',
        "atol = nan": '[tolerance."*"]\natol = nan\n',
        "ulp = true": '[tolerance."*"]\nulp = true\n',
        "a catastrophic regex": "[[rename]]\npattern = '^(a+)+$'\nreplace = 'b'\n",
        "a regex of repeated alternation": "[[rename]]\npattern = '^(a|aa)*$'\nreplace = 'b'\n",
        "a bad replacement": "[[rename]]\npattern = 'w'\nreplace = '\\2'\n",
        "pattern = 5": "[[rename]]\npattern = 5\nreplace = 'b'\n",
        "tolerance = 5": "tolerance = 5\n",
    }
    for number, (name, text) in enumerate(rules.items()):
        path = file(f"rules{number}.toml", text)
        cases[f"rules: {name}"] = (["compare", str(good), str(good), "--rules", str(path)], 2, str(path))
    cases["rules: a FIFO"] = (["compare", str(good), str(good), "--rules", str(folder / "fifo.json")], 2, "fifo.json")
    for flag, value in (("--atol", "nan"), ("--atol", "inf"), ("--atol", "-1"), ("--atol", "1e400"), ("--rtol", "nan"),
                        ("--rtol", "-0.5"), ("--ulp", "-1"), ("--ulp", str(2**64)), ("--ulp", "1.5"), ("--bogus", "1")):
        cases[f"{flag} {value}"] = (["compare", str(good), str(good), flag, value], 2, flag)
    cases["--reference64 a FIFO"] = (["compare", str(good), str(good), "--reference64", str(folder / "fifo.npz")], 2, "fifo.npz")

    # Inputs that must be read, and compared rightly.
    one_ulp = np.array([1.0, 1.0], ">f4"), np.array([1.0, np.nextafter(np.float32(1), np.float32(2))], "<f4")
    big_endian = file("big-endian.npz", _npz({"w": one_ulp[0]}))
    cases["big-endian npz, one ULP apart"] = (["compare", str(big_endian), str(write_dump(Dump({"w": one_ulp[1]}), folder / "ulp.npz"))], 0, "max_ulp=1 ")
    flags = np.array([True, False, True])
    bools = write_dump(Dump({"m": flags}), folder / "bools.json"), write_dump(Dump({"m": flags}), folder / "bools.safetensors")
    cases["pita's own BOOL JSON"] = (["compare", str(bools[1]), str(bools[0])], 0, None)
    bf16 = np.array([0x3F80, 0x3DCD], np.uint16).view(BF16)
    halves = write_dump(Dump({"h": bf16}), folder / "bf16.json"), write_dump(Dump({"h": bf16}), folder / "bf16.npz")
    cases["BF16 JSON against BF16 npz"] = (["compare", str(halves[1]), str(halves[0])], 0, None)
    odd = write_dump(Dump({"w": np.float32([1.0, 2.0])}, {"batch_size": "²"}), folder / "odd-batch.json")
    cases["batch_size '²'"] = (["compare", str(good), str(odd)], 0, None)
    fifo_folder = folder / "with-fifo"
    write_dump(Dump({"w": np.float32([1.0])}), fifo_folder / "a.npz")
    os.mkfifo(fifo_folder / "b.safetensors")
    cases["a folder holding a FIFO dump"] = (["compare", str(fifo_folder), str(fifo_folder)], 2, "b.safetensors: a FIFO")
    cases["rules: /dev/zero"] = (["compare", str(good), str(good), "--rules", "/dev/zero"], 2, "/dev/zero: a character device")
    loop_folder = folder / "with-loop"
    write_dump(Dump({"w": np.float32([1.0])}), loop_folder / "a.npz")
    (loop_folder / "me").symlink_to(loop_folder)
    cases["a folder holding a link to itself"] = (["compare", str(loop_folder), str(loop_folder)], 0, None)
    return cases


def run_batch(cases: dict) -> dict[str, dict]:
    """Runs every case in one child under the memory limit; name -> rc, stdout, stderr, seconds."""
    lines = "".join(json.dumps({"name": name, "args": args}) + "\n" for name, (args, _, _) in cases.items())
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER], input=lines, capture_output=True, text=True, cwd=ROOT,
                              env=env, preexec_fn=_limits, timeout=BATCH_TIMEOUT)
    except subprocess.TimeoutExpired as expired:
        started = [json.loads(line)["started"] for line in (expired.stdout or b"").decode().splitlines() if '"started"' in line]
        pytest.fail(f"the batch ran past {BATCH_TIMEOUT} s, in case {started[-1] if started else None!r}")
    results = {r["name"]: r for r in map(json.loads, proc.stdout.splitlines()) if "name" in r}
    missing = [name for name in cases if name not in results]
    assert not missing, f"the child died (rc {proc.returncode}) in case {missing[0]!r}: {proc.stderr[-2000:]}"
    return results


def problems(cases: dict, results: dict) -> list[str]:
    found = []
    for name, (_, expected_rc, must_say) in cases.items():
        result = results[name]
        said = result["stderr"].strip() or result["stdout"][-300:]
        if result["rc"] != expected_rc:
            found.append(f"{name}: exit {result['rc']}, expected {expected_rc}: {said[-600:]}")
        elif result["seconds"] > CASE_SECONDS:
            found.append(f"{name}: took {result['seconds']:.1f} s")
        elif expected_rc == 2 and (len(result["stderr"].splitlines()) != 1 or not result["stderr"].startswith("error: ")):
            found.append(f"{name}: stderr is not one error line: {result['stderr'][:600]!r}")
        elif must_say and must_say not in (result["stderr"] if expected_rc == 2 else result["stdout"]):
            found.append(f"{name}: does not say {must_say!r}: {said[-600:]}")
    return found


def test_hostile_inputs_get_the_right_exit_code_and_one_line_within_bounds(tmp_path):
    cases = build_cases(tmp_path)
    assert problems(cases, run_batch(cases)) == []


def test_a_folder_of_600_dumps_is_compared_with_few_file_descriptors(tmp_path):
    """Each dump is read and closed before the next is opened, even with large (lazy) tensors."""
    from pita.dump import LAZY_MIN_BYTES

    for i in range(600):
        tensors = {"w": np.full(3, i, np.float32)}
        if i % 200 == 0:
            tensors["large"] = np.zeros(LAZY_MIN_BYTES // 4, np.float32)
        write_dump(Dump(tensors), tmp_path / "reference" / f"step{i:03}{('.safetensors', '.npz', '.json')[i % 3]}")
    shutil.copytree(tmp_path / "reference", tmp_path / "candidate")

    def few_descriptors():
        resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))

    proc = subprocess.run([sys.executable, "-m", "pita", "compare", tmp_path / "reference", tmp_path / "candidate"],
                          capture_output=True, text=True, preexec_fn=few_descriptors, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1].endswith("OK")
