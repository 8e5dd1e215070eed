"""The version matrix: statuses from real run records, the mirror workspace as cargo reads it,
first compiler errors from a real (burn-free) cargo build, the record's drift and what the book
shows; and, only with PITA_MATRIX=1 (marker `matrix`), one real run on another burn version."""

import copy
import dataclasses
import json
import os
import re
import subprocess
import tomllib

import pytest

from conftest import ROOT, pita, tracked_digest
from pita.errors import UsageError
from pita_lab import catalog
from pita_lab.book import KIND_ZH, MAINLINE_ZH, render_catalog, render_chapter
from pita_lab.claims import CompileFails, Panics, Relates
from pita_lab.kinds import PITFALL_KINDS
from pita_lab.matrix import (
    API_ABSENT_EXIT,
    API_ABSENT_LINE,
    STATUSES,
    build,
    claims_unlike_the_pin,
    classify,
    merged,
    not_built,
    refuse_machine_failure,
    split_moved_sources,
)
from pita_lab.matrix_views import STATUS_ZH, catalog_view, chapter_statuses, compare_matrices
from pita_lab.matrix_workspace import BurnVersion, Mirror, generate, load_versions, patch_crates, pinned_version, version_key
from pita_lab.record import RunRecord
from pita_lab.run import Workspace
from pita_lab.store import RecordStore

STORE = RecordStore(ROOT)


def committed(experiment_id: str) -> RunRecord:
    return STORE.committed(experiment_id)


def rechecked(experiment_id: str, record: RunRecord, out, *claim_ids: str) -> RunRecord:
    """`record` with the claims `claim_ids` checked again against it, as `pita run` checks them
    (the others, which may read dumps the test does not have, as recorded)."""
    fresh = copy.deepcopy(record)
    claims = {claim.id: claim for claim in catalog.get(experiment_id).claims}
    fresh.claims = [claims[c.id].check(fresh, out) if c.id in claim_ids else c for c in fresh.claims]
    return fresh


def first_of_kind(kind: str) -> str:
    return next(i for i in catalog.ids() if catalog.get(i).kind == kind and STORE.has_committed(i))


# -- statuses ---------------------------------------------------------------------------------

def test_a_committed_pitfall_is_present():
    record = committed("p12")
    cell = classify(catalog.get("p12"), record)
    assert cell.status == "present" and not cell.failed and not cell.note
    assert cell.claims == f"{len(record.claims)}/{len(record.claims)}"


def test_a_facade_version_does_not_count_compile_fail_claims():
    """Through burn 0.21's facade the compiler names the facade's types: a snapshot that differs
    there says nothing about burn, so the claim is listed, not counted; elsewhere it counts."""
    experiment = next(catalog.get(i) for i in catalog.ids() if any(isinstance(c, CompileFails) for c in catalog.get(i).claims)
                      and catalog.get(i).kind in PITFALL_KINDS and STORE.has_committed(i))
    record = copy.deepcopy(committed(experiment.id))
    compile_claims = [c.id for c in experiment.claims if isinstance(c, CompileFails)]
    for claim in record.claims:
        if claim.id in compile_claims:
            claim.ok, claim.observed = False, "error[E0308]: mismatched types … snapshot DIFFERS"
    elsewhere, through = classify(experiment, record), classify(experiment, record, facade=True)
    assert {f["id"] for f in elsewhere.failed} >= set(compile_claims) and not elsewhere.through_facade
    assert through.through_facade == compile_claims and not {f["id"] for f in through.failed} & set(compile_claims)
    assert through.claims == f"{len(record.claims) - len(compile_claims)}/{len(record.claims) - len(compile_claims)}"


def test_a_control_that_now_matches_is_fixed():
    """The direct port computing what the fix computes: its comparison with PyTorch passes."""
    experiment, record = catalog.get("p12"), copy.deepcopy(committed("p12"))
    control = experiment.negative_control
    assert control.id == "negative-control"
    direct, fixed = record.comparison(control.reference, control.candidate), record.comparison("torch-mean", "burn-mean")
    direct.exit_code, direct.stdout, direct.result = fixed.exit_code, fixed.stdout, fixed.result
    cell = classify(experiment, record)
    assert cell.status == "fixed"


def test_a_control_that_cannot_be_observed_is_changed(tmp_path):
    experiment = catalog.get("p12")
    control = experiment.negative_control
    record = copy.deepcopy(committed("p12"))
    record.comparisons = [c for c in record.comparisons if (c.reference, c.candidate) != (control.reference, control.candidate)]
    cell = classify(experiment, rechecked("p12", record, tmp_path, control.id))
    assert cell.status == "changed"
    failed = {f["id"]: f["observed"] for f in cell.failed}
    assert failed[control.id].startswith("cannot observe")


def test_present_lists_the_other_claims_that_failed(tmp_path):
    record = copy.deepcopy(committed("p12"))
    record.program("burn", "guard").exit_code = 0  # the guard no longer stops the loss
    cell = classify(catalog.get("p12"), rechecked("p12", record, tmp_path, "guard-panics-on-rank-1"))
    assert cell.status == "present"
    assert [f["id"] for f in cell.failed] == ["guard-panics-on-rank-1"]
    assert cell.failed[0]["observed"].startswith("exit 0")


def test_a_panic_pitfall_that_stops_panicking_is_changed_though_its_control_holds(tmp_path):
    experiment_id = first_of_kind("panic")
    experiment = catalog.get(experiment_id)
    pitfall_panic = next(c for c in experiment.claims if type(c).__name__ == "Panics")
    record = copy.deepcopy(committed(experiment_id))
    record.program(pitfall_panic.side, pitfall_panic.variant).exit_code = 0
    fresh = rechecked(experiment_id, record, tmp_path, pitfall_panic.id)
    assert {c.id: c.ok for c in fresh.claims}[experiment.negative_control.id]
    assert classify(experiment, fresh).status == "changed"


def test_a_same_candidate_stays_same_until_a_claim_fails(tmp_path):
    experiment_id = first_of_kind("same")
    experiment, record = catalog.get(experiment_id), committed(experiment_id)
    assert classify(experiment, record).status == "same"
    port = next(c for c in experiment.claims if type(c).__name__ == "Matches")
    broken = copy.deepcopy(record)
    broken.comparison(port.reference, port.candidate).exit_code = 1
    assert classify(experiment, rechecked(experiment_id, broken, tmp_path, port.id)).status == "changed"


def test_a_moved_source_is_noted():
    record = copy.deepcopy(committed("p12"))
    record.sources[0].line = 0
    cell = classify(catalog.get("p12"), record)
    source = record.sources[0]
    assert cell.status == "present" and cell.sources_not_found == [f"{source.crate} {source.file} {source.function}"]


def test_a_quoted_line_that_moved_inside_a_function_still_there_is_moved_not_missing():
    """A quoted line not found in a function the locked source still defines is `moved`; the same
    reference to a function the source lacks stays not found."""
    experiment_id = next(i for i in catalog.ids() if catalog.get(i).sources and STORE.has_committed(i))
    experiment, record = catalog.get(experiment_id), copy.deepcopy(committed(experiment_id))
    record.sources[0].line = 0
    where = f"{record.sources[0].crate} {record.sources[0].file} {record.sources[0].function}"
    cell = classify(experiment, record)
    split_moved_sources(cell, experiment, record, ROOT)
    assert cell.sources_moved == [where] and where not in cell.sources_not_found
    gone = copy.copy(experiment)
    object.__setattr__(gone, "sources", [dataclasses.replace(experiment.sources[0], function="Tensor::no_such_function"),
                                         *experiment.sources[1:]])
    cell = classify(gone, record)
    split_moved_sources(cell, gone, record, ROOT)
    assert cell.sources_moved == [] and where in cell.sources_not_found


def test_a_panic_claim_on_a_program_that_no_longer_panics_says_what_it_printed(tmp_path):
    experiment_id, claim = next((i, c) for i in catalog.ids() if STORE.has_committed(i) for c in catalog.get(i).claims if isinstance(c, Panics))
    record = copy.deepcopy(committed(experiment_id))
    run = record.program(claim.side, claim.variant)
    run.exit_code, run.stderr, run.stdout = 0, "", "y: 3 chunks of sizes [2, 2, 1]\n"
    observed = {c.id: c.observed for c in rechecked(experiment_id, record, tmp_path, claim.id).claims}
    assert observed[claim.id] == "exit 0: y: 3 chunks of sizes [2, 2, 1]"
    run.stdout = ""
    observed = {c.id: c.observed for c in rechecked(experiment_id, record, tmp_path, claim.id).claims}
    assert observed[claim.id] == "exit 0: no panic, no output"


ABSENT_LINE = "burn api absent: burn::backend::NdArray (burn 0.23.0-pre.1)"


def absent(record: RunRecord, program: str, line: str = ABSENT_LINE) -> RunRecord:
    """`record` as if its burn `program` (`burn-<variant>`) had exited as `pita_lab::compat::api_absent` does."""
    changed = copy.deepcopy(record)
    run = changed.program("burn", program.removeprefix("burn-"))
    run.exit_code, run.stderr, run.stdout, run.dump = API_ABSENT_EXIT, line + "\n", "", ""
    return changed


def reads(claim, program: str) -> bool:
    """Whether a claim reads `program`, from the fields that name one."""
    named = {getattr(claim, f, None) for f in ("reference", "candidate", "source", "target")}
    if hasattr(claim, "variant"):
        named.add(f"{getattr(claim, 'side', 'burn')}-{claim.variant}")
    return program in named


def test_a_direct_port_whose_api_is_absent_is_na_naming_the_api():
    experiment = catalog.get("p12")
    cell = classify(experiment, absent(committed("p12"), experiment.negative_control.candidate))
    assert cell.status == "n/a" and cell.note == "burn::backend::NdArray"
    assert cell.absent == [{"program": experiment.negative_control.candidate, "api": "burn::backend::NdArray"}]


def test_claims_about_an_absent_program_are_left_out_and_the_others_still_speak(tmp_path):
    """The claims on the absent program observed nothing and are left out; another claim that
    fails there (a source claim, say) is still listed."""
    experiment = catalog.get("p12")
    gone = experiment.negative_control.candidate
    record = absent(committed("p12"), gone)
    about = {c.id for c in experiment.claims if reads(c, gone)}
    other = next(c for c in record.claims if c.id not in about)
    for claim in record.claims:
        if claim.id in about or claim is other:
            claim.ok, claim.observed = False, "exit 64, dump none"
    cell = classify(experiment, record)
    assert about and cell.status == "n/a" and [f["id"] for f in cell.failed] == [other.id]
    observed = len(record.claims) - len(about)
    assert cell.claims == f"{observed - 1}/{observed}"


def test_exit_64_without_the_absent_line_is_not_na():
    gone = catalog.get("p12").negative_control.candidate
    cell = classify(catalog.get("p12"), absent(committed("p12"), gone, line="thread 'main' panicked"))
    assert cell.status != "n/a" and cell.absent == []


def beside_the_control() -> tuple[str, str]:
    """A pitfall with a `Relates` claim on a burn program other than its direct port's: its id and that program."""
    return next((i, c.target) for i in catalog.ids() if STORE.has_committed(i) and catalog.get(i).negative_control
                for c in catalog.get(i).claims if isinstance(c, Relates) and c.target.startswith("burn-")
                and c.target != catalog.get(i).negative_control.candidate)


def test_another_variant_whose_api_is_absent_leaves_the_status_to_the_others():
    """A second backend's variant gone (NdArray on 0.23) leaves the pitfall present on the port's own."""
    experiment_id, program = beside_the_control()
    experiment = catalog.get(experiment_id)
    record = absent(committed(experiment_id), program)
    about = {c.id for c in experiment.claims if reads(c, program)}
    for claim in record.claims:
        if claim.id in about:  # `Relates` among them: it reads the program's dump
            claim.ok, claim.observed = False, f"cannot observe: no {program}.safetensors"
    cell = classify(experiment, record)
    assert cell.status == "present" and cell.absent == [{"program": program, "api": "burn::backend::NdArray"}]
    assert cell.failed == [] and cell.claims == f"{len(record.claims) - len(about)}/{len(record.claims) - len(about)}"


def test_a_full_disk_is_refused_not_recorded_as_na(tmp_path):
    mirror = Mirror(BurnVersion("0.23.0-pre.1"), tmp_path, ())
    with pytest.raises(UsageError, match="No space left on device"):
        refuse_machine_failure("rustc-LLVM ERROR: IO failure on output stream: No space left on device", mirror)
    refuse_machine_failure("error[E0308]: mismatched types", mirror)


def test_not_built_is_a_harness_failure_with_the_error():
    cell = not_built("crates/pita/src/lib.rs:1:1: error[E0432]: unresolved import")
    assert cell.status == "harness" and "E0432" in cell.note and cell.status in STATUSES


def test_the_committed_matrix_has_no_harness_failure_and_every_na_names_an_api():
    matrix = STORE.committed_matrix()
    harness = [(i, v) for i, cells in matrix["cells"].items() for v, cell in cells.items() if cell["status"] == "harness"]
    assert harness == []
    unnamed = [(i, v, cell["note"]) for i, cells in matrix["cells"].items() for v, cell in cells.items()
               if cell["status"] == "n/a" and not re.fullmatch(r"burn(::\w+)+(, burn(::\w+)+)*", cell["note"])]
    assert unnamed == []


# -- versions and the mirror ------------------------------------------------------------------

def test_the_versions_are_the_pin_and_those_of_the_versions_file():
    versions = load_versions(ROOT)
    locked = re.search(r'name = "burn"\nversion = "([^"]+)"', (ROOT / "Cargo.lock").read_text()).group(1)
    assert [v for v in versions if v.pinned] == [pinned_version(ROOT)] and pinned_version(ROOT).burn == locked
    assert len(versions) >= 3 and versions == sorted(versions, key=lambda v: (version_key(v.burn), v.profile != "debug"))
    assert version_key("0.21.0") < version_key("0.22.1") < version_key("0.23.0-pre.1") < version_key("0.23.0")


def test_the_pin_has_a_release_column_built_in_its_own_mirror_held_to_the_checkouts_lock(tmp_path):
    versions = load_versions(ROOT)
    pin = pinned_version(ROOT)
    release = next(v for v in versions if v.profile == "release")
    assert (release.burn, release.column, release.pinned) == (pin.burn, f"{pin.burn} release", False)
    assert [v.column for v in versions].index(release.column) == [v.column for v in versions].index(pin.column) + 1
    mirror = generate(ROOT, release, [catalog.get("p12").folder], into=tmp_path / "mirror")
    assert mirror.cargo_profile_flags == ["--release"] and mirror.lock.read_bytes() == (ROOT / "Cargo.lock").read_bytes()
    assert Mirror(pin, tmp_path, ()).cargo_profile_flags == []
    assert Workspace(mirror.root, mirror.target, profile="release").binary("p12") == mirror.target / "release" / "p12"


def test_a_profile_the_matrix_does_not_know_is_refused(tmp_path):
    root = tmp_path / "root"
    (root / "lab" / "matrix").mkdir(parents=True)
    (root / "Cargo.toml").symlink_to(ROOT / "Cargo.toml")
    (root / "lab" / "matrix" / "versions.toml").write_text('[[version]]\nburn = "0.22.1"\nprofile = "bench"\n')
    with pytest.raises(UsageError, match="profile"):
        load_versions(root)
    (root / "lab" / "matrix" / "versions.toml").write_text('[[version]]\nburn = "0.22.1"\n')  # the pin's debug column again
    with pytest.raises(UsageError, match="twice"):
        load_versions(root)


def test_a_release_claim_that_differs_from_the_debug_run_is_listed():
    record = copy.deepcopy(committed("p12"))
    assert claims_unlike_the_pin(STORE, record) == []
    flipped = record.claims[0]
    flipped.ok, flipped.observed = not flipped.ok, "exit 0, dump none"
    assert claims_unlike_the_pin(STORE, record) == [{"id": flipped.id, "debug": committed("p12").claims[0].observed, "observed": "exit 0, dump none"}]


def cargo_metadata(folder) -> dict:
    proc = subprocess.run(["cargo", "metadata", "--no-deps", "--offline", "--format-version", "1"], cwd=folder, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_mirror_is_a_workspace_cargo_reads_with_the_checkouts_paths(tmp_path):
    """Generated without building anything: cargo sees the members in the mirror (not through
    the links to the checkout), the `pita` crate asks for the mirror's burn without the features
    that version lacks, and the checkout's manifests and lockfile stay as they were."""
    before = [(ROOT / name).read_bytes() for name in ("Cargo.toml", "Cargo.lock")]
    folders = [catalog.get(i).folder for i in ("p12", "p07")]
    version = BurnVersion("0.23.0-pre.1", lacks=("ndarray", "optim"), adds=("store",))
    mirror = generate(ROOT, version, folders, into=tmp_path / "mirror")
    metadata = cargo_metadata(mirror.root)
    assert metadata["workspace_root"] == str(mirror.root)
    packages = {p["name"]: p for p in metadata["packages"]}
    assert set(packages) == {"pita", "pita-lab", "p12-loss-not-reduced", "p07-linear-weight-not-transposed"}
    binary = next(t for t in packages["p12-loss-not-reduced"]["targets"] if t["kind"] == ["bin"])
    assert binary["src_path"] == str(mirror.root / folders[0] / "burn.rs")
    burn = next(d for d in packages["pita"]["dependencies"] if d["name"] == "burn")
    assert burn["req"] == "=0.23.0-pre.1" and "ndarray" not in burn["features"]
    assert all(d["kind"] != "dev" for d in packages["pita"]["dependencies"])
    assert "burn/optim" not in packages["pita"]["features"]["optim"] and "burn/store" in packages["pita"]["features"]["store"]
    pinned_features = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["dependencies"]["burn"]["features"]
    workspace_burn = tomllib.loads((mirror.root / "Cargo.toml").read_text())["workspace"]["dependencies"]["burn"]
    assert workspace_burn["version"] == "=0.23.0-pre.1"
    assert workspace_burn["features"] == [f for f in pinned_features if f not in ("ndarray", "optim")] + ["store"]
    assert [(ROOT / name).read_bytes() for name in ("Cargo.toml", "Cargo.lock")] == before


def test_a_burn_crate_asked_for_at_the_pin_is_asked_for_at_the_mirrors_version(tmp_path):
    """An experiment that depends on a burn crate beside the workspace's burn (`burn-train`) at
    the pin gets it at the mirror's version; one that does not keeps the checkout's manifest."""
    pin = pinned_version(ROOT).burn
    pinned_dependency = [e for e in catalog.all_experiments().values()
                         if any(name.startswith("burn") and isinstance(req, dict) and req.get("version", "").lstrip("=") == pin
                                for name, req in tomllib.loads((ROOT / e.folder / "Cargo.toml").read_text()).get("dependencies", {}).items())]
    if not pinned_dependency:
        pytest.skip("no experiment asks for a burn crate at the pin")
    experiment = pinned_dependency[0]
    mirror = generate(ROOT, BurnVersion("0.23.0-pre.1"), [experiment.folder, catalog.get("p12").folder], into=tmp_path / "mirror")
    packages = {p["name"]: p for p in cargo_metadata(mirror.root)["packages"]}
    asked = {d["name"]: d["req"] for d in packages[experiment.burn_package]["dependencies"] if d["name"].startswith("burn") and d["req"] != "*"}
    assert asked and set(asked.values()) == {"=0.23.0-pre.1"}
    assert (mirror.root / catalog.get("p12").folder / "Cargo.toml").is_symlink()
    assert not (mirror.root / experiment.folder / "Cargo.toml").is_symlink()


def test_regenerating_a_mirror_keeps_its_build_and_drops_old_members(tmp_path):
    folders = [catalog.get(i).folder for i in ("p12", "p07")]
    version = BurnVersion("0.23.0-pre.1")
    mirror = generate(ROOT, version, folders, into=tmp_path / "mirror")
    (mirror.target / "debug").mkdir(parents=True)
    (mirror.target / "debug" / "kept").write_text("built")
    again = generate(ROOT, version, folders[:1], into=tmp_path / "mirror")
    assert (again.target / "debug" / "kept").read_text() == "built"
    assert not (again.root / folders[1]).exists() and (again.root / folders[0] / "burn.rs").resolve() == ROOT / folders[0] / "burn.rs"


FACADE_VERSION = "0.21.0"


def fake_registry(home, version: BurnVersion):
    """Published sources of each crate `version` patches, as cargo's registry holds them: a
    manifest, a lib.rs, and each file a replacement reads, holding its text once."""
    for patch in sorted((ROOT / version.patches).iterdir()):
        crate = home / "registry" / "src" / "index.example" / f"{patch.name}-{version.burn}"
        write(crate / "Cargo.toml", f'[package]\nname = "{patch.name}"\nversion = "{version.burn}"\nedition = "2021"\n')
        write(crate / "src" / "lib.rs", "//! published\n")
        listing = patch / "replace.toml"
        for change in (tomllib.loads(listing.read_text())["replace"] if listing.is_file() else []):
            target = crate / change["file"]
            write(target, (target.read_text() if target.is_file() else "") + "// published\n" + change["old"] + "\n")


def facade_version() -> BurnVersion:
    return next(v for v in load_versions(ROOT) if v.burn == FACADE_VERSION)


def test_a_facade_version_builds_the_pins_api_through_its_facade_and_patched_crates(tmp_path, monkeypatch):
    """burn 0.21: the mirror's `burn` (and `burn-train`) is the facade under lab/matrix/0.21.0,
    whose crates are members; each patched burn crate is a copy of the published one with the
    patch's modules declared and its replacements made, and `[patch.crates-io]` points at it."""
    version = facade_version()
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo"))
    fake_registry(tmp_path / "cargo", version)
    trainer = next(e for e in catalog.all_experiments().values() if "burn-train" in (ROOT / e.folder / "Cargo.toml").read_text())
    mirror = generate(ROOT, version, [catalog.get("p12").folder, trainer.folder], into=tmp_path / "mirror")
    manifest = tomllib.loads((mirror.root / "Cargo.toml").read_text())
    burn = manifest["workspace"]["dependencies"]["burn"]
    assert (burn["package"], burn["path"]) == ("burn-facade", "facade") and "version" not in burn
    assert {"facade", "facade/derive", "facade/train"} <= set(manifest["workspace"]["members"])
    patches = sorted(p.name for p in (ROOT / version.patches).iterdir())
    assert manifest["patch"]["crates-io"] == {name: {"path": f"patched/{name}-{version.burn}"} for name in patches}
    for name in patches:
        copy = mirror.root / "patched" / f"{name}-{version.burn}"
        modules = sorted(m.stem for m in (ROOT / version.patches / name).glob("*.rs"))
        assert (copy / "src" / "lib.rs").read_text().endswith("".join(f"mod {m};\n" for m in modules))
        for module in modules:
            assert (copy / "src" / f"{module}.rs").read_text() == (ROOT / version.patches / name / f"{module}.rs").read_text()
        listing = ROOT / version.patches / name / "replace.toml"
        for change in (tomllib.loads(listing.read_text())["replace"] if listing.is_file() else []):
            text = (copy / change["file"]).read_text()
            assert change["new"] in text and text.count(change["old"]) == change["new"].count(change["old"])
    pita_burn = tomllib.loads((mirror.root / "crates" / "pita" / "Cargo.toml").read_text())["dependencies"]["burn"]
    assert (pita_burn["package"], pita_burn["path"]) == ("burn-facade", "../../facade")
    train = tomllib.loads((mirror.root / trainer.folder / "Cargo.toml").read_text())["dependencies"]["burn-train"]
    assert (train["package"], train["path"]) == ("burn-train-facade", "../../facade/train")
    metadata = cargo_metadata(mirror.root)
    assert {"burn-facade", "burn-facade-derive", "burn-train-facade", "pita", "pita-lab"} <= {p["name"] for p in metadata["packages"]}


def test_a_replacement_whose_text_is_not_in_the_published_file_once_is_refused(tmp_path, monkeypatch):
    """A patch written for other sources must not apply silently elsewhere (or twice)."""
    checkout = tmp_path / "checkout"
    write(checkout / "patches" / "burn-nn" / "replace.toml", '[[replace]]\nfile = "src/lib.rs"\nold = "fn gone()"\nnew = "fn here()"\n')
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo"))
    crate = tmp_path / "cargo" / "registry" / "src" / "index.example" / "burn-nn-0.21.0"
    write(crate / "Cargo.toml", '[package]\nname = "burn-nn"\nversion = "0.21.0"\n')
    write(crate / "src" / "lib.rs", "fn kept() {}\n")
    with pytest.raises(UsageError, match="occurs 0 times"):
        patch_crates(checkout, BurnVersion("0.21.0", patches="patches"), tmp_path / "mirror")


def test_the_facades_absent_apis_end_the_program_as_the_labs_shim_does():
    """The facade cannot call pita-lab's `api_absent` (pita-lab depends on it): its own prints
    the same line and exits with the same status, which is what makes a cell "n/a"."""
    facade = (ROOT / facade_version().facade / "src" / "absent.rs").read_text()
    compat = (ROOT / "lab" / "burn" / "src" / "compat.rs").read_text()
    prefix = re.search(r'API_ABSENT_PREFIX: &str = "([^"]+)"', compat).group(1)
    line = re.search(r'eprintln!\("([^"]+)"', facade).group(1)
    assert line.startswith(prefix) and API_ABSENT_LINE.match(line.replace("{api}", "burn::nn::Example"))
    assert f"exit({API_ABSENT_EXIT})" in facade and f"API_ABSENT_EXIT: i32 = {API_ABSENT_EXIT}" in compat


# -- building: a real cargo build of a small workspace shaped like the lab's, without burn ---------

def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture()
def small_checkout(tmp_path):
    """A checkout with the lab's shape: the `pita` crate, lab/burn on it, two experiments (one
    that does not compile); nothing from the registry, so cargo builds it offline in seconds."""
    root = tmp_path / "checkout"
    write(root / "Cargo.toml", '[workspace]\nresolver = "2"\nmembers = ["crates/pita", "lab/burn", "experiments/*"]\n'
          '[workspace.package]\nedition = "2021"\nversion = "0.1.0"\n'
          '[workspace.dependencies]\nburn = { version = "=0.22.1", features = ["std"] }\npita = { path = "crates/pita" }\n'
          'pita-lab = { path = "lab/burn" }\n')
    write(root / "crates/pita/Cargo.toml", '[package]\nname = "pita"\nversion.workspace = true\nedition.workspace = true\n')
    write(root / "crates/pita/src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n")
    write(root / "lab/burn/Cargo.toml", '[package]\nname = "pita-lab"\nversion.workspace = true\nedition.workspace = true\n'
          '[dependencies]\npita = { workspace = true }\n')
    write(root / "lab/burn/src/lib.rs", "pub use pita::answer;\n")
    for name, body in (("p98-own-error", 'let wrong: u32 = "text";\n    println!("{wrong}");'), ("p99-builds", 'println!("{}", pita_lab::answer());')):
        write(root / f"experiments/{name}/Cargo.toml", f'[package]\nname = "{name}"\nversion.workspace = true\nedition.workspace = true\n'
              f'[[bin]]\nname = "{name[:3]}"\npath = "burn.rs"\n[dependencies]\npita-lab = {{ workspace = true }}\n')
        write(root / f"experiments/{name}/burn.rs", f"fn main() {{\n    {body}\n}}\n")
    return root


EXPERIMENTS = ["experiments/p98-own-error", "experiments/p99-builds"]


def test_each_program_that_does_not_build_gets_its_own_first_error(small_checkout):
    mirror = generate(small_checkout, BurnVersion("0.23.0-pre.1"), EXPERIMENTS, into=small_checkout / "mirror")
    result = build(mirror, ["p98-own-error", "p99-builds"])
    assert not result.plumbing and not result.lock_error
    assert list(result.errors) == ["experiments/p98-own-error"]
    own = result.errors["experiments/p98-own-error"]
    assert re.fullmatch(r"experiments/p98-own-error/burn\.rs:2:\d+: error\[E0308\]: mismatched types: expected `u32`, found `&str`", own)
    assert (mirror.target / "debug" / "p99").is_file() and not (small_checkout / "target").exists()


def test_when_the_plumbing_does_not_build_every_program_has_its_error(small_checkout):
    write(small_checkout / "crates/pita/src/lib.rs", 'pub fn answer() -> u32 {\n    "forty-two"\n}\n')
    mirror = generate(small_checkout, BurnVersion("0.23.0-pre.1"), EXPERIMENTS, into=small_checkout / "mirror")
    result = build(mirror, ["p98-own-error", "p99-builds"])
    assert re.fullmatch(r"crates/pita/src/lib\.rs:2:\d+: error\[E0308\]: mismatched types: expected `u32`, found `&str`", result.plumbing)
    assert result.errors == {member: result.plumbing for member in EXPERIMENTS}


# -- the record, its drift, what the book shows -------------------------------------------------

def small_matrix(tmp_path) -> dict:
    """A matrix over p12 and a `same` candidate from the committed records, with a second column
    where the plumbing failed and a third where p12's guard stopped working."""
    same_id = first_of_kind("same")
    record = copy.deepcopy(committed("p12"))
    record.program("burn", "guard").exit_code = 0
    pinned = {i: classify(catalog.get(i), committed(i)).to_dict() for i in ("p12", same_id)}
    error = "crates/pita/src/lib.rs:1:1: error[E0432]: unresolved import"
    newer = classify(catalog.get("p12"), rechecked("p12", record, tmp_path, "guard-panics-on-rank-1")).to_dict()
    facts = lambda pinned_, plumbing: {"pinned": pinned_, "backend": "Flex", "features": [], "why": "", "plumbing": plumbing, "backends": []}
    return {
        "format": "pita-matrix/1", "platform": {}, "provenance": {}, "cost": {},
        "versions": {"0.21.0": facts(False, error), "0.22.1": facts(True, ""), "0.23.0-pre.1": facts(False, "")},
        "cells": {"p12": {"0.21.0": not_built(error).to_dict(), "0.22.1": pinned["p12"], "0.23.0-pre.1": newer},
                  same_id: {"0.21.0": not_built(error).to_dict(), "0.22.1": pinned[same_id]}},
    }


def test_the_same_matrix_has_no_drift_and_a_status_change_fails(tmp_path):
    matrix = small_matrix(tmp_path)
    assert compare_matrices(matrix, copy.deepcopy(matrix)).ok
    fresh = copy.deepcopy(matrix)
    fresh["cells"]["p12"]["0.23.0-pre.1"]["status"] = "fixed"
    assert not compare_matrices(matrix, fresh).ok
    elsewhere = copy.deepcopy(matrix)
    elsewhere["platform"], elsewhere["cost"] = {"cpu": "another"}, {"total_seconds": 1.0}
    assert compare_matrices(matrix, elsewhere).ok


def test_a_float_in_what_a_claim_observed_moves_within_the_tolerance(tmp_path):
    matrix = small_matrix(tmp_path)
    matrix["cells"]["p12"]["0.23.0-pre.1"]["failed"][0]["observed"] = "worst=2.02e-03 tol=1e-06 MISMATCH, exit 1"
    fresh = copy.deepcopy(matrix)
    fresh["cells"]["p12"]["0.23.0-pre.1"]["failed"][0]["observed"] = "worst=2.03e-03 tol=1e-06 MISMATCH, exit 1"
    report = compare_matrices(matrix, fresh)
    assert report.ok and report.moved
    fresh["cells"]["p12"]["0.23.0-pre.1"]["failed"][0]["observed"] = "worst=3.02e-03 tol=1e-06 MISMATCH, exit 1"
    assert not compare_matrices(matrix, fresh).ok


def test_committing_a_partial_run_replaces_only_the_cells_it_ran(tmp_path):
    committed_matrix = small_matrix(tmp_path)
    same_id = next(i for i in committed_matrix["cells"] if i != "p12")
    fresh = copy.deepcopy(committed_matrix)
    fresh["versions"] = {"0.23.0-pre.1": fresh["versions"]["0.23.0-pre.1"]}
    fresh["cells"] = {same_id: {"0.23.0-pre.1": classify(catalog.get(same_id), committed(same_id)).to_dict()},
                      "p99": {"0.23.0-pre.1": not_built("gone").to_dict()}}
    versions = list(committed_matrix["versions"])
    result = merged(committed_matrix, fresh, versions, [i for i in catalog.ids() if i != "p99"])
    assert result["cells"]["p12"] == committed_matrix["cells"]["p12"]
    assert result["cells"][same_id] == {**committed_matrix["cells"][same_id], **fresh["cells"][same_id]}
    assert list(result["cells"][same_id]) == versions and "p99" not in result["cells"]
    assert list(result["versions"]) == versions
    dropped = merged(committed_matrix, fresh, versions[1:], catalog.ids())
    assert all(versions[0] not in row for row in dropped["cells"].values()) and versions[0] not in dropped["versions"]


def checkout_with_matrix(tmp_path, matrix) -> "os.PathLike":
    """A checkout the book renders from: links to everything of the real one, but `matrix` as the
    committed matrix."""
    root = tmp_path / "book-root"
    for folder, inner in ((ROOT, root), (ROOT / "book", root / "book"), (ROOT / "book" / "records", root / "book" / "records")):
        inner.mkdir(parents=True)
        for entry in folder.iterdir():
            if entry.name not in ("book", "records", "matrix.json"):
                (inner / entry.name).symlink_to(entry)
    RecordStore(root).matrix_path.write_text(json.dumps(matrix, ensure_ascii=False))
    return root


def test_the_catalog_page_shows_the_matrix_once_per_error(tmp_path):
    matrix = small_matrix(tmp_path)
    page = render_catalog(checkout_with_matrix(tmp_path, matrix))
    assert '<a id="version-matrix"></a>' in page
    words = [STATUS_ZH[cell["status"]] for cell in matrix["cells"]["p12"].values()]
    assert re.search(r"^\| \[p12\]\(p12\.md\) \| [^|]+ \| " + r" \| ".join(words) + r" \|$", page, re.M)
    assert page.count(matrix["versions"]["0.21.0"]["plumbing"]) == 1  # said once, not in each cell's note
    failed = matrix["cells"]["p12"]["0.23.0-pre.1"]["failed"][0]
    assert f"`{failed['id']}` 实测「{failed['observed']}」" in page
    view = catalog_view(matrix)
    assert [v["counts"]["harness"] for v in view["versions"]] == [2, 0, 0]


def test_the_catalog_page_names_the_api_an_na_cell_lacks(tmp_path):
    matrix = small_matrix(tmp_path)
    gone = catalog.get("p12").negative_control.candidate
    matrix["cells"]["p12"]["0.23.0-pre.1"] = classify(catalog.get("p12"), absent(committed("p12"), gone)).to_dict()
    other_id, program = beside_the_control()
    matrix["cells"][other_id] = {"0.23.0-pre.1": classify(catalog.get(other_id), absent(committed(other_id), program)).to_dict()}
    page = render_catalog(checkout_with_matrix(tmp_path, matrix))
    assert re.search(r"^- \[p12\]\(p12\.md\)，burn 0\.23\.0-pre\.1，不适用（断言 \d+/\d+ 成立）：这个版本没有 `burn::backend::NdArray`。$", page, re.M)
    assert f"变体 `{program}` 不适用：这个版本没有 `burn::backend::NdArray`" in page
    text = render_chapter(checkout_with_matrix(tmp_path / "chapter", matrix), committed("p12"))
    assert "0.23.0-pre.1「不适用：没有 burn::backend::NdArray」" in text


def test_the_catalog_page_says_where_a_release_build_differs_from_debug(tmp_path):
    matrix = small_matrix(tmp_path)
    matrix["versions"]["0.22.1 release"] = {"pinned": False, "backend": "Flex", "burn": "0.22.1", "profile": "release", "features": [],
                                            "why": "", "plumbing": "", "backends": []}
    cell = classify(catalog.get("p12"), committed("p12")).to_dict()
    claim = committed("p12").claims[0]
    cell["unlike_debug"] = [{"id": claim.id, "debug": claim.observed, "observed": "exit 0, dump none"}]
    matrix["cells"]["p12"]["0.22.1 release"] = cell
    page = render_catalog(checkout_with_matrix(tmp_path, matrix))
    assert f"；和 debug 构建结果不同的断言：`{claim.id}` debug 实测「{claim.observed}」，release 实测「exit 0, dump none」" in page
    assert re.search(r"^\| 编号 \| 标题 \|.* 0\.22\.1 release \|", page, re.M)
    statuses = chapter_statuses(matrix, "p12")
    assert statuses[-1]["profile"] == "release" and statuses[-1]["unlike_debug"] == cell["unlike_debug"]
    assert statuses[-1]["word"] == f"{STATUS_ZH[cell['status']]}；和 debug 构建不同的断言：{claim.id}"
    text = render_chapter(checkout_with_matrix(tmp_path / "chapter", matrix), committed("p12"))
    assert f"0.22.1 release「{statuses[-1]['word']}」" in text


def test_a_chapter_says_where_its_pitfall_stands_on_each_version(tmp_path):
    matrix = small_matrix(tmp_path)
    text = render_chapter(checkout_with_matrix(tmp_path, matrix), committed("p12"))
    statuses = chapter_statuses(matrix, "p12")
    assert [s["version"] for s in statuses] == list(matrix["versions"])
    line = "在各 burn 版本上：" + "，".join(f"{s['version']}「{s['word']}」" + ("（本章）" if s["pinned"] else "") for s in statuses)
    assert line in text and "README.md#version-matrix" in text


def test_the_catalog_page_counts_each_kind_and_stage():
    page = render_catalog(ROOT)
    experiments = catalog.all_experiments().values()
    for kind in PITFALL_KINDS:
        count = sum(e.kind == kind for e in experiments)
        assert re.search(rf"^\| {re.escape(KIND_ZH[kind])} \| {count} \| \d+ \|$", page, re.M), kind
    for stage, stage_zh in MAINLINE_ZH.items():
        counts = [sum(e.kind == kind and e.mainline == stage for e in experiments) for kind in PITFALL_KINDS]
        row = f"| {stage_zh} | " + " | ".join(map(str, counts)) + f" | {sum(counts)} |"
        assert row in page.splitlines(), row


def test_every_same_candidate_is_listed_with_the_run_that_showed_it():
    page = render_catalog(ROOT).split("## 查过：一致", 1)[1]
    for experiment in catalog.all_experiments().values():
        if experiment.kind == "same" and STORE.has_committed(experiment.id):
            row = next(line for line in page.splitlines() if line.startswith(f"| [{experiment.id}]"))
            port = next(c for c in experiment.claims if type(c).__name__ == "Matches")
            assert f"`pita run {experiment.id}`" in row
            assert f"`pita compare {port.reference}.safetensors {port.candidate}.safetensors`" in row


# -- the command line -------------------------------------------------------------------------

@pytest.mark.parametrize("args", [("matrix", "--versions", "9.9.9"), ("matrix", "reading"), ("book", "update", "matrix", "p12")])
def test_bad_arguments_are_one_line_and_exit_2(args):
    proc = pita(*args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_update_without_a_matrix_in_the_folder_is_one_line(tmp_path):
    before = tracked_digest(ROOT)
    proc = pita("book", "update", "matrix", "--from", tmp_path)
    assert proc.returncode == 2 and "no matrix.json" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert tracked_digest(ROOT) == before


# -- a real run (slow: builds burn in a mirror; PITA_MATRIX=1 .venv/bin/pytest -m matrix) -------

@pytest.mark.matrix
@pytest.mark.skipif(os.environ.get("PITA_MATRIX") != "1", reason="builds another burn (minutes): PITA_MATRIX=1 pytest -m matrix")
def test_a_real_matrix_run_on_another_burn_leaves_the_checkout_alone(tmp_path):
    other = next(v for v in reversed(load_versions(ROOT)) if not v.pinned)
    before = tracked_digest(ROOT)
    proc = pita("matrix", "p12", "--versions", other.burn, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    matrix = json.loads((tmp_path / "matrix.json").read_text())
    cell = matrix["cells"]["p12"][other.burn]
    assert cell["status"] in STATUSES and cell["status"] != "harness", cell["note"]
    if cell["status"] != "n/a":
        record = RunRecord.load(tmp_path / other.burn / "p12" / "record.json")
        assert {p.metadata.get("framework_version") for p in record.programs if p.side == "burn" and p.dump} == {other.burn}
        assert classify(catalog.get("p12"), record).to_dict() == cell
    assert (tmp_path / other.burn / "Cargo.lock").is_file()
    assert tracked_digest(ROOT) == before
