"""Verdicts say what was used and never pass vacuously (issue 17): the tolerance a verdict shows is
the one each dtype pair was judged by, nothing compared is never OK, any rank the dump format
allows is diagnosed, NaN against NaN is not called infinite, names that differ only in Unicode
normalisation are told apart."""

import json
import math
import re

import numpy as np
import pytest

from conftest import f32, pita
from pita.compare import ComparisonResult, compare_dumps
from pita.dtypes import BF16, DTYPES
from pita.dump import Dump, write_dump
from pita.recording import RECORDING
from pita.report import render_text
from pita.tolerance import Tolerance
from pita.trace import TraceResult, render_trace_text, trace_dumps

FLOATS = ("F16", "BF16", "F32", "F64")
PAIRS = [(r, c) for r in FLOATS for c in FLOATS] + [("I64", "I64"), ("I64", "F32"), ("F32", "I64"), ("BOOL", "BOOL")]
OPTIONS = [(None, None), (0.02, None), (None, 0.03), (0.002, 0.01)]  # (atol, rtol); (None, None): the dtypes' defaults


# --- values on either side of a tolerance, in any dtype ------------------------------------------


def representable(dtype: str, values: list[float]) -> np.ndarray:
    if dtype == "BF16":
        bits = np.asarray(values, np.float32).view(np.uint32)
        assert not np.any(bits & 0xFFFF), "not a bfloat16 value"
        return (bits >> 16).astype(np.uint16).view(BF16)
    return np.asarray(values).astype(DTYPES[dtype])


def around(dtype: str, target: float) -> tuple[float, float]:
    """The largest value of `dtype` at most `target`, and the smallest above it (target >= 1)."""
    if dtype == "I64":
        return float(math.floor(target)), float(math.floor(target) + 1)
    if dtype == "BF16":  # 1 + k/128 up to 2
        k = math.floor((target - 1) * 128)
        return 1 + k / 128, 1 + (k + 1) / 128
    kind = DTYPES[dtype].type
    x = kind(target)
    low = x if float(x) <= target else np.nextafter(x, kind(-np.inf))
    return float(low), float(np.nextafter(low, kind(np.inf)))


def pair_tensors(reference: str, candidate: str, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Reference [1, 1, 1]; candidate [1, just within `bound` of 1, just beyond it]: exactly one
    element (the last) fails if, and only if, `bound` is the tolerance applied at |reference| = 1."""
    if reference == candidate == "BOOL":
        return np.array([True, True, True]), np.array([True, True, False])
    within, _ = around(candidate, 1 + bound * (1 - 1e-9))
    _, beyond = around(candidate, 1 + bound * (1 + 1e-9))
    return representable(reference, [1.0, 1.0, 1.0]), representable(candidate, [1.0, within, beyond])


def label(reference: str, candidate: str) -> str:
    return reference if reference == candidate else f"{reference}/{candidate}"


# --- reading the shown tolerance back ------------------------------------------------------------


def parse_short(text: str) -> float:
    """`1e-06`, `1e-05+0.016*|reference|`, `exact`: the bound at |reference| = 1."""
    if text == "exact":
        return 0.0
    match = re.fullmatch(r"([^+*]+)(?:\+([^*]+)\*\|reference\|)?", text)
    assert match, text
    return float(match[1]) + float(match[2] or 0)


def shown_bound(tol: str, pair_label: str) -> float:
    """The bound a `tol=` text shows for one dtype pair: the single tolerance, or its entry."""
    if ":" not in tol:
        return parse_short(tol)
    entries = dict(entry.split(":", 1) for entry in tol.split("; "))
    return parse_short(entries[pair_label])


def line_bound(line: str, pair_label: str) -> float:
    """The bound the `tolerance:` line shows for one dtype pair."""
    if ", by dtype: " not in line:
        match = re.search(r"\(atol=([^,]+), rtol=([^)]+)\)", line)
        return float(match[1]) + float(match[2])
    entries = line.split(", by dtype: ")[1].split(". ")[0].split("; ")
    for entry in entries:
        name, _, bounds = entry.partition(" ")
        if name == pair_label:
            if bounds == "exact":
                return 0.0
            values = dict(part.split("=") for part in bounds.split())
            return float(values["atol"]) + float(values["rtol"])
    raise AssertionError(f"{pair_label} not in {line!r}")


def recording(tensors: dict) -> Dump:
    return Dump(tensors, {"recording": RECORDING}, source="run")


@pytest.mark.parametrize("atol, rtol", OPTIONS)
@pytest.mark.parametrize("reference, candidate", PAIRS, ids=lambda p: p)
def test_the_shown_tolerance_is_the_one_applied(reference, candidate, atol, rtol):
    """For every dtype pair, with and without --atol/--rtol: the pair's tensor, built to pass
    at the shown bound and fail just beyond it, fails exactly at its last element; the JSON
    carries the same bound and reads back."""
    tolerance = Tolerance.from_options(atol, rtol)
    name = label(reference, candidate)
    # What compare shows for this pair (it depends on the dtypes only); then hold the verdict to it.
    ours, theirs = pair_tensors(reference, candidate, 0.0)
    same = f32([0.5, 0.25])
    result = compare_dumps(Dump({"t": ours, "u": same}), Dump({"t": theirs, "u": same}), tolerance)
    text = render_text(result).splitlines()
    tol = re.fullmatch(r"worst=\S+ tol=(.*) (OK|MISMATCH)", text[-1])[1]
    bound = shown_bound(tol, name)
    assert line_bound(next(line for line in text if line.startswith("tolerance: ")), name) == bound
    if not (reference in FLOATS and candidate in FLOATS):
        assert f"{name}:exact" in tol.split("; ")  # integers and bools compare exactly, whatever the options
    shown_ours, shown_theirs = pair_tensors(reference, candidate, bound)
    checked = compare_dumps(Dump({"t": shown_ours, "u": same}), Dump({"t": shown_theirs, "u": same}), tolerance)
    by_name = {t.name: t for t in checked.tensors}
    assert by_name["t"].mismatched == 1 and by_name["t"].examples[0]["index"] == [2], (tol, by_name["t"])
    assert render_text(checked).splitlines()[-1].endswith(f"tol={tol} MISMATCH")
    # the JSON carries each applied tolerance by dtype pair, and reads back
    data = checked.to_dict()
    applied = {a["dtypes"]: a for a in data["applied"]}
    entry = applied[name]
    applied_bound = 0.0 if entry["source"] == "exact" else entry["tolerance"]["atol"] + entry["tolerance"]["rtol"]
    assert entry["tensors"] == (2 if name == "F32" else 1) and applied_bound == bound
    again = ComparisonResult.from_dict(json.loads(json.dumps(data)))
    assert again.applied == checked.applied and render_text(again) == render_text(checked)
    # trace: the same tensor as an activation, the same tolerance shown and applied
    traced = trace_dumps(recording({"param/w": same, "act/m": shown_ours}), recording({"param/w": same, "act/m": shown_theirs}), tolerance)
    lines = render_trace_text(traced).splitlines()
    assert lines[-1] == f"tol={tol} MISMATCH" and line_bound(lines[-2], name) == bound
    assert traced.first_divergence.name == "act/m" and traced.first_divergence.tensor.mismatched == 1
    again = TraceResult.from_dict(json.loads(json.dumps(traced.to_dict())))
    assert again.applied == traced.applied and render_trace_text(again) == render_trace_text(traced)


def test_float32_alone_keeps_the_line_it_always_had():
    same = Dump({"w": f32([1.0, 2.0])})
    text = render_text(compare_dumps(same, same)).splitlines()
    assert text[-1] == "worst=0.00e+00 tol=1e-06 OK"
    assert text[2] == ("tolerance: |candidate - reference| <= atol + rtol*|reference| (atol=1e-06, rtol=0); "
                       "NaN never passes; an inf passes only against the same inf")


def test_a_bf16_candidate_names_its_tolerance_in_compare_and_trace(tmp_path):
    """The issue's case through the CLI: a float32 reference, a bf16 candidate."""
    values = np.linspace(-2, 2, 50).astype(np.float32)
    rounded = (values.view(np.uint32) >> 16).astype(np.uint16).view(BF16)
    write_dump(recording({"param/w": values, "act/m": values}), tmp_path / "r.safetensors")
    write_dump(recording({"param/w": rounded, "act/m": values}), tmp_path / "c.safetensors")
    compared = pita("compare", tmp_path / "r.safetensors", tmp_path / "c.safetensors")
    assert compared.returncode == 0, compared.stderr
    assert compared.stdout.splitlines()[-1].endswith(" tol=F32:1e-06; F32/BF16:1e-05+0.016*|reference| OK")
    traced = pita("trace", tmp_path / "r.safetensors", tmp_path / "c.safetensors", "--format", "json")
    assert traced.returncode == 0, traced.stderr
    data = json.loads(traced.stdout)
    assert {(a["dtypes"], a["source"], a["tolerance"]["rtol"]) for a in data["applied"]} == {("F32", "comparison", 0.0), ("F32/BF16", "dtype", 0.016)}
    text = pita("trace", tmp_path / "r.safetensors", tmp_path / "c.safetensors").stdout.splitlines()
    assert text[-1] == "tol=F32:1e-06; F32/BF16:1e-05+0.016*|reference| OK"
    assert any(line.startswith("note: 1 tensor(s) have different dtypes on the two sides (first param/w: reference F32, candidate BF16)")
               for line in text)


# --- nothing passes vacuously --------------------------------------------------------------------


def test_compare_with_nothing_compared_is_not_ok(tmp_path):
    write_dump(Dump({}), tmp_path / "empty1.safetensors")
    write_dump(Dump({}), tmp_path / "empty2.safetensors")
    write_dump(Dump({"a": f32([1.0])}), tmp_path / "a.safetensors")
    write_dump(Dump({"b": f32([1.0])}), tmp_path / "b.safetensors")
    empty = pita("compare", tmp_path / "empty1.safetensors", tmp_path / "empty2.safetensors")
    assert empty.returncode == 1 and not empty.stderr
    assert empty.stdout.splitlines()[-1] == "nothing compared: no tensor is in both dumps (reference: 0 tensor(s), candidate: 0)"
    unpaired = pita("compare", tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert unpaired.returncode == 1
    assert unpaired.stdout.splitlines()[-1] == "nothing compared: no tensor is in both dumps (reference: 1 tensor(s), candidate: 1)"
    as_json = pita("compare", tmp_path / "empty1.safetensors", tmp_path / "empty2.safetensors", "--format", "json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["ok"] is False


def _trace(tmp_path, tensors: dict, *options):
    write_dump(recording(tensors), tmp_path / "ref.safetensors")
    write_dump(recording(tensors), tmp_path / "cand.safetensors")
    return pita("trace", tmp_path / "ref.safetensors", tmp_path / "cand.safetensors", *options)


def test_trace_of_recordings_without_tensors_is_not_ok(tmp_path):
    proc = _trace(tmp_path, {})
    assert proc.returncode == 1 and not proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "first divergence: none"
    assert lines[1].startswith("verdict: nothing compared: the recordings hold no tensor")
    assert lines[-1] == "tol=1e-06 NOT CHECKED"
    assert "every phase matched" not in proc.stdout


def test_trace_of_parameters_alone_is_not_ok(tmp_path):
    proc = _trace(tmp_path, {"param/fc.weight": f32([1.0, 2.0]), "param/fc.bias": f32([0.5])})
    assert proc.returncode == 1 and not proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == ("verdict: only the parameters were recorded, and they match: nothing says what the candidate computes "
                        "(record activations, the loss, gradients or steps, docs/recording.md)")
    assert lines[-1] == "tol=1e-06 NOT CHECKED"
    data = json.loads(_trace(tmp_path, {"param/fc.weight": f32([1.0])}, "--format", "json").stdout)
    assert data["ok"] is False and data["first_divergence"] is None


def test_trace_names_the_phases_it_did_not_check(tmp_path):
    proc = _trace(tmp_path, {"param/fc.weight": f32([1.0, 2.0]), "act/fc": f32([3.0])})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "first divergence: none (every phase recorded matched)"
    assert lines[1] == ("verdict: every phase recorded matched (parameters, forward); nothing was recorded in loss, backward, step, "
                        "so the candidate is not checked there")
    assert lines[-1] == "tol=1e-06 OK"


# --- any rank the format allows ------------------------------------------------------------------


@pytest.mark.parametrize("shape, axes", [((1,) * 62 + (2, 2), (62, 63)), ((2,) + (1,) * 62 + (3,), (0, 63))], ids=["square", "shapes-differ"])
def test_a_failing_tensor_of_rank_64_is_diagnosed(tmp_path, shape, axes):
    """64 dimensions, the dump format's limit (docs/dump-format.md): a transposed tensor."""
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1
    write_dump(Dump({"w": values}), tmp_path / "r.safetensors")
    write_dump(Dump({"w": np.ascontiguousarray(np.swapaxes(values, *axes))}), tmp_path / "c.safetensors")
    proc = pita("compare", tmp_path / "r.safetensors", tmp_path / "c.safetensors")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "diagnosis transpose: candidate = reference with axes " + f"{axes[0]} and {axes[1]} swapped" in proc.stdout


# --- NaN against NaN -----------------------------------------------------------------------------


def test_nan_against_nan_is_not_called_infinite(tmp_path):
    write_dump(Dump({"w": f32([np.nan, 1.0]), "v": f32([np.inf, 1.0])}), tmp_path / "r.safetensors")
    write_dump(Dump({"w": f32([np.nan, 1.0]), "v": f32([-np.inf, 1.0])}), tmp_path / "c.safetensors")
    text = pita("compare", tmp_path / "r.safetensors", tmp_path / "c.safetensors")
    assert text.returncode == 1
    assert "w n= 2 max|diff|=nan " in text.stdout and "v n= 2 max|diff|=inf " in text.stdout
    assert text.stdout.splitlines()[-1] == "worst=nan tol=1e-06 MISMATCH"
    data = json.loads(pita("compare", tmp_path / "r.safetensors", tmp_path / "c.safetensors", "--format", "json").stdout)
    by_name = {t["name"]: t for t in data["tensors"]}
    assert by_name["w"]["max_abs_diff"] == "NaN" and by_name["v"]["max_abs_diff"] == "Infinity" and data["worst"] == "NaN"
    passing = pita("compare", tmp_path / "r.safetensors", tmp_path / "r.safetensors", "--equal-nan")
    assert passing.returncode == 0 and passing.stdout.splitlines()[-1] == "worst=0.00e+00 tol=1e-06 OK"


# --- Unicode normalisation -----------------------------------------------------------------------


def test_names_differing_only_in_normalisation_are_told_apart(tmp_path):
    composed, decomposed = "param/caf\u00e9", "param/cafe\u0301"
    write_dump(recording({composed: f32([1.0]), "act/m": f32([1.0])}), tmp_path / "r.safetensors")
    write_dump(recording({decomposed: f32([1.0]), "act/m": f32([1.0])}), tmp_path / "c.safetensors")
    note = ("1 unpaired name(s) differ only in Unicode normalisation (NFC/NFD), so they print alike: "
            "'param/caf\\xe9' (reference) and 'param/cafe\\u0301' (candidate)")
    for command in ("compare", "trace"):
        proc = pita(command, tmp_path / "r.safetensors", tmp_path / "c.safetensors")
        assert proc.returncode == 1
        assert any(line.startswith(f"note: {note}") for line in proc.stdout.splitlines()), proc.stdout
        data = json.loads(pita(command, tmp_path / "r.safetensors", tmp_path / "c.safetensors", "--format", "json").stdout)
        assert any(n.startswith(note) for n in data["notes"])
