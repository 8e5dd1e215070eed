"""The book's presentation: what a reader sees is real (no masked line numbers, no constant the
chapter never defines), in the book's language (Chinese claims, 「」 quotes in prose), and says
where the figures and the `pita` crate come from."""

import re
from pathlib import Path

import pytest

from pita_lab import catalog
from pita_lab.book import snippet, torch_build, versions
from pita_lab.book.environment import environment
from pita_lab.compile_fail import normalise, scrubbed
from pita_lab.record import CompileFailRun, RunRecord

CJK = re.compile(r"[\u4e00-\u9fff]")
MASKED = re.compile(r":LL:CC\b|^\s*LL \|", re.M)
# What is not prose in a chapter: fenced blocks, code spans, HTML comments and tags.
NOT_PROSE = re.compile(r"```.*?```|`[^`\n]*`|<!--.*?-->|<[^>\n]*>", re.S)
NON_BOOK_QUOTES = re.compile(r"[\"“”]")
SNIPPET_CALL = re.compile(r"snippet\(\s*(?:'([^']+)'|experiment\.(burn_source|torch_script))\s*,\s*'([^']+)'\s*\)")
MESSAGE_CONSTANT_USE = re.compile(r"\{([A-Z][A-Z0-9_]+)\}")


def chapter_files(root: Path) -> list[Path]:
    return [root / "book" / f"{i}.md" for i in catalog.chapter_ids() if (root / "book" / f"{i}.md").exists()]


def prose(markdown: str) -> str:
    """A chapter without code and HTML; of the claims table only the claims' own words (what
    they expected and observed is program output, quoted as printed)."""
    lines = []
    for line in NOT_PROSE.sub("", markdown).splitlines():
        if line.startswith("| ") and line.count(" | ") >= 3:
            line = line.split(" | ")[0]
        lines.append(line)
    return "\n".join(lines)


def foreign_quotes(markdown: str) -> list[str]:
    return [line.strip() for line in prose(markdown).splitlines() if NON_BOOK_QUOTES.search(line)]


def undefined_message_constants(quoted: str, source: str) -> set[str]:
    """Constants a quoted snippet formats into a message (`"{NAME}"`) that the source file
    defines but the snippet does not show: the quoted code would not compile on its own."""
    defined_in_file = set(re.findall(r"\bconst ([A-Z][A-Z0-9_]+)\b", source))
    shown = set(re.findall(r"\bconst ([A-Z][A-Z0-9_]+)\b", quoted))
    return (set(MESSAGE_CONSTANT_USE.findall(quoted)) & defined_in_file) - shown


def quoted_snippets(root: Path):
    """(source path, snippet name) for every `snippet(...)` a chapter template calls."""
    for chapter_id in catalog.chapter_ids():
        experiment = catalog.get(chapter_id)
        template = root / experiment.folder / "chapter.md.j2"
        for path, attribute, name in SNIPPET_CALL.findall(template.read_text(encoding="utf-8")):
            yield root / (path or getattr(experiment, attribute)), name


# --- compiler errors: the real diagnostic, not the snapshot's masked one -----------------------

GUARD_ERROR = """error[E0308]: mismatched types
  --> /checkout/experiments/p99-x/compile_fail/ce.rs:12:34
   |
12 |     let _grads = backward_scalar(per_sample);
   |                  ^^^^^^^^^^ expected `1`, found `2`
note: function defined here
  --> /checkout/crates/pita/src/guard.rs:19:8
   |
19 | pub fn backward_scalar(loss: Tensor<1>) -> Gradients {
   |        ^^^^^^^^^^^^^^^
"""


def test_the_book_keeps_the_line_numbers_the_snapshot_masks():
    root = Path("/checkout")
    masked = normalise(GUARD_ERROR, "experiments/p99-x/compile_fail/ce.rs", root)
    real = scrubbed(GUARD_ERROR, root)
    assert MASKED.search(masked)  # the snapshot masks the guard's lines: they move with the file
    assert not MASKED.search(real)
    assert "crates/pita/src/guard.rs:19:8" in real and "/checkout" not in real


def test_the_compiler_error_macro_shows_the_real_diagnostic():
    macros = environment().get_template("macros.md.j2").module
    run = CompileFailRun("ce", 101, diagnostic="--> a.rs:LL:CC\n", snapshot="", matches_snapshot=True, rendered="--> a.rs:19:8\n")
    assert str(macros.compiler_error(run)) == "--> a.rs:19:8"
    old = CompileFailRun("ce", 101, diagnostic="--> a.rs:LL:CC\n", snapshot="", matches_snapshot=True)
    assert str(macros.compiler_error(old)) == "--> a.rs:LL:CC"  # a record from before `rendered`


def test_no_chapter_shows_masked_line_numbers(root):
    shown = {path.name: MASKED.findall(path.read_text(encoding="utf-8")) for path in chapter_files(root)}
    assert not {name: found for name, found in shown.items() if found}


# --- guard code a reader can paste ---------------------------------------------------------------

def test_a_snippet_without_its_message_constant_is_found():
    source = 'pub const TIED: &str = "tied";\n// book:begin g\nfn g() { panic!("{TIED}") }\n// book:end\n'
    assert undefined_message_constants('fn g() { panic!("{TIED}") }', source) == {"TIED"}
    assert undefined_message_constants('pub const TIED: &str = "tied";\nfn g() { panic!("{TIED}") }', source) == set()


def test_every_quoted_snippet_defines_the_constants_it_formats(root):
    missing = {}
    for path, name in quoted_snippets(root):
        found = undefined_message_constants(snippet(path, name), path.read_text(encoding="utf-8"))
        if found:
            missing[f"{path.relative_to(root)}:{name}"] = sorted(found)
    assert not missing


# --- the book's language ---------------------------------------------------------------------------

def test_english_claim_texts_are_found():
    assert not CJK.search("burn Adam against torch Adam is a MISMATCH at atol 1e-6")
    assert CJK.search("burn 的 Adam 报 MISMATCH")


@pytest.mark.parametrize("chapter_id", catalog.chapter_ids())
def test_claim_texts_are_chinese(chapter_id):
    english = [claim.id for claim in catalog.get(chapter_id).claims if not CJK.search(claim.text)]
    assert not english


def test_foreign_quotes_in_prose_are_found():
    chapter = '这正是"逐个参数裁剪"的特征。\n```text\nprinted "as is"\n```\n`"code"` 和 <a id="x"></a>\n| 断言 | a "b" | c | PASS |\n'
    assert foreign_quotes(chapter) == ['这正是"逐个参数裁剪"的特征。']
    assert foreign_quotes("加载「成功」") == []
    assert foreign_quotes("看上去对应“默认”的是") != []


def test_chapter_prose_quotes_with_corner_brackets(root):
    found = {path.name: foreign_quotes(path.read_text(encoding="utf-8")) for path in chapter_files(root)}
    assert not {name: lines for name, lines in found.items() if lines}


# --- where the figures and the crate come from -----------------------------------------------------

def test_torch_build_words():
    assert torch_build("2.15.0+cu132") == ("2.15.0", "CUDA 构建")
    assert torch_build("2.15.0+cpu") == ("2.15.0", "CPU 构建")
    assert torch_build("2.15.0") == ("2.15.0", "")
    assert torch_build("2.15.0+abc") == ("2.15.0", "abc")


def test_the_version_line_names_the_release_the_device_and_every_backend(root):
    for path in chapter_files(root):
        record = RunRecord.load(root / "book" / "records" / f"{path.stem}.json")
        found = versions(record)
        line = next(line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("版本："))
        if "torch" in found:
            assert f"PyTorch {found['torch_release']}（" in line and "+" not in line, line
        assert all(f"`{backend}`" in line for backend in found["burn_backends"]), line
        assert "Device<" not in line


def test_chapters_quoting_the_crate_say_how_to_add_it(root):
    for chapter_id in catalog.chapter_ids():
        path = root / "book" / f"{chapter_id}.md"
        if not path.exists():
            continue
        quotes = "crates/pita/src/" in (root / catalog.get(chapter_id).folder / "chapter.md.j2").read_text(encoding="utf-8")
        says = "`pita = { path = " in path.read_text(encoding="utf-8")
        assert says == quotes, chapter_id


# --- two corrected facts that a run cannot guard -------------------------------------------------

def test_the_catalog_and_the_chapter_give_the_same_accumulation_gap(root):
    record = RunRecord.load(root / "book" / "records" / "p18.json")
    figure = catalog.get("p18").magnitude(record)
    assert "`weight.grad`" in figure
    assert figure in (root / "book" / "p18.md").read_text(encoding="utf-8")
    assert figure in (root / "book" / "README.md").read_text(encoding="utf-8")


def test_burn_store_readme_loads_safetensors_with_the_adapter(root):
    """p30 says the README's SafeTensors example carries the adapter; the locked README must."""
    from pita_lab.rust_source import locked_file

    _, readme = locked_file(root, "burn-store", "README.md")
    example = readme[readme.index("SafetensorsStore::from_file"):]
    assert example.splitlines()[1].strip() == ".with_from_adapter(PyTorchToBurnAdapter);"
    assert "p30" in catalog.ids() and "README" in (root / "book" / "p30.md").read_text(encoding="utf-8")
