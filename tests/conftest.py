import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def registry_artifacts(cargo_json: str) -> dict[str, set[str]]:
    """Registry crate (`name@version`) -> the files cargo built or reused for it (`--message-format=json`): the
    hash in a file's name stands for the crate's features, its dependencies' and the profile."""
    found: dict[str, set[str]] = {}
    for line in cargo_json.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("reason") == "compiler-artifact" and message["package_id"].startswith("registry+"):
            crate = message["package_id"].rsplit("#", 1)[-1]  # name@version
            found.setdefault(crate, set()).update(message["filenames"])
    return found


def built_otherwise(theirs: dict[str, set[str]], ours: dict[str, set[str]]) -> list[str]:
    """The registry crates one build made otherwise than another (a file the other did not make)."""
    return sorted(crate for crate, files in theirs.items() if not files <= ours.get(crate, set()))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def tracked_digest(root: Path) -> str:
    """A digest of every file git tracks (and of what it reports as changed), to prove that a
    run leaves the checkout as it found it."""
    listing = subprocess.run(["git", "ls-files", "-s", "--others", "--exclude-standard"], cwd=root, capture_output=True, text=True).stdout
    files = [line.split("\t")[-1] for line in listing.splitlines()]
    digest = hashlib.sha256()
    for name in files:
        path = root / name
        digest.update(name.encode() + (path.read_bytes() if path.is_file() else b""))
    return digest.hexdigest()


@pytest.fixture(scope="session")
def p12_run(tmp_path_factory):
    """One real `pita run p12`: PyTorch and burn both run, nothing mocked. Also returns whether
    the checkout was left as it was."""
    out = tmp_path_factory.mktemp("p12")
    before = tracked_digest(ROOT)
    proc = subprocess.run([sys.executable, "-m", "pita", "run", "p12", "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    return out, proc, tracked_digest(ROOT) == before


def pita(*args, cwd=None):
    """The CLI as a user runs it."""
    return subprocess.run([sys.executable, "-m", "pita", *map(str, args)], cwd=cwd, capture_output=True, text=True)


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


# ---------------------------------------------------------------- how many browser tests ran
# The handbook site's browser tests (tests/lab/test_site.py, those using the `browser` fixture)
# skip where chromium is missing; the last line of the run says how many ran, so a quiet skip
# shows. Outcome per test id, from the reports of the tests that were run (not deselected).
BROWSER_FIXTURE = "browser"
_browser_outcomes: dict[str, str] = {}
_browser_skips: dict[str, None] = {}  # the reasons, in order, once each


@pytest.hookimpl(tryfirst=True)

# --- programs the integration tests run -------------------------------------------------------------


def run(*command, timeout=600) -> subprocess.CompletedProcess:
    """A program run from the checkout's root, its output captured."""
    return subprocess.run([str(part) for part in command], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def cargo_binary(name: str) -> Path:
    """`cargo build --workspace --bin NAME` (the workspace's one feature set, so the burn build is
    reused: ARCHITECTURE.md), the executable's path as cargo reports it (so a CARGO_TARGET_DIR
    elsewhere works too); skips where cargo is missing."""
    return cargo_executable(name, "--workspace", "--bin", name)


def cargo_executable(name: str, *selection: str) -> Path:
    """`cargo build SELECTION`, the path of the executable target NAME as cargo reports it; skips
    where cargo is missing."""
    import shutil

    if shutil.which("cargo") is None:
        pytest.skip("cargo is not on PATH: the burn side cannot be built")
    proc = run("cargo", "build", *selection, "--message-format=json", timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for line in proc.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message["target"]["name"] == name and message.get("executable"):
            return Path(message["executable"])
    raise AssertionError(f"cargo built no {name} executable")


PORT_FILES = ("weights.safetensors", "data.safetensors", "torch-record.safetensors", "torch-record-float64.safetensors")


def port_reference(port: Path, out: Path, *modules: str) -> Path:
    """A port's PyTorch side (`ports/<name>/pytorch.py --out OUT`), run once: the weights, the
    batch, the recording and its float64 run; skips where torch or a module it needs is missing."""
    for module in ("torch", *modules):
        pytest.importorskip(module)
    proc = run(sys.executable, port / "pytorch.py", "--out", out)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for name in PORT_FILES:  # a recording past 256 MiB is shards and an index (ResNet-18's float64 run)
        assert (out / name).is_file() or (out / f"{name}.index.json").is_file(), name
    return out


def port_plant(binary: Path, out: Path, plant: str) -> Path:
    """A port's burn side with one planted mistake (`none`: the correct port, `burn-port`)."""
    proc = run(binary, "--out", out, "--plant", plant)
    assert proc.returncode == 0, proc.stderr[-4000:]
    path = out / f"burn-{'port' if plant == 'none' else plant}.safetensors"
    assert f"wrote {path}" in proc.stdout
    return path


def trace_json(reference: Path, candidate: Path) -> tuple[int, dict]:
    """`pita trace REFERENCE CANDIDATE --format json`, default options: its exit code and its JSON."""
    proc = run(sys.executable, "-m", "pita", "trace", reference, candidate, "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def phases(report: dict) -> dict:
    """A trace's phases by name."""
    return {phase["phase"]: phase for phase in report["phases"]}

def pytest_runtest_setup(item):
    if BROWSER_FIXTURE in getattr(item, "fixturenames", ()):
        _browser_outcomes[item.nodeid] = "not run"


def pytest_runtest_logreport(report):
    if report.nodeid not in _browser_outcomes:
        return
    if report.skipped:
        _browser_outcomes[report.nodeid] = "skipped"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _browser_skips[reason.removeprefix("Skipped: ")] = None
    elif report.failed:
        _browser_outcomes[report.nodeid] = "failed"
    elif report.when == "call":
        _browser_outcomes[report.nodeid] = "passed"


def browser_summary(outcomes: dict[str, str], skips: list[str]) -> str:
    """`browser tests: N ran (P passed, F failed)`, with `, S skipped (reasons)` where some skipped."""
    counts = {kind: sum(1 for outcome in outcomes.values() if outcome == kind) for kind in ("passed", "failed", "skipped")}
    ran = counts["passed"] + counts["failed"]
    line = f"browser tests: {ran} ran"
    if ran:
        line += f" ({counts['passed']} passed" + (f", {counts['failed']} failed)" if counts["failed"] else ")")
    if counts["skipped"]:
        line += f", {counts['skipped']} skipped ({'; '.join(skips)})"
    return line


def pytest_terminal_summary(terminalreporter):
    if _browser_outcomes:
        terminalreporter.write_line(browser_summary(_browser_outcomes, list(_browser_skips)))


# ---------------------------------------------------------------- Debian's chromium, for the browser tests

CHROMIUM = Path("/usr/bin/chromium")
# Headless, and nothing that phones home: updates, sync, QUIC probes, first-run pages.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def no_browser(reason: str):
    """CI must run the browser tests: it installs chromium (.ci/run), so a missing one fails there."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the browser tests may not be skipped)")
    pytest.skip(reason)


@contextlib.contextmanager
def chromium_context(profile: Path):
    """A headless chromium context driven by playwright, its profile in `profile`; skips (fails
    under CI=true) where chromium or playwright is missing."""
    if not CHROMIUM.is_file():
        no_browser(f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        no_browser("the Python package playwright is missing (scripts/setup installs it)")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(profile, executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
                                                               viewport={"width": 1280, "height": 900}, timeout=60_000)
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()
