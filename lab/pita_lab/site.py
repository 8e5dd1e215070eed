"""The handbook as a static site: `pita book site` builds book/ with MkDocs and Material for MkDocs.

The navigation and the MkDocs configuration are generated here from the catalog, so a new
chapter appears in its main-line stage without anyone editing a list. The site needs nothing
from the network when it is viewed: Material's own assets, the search index (Chinese segmented
by jieba at build time) and Mermaid, copied from lab/site/node_modules (npm ci), all ship inside it.

The site keeps the repository's shape: the book is at book/, and a file outside book/ that a
page links to (`../crates/pita/README.md`) is at its own path, so every relative link that works
in the repository works on the site too, and strict mode can check them all.
"""

from __future__ import annotations

import io
import logging
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

from pita.errors import UsageError
from pita_lab import catalog, repo_root
from pita_lab.kinds import Kind, Stage
from pita_lab.store import RecordStore

# Pages written beside the chapters; each shows when present. The guides' chapters (catalog
# `guide_ids`) are front pages too.
FRONT_PAGES = ("reading.md", "nonscalar-backward.md")
REFERENCE_PAGES = ("symptoms.md", "causes.md", "defaults.md", "diagnosis.md")
MERMAID = Path("lab/site/node_modules/mermaid/dist/mermaid.min.js")
MERMAID_IN_SITE = "assets/javascripts/mermaid.min.js"
# Written into every site this command builds: only such a folder is ever replaced by a rebuild.
MARKER = ".pita-book-site"
# The site's root: the book is at book/, as in the checkout.
HOME_REDIRECT = ('<!doctype html><meta charset="utf-8"><title>pita 手册</title>'
                 '<meta http-equiv="refresh" content="0; url=book/index.html"><a href="book/index.html">pita 手册</a>\n')
# The target of a Markdown inline link or image: `](target)` or `](<target>)`.
LINK_TARGET = re.compile(r"\]\(\s*<?([^)\s>]+)")


def chapter_title(experiment_id: str) -> str:
    return f"{experiment_id} {catalog.get(experiment_id).title}"


def page_title(path: Path) -> str:
    """A page's `# heading`. MkDocs takes a title only from an h1 that opens the page, and the
    rendered pages open with a comment; without this the nav would show the file's name."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def navigation(book: Path) -> list:
    """MkDocs `nav`: the catalog page, the front pages, one section per main-line stage with its
    chapters in catalog order, the tutorials, then the reference pages; only pages that exist."""
    present = lambda name: (book / name).is_file()
    nav: list = [{"目录": "README.md"}]
    guides = [f"{i}.md" for i in catalog.guide_ids()]
    if front := [name for name in dict.fromkeys([*FRONT_PAGES, *guides]) if present(name) and name not in REFERENCE_PAGES]:
        nav.append({"先读": [{page_title(book / name): name} for name in front]})
    chapters = [i for i in catalog.ids() if present(f"{i}.md")]
    for stage in Stage:
        in_stage = [{chapter_title(i): f"{i}.md"} for i in chapters if catalog.get(i).mainline == stage]
        if in_stage:
            nav.append({stage.zh: in_stage})
    if tutorials := [{catalog.get(i).title: f"{i}.md"} for i in catalog.tutorial_ids() if present(f"{i}.md")]:
        nav.append({Kind.TUTORIAL.zh: tutorials})
    if reference := [name for name in REFERENCE_PAGES if present(name)]:
        nav.append({"参考": [{page_title(book / name): name} for name in reference]})
    return nav


def site_sources(root: Path) -> list[Path]:
    """What the site is built from, as paths in the checkout: book/ without its run records,
    and every file outside book/ that those pages link to (and what that links to)."""
    book, records = root / "book", RecordStore(root).committed_dir
    wanted = lambda path: path.is_file() and path.is_relative_to(root) and not path.is_relative_to(records)
    found = {path for path in book.rglob("*") if wanted(path)}
    pages = [path for path in found if path.suffix == ".md"]
    while pages:
        page = pages.pop()
        for target in LINK_TARGET.findall(page.read_text(encoding="utf-8")):
            address = urlparse(target)
            if address.scheme or address.netloc or not address.path or address.path.startswith("/"):
                continue
            path = Path(os.path.normpath(page.parent / unquote(address.path)))
            if path not in found and wanted(path):
                found.add(path)
                if path.suffix == ".md":
                    pages.append(path)
    return sorted(path.relative_to(root) for path in found)


def _in_book(nav: list) -> list:
    """`nav` with every page's path made relative to the site's root, where the book is book/."""
    def place(entry):
        if isinstance(entry, str):
            return f"book/{entry}"
        if isinstance(entry, list):
            return [place(item) for item in entry]
        return {title: place(value) for title, value in entry.items()}

    return place(nav)


def mkdocs_config(root: Path, docs_dir: Path, site_dir: Path) -> dict:
    """The MkDocs configuration, as the dict a mkdocs.yml would load into; `docs_dir` holds
    `site_sources(root)` at their paths in the checkout."""
    # Lazy: pymdownx comes with the optional `site` extra (see `_mkdocs`).
    from pymdownx.slugs import slugify
    from pymdownx.superfences import fence_code_format

    return {
        "site_name": "pita 手册",
        "site_description": "PyTorch 搬到 burn 的坑，每一条都有实测",
        "docs_dir": str(docs_dir),
        "site_dir": str(site_dir),
        "nav": _in_book(navigation(root / "book")),
        # Plain .html files: the site also reads from disk, without a server.
        "use_directory_urls": False,
        "strict": True,
        # Strict fails on every warning; these are the checks MkDocs makes reliably on this book.
        # An anchor is checked too: headings are Chinese, and the slugs keep them (see `toc`).
        "validation": {
            "nav": {"omitted_files": "info", "not_found": "warn", "absolute_links": "warn"},
            "links": {"not_found": "warn", "anchors": "warn", "absolute_links": "warn", "unrecognized_links": "warn"},
        },
        "theme": {
            "name": "material",
            "language": "zh",
            "font": False,  # Google Fonts otherwise: the system's fonts, nothing fetched
            "features": ["navigation.sections", "navigation.footer", "search.highlight", "content.code.copy"],
        },
        # Material renders a `mermaid` block with window.mermaid when a page already has it,
        # instead of loading it from a CDN; this is that copy.
        "extra_javascript": [MERMAID_IN_SITE],
        # Search only; Material's `offline` plugin would load a shim from a CDN (iframe-worker).
        "plugins": ["search"],
        "markdown_extensions": [
            {"toc": {"permalink": True, "slugify": slugify(case="lower")}},
            "tables",
            "admonition",
            "attr_list",
            {"pymdownx.highlight": {"use_pygments": True}},
            "pymdownx.inlinehilite",
            {"pymdownx.superfences": {"custom_fences": [{"name": "mermaid", "class": "mermaid", "format": fence_code_format}]}},
        ],
    }


class _Warnings(logging.Handler):
    """Prints what MkDocs warns about, one line each, and keeps it for the error when strict
    mode aborts."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(" ".join(record.getMessage().split()))
        print(f"site: {self.messages[-1]}", file=sys.stderr)

    def summary(self) -> str:
        if len(self.messages) < 2:
            return "".join(self.messages)
        return f"{len(self.messages)} problems (listed above), the first: {self.messages[0]}"


def _check_out(root: Path, out: Path) -> None:
    if out.exists() and not (out / MARKER).is_file() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"pita book site: {out} exists and is not a site this command built; name a new or empty folder")
    if out.resolve().is_relative_to((root / "book").resolve()):
        raise UsageError(f"pita book site: {out} is inside book/; name a folder outside it (default build/site)")


def _mkdocs():
    try:
        import jieba  # Material's search segments Chinese with it when it is installed
        from mkdocs.commands.build import build
        from mkdocs.config import load_config
        from mkdocs.exceptions import MkDocsException
    except ImportError as error:
        raise UsageError(f"pita book site needs {error.name}: run scripts/setup (it installs the lab's `site` extra)") from None
    jieba.setLogLevel(logging.WARNING)  # not its dictionary-loading chatter on stderr
    return build, load_config, MkDocsException


def build_site(out: str | Path | None = None) -> int:
    """`pita book site`: the book of this checkout into `out` (default build/site)."""
    root = repo_root()
    out = Path(out) if out else root / "build" / "site"
    _check_out(root, out)
    if not (root / MERMAID).is_file():
        raise UsageError(f"pita book site: {MERMAID} is missing: run scripts/setup (npm ci in lab/site)")
    print(f"site: building book/ into {out}", file=sys.stderr)
    build_into(root, out, root / MERMAID)
    pages = sum(1 for _ in out.rglob("*.html"))
    print(f"site: wrote {pages} pages to {out}; view it with `python -m http.server -d {out}`", file=sys.stderr)
    return 0


def build_into(root: Path, out: Path, mermaid: Path) -> None:
    """Builds `root`/book into a fresh folder beside `out` first, which replaces `out` only
    when the strict build succeeded, so a failed build leaves no half-written site."""
    build, load_config, MkDocsException = _mkdocs()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    warnings, logger = _Warnings(), logging.getLogger("mkdocs")
    logger.addHandler(warnings)
    logger.propagate = False  # each warning is named once, in the error below
    try:
        with tempfile.TemporaryDirectory(prefix="pita-site-docs-") as docs:
            for source in site_sources(root):
                (Path(docs) / source).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(root / source, Path(docs) / source)
            # No mkdocs.yml: the config is `mkdocs_config`, with absolute paths; MkDocs only wants
            # a place for one.
            config = load_config(io.BytesIO(b"{}"), config_file_path=str(root / "lab" / "site" / "mkdocs.yml"),
                                 **mkdocs_config(root, Path(docs), staging))
            build(config)
        (staging / MERMAID_IN_SITE).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(mermaid, staging / MERMAID_IN_SITE)
        (staging / "index.html").write_text(HOME_REDIRECT, encoding="utf-8")
        (staging / MARKER).write_text("built by `pita book site`; a rebuild replaces this folder\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except MkDocsException as error:
        raise UsageError(f"pita book site: {warnings.summary() or error}; no site written") from None
    finally:
        logger.removeHandler(warnings)
        logger.propagate = True
        shutil.rmtree(staging, ignore_errors=True)
