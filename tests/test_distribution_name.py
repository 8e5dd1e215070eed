"""A name of our own: the library is distributed as pita-parity (`pita` on the package index is a
transcript annotation tool that also installs a package and a command named `pita`), the lab as
pita-lab, pinned to the library by that name. `pita --version` names the distribution, and names
any other one installing the package `pita` beside it (ARCHITECTURE.md, "A name of our own")."""

import importlib.metadata
import os
import subprocess
import sys
import tomllib

import pita
from conftest import ROOT
from conftest import pita as run_pita
from pita.cli import DISTRIBUTION


def test_the_manifests_use_our_names():
    library = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lab = tomllib.loads((ROOT / "lab" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert (library["name"], library["version"], library["scripts"]) == (DISTRIBUTION, pita.__version__, {"pita": "pita.cli:main"})
    assert lab["name"] == "pita-lab" and f"{DISTRIBUTION}=={pita.__version__}" in lab["dependencies"]
    assert not [d for d in lab["dependencies"] if d.split("=")[0].strip() == "pita"]


def test_the_package_pita_comes_from_our_distribution_here():
    assert importlib.metadata.packages_distributions()["pita"] == [DISTRIBUTION]
    assert importlib.metadata.version(DISTRIBUTION) == pita.__version__


def test_version_names_the_distribution():
    proc = run_pita("--version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{DISTRIBUTION} {pita.__version__}\n", "")


def test_version_names_another_distribution_installing_pita(tmp_path):
    """The other project's metadata as pip leaves it (it installs `pita/` and a `pita` script)."""
    info = tmp_path / "pita-1.76.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pita\nVersion: 1.76\n", encoding="utf-8")
    (info / "top_level.txt").write_text("pita\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "pita", "--version"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, f"{DISTRIBUTION} {pita.__version__}\n")
    assert proc.stderr == (f"pita: warning: the distribution 'pita' 1.76 also installs the package `pita` here, and the two overwrite "
                           f"each other's files: uninstall both, then install {DISTRIBUTION} again\n")


def test_version_to_a_full_stdout_is_one_line_and_exit_2():
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "pita", "--version"], cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
