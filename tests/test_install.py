"""The library as a user gets it: its wheel, built from this checkout, installed into a clean
virtual environment with numpy and safetensors only, compares dumps there; torch, the compiled
kernel (pita_kernel), jinja2 and the lab are absent, and the lab's commands say in one line that they need a checkout. Then
the lab's wheel on top, still outside any checkout: its commands say the same.

Offline: the wheels build without build isolation, and their dependencies come from a local
wheelhouse: $PITA_WHEELHOUSE where set (numpy, safetensors, jinja2 and markupsafe), else wheels
repacked from the distributions this Python has installed (the very versions the rest of the
suite tests). Only where neither works are they downloaded from the package index,
time-bounded; the test skips if that fails too."""

import base64
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT
from pita.cli import DISTRIBUTION

pytestmark = pytest.mark.integration

DEPENDENCIES = ("numpy", "safetensors")
LAB_DEPENDENCIES = ("jinja2", "markupsafe", "pyyaml")
ABSENT = ("torch", "pita_kernel", "jinja2", "pita_lab")
# Variables that would let the clean environment see other packages, or change pita's path.
LEAKY = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV", "PITA_KERNEL")


def run(*command, cwd, env=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def build_wheel(tmp: Path, project: Path, package: str, distribution: str) -> Path:
    """The wheel of `project` (a folder with a pyproject.toml) from a copy of what makes it: its
    pyproject.toml, its package folder and any README or LICENSE beside them. So the checkout
    gets no build/ folder, and the wheel can hold nothing else. `distribution`: the wheel's name."""
    source = tmp / f"source-{package}"
    shutil.copytree(project / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in [project / "pyproject.toml", *project.glob("README*"), *project.glob("LICEN[CS]E*")]:
        shutil.copy2(path, source / path.name)
    wheel = ("wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", tmp / "dist", source)
    # Offline with the setuptools installed here; where it is missing or too old to build wheels
    # by itself (before 70.1, without the `wheel` package), pip fetches one into an isolated build.
    proc = run(sys.executable, "-m", "pip", *wheel, "--no-build-isolation", "--no-index", cwd=tmp, timeout=180)
    if proc.returncode != 0:
        offline = proc.stdout + proc.stderr
        proc = run(sys.executable, "-m", "pip", *wheel, cwd=tmp, timeout=300)
        assert proc.returncode == 0, f"offline:\n{offline}\nisolated:\n{proc.stdout + proc.stderr}"
    [built] = (tmp / "dist").glob(f"{distribution.replace('-', '_')}-*.whl")
    return built


def wheel_from_installed(name: str, out: Path) -> Path:
    """A wheel of an installed distribution, from the files its RECORD lists: the installer's
    own files, bytecode and scripts (pip writes those anew) left out, RECORD written afresh."""
    dist = importlib.metadata.distribution(name)
    site = Path(dist.locate_file(""))
    records = [file for file in dist.files or () if file.name == "RECORD" and file.parent.suffix == ".dist-info"]
    if len(records) != 1 or not (site / records[0].parent / "WHEEL").is_file():
        raise FileNotFoundError(f"{name}: installed without a RECORD or WHEEL file")
    info = site / records[0].parent
    tags = [line.split(":", 1)[1].strip() for line in (info / "WHEEL").read_text().splitlines() if line.startswith("Tag:")]
    if not tags:
        raise FileNotFoundError(f"{name}: its WHEEL file names no tag")
    skipped = {f"{info.name}/{file}" for file in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")}
    wheel = out / f"{info.name.removesuffix('.dist-info')}-{tags[0]}.whl"
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for file in dist.files:
            path = file.as_posix()
            if path.startswith("..") or "__pycache__" in file.parts or path in skipped:
                continue
            data = (site / file).read_bytes()
            archive.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        archive.writestr(f"{info.name}/RECORD", "\n".join([*record, f"{info.name}/RECORD,,"]) + "\n")
    return wheel


def wheelhouse(tmp: Path, names: tuple[str, ...]) -> Path:
    """A folder of wheels for `names`: $PITA_WHEELHOUSE, else repacked from this Python's
    installed distributions, else downloaded from the package index (or the test skips)."""
    if os.environ.get("PITA_WHEELHOUSE"):
        return Path(os.environ["PITA_WHEELHOUSE"])
    house = tmp / "wheelhouse"
    house.mkdir(exist_ok=True)
    try:
        for name in names:
            wheel_from_installed(name, house)
        return house
    except (OSError, importlib.metadata.PackageNotFoundError):
        pass  # not installed from a wheel (a system package, say): download them instead
    proc = run(sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--disable-pip-version-check", "-q",
               "-d", house, *names, cwd=tmp, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"{', '.join(names)}: neither installed here from wheels nor downloadable: {proc.stderr.strip()[-300:]}")
    return house


# Run in the clean environment: what is importable there, and where pita comes from.
PROBE = """
import importlib, importlib.metadata as md, json, sys
absent = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
        absent[name] = "imported"
    except ModuleNotFoundError as error:
        absent[name] = error.name
import pkgutil
import pita, pita.stats
# Every module but those loaded only when asked for (`python -m pita`, the plugin: below).
for module in pkgutil.walk_packages(pita.__path__, prefix="pita."):
    if module.name not in ("pita.__main__", "pita.pytest_plugin"):
        importlib.import_module(module.name)
pita.assert_parity
try:
    import pita.pytest_plugin
    plugin = "imported"
except ModuleNotFoundError as error:
    plugin = error.name
print(json.dumps({
    "absent": absent, "pita": pita.__file__, "kernel": pita.stats._kernel() is not None, "plugin_import": plugin,
    "pytest11": {e.name: e.value for e in md.entry_points(group="pytest11")},
    "scripts": {e.name: e.value for e in md.entry_points(group="console_scripts") if e.name == "pita"},
    "provides_pita": md.packages_distributions().get("pita"),
    "installed": sorted(d.metadata["Name"].lower() for d in md.distributions()),
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in sys.argv[1:]),
}))
"""

# Run in the clean environment: three dumps with the library's own writer. One tensor spans
# several of numpy's chunks; without the compiled kernel numpy's path measures every pair here.
WRITE = """
import numpy as np
from pita.dump import Dump, write_dump
rng = np.random.default_rng(0)
reference = rng.standard_normal((1 << 20) + 99).astype(np.float32)
near = reference.copy()
near[::997] = np.nextafter(near[::997], np.float32(np.inf))
far = near.copy()
far[12345] += np.float32(0.5)
meta = {"input_sha256": "ab"}
bias = np.float32([0.1, 0.2])
for name, w in (("reference", reference), ("near", near), ("far", far)):
    write_dump(Dump({"w": w, "b": bias}, {**meta, "variant": name}), f"{name}.safetensors")
"""


def test_the_library_wheel_installs_and_compares_in_a_clean_venv(tmp_path):
    wheel = build_wheel(tmp_path, ROOT, "pita", DISTRIBUTION)
    assert wheel.name.startswith("pita_parity-0.1.0-"), wheel.name  # `pita` on the package index is another project
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"pita", wheel.name.split("-py3")[0] + ".dist-info"}, names
    assert "pita/diagnose/__init__.py" in names and "pita/cli.py" in names and "pita/torch_dump.py" in names
    assert not [name for name in names if name.endswith((".j2", ".nbi", ".nbc", ".pyc"))]
    # What the library knows from the catalog ships as data: trace's settings table, the signatures, lint's rules.
    assert {f"pita/catalog/{name}.json" for name in ("settings", "signatures", "lint")} <= set(names)

    venv = tmp_path / "venv"
    proc = run(sys.executable, "-m", "venv", venv, cwd=tmp_path)  # no system site packages
    assert proc.returncode == 0, proc.stderr
    python, pita = venv / "bin" / "python", venv / "bin" / "pita"
    env = {key: value for key, value in os.environ.items() if key not in LEAKY and not key.startswith("PIP_")}
    env["PYTHONNOUSERSITE"] = "1"
    house = wheelhouse(tmp_path, DEPENDENCIES)
    proc = run(python, "-m", "pip", "install", "--no-index", "--find-links", house, "--disable-pip-version-check", "-q", wheel,
               cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    work = tmp_path / "work"  # not the checkout: `python -c` puts its folder first on sys.path
    work.mkdir()
    proc = run(python, "-c", PROBE, *ABSENT, cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    probe = json.loads(proc.stdout)
    assert probe["absent"] == {name: name for name in ABSENT}  # each one a ModuleNotFoundError for itself
    assert Path(probe["pita"]).is_relative_to(venv), probe["pita"]
    assert probe["kernel"] is False and probe["loaded"] == []
    assert probe["pytest11"] == {"pita": "pita.pytest_plugin"} and probe["plugin_import"] == "pytest"  # loaded by pytest only
    assert probe["scripts"] == {"pita": "pita.cli:main"}
    assert set(probe["installed"]) - {"pip", "setuptools"} == {DISTRIBUTION, "numpy", "safetensors"}
    assert probe["provides_pita"] == [DISTRIBUTION]  # the import package `pita` comes from ours alone
    loaded = run(python, "-c", "import pita.likely, pita.settings; print(len(pita.settings.table()) > 0 and len(pita.likely.catalog()) > 0)",
                 cwd=work, env=env)
    assert (loaded.returncode, loaded.stdout) == (0, "True\n"), loaded.stderr
    version = run(pita, "--version", cwd=work, env=env)
    assert (version.returncode, version.stdout, version.stderr) == (0, f"{DISTRIBUTION} 0.1.0\n", "")

    proc = run(python, "-c", WRITE, cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr

    same = run(pita, "compare", "reference.safetensors", "near.safetensors", "--ulp", "1", cwd=work, env=env)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.splitlines()[-1].endswith(" OK")
    differ = run(pita, "compare", "reference.safetensors", "far.safetensors", "--format", "json", cwd=work, env=env)
    assert differ.returncode == 1, differ.stderr
    report = json.loads(differ.stdout)
    [w] = [tensor for tensor in report["tensors"] if tensor["name"] == "w"]
    assert report["ok"] is False and w["mismatched"] == 1 and w["worst_index"] == [12345]
    text = run(pita, "compare", "reference.safetensors", "far.safetensors", cwd=work, env=env)
    assert text.returncode == 1 and text.stdout.splitlines()[-1].endswith("MISMATCH")
    # The checkout's pita (with the compiled kernel where it is installed) reports exactly the same.
    here = run(sys.executable, "-m", "pita", "compare", "reference.safetensors", "far.safetensors", "--format", "json", cwd=work)
    assert here.returncode == 1 and here.stdout == differ.stdout

    for command in (["run", "p12"], ["run", "--all"], ["list", "--format", "json"], ["book", "check"]):
        lab = run(pita, *command, cwd=work, env=env)
        assert lab.returncode == 2 and lab.stdout == "", lab.stdout + lab.stderr
        assert len(lab.stderr.splitlines()) == 1 and "Traceback" not in lab.stderr
        assert lab.stderr.startswith(f"error: pita {command[0]} is not a command of this pita (compare, trace, lint); it may be one of "
                                     "pita's lab") and "source checkout" in lab.stderr
    usage = run(pita, "--help", cwd=work, env=env)
    assert usage.returncode == 0 and "compare" in usage.stdout and "needs a source checkout" in usage.stdout
    # The wheel ships lint's rules (pita/catalog/lint.json, read first); without the extra, one line names it.
    lint = run(pita, "lint", ".", cwd=work, env=env)
    assert (lint.returncode, lint.stdout) == (2, "") and lint.stderr == "error: pita lint needs its Rust parser, ast-grep: pip install 'pita-parity[lint]'\n"

    # The lab installed from its wheel, outside any checkout: its commands are there now, and
    # each says in one line that it runs only from a checkout.
    lab_wheel = build_wheel(tmp_path, ROOT / "lab", "pita_lab", "pita-lab")
    assert not [name for name in zipfile.ZipFile(lab_wheel).namelist() if name.startswith("pita/")]
    house = wheelhouse(tmp_path, LAB_DEPENDENCIES)
    proc = run(python, "-m", "pip", "install", "--no-index", "--find-links", house, "--find-links", wheel.parent,
               "--disable-pip-version-check", "-q", lab_wheel, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for command in (["run", "p12"], ["list"], ["book", "check"]):
        lab = run(pita, *command, cwd=work, env=env)
        assert lab.returncode == 2 and lab.stdout == "", lab.stdout + lab.stderr
        assert len(lab.stderr.splitlines()) == 1 and "Traceback" not in lab.stderr
        assert lab.stderr.startswith("error: pita's lab runs only from a source checkout") and "scripts/setup" in lab.stderr
    same = run(pita, "compare", "reference.safetensors", "near.safetensors", "--ulp", "1", cwd=work, env=env)
    assert same.returncode == 0, same.stdout + same.stderr
