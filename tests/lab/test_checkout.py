"""The lab outside a source checkout: one clear line and exit 2, from each of its commands.

A lab installed from a wheel finds no checkout above its package; `_CHECKOUT` pointed at an
empty folder stands in for that."""

import pytest

import pita.cli
import pita_lab
from conftest import ROOT
from pita.errors import UsageError


def test_in_the_checkout_the_lab_finds_it():
    assert pita_lab.repo_root() == ROOT


@pytest.mark.parametrize("present, absent", [((), "Cargo.toml or experiments/"), (("Cargo.toml",), "experiments/"),
                                             (("experiments",), "Cargo.toml")])
def test_outside_a_checkout_repo_root_says_what_is_missing_and_what_to_do(tmp_path, monkeypatch, present, absent):
    for name in present:
        (tmp_path / name).mkdir() if name == "experiments" else (tmp_path / name).write_text("")
    monkeypatch.setattr(pita_lab, "_CHECKOUT", tmp_path)
    with pytest.raises(UsageError) as raised:
        pita_lab.repo_root()
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("pita's lab runs only from a source checkout")
    assert f"{tmp_path} is not one (no {absent})" in message
    assert "clone the repository and run scripts/setup" in message and "pita compare" in message


@pytest.mark.parametrize("argv", [["run", "p12"], ["run", "--all"], ["list"], ["list", "--format", "json"],
                                  ["book", "check"], ["book", "build", "p12"]])
def test_every_lab_command_outside_a_checkout_answers_with_one_line_and_exit_2(tmp_path, monkeypatch, capsys, argv):
    monkeypatch.setattr(pita_lab, "_CHECKOUT", tmp_path)
    assert pita.cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.startswith("error: pita's lab runs only from a source checkout") and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # and wrote nothing
