"""One feature set for every build (ARCHITECTURE.md, "One feature set"): the cargo commands
`pita run` issues (an experiment's programs, a compile-fail case) build every registry crate as
setup's `cargo build --workspace` does, so burn is compiled once on a fresh machine. The commands
are the lab's own (subprocess.run is wrapped, not replaced), run for real with cargo's JSON
messages, and the file names of the registry crates they build or reuse (cargo's hash of the
features, the dependencies' and the profile is in each name) are held to the workspace build's.
Builds with cargo: seconds when target/ is warm."""

import shutil
import subprocess

import pytest

from conftest import ROOT, built_otherwise, registry_artifacts
from pita_lab import catalog, compile_fail, run

pytestmark = pytest.mark.integration

P12 = "p12-loss-not-reduced"


@pytest.fixture(scope="module")
def workspace_artifacts() -> dict[str, set[str]]:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not on PATH")
    proc = subprocess.run(["cargo", "build", "--workspace", "--locked", "--message-format=json"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return registry_artifacts(proc.stdout)


@pytest.fixture
def cargo_builds(monkeypatch) -> list[subprocess.CompletedProcess]:
    """Every `cargo build` the lab runs from now on, run with JSON messages, kept with its output."""
    real, seen = subprocess.run, []

    def recording(command, *args, **kwargs):
        if list(command[:2]) != ["cargo", "build"]:
            return real(command, *args, **kwargs)
        if "--message-format=json" not in command:
            command = [*command, "--message-format=json"]
        proc = real(command, *args, **{**kwargs, "capture_output": True, "text": True})
        seen.append(proc)
        return proc

    monkeypatch.setattr(subprocess, "run", recording)
    return seen


def test_an_experiments_programs_build_burn_as_the_workspace_does(workspace_artifacts, cargo_builds):
    assert run.build(ROOT, [P12]) == set()
    assert [proc.returncode for proc in cargo_builds] == [0], cargo_builds[-1].stderr[-3000:]
    assert not built_otherwise(registry_artifacts(cargo_builds[0].stdout), workspace_artifacts), cargo_builds[0].args
    assert (ROOT / "target" / "debug" / "p12").is_file()


def test_a_compile_fail_case_builds_burn_as_the_workspace_does(workspace_artifacts, cargo_builds):
    experiment = catalog.get("p12")
    result = compile_fail.check(ROOT, experiment, "ce12", run.Workspace.checkout(ROOT))
    assert result.exit_code != 0 and result.matches_snapshot, result.diagnostic
    assert len(cargo_builds) == 1, [proc.args for proc in cargo_builds]
    assert not built_otherwise(registry_artifacts(cargo_builds[0].stdout), workspace_artifacts), cargo_builds[0].args


def test_an_unknown_crate_is_not_built(cargo_builds, capsys):
    assert run.build(ROOT, ["no-such-crate"]) == {"no-such-crate"}
    assert cargo_builds == [] and "no crate no-such-crate in the cargo workspace" in capsys.readouterr().err
