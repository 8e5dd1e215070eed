"""The peer-agreement suite: PyTorch's and numpy's own closeness tests (tests/peer_cases.py), each
run through the peer and through `pita compare`, and held to docs/peer-agreement.md.

A case agrees when the peer passes exactly where pita says OK (exit 0). Every disagreement is
documented: its case names one of the differences the doc explains. The suite fails when a
disagreement is not documented, when a documented one agrees after all (the doc would be wrong),
when a case's peer does not do what the peer's own test says (the translation would be wrong), or
when the doc's figures are not the ones computed here. The figures are printed in pytest's
terminal summary.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from peer_cases import ALLCLOSE, DIFFERENCES, MAX_ULP, NULP, TORCH, Case, T, numpy_cases, torch_cases

from conftest import pita
from pita.compare import compare_dumps
from pita.dump import Dump, write_dump
from pita.tolerance import Tolerance

DOC = Path(__file__).resolve().parents[1] / "docs" / "peer-agreement.md"

FLOOR = (190, 220)  # issue 17: the agreement may not fall below 190 of 220


@dataclass
class Outcome:
    case: Case
    peer_ok: bool
    pita_ok: bool

    @property
    def agrees(self) -> bool:
        return self.peer_ok == self.pita_ok


def tensors(side) -> dict[str, T]:
    return side if isinstance(side, dict) else {"t": side}


def peer_call(case: Case):
    """The peer's call for this case, ready to run: it returns when the peer passes, and raises
    AssertionError when it does not."""
    from numpy import testing

    if case.peer == TORCH:
        import torch

        as_torch = lambda side: {name: t.torch() for name, t in side.items()} if isinstance(side, dict) else side.torch()
        return partial(torch.testing.assert_close, as_torch(case.candidate), as_torch(case.reference), **case.options)
    if case.peer == ALLCLOSE:  # assert_allclose(actual, desired)
        return partial(testing.assert_allclose, case.candidate.numpy(), case.reference.numpy(), **case.options)
    helper = {MAX_ULP: testing.assert_array_max_ulp, NULP: testing.assert_array_almost_equal_nulp}[case.peer]
    return partial(helper, case.reference.numpy(), case.candidate.numpy(), **case.options)


def run_peer(case: Case) -> bool:
    call = peer_call(case)
    try:
        call()
    except AssertionError:
        return False
    return True


def dumps(case: Case) -> tuple[Dump, Dump]:
    return tuple(Dump(tensors={name: t.numpy() for name, t in tensors(side).items()}, source=which)
                 for side, which in ((case.reference, "reference"), (case.candidate, "candidate")))


def run_pita(case: Case) -> bool:
    reference, candidate = dumps(case)
    return compare_dumps(reference, candidate, Tolerance.from_options(**case.pita_options())).ok


def outcomes_of(cases: list[Case]) -> list[Outcome]:
    return [Outcome(case, run_peer(case), run_pita(case)) for case in cases]


class Summary:
    """A pytest plugin, registered by the fixtures below, that prints the figures at the end."""

    def __init__(self):
        self.outcomes: dict[str, list[Outcome]] = {}

    def pytest_terminal_summary(self, terminalreporter):
        if not self.outcomes:
            return
        everything = [o for group in self.outcomes.values() for o in group]
        parts = ", ".join(f"{group} {agreed(found)} of {len(found)}" for group, found in self.outcomes.items())
        terminalreporter.write_sep("-", "peer agreement")
        differ = [o for o in everything if not o.agrees]
        undocumented = sum(o.case.difference is None for o in differ)
        differences = f"{len(differ)} documented differences" if not undocumented else f"{len(differ)} differences ({undocumented} undocumented)"
        terminalreporter.write_line(f"{agreed(everything)} agree, {differences} of {len(everything)} ({parts})")


def agreed(outcomes: list[Outcome]) -> int:
    return sum(o.agrees for o in outcomes)


@pytest.fixture(scope="module")
def summary(request) -> Summary:
    manager = request.config.pluginmanager
    plugin = manager.get_plugin("pita-peer-agreement")
    if plugin is None:
        plugin = Summary()
        manager.register(plugin, "pita-peer-agreement")
    return plugin


@pytest.fixture(scope="module")
def numpy_outcomes(summary) -> list[Outcome]:
    summary.outcomes["numpy"] = outcomes_of(numpy_cases())
    return summary.outcomes["numpy"]


@pytest.fixture(scope="module")
def torch_outcomes(summary) -> list[Outcome]:
    pytest.importorskip("torch")
    summary.outcomes = {"torch": outcomes_of(torch_cases()), **summary.outcomes}
    return summary.outcomes["torch"]


# --- the checks ------------------------------------------------------------------------------------


def faults(outcomes: list[Outcome]) -> list[str]:
    """Every way the outcomes contradict the table: one line per case."""
    found = []
    for o in outcomes:
        case = o.case
        peer = "passes" if o.peer_ok else "fails"
        verdicts = f"peer {peer}, pita {'OK' if o.pita_ok else 'not OK'}"
        if o.peer_ok != case.expect:
            found.append(f"{case.id}: the peer's own test expects it to {'pass' if case.expect else 'fail'}, but it {peer} (translation wrong?)")
        elif case.difference is not None and case.difference not in DIFFERENCES:
            found.append(f"{case.id}: difference {case.difference!r} is not one of {DIFFERENCES}")
        elif not o.agrees and case.difference is None:
            found.append(f"{case.id}: undocumented disagreement: {verdicts}")
        elif o.agrees and case.difference is not None:
            found.append(f"{case.id}: documented as {case.difference!r} but now agrees ({verdicts}): drop the difference and update docs/peer-agreement.md")
    return found


def figures(outcomes: list[Outcome]) -> tuple[int, int, Counter]:
    """(agree, total, disagreements by difference name)."""
    return agreed(outcomes), len(outcomes), Counter(o.case.difference for o in outcomes if not o.agrees)


def check(outcomes: list[Outcome]) -> None:
    problems = faults(outcomes)
    agree, total, by_name = figures(outcomes)
    assert not problems, f"{agree} agree, {total - agree} differ of {total} ({dict(by_name)}):\n" + "\n".join(problems)


def test_numpy_cases_agree_or_are_documented(numpy_outcomes):
    check(numpy_outcomes)


def test_torch_cases_agree_or_are_documented(torch_outcomes):
    check(torch_outcomes)


def test_the_case_ids_are_unique():
    cases = numpy_cases() + torch_cases()  # building the torch cases needs no torch: running them does
    assert len({c.id for c in cases}) == len(cases)


def test_enough_cases_cover_every_topic(numpy_outcomes, torch_outcomes):
    everything = numpy_outcomes + torch_outcomes
    assert len(everything) >= 200
    dtypes = {t.dtype for o in everything for side in (o.case.reference, o.case.candidate) for t in tensors(side).values()}
    assert {"F16", "BF16", "F32", "F64", "I64", "U8", "BOOL"} <= dtypes
    assert {o.case.peer for o in everything} == {TORCH, ALLCLOSE, MAX_ULP, NULP}


def test_agreement_stays_above_the_issues_floor(numpy_outcomes, torch_outcomes):
    agree, total, _ = figures(numpy_outcomes + torch_outcomes)
    assert agree * FLOOR[1] >= FLOOR[0] * total, f"{agree} of {total} agree, below issue 17's {FLOOR[0]} of {FLOOR[1]}"


# --- the doc's figures -------------------------------------------------------------------------------

ROW = re.compile(r"^\| `(?P<name>[a-z0-9-]+)` \|.*\| (?P<torch>\d+) \| (?P<numpy>\d+) \|$", re.M)
HEADLINE = re.compile(r"\*\*(?P<agree>\d+) of (?P<total>\d+) cases agree\*\*")
PER_PEER = re.compile(r"(?P<peer>torch|numpy): (?P<agree>\d+) of (?P<total>\d+) agree")


def doc_figures(text: str) -> dict:
    rows = {m["name"]: {"torch": int(m["torch"]), "numpy": int(m["numpy"])} for m in ROW.finditer(text)}
    headline = HEADLINE.search(text)
    per_peer = {m["peer"]: (int(m["agree"]), int(m["total"])) for m in PER_PEER.finditer(text)}
    return {"rows": rows, "headline": (int(headline["agree"]), int(headline["total"])) if headline else None, "per_peer": per_peer}


def test_the_doc_explains_each_difference_once():
    text = DOC.read_text()
    names = [m["name"] for m in ROW.finditer(text)]
    assert sorted(names) == sorted(DIFFERENCES), "docs/peer-agreement.md's table must have one row per name of DIFFERENCES"


def test_the_docs_numpy_figures_are_the_computed_ones(numpy_outcomes):
    shown = doc_figures(DOC.read_text())
    agree, total, by_name = figures(numpy_outcomes)
    assert shown["per_peer"].get("numpy") == (agree, total)
    assert {name: row["numpy"] for name, row in shown["rows"].items()} == {name: by_name.get(name, 0) for name in DIFFERENCES}


def test_the_docs_torch_figures_and_total_are_the_computed_ones(numpy_outcomes, torch_outcomes):
    shown = doc_figures(DOC.read_text())
    agree, total, by_name = figures(torch_outcomes)
    assert shown["per_peer"].get("torch") == (agree, total)
    assert {name: row["torch"] for name, row in shown["rows"].items()} == {name: by_name.get(name, 0) for name in DIFFERENCES}
    assert shown["headline"] == figures(numpy_outcomes + torch_outcomes)[:2]


def test_the_doc_parser_reads_figures():
    """The checks above compare what this parser reads: it must read a table and a headline."""
    text = ("**7 of 9 cases agree** (torch: 3 of 4 agree; numpy: 4 of 5 agree)\n\n"
            "| difference | why | torch | numpy |\n|---|---|---|---|\n| `nan-policy` | why | 1 | 0 |\n| `dtype-note` | x | 0 | 1 |\n")
    assert doc_figures(text) == {"rows": {"nan-policy": {"torch": 1, "numpy": 0}, "dtype-note": {"torch": 0, "numpy": 1}},
                                 "headline": (7, 9), "per_peer": {"torch": (3, 4), "numpy": (4, 5)}}


def test_the_checks_catch_each_kind_of_fault():
    """A fault of each kind, planted: the suite must report it."""
    case = lambda difference=None, expect=True: Case("planted/0", ALLCLOSE, T([1.0], "F64"), T([1.0], "F64"), expect, {}, difference)
    assert faults([Outcome(case(), True, True)]) == []
    assert "undocumented disagreement" in faults([Outcome(case(), True, False)])[0]
    assert "now agrees" in faults([Outcome(case("nan-policy"), True, True)])[0]
    assert "not one of" in faults([Outcome(case("no-such-difference"), True, False)])[0]
    assert "translation wrong" in faults([Outcome(case(expect=False), True, True)])[0]


# --- the real command line ---------------------------------------------------------------------------

CLI_CASES = ("test_simple/0", "test_simple/1", "test_simple/8", "test_strict/0", "test_equal_nan/0", "test_not_equal_nan/0",
             "test_float32_pass/0", "test_float32_fail/0", "test_float32_ignore_nan/0", "broadcasting/1")


def cli_flags(case: Case) -> list[str]:
    flags = []
    for key, value in case.pita_options().items():
        if key == "equal_nan":
            flags += ["--equal-nan"] if value else []
        else:
            flags += [f"--{key}", repr(value)]
    return flags


def test_the_command_line_decides_as_the_library(numpy_outcomes, tmp_path):
    chosen = {o.case.id: o for o in numpy_outcomes if o.case.id in CLI_CASES}
    assert sorted(chosen) == sorted(CLI_CASES)
    assert {o.agrees for o in chosen.values()} == {True, False}, "the command line should see agreements and documented differences"
    for name, o in chosen.items():
        reference, candidate = dumps(o.case)
        paths = [write_dump(dump, tmp_path / f"{name.replace('/', '-')}-{dump.source}.safetensors") for dump in (reference, candidate)]
        proc = pita("compare", *paths, *cli_flags(o.case))
        assert proc.returncode == (0 if o.pita_ok else 1), f"{name}: exit {proc.returncode}, the library said ok={o.pita_ok}\n{proc.stdout}{proc.stderr}"
        assert (proc.returncode == 0) == o.peer_ok or o.case.difference, f"{name}: the command line disagrees with the peer, undocumented"


def test_flags_spell_the_options():
    case = Case("x/0", ALLCLOSE, T([1.0], "F64"), T([1.0], "F64"), True, {"atol": 0.5, "equal_nan": False})
    assert cli_flags(case) == ["--atol", "0.5", "--rtol", "1e-07"]
    assert cli_flags(Case("y/0", MAX_ULP, T([1.0]), T([1.0]), True, {"maxulp": 3.0})) == ["--ulp", "3", "--atol", "0.0", "--rtol", "0.0"]
