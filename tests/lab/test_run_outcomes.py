"""A broken experiment is reported as broken and the others go on (no cargo needed here)."""

import pytest

import pita.cli
from conftest import ROOT
from pita.errors import UsageError
from pita_lab.commands import Checked, summary_table
from pita_lab.errors import BrokenExperiment, reported
from pita_lab.experiment import Accepts, Experiment, Matches
from pita_lab.run import Outcome, run_one


def experiment(**changes) -> Experiment:
    fields = dict(
        id="p99", title="a broken experiment", mainline="loss", kind="silent",
        folder="experiments/p99-does-not-exist",
        torch_variants=("ref",), burn_variants=(), comparisons=(("torch-ref", "torch-ref"),),
        sources=(), claims=(Accepts("runs", "", "torch", "ref"), Matches("m", "", "torch-ref", "torch-ref")),
    )
    return Experiment(**{**fields, **changes})


def test_an_unbuilt_burn_program_makes_the_experiment_broken(tmp_path):
    outcome = run_one(experiment(), ROOT, tmp_path / "p99", unbuilt={"p99-does-not-exist"})
    assert outcome.record is None and not outcome.ok
    assert "experiments/p99-does-not-exist/burn.rs does not build" in outcome.broken


def test_a_comparison_that_cannot_run_makes_the_experiment_broken(tmp_path):
    outcome = run_one(experiment(), ROOT, tmp_path / "p99", unbuilt=set())
    assert outcome.record is None and "could not run" in outcome.broken
    assert str(ROOT) not in outcome.broken


def test_without_comparisons_the_claims_fail_and_are_recorded(tmp_path):
    outcome = run_one(experiment(comparisons=()), ROOT, tmp_path / "p99", unbuilt=set())
    assert outcome.record is not None and not outcome.ok
    assert [c.ok for c in outcome.record.claims] == [False, False]
    assert (tmp_path / "p99" / "record.json").exists()


def test_the_summary_names_broken_and_failing_experiments(tmp_path):
    broken = Outcome("p98", broken="cargo build failed")
    failing = run_one(experiment(comparisons=()), ROOT, tmp_path / "p99", unbuilt=set())
    table = summary_table([Checked(broken, None), Checked(failing, None)])
    assert "p98         -       BROKEN  cargo build failed" in table
    assert "p99         0/2     FAIL" in table
    assert table.splitlines()[-1] == "0/2 experiments hold; failing: p98, p99"


def test_the_command_line_says_a_broken_experiment_in_one_line_and_exits_2():
    def broken_command(args) -> int:
        raise BrokenExperiment("experiments/p99-x/chapter.md.j2: no snippet marker 'book:begin a'")

    with pytest.raises(UsageError, match="^experiments/p99-x/chapter.md.j2: no snippet marker 'book:begin a'$"):
        reported(broken_command)(None)
    assert reported(lambda args: 7)(None) == 7


def test_a_broken_experiment_folder_is_one_line_and_exit_2_from_the_command_line(tmp_path, monkeypatch, capsys):
    def refused(experiment_id):
        raise BrokenExperiment(f"experiments/{experiment_id}-x/experiment.py defines no EXPERIMENT = Experiment(...)")

    monkeypatch.setattr("pita_lab.catalog.get", refused)
    assert pita.cli.main(["run", "p12", "--out", str(tmp_path)]) == 2
    _, err = capsys.readouterr()
    assert err == "error: experiments/p12-x/experiment.py defines no EXPERIMENT = Experiment(...)\n"
