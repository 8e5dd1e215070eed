"""One folder per pitfall: what each folder holds, that a new folder is all a new experiment
needs, and that no shared file lists the experiments."""

import fnmatch
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT
from pita_lab import catalog, claims
from pita_lab import experiment as declarations
from pita_lab.book import render_all
from pita_lab.errors import BrokenExperiment
from pita_lab.experiment import Experiment, Matches, Mismatches
from pita_lab.kinds import Kind

FOLDERS = catalog.folders()
# Files the lab writes from the experiments; listing every experiment is their job.
GENERATED = ("Cargo.lock", "book/")
# Lockfiles cargo writes, the pin's and each matrix version's (lab/matrix/<version>/Cargo.lock).
LOCKFILE = "Cargo.lock"


@pytest.mark.parametrize("experiment_id", list(FOLDERS))
def test_each_folder_is_a_whole_experiment(experiment_id):
    folder = FOLDERS[experiment_id]
    experiment = catalog.get(experiment_id)
    assert experiment.folder == f"experiments/{folder.name}"
    manifest = tomllib.loads((folder / "Cargo.toml").read_text())
    assert manifest["package"]["name"] == folder.name
    assert [b["name"] for b in manifest["bin"]] == [experiment_id]
    examples = {e["name"]: e for e in manifest.get("example", [])}
    assert sorted(examples) == list(experiment.compile_fail)
    for case in experiment.compile_fail:
        assert examples[case]["path"] == f"compile_fail/{case}.rs"
        assert examples[case]["required-features"] == ["compile-fail"]  # else `cargo test` would build it
        assert (folder / "compile_fail" / f"{case}.stderr").is_file(), f"{case} has no snapshot"


def test_a_new_folder_is_discovered_without_touching_shared_files(tmp_path):
    experiments = tmp_path / "experiments"
    shutil.copytree(FOLDERS["p12"], experiments / "p99-copied-pitfall")
    declaration = experiments / "p99-copied-pitfall" / "experiment.py"
    declaration.write_text(declaration.read_text().replace('id="p12"', 'id="p99"'))
    found = catalog.folders(experiments)
    assert list(found) == ["p99"]
    experiment = catalog.load(found["p99"])
    assert (experiment.id, experiment.folder, experiment.compile_fail) == ("p99", "experiments/p99-copied-pitfall", ("ce12",))
    assert experiment.burn_package == "p99-copied-pitfall" and experiment.torch_script.endswith("p99-copied-pitfall/pytorch.py")
    members = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["members"]
    assert any(fnmatch.fnmatch("experiments/p99-copied-pitfall", member) for member in members), members


def test_a_misnamed_or_incomplete_folder_is_refused_with_one_line(tmp_path):
    (tmp_path / "p98").mkdir()
    with pytest.raises(BrokenExperiment, match=r"named <id>-<what-goes-wrong>"):
        catalog.folders(tmp_path)
    (tmp_path / "p98").rename(tmp_path / "p98-half-done")
    (tmp_path / "p98-half-done" / "experiment.py").write_text("")
    with pytest.raises(BrokenExperiment, match=r"missing pytorch\.py, burn\.rs, Cargo\.toml, chapter\.md\.j2"):
        catalog.load(catalog.folders(tmp_path)["p98"])


@pytest.mark.parametrize("guide_id", catalog.guide_ids())
def test_each_guide_is_a_folder_shaped_like_an_experiment(guide_id):
    """A guide (the book's front and reference pages) is a folder under guides/ named like its id,
    with an experiment's files; its burn side is a workspace crate named like the folder."""
    folder = catalog.guide_folders()[guide_id]
    guide = catalog.get(guide_id)
    assert (guide.folder, guide.kind, guide.compile_fail) == (f"guides/{guide_id}", "guide", ())
    manifest = tomllib.loads((folder / "Cargo.toml").read_text())
    assert manifest["package"]["name"] == guide_id == guide.burn_package
    assert [b["name"] for b in manifest["bin"]] == [guide_id] and manifest["bin"][0]["path"] == "burn.rs"
    members = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["members"]
    assert any(fnmatch.fnmatch(f"guides/{guide_id}", member) for member in members), members


def copy_renamed(folder: Path, to: Path, old_id: str, new_id: str, ignore=None) -> Path:
    """A chapter's folder copied to `to`, its declaration renamed to `new_id`; the declaration's path."""
    shutil.copytree(folder, to, ignore=ignore)
    declaration = to / "experiment.py"
    declaration.write_text(declaration.read_text().replace(f'id="{old_id}"', f'id="{new_id}"'))
    return declaration


def test_a_guide_folder_is_discovered_and_held_to_its_kind(tmp_path):
    guides = tmp_path / "guides"
    declaration = copy_renamed(catalog.guide_folders()["nonscalar-backward"], guides / "how-to-read", "nonscalar-backward", "how-to-read")
    (guides / ".hidden").mkdir()
    found = catalog.guide_folders(guides)
    assert list(found) == ["how-to-read"]
    guide = catalog.load(found["how-to-read"], "guides")
    assert (guide.id, guide.folder, guide.kind) == ("how-to-read", "guides/how-to-read", "guide")
    with pytest.raises(BrokenExperiment, match=r"kind 'guide' belongs under guides/"):
        catalog.load(found["how-to-read"], "examples")
    declaration.write_text(declaration.read_text().replace('kind="guide"', 'kind="silent"'))
    with pytest.raises(BrokenExperiment, match=r"kind 'silent' belongs under experiments/"):
        catalog.load(found["how-to-read"], "guides")
    (guides / "how-to-read" / "burn.rs").unlink()
    with pytest.raises(BrokenExperiment, match=r"guides/how-to-read: missing burn\.rs"):
        catalog.load(found["how-to-read"], "guides")


def test_a_port_under_ports_is_a_tutorial_named_like_its_crate(tmp_path):
    """A port of a public architecture (ports/<name>/, crate and binary `port-<name>`) that
    declares an experiment is a tutorial with the id `port-<name>`; one without is not."""
    for tutorial in map(catalog.get, catalog.tutorial_ids()):
        if tutorial.folder.startswith("ports/"):
            manifest = tomllib.loads((ROOT / tutorial.folder / "burn" / "Cargo.toml").read_text())
            assert manifest["package"]["name"] == tutorial.burn_package == tutorial.id
            assert [b["name"] for b in manifest["bin"]] == [tutorial.burn_binary]
    ports = tmp_path / "ports"
    copy_renamed(catalog.tutorial_folders()["port-gpt2"], ports / "tiny", "port-gpt2", "port-tiny", ignore=shutil.ignore_patterns("burn"))
    (ports / "no-lab").mkdir()
    found = catalog.tutorial_folders(ports)
    assert list(found) == ["port-tiny"]
    port = catalog.load(found["port-tiny"], "ports")
    assert (port.id, port.folder, port.kind, port.burn_package, port.burn_binary) == ("port-tiny", "ports/tiny", "tutorial", "port-tiny", "port-tiny")
    with pytest.raises(BrokenExperiment, match=r"defines experiment 'port-tiny', not 'tiny'"):
        catalog.load(found["port-tiny"], "examples")


def test_guides_come_first_among_the_chapters():
    assert catalog.chapter_ids() == catalog.guide_ids() + catalog.ids() + catalog.tutorial_ids()
    assert {"reading", "nonscalar-backward"} <= set(catalog.guide_ids())
    assert catalog.get("reading").kind == "guide"


def declared(**changes) -> Experiment:
    fields = dict(id="p99", title="t", mainline="loss", kind="silent", torch_variants=(), burn_variants=(), comparisons=(), sources=(), claims=())
    return Experiment(**{**fields, **changes})


def test_a_declaration_names_its_kind_and_stage_as_strings_and_gets_a_kind():
    experiment = declared(kind="panic", mainline="loss → backward")
    assert experiment.kind is Kind.PANIC and experiment.kind == "panic" and experiment.kind.zh == "运行期 panic/报错"
    assert declared(kind="guide", mainline="").kind.place == "guides"
    with pytest.raises(ValueError, match=r"^p99: kind 'loud' is not one of \('silent', 'panic', 'compile', 'same', 'tutorial', 'guide'\)$"):
        declared(kind="loud")
    with pytest.raises(ValueError, match=r"^p99: main-line stage 'lunch' is not one of \('tensors and shapes', "):
        declared(mainline="lunch")


def test_the_negative_control_is_the_mismatch_so_named_else_the_first():
    first, named = Mismatches("direct", "", "torch-ref", "burn-direct"), Mismatches("x-negative-control", "", "torch-ref", "burn-x")
    fix = Matches("fix-matches", "", "torch-ref", "burn-fix")
    assert declared(claims=(fix, first, named)).negative_control is named
    assert declared(claims=(fix, first)).negative_control is first
    assert declared(claims=(fix,)).negative_control is None


def test_a_declaration_imports_every_shared_claim_from_experiment():
    """No list to keep: any claim class of pita_lab.claims, and nothing else, comes from here."""
    shared = [name for name, value in vars(claims).items() if isinstance(value, type) and issubclass(value, claims.Claim)]
    assert len(shared) > 20 and all(getattr(declarations, name) is getattr(claims, name) for name in shared)
    with pytest.raises(ImportError):
        exec("from pita_lab.experiment import read_dump", {})


def shared_files() -> list[str]:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    rendered = {path.relative_to(ROOT).as_posix() for path in render_all(ROOT)}
    tutorials = tuple(f"{catalog.get(name).folder}/" for name in catalog.tutorial_ids())  # a tutorial cites the pitfalls it meets
    return [f for f in tracked if not f.startswith(("experiments/", *tutorials, *GENERATED)) and not f.endswith(LOCKFILE) and f not in rendered]


ALLOW = re.compile(r"pita: allow\([^)]*\)")


def test_no_shared_file_lists_experiments():
    """Prose may name an experiment or two as an example; three or more is a list that the
    next experiment would have to edit."""
    mention = re.compile(r"\b(" + "|".join(FOLDERS) + r")\b")
    listing = {}
    for name in shared_files():
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        text = ALLOW.sub("", text)  # a lint allow comment names the pitfalls it silences where they are planted
        named = set(mention.findall(text)) | {i for i, folder in FOLDERS.items() if folder.name in text}
        if len(named) > 2:
            listing[name] = sorted(named, key=catalog.order_key)
    assert not listing, listing
