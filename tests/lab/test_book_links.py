"""Every link in the handbook and the docs leads somewhere: a relative link names a file that
exists, and a `#anchor` into a Markdown page names a heading or an explicit `id` in it.
External links (http, mailto) are not fetched."""

import re
from pathlib import Path

from conftest import ROOT

FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
INLINE_LINK = re.compile(r"\]\(\s*<?([^()\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)", re.M)
HTML_LINK = re.compile(r"""<(?:a|img)\s[^>]*?(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
EXPLICIT_ANCHOR = re.compile(r"""\s(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:, …


def pages(root: Path) -> list[Path]:
    return sorted(root.glob("book/*.md")) + sorted(root.glob("docs/*.md")) + [root / "README.md"]


def without_code(text: str) -> str:
    """The page with fenced blocks and code spans blanked: a `](x)` inside code is no link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    prose = without_code(text)
    return [m.group(1) for pattern in (INLINE_LINK, REFERENCE_LINK, HTML_LINK) for m in pattern.finditer(prose)]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and most Markdown renderers make it: lower case, punctuation
    dropped (letters of any script kept), spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading))
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found = set(EXPLICIT_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for heading in HEADING.findall(without_code(text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(root: Path, files: list[Path]) -> list[str]:
    """'page: target (why)' for every link in `files` that leads nowhere."""
    broken = []
    for page in files:
        text = page.read_text(encoding="utf-8")
        for target in links(text):
            if EXTERNAL.match(target):
                continue
            path, _, anchor = target.partition("#")
            destination = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}: {target}"
            if not destination.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and destination.suffix == ".md" and anchor not in anchors(destination.read_text(encoding="utf-8")):
                broken.append(f"{where} (no anchor #{anchor} in {destination.relative_to(root)})")
    return broken


def test_every_link_in_the_book_and_docs_resolves():
    assert (ROOT / "book" / "README.md").is_file()
    broken = broken_links(ROOT, pages(ROOT))
    assert not broken, "\n".join(broken)


def test_the_book_links_its_navigation_pages():
    """The catalog links the reference pages, and every chapter ends with links (the 「相关」 section)."""
    catalog_links = {target.partition("#")[0] for target in links((ROOT / "book" / "README.md").read_text(encoding="utf-8"))}
    assert {"symptoms.md", "diagnosis.md"} <= catalog_links
    chapter = (ROOT / "book" / "p12.md").read_text(encoding="utf-8")
    assert "symptoms.md#grad-scaled" in links(chapter) and "diagnosis.md#scale" in links(chapter)


def test_a_broken_link_or_anchor_is_reported(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "a.md").write_text('# A\n\n<a id="here"></a>\n\n## 梯度 大了\n\nx\n', encoding="utf-8")
    page = tmp_path / "book" / "b.md"
    page.write_text(
        "[ok](a.md) [ok](a.md#here) [ok](a.md#梯度-大了) [ok](#top) [web](https://example.com/x.md)\n"
        "`[code](missing.md)`\n\n```\n[fenced](missing.md)\n```\n\n# Top\n\n"
        "[gone](missing.md) [no anchor](a.md#nowhere) <a href=\"lost.md\">x</a>\n",
        encoding="utf-8")
    assert broken_links(tmp_path, [page]) == [
        "book/b.md: missing.md (no such file)",
        "book/b.md: a.md#nowhere (no anchor #nowhere in book/a.md)",
        "book/b.md: lost.md (no such file)",
    ]
