"""What pita writes: an output never replaces an input or a special file, a stdout that cannot
take the report is one line and exit 2, a file-size limit never leaves a cut file with exit 0,
untrusted text reaches no terminal raw, and the JSON is written in pieces that add up to exactly
what `render_json` returns."""

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import pita
from pita.compare import compare_dumps
from pita.dump import Dump, read_dump, write_atomically, write_dump
from pita.errors import UsageError
from pita.json_stream import comparison_chunks, json_chunks
from pita.report import json_text, render_json, render_text
from pita.text import printable
from pita.tolerance import Tolerance
from pita.trace import render_trace_text, trace_dumps

FORGED = "\nworst=0.00e+00 tol=1e-06 OK"
ESCAPE = "\x1b[31m"


@pytest.fixture
def pair(tmp_path):
    write_dump(Dump({"w": np.float32([0.1, 0.2])}, {"framework": "torch"}), tmp_path / "ref.safetensors")
    write_dump(Dump({"w": np.float32([0.4, 0.8])}, {"framework": "burn"}), tmp_path / "cand.safetensors")
    return tmp_path


def compare(folder, *options, **kwargs):
    return pita("compare", folder / "ref.safetensors", folder / "cand.safetensors", *options, **kwargs)


def one_error_line(proc) -> str:
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# --- outputs never destroy inputs ----------------------------------------------------------------


@pytest.mark.parametrize("option", ["--html", "--json"])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(pair, option):
    reference = pair / "ref.safetensors"
    before = reference.read_bytes()
    os.link(reference, pair / "hard.safetensors")
    os.symlink(reference, pair / "link.safetensors")
    for path in (reference, pair / "hard.safetensors", pair / "link.safetensors", pair / "." / "ref.safetensors"):
        assert "writing there would destroy it" in one_error_line(compare(pair, option, path))
    assert "the input" in one_error_line(compare(pair, option, "cand.safetensors", cwd=pair))
    assert reference.read_bytes() == before and (pair / "cand.safetensors").exists()


def test_the_float64_reference_the_rules_file_and_a_shard_are_inputs_too(pair):
    rules = pair / "rules.toml"
    rules.write_text("")
    assert "destroy" in one_error_line(compare(pair, "--rules", rules, "--html", rules))
    write_dump(Dump({"w": np.float64([0.1, 0.2])}), pair / "ref64.safetensors")
    assert "destroy" in one_error_line(compare(pair, "--reference64", pair / "ref64.safetensors", "--json", pair / "ref64.safetensors"))
    sharded = pair / "sharded"
    sharded.mkdir()
    write_dump(Dump({"w": np.float32([0.1, 0.2])}), sharded / "part-1.safetensors")
    (sharded / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": "part-1.safetensors"}}))
    line = one_error_line(pita("compare", sharded / "model.safetensors.index.json", pair / "cand.safetensors", "--html", sharded / "part-1.safetensors"))
    assert "read through the input" in line
    line = one_error_line(pita("compare", sharded, pair / "cand.safetensors", "--json", sharded / "part-1.safetensors"))
    assert "read through the input" in line
    assert read_dump(sharded / "part-1.safetensors").tensors["w"].tolist() == np.float32([0.1, 0.2]).tolist()


def test_special_files_empty_paths_and_one_path_for_two_outputs_are_refused(pair):
    fifo = pair / "fifo"
    os.mkfifo(fifo)
    assert "a FIFO, not a regular file" in one_error_line(compare(pair, "--html", fifo))
    assert "a FIFO" in one_error_line(compare(pair, "--json", fifo))
    assert Path(fifo).is_fifo()
    assert "a character device" in one_error_line(compare(pair, "--html", os.devnull))
    for option in ("--html", "--json", "--rules"):
        assert "empty path" in one_error_line(compare(pair, option, ""))
    assert "names the same file" in one_error_line(compare(pair, "--html", pair / "out", "--json", pair / "out"))
    assert not (pair / "out").exists()
    trace = pita("trace", pair / "ref.safetensors", pair / "cand.safetensors", "--json", "")
    assert "empty path" in one_error_line(trace)


def test_write_atomically_refuses_what_a_rename_would_replace(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path(os.devnull), tmp_path, ""):
        with pytest.raises(UsageError):
            write_atomically(path, b"x")
    assert fifo.is_fifo() and os.listdir(tmp_path) == ["fifo"]


# --- stdout and file-size limits ---------------------------------------------------------------


def run_limited(args, *, stdout=subprocess.PIPE, file_size: int | None = None, cwd=None):
    def limit():
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    return subprocess.run([sys.executable, "-m", "pita", *map(str, args)], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          preexec_fn=limit, cwd=cwd, timeout=120)


def test_a_stdout_that_is_closed_or_full_is_one_line_and_exit_2(pair):
    args = ["compare", pair / "ref.safetensors", pair / "cand.safetensors"]
    closed = subprocess.run(["sh", "-c", '"$@" >&-', "sh", sys.executable, "-m", "pita", *map(str, args)], capture_output=True, text=True)
    assert "stdout is closed" in one_error_line(closed)
    closed_later = subprocess.run([sys.executable, "-c", "import os, sys, runpy; os.close(1); sys.argv = ['pita', *sys.argv[1:]]; "
                                   "runpy.run_module('pita', run_name='__main__')", *map(str, args)], capture_output=True, text=True)
    assert "cannot write the report to stdout (Bad file descriptor)" in one_error_line(closed_later)
    with open("/dev/full", "w") as full:
        proc = run_limited(args, stdout=full)
    assert "cannot write the report to stdout (No space left on device)" in one_error_line(proc)


def test_a_reader_that_closes_the_pipe_ends_pita_quietly_and_never_with_0(pair):
    proc = subprocess.Popen([sys.executable, "-m", "pita", "compare", pair / "ref.safetensors", pair / "ref.safetensors"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before pita writes (it takes longer to start): as `| head -1` does once it has its line
    assert proc.wait(timeout=120) == 2 and proc.stderr.read() == b""


def test_a_file_size_limit_never_leaves_a_cut_output_with_exit_0(pair):
    limit = 2048  # the JSON report is larger; the text report is smaller
    for option in ("--json", "--html"):
        proc = run_limited(["compare", "ref.safetensors", "cand.safetensors", option, "out"], file_size=limit, cwd=pair)
        assert "out: cannot write (File too large)" in one_error_line(proc)
        assert sorted(os.listdir(pair)) == ["cand.safetensors", "ref.safetensors"]  # nothing written, no temporary file left
    with open(pair / "stdout.json", "w") as redirected:
        proc = run_limited(["compare", "ref.safetensors", "cand.safetensors", "--format", "json"], stdout=redirected, file_size=limit, cwd=pair)
    assert "cannot write the report to stdout (File too large)" in one_error_line(proc)


# --- untrusted text ----------------------------------------------------------------------------


def test_printable_escapes_controls_bidi_and_backslashes_only_where_needed():
    assert printable("fc.weight 1e-06 × 4 – ok") == "fc.weight 1e-06 × 4 – ok"
    assert printable("a\\b") == "a\\b"  # nothing to escape: unchanged
    assert printable("a\\b\n") == "a\\\\b\\n"
    assert printable(f"{FORGED}{ESCAPE}\x7f\x85\u202e\u2028\udcff\t") == "\\nworst=0.00e+00 tol=1e-06 OK\\x1b[31m\\x7f\\x85\\u202e\\u2028\\udcff\\t"


def hostile_pair(folder: Path, **metadata) -> tuple[Path, Path]:
    values = {"param/fc.weight": np.float32([[0.1, 0.2]]), "act/fc": np.float32([0.3]), "loss/0": np.float32(0.5)}
    meta = {"recording": "pita-record/1", "framework": FORGED, "framework_version": ESCAPE, "backend": "\u202eevil",
            "execution_order": json.dumps(["act/fc", f"act/{ESCAPE}"]), **metadata}
    write_dump(Dump(values, meta), folder / "ref.safetensors")
    write_dump(Dump({k: v * 2 for k, v in values.items()}, meta), folder / "cand.safetensors")
    return folder / "ref.safetensors", folder / "cand.safetensors"


def assert_safe(text: str) -> None:
    lines = text.splitlines()
    assert not any(line.startswith("worst=0.00e+00") for line in lines), text
    assert "\x1b" not in text and "\u202e" not in text


def test_metadata_cannot_forge_a_report_line_or_reach_the_terminal(tmp_path):
    reference, candidate = hostile_pair(tmp_path)
    for command in ("compare", "trace"):
        proc = pita(command, reference, candidate)
        assert proc.returncode == 1
        assert_safe(proc.stdout)
        data = json.loads(pita(command, reference, candidate, "--format", "json").stdout)
        if command == "compare":
            assert FORGED in data["reference"] and ESCAPE in data["reference"]  # the JSON keeps the raw values
    result = compare_dumps(read_dump(reference), read_dump(candidate), Tolerance.from_options())
    assert_safe(render_text(result))
    assert_safe(render_trace_text(trace_dumps(read_dump(reference), read_dump(candidate))))


def test_a_message_quoting_a_file_value_reaches_stderr_escaped(tmp_path):
    reference, _ = hostile_pair(tmp_path, input_sha256=f"{ESCAPE}{FORGED}")
    write_dump(Dump({"param/fc.weight": np.float32([[0.1, 0.2]])}, {"recording": "pita-record/1", "input_sha256": "0" * 64}),
               tmp_path / "other.safetensors")
    for command in ("compare", "trace"):
        line = one_error_line(pita(command, reference, tmp_path / "other.safetensors"))
        assert "input hashes differ" in line and "\x1b" not in line


# --- the JSON, in pieces ----------------------------------------------------------------------


def test_the_json_in_pieces_is_byte_for_byte_render_json():
    reference = Dump({"a": np.float32([1, np.nan, 3]), "b": np.arange(6, dtype=np.float32).reshape(2, 3), "i": np.arange(3),
                      "m": np.ones(2)}, {"framework": FORGED})
    candidate = Dump({"a": np.float32([1, np.inf, 3.5]), "b": np.arange(6, dtype=np.float32).reshape(2, 3) * 4, "i": np.arange(3) + 1,
                      "x": np.ones(1)})
    for distributions in (False, True):
        result = compare_dumps(reference, candidate, Tolerance.from_options(), distributions=distributions)
        assert "".join(comparison_chunks(result)) == render_json(result)
    empty = compare_dumps(Dump({}), Dump({}), Tolerance.from_options())
    assert "".join(comparison_chunks(empty)) == render_json(empty)
    for data in ({}, {"a": []}, {"a": {}}, {"a": [1, {"b": [float("inf")]}], "c": "x\ny", "d": np.int64(3)}):
        assert "".join(json_chunks(data)) == json_text(data)


# --- memory -------------------------------------------------------------------------------------

MEMORY_BOUND_MB = 400
# VmHWM is this process's own peak: ru_maxrss would keep the peak of the process that forked it
# (the kernel carries it across exec), which inside a long pytest run is pytest's.
PEAK_RSS = """
import re, sys
from pita.cli import main
code = main(sys.argv[1:])
peak_kb = int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())[1])
print(f"peak {peak_kb // 1024} MB", file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.integration  # about a minute on two cores
def test_json_histogram_and_html_for_100000_tensors_stay_under_400_mb(tmp_path):
    tensors = {f"t{k:06d}": np.float32([k]) for k in range(100_000)}  # the most a dump may hold
    write_dump(Dump(tensors), tmp_path / "ref.safetensors")
    write_dump(Dump(tensors), tmp_path / "cand.safetensors")
    args = ["compare", "ref.safetensors", "cand.safetensors", "--html", "page.html", "--json", "result.json", "--format", "json"]
    with open(tmp_path / "stdout.json", "w") as stdout:
        proc = subprocess.run([sys.executable, "-c", PEAK_RSS, *args], cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    peak = int(proc.stderr.split()[-2])
    assert peak < MEMORY_BOUND_MB, f"peak RSS {peak} MB"
    assert (tmp_path / "stdout.json").read_bytes() == (tmp_path / "result.json").read_bytes()
    assert len(json.loads((tmp_path / "result.json").read_text())["tensors"]) == 100_000
    page = (tmp_path / "page.html").read_text()
    assert (tmp_path / "page.html").stat().st_size < 10 << 20 and "this page shows 2000 of them" in page
