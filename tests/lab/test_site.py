"""The handbook as a static site (`pita book site`): its navigation, generated from the catalog;
its build, strict and offline; and what a reader sees in a real browser, Debian's chromium
driven by Playwright, with the site served from 127.0.0.1 and every other request refused."""

import functools
import http.server
import json
import re
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

from conftest import ROOT, chromium_context, pita
from pita.errors import UsageError
from pita_lab import catalog, site
from pita_lab.book import MAINLINE_ZH
from pita_lab.experiment import MAINLINE

ARTIFACTS = ROOT / "build" / "test-artifacts"
LOCAL_HOST = "127.0.0.1"


# ---------------------------------------------------------------- navigation, from the catalog

def sections(nav: list) -> dict[str, list]:
    return {title: entries for item in nav for title, entries in item.items()}


def chapter_files(entries: list) -> list[str]:
    return [entry if isinstance(entry, str) else next(iter(entry.values())) for entry in entries]


def test_navigation_follows_the_main_line():
    book = ROOT / "book"
    nav = sections(site.navigation(book))
    stages = [MAINLINE_ZH[stage] for stage in MAINLINE if MAINLINE_ZH[stage] in nav]
    assert [title for title in nav if title in MAINLINE_ZH.values()] == stages
    for stage in MAINLINE:
        expected = [f"{i}.md" for i in catalog.ids() if catalog.get(i).mainline == stage and (book / f"{i}.md").is_file()]
        assert chapter_files(nav.get(MAINLINE_ZH[stage], [])) == expected
    assert nav["目录"] == "README.md"
    assert chapter_files(nav["教程"]) == [f"{i}.md" for i in catalog.tutorial_ids() if (book / f"{i}.md").is_file()]


def test_navigation_shows_front_and_reference_pages_only_when_present(tmp_path):
    for name in ("README.md", "p12.md", "reading.md", "symptoms.md"):
        (tmp_path / name).write_text(f"<!-- rendered -->\n# {name[:-3]} 的标题\n", encoding="utf-8")
    nav = sections(site.navigation(tmp_path))
    assert list(nav) == ["目录", "先读", MAINLINE_ZH["loss → backward"], "参考"]
    assert nav["先读"] == [{"reading 的标题": "reading.md"}] and nav["参考"] == [{"symptoms 的标题": "symptoms.md"}]
    assert chapter_files(nav[MAINLINE_ZH["loss → backward"]]) == ["p12.md"]
    (tmp_path / "reading.md").unlink()
    assert "先读" not in sections(site.navigation(tmp_path))


# ---------------------------------------------------------------- what the pages reference

class _References(HTMLParser):
    """Every URL a page loads by itself: scripts, stylesheets, icons, images, media, frames."""

    LOADED = {("script", "src"), ("link", "href"), ("img", "src"), ("img", "srcset"), ("source", "src"), ("source", "srcset"),
              ("iframe", "src"), ("video", "src"), ("audio", "src"), ("image", "href"), ("use", "href"), ("object", "data")}

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if (tag, name) in self.LOADED and value and not (tag == "link" and ("rel", "prev") in attrs or ("rel", "next") in attrs):
                self.urls.extend(part.split()[0] for part in value.split(",") if part.strip())


CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")


def external_references(path: Path) -> list[str]:
    """The URLs an HTML or CSS file loads from a host (http, https or protocol-relative)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".css":
        urls = [a or b for a, b in CSS_URL.findall(text)]
    else:
        parser = _References()
        parser.feed(text)
        urls = parser.urls + [a or b for a, b in CSS_URL.findall(text)]
    return [url for url in urls if urlparse(url).netloc]


def test_the_reference_scan_finds_a_cdn(tmp_path):
    page = tmp_path / "page.html"
    page.write_text('<link rel="next" href="p13.html"><img src="img/a.svg"><style>b{background:url(x.png)}</style>', encoding="utf-8")
    assert external_references(page) == []
    page.write_text('<script src="https://cdn.example/mermaid.js"></script><link rel="stylesheet" href="//fonts.example/a.css">'
                    '<style>@import "https://fonts.example/b.css";</style>', encoding="utf-8")
    assert external_references(page) == ["https://cdn.example/mermaid.js", "//fonts.example/a.css", "https://fonts.example/b.css"]
    sheet = tmp_path / "a.css"
    sheet.write_text("@font-face{src:url(https://fonts.example/f.woff2)}", encoding="utf-8")
    assert external_references(sheet) == ["https://fonts.example/f.woff2"]


# ---------------------------------------------------------------- the build

@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    proc = pita("book", "site", "--out", out, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {sum(1 for _ in out.rglob('*.html'))} pages" in proc.stderr
    return out


@pytest.mark.integration
def test_the_site_has_a_page_for_every_page_of_the_book_and_no_records(built_site):
    book = ROOT / "book"
    pages = {("index" if p.stem == "README" else p.stem) + ".html" for p in book.glob("*.md")}
    assert pages <= {p.name for p in (built_site / "book").glob("*.html")}
    assert not (built_site / "book" / "records").exists()
    for image in book.glob("img/*"):
        assert (built_site / "book" / "img" / image.name).read_bytes() == image.read_bytes()
    assert "book/index.html" in (built_site / "index.html").read_text(encoding="utf-8")


def test_the_site_takes_what_the_book_links_to_outside_book(tmp_path):
    (tmp_path / "book" / "records").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "book" / "records" / "p12.json").write_text("{}", encoding="utf-8")
    (tmp_path / "book" / "p12.md").write_text("[a](../docs/a.md) [web](https://example.org/x.md) [p](p12.md#x)\n", encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text("[b](b.md) [missing](c.md)\n", encoding="utf-8")
    (tmp_path / "docs" / "b.md").write_text("# b\n", encoding="utf-8")
    (tmp_path / "docs" / "unlinked.md").write_text("# not linked\n", encoding="utf-8")
    assert site.site_sources(tmp_path) == [Path("book/p12.md"), Path("docs/a.md"), Path("docs/b.md")]


@pytest.mark.integration
def test_the_site_loads_nothing_from_another_host(built_site):
    files = [*built_site.rglob("*.html"), *built_site.rglob("*.css")]
    assert len(files) > 40
    assert {str(f.relative_to(built_site)): external_references(f) for f in files if external_references(f)} == {}
    assert (built_site / site.MERMAID_IN_SITE).read_bytes() == (ROOT / site.MERMAID).read_bytes()


@pytest.mark.integration
def test_the_search_index_segments_chinese_into_words(built_site):
    index = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    separator = re.compile(index["config"]["separator"])
    words = {word for doc in index["docs"] for word in separator.split(doc["title"] + " " + doc["text"])}
    assert "梯度" in words
    assert "梯度大" not in words  # the title's 「梯度大了」 is cut into words, not kept as one run of characters


def test_a_broken_link_fails_the_build_and_leaves_no_site(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    (book / "README.md").write_text("# 目录\n\n[p12](p12.md)\n", encoding="utf-8")
    (tmp_path / "lab" / "site").mkdir(parents=True)
    (book / "p12.md").write_text("# p12\n\n见 [怎么读](no-such-page.md)。\n", encoding="utf-8")
    out = tmp_path / "site"
    with pytest.raises(UsageError, match=r"no-such-page\.md"):
        site.build_into(tmp_path, out, ROOT / site.MERMAID)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["book", "lab"]
    (book / "p12.md").write_text("# p12\n\n见 [目录](README.md)。\n", encoding="utf-8")
    site.build_into(tmp_path, out, ROOT / site.MERMAID)
    assert (out / "book" / "p12.html").is_file() and (out / site.MARKER).is_file()


def test_site_refuses_ids_and_a_folder_it_did_not_build(tmp_path):
    proc = pita("book", "site", "p12", cwd=ROOT)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "takes no experiment ids" in proc.stderr
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    proc = pita("book", "site", "--out", tmp_path, cwd=ROOT)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "not a site this command built" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    proc = pita("book", "check", "--out", tmp_path, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr == "error: pita book check: --out is for `pita book site`\n"


# ---------------------------------------------------------------- in a browser

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(built_site):
    """The site on 127.0.0.1, an ephemeral port, from a server thread."""
    server = http.server.ThreadingHTTPServer((LOCAL_HOST, 0), functools.partial(_QuietHandler, directory=str(built_site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://{LOCAL_HOST}:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


class Browser:
    """A headless chromium that refuses, and records, every request not to the local server."""

    def __init__(self, context):
        self.context = context
        self.left_the_machine: list[str] = []
        context.route("**/*", self._route)

    def _route(self, route):
        if urlparse(route.request.url).hostname == LOCAL_HOST:
            route.continue_()
        else:
            self.left_the_machine.append(route.request.url)
            route.abort()

    def open(self, url: str):
        """A page at `url`, with what went wrong while it loaded: console errors, failed
        requests, HTTP errors."""
        page = self.context.new_page()
        problems: list[str] = []
        page.on("console", lambda message: message.type == "error" and problems.append(f"{url}: console: {message.text}"))
        page.on("pageerror", lambda error: problems.append(f"{url}: {' '.join(str(error).split())}"))
        page.on("requestfailed", lambda request: problems.append(f"failed: {request.url}"))
        page.on("response", lambda response: response.status >= 400 and problems.append(f"{response.status}: {response.url}"))
        response = page.goto(url, wait_until="load")
        return page, response, problems


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as context:
        driver = Browser(context)
        yield driver
    assert driver.left_the_machine == []


def _shadow_svg(page, host_selector: str) -> list[str]:
    """The text of every `svg` under the (closed) shadow roots of the elements matching
    `host_selector`. Material draws each diagram into a closed shadow root, which selectors
    cannot enter; the DevTools protocol's DOM, pierced, can."""
    session = page.context.new_cdp_session(page)
    root = session.send("DOM.getDocument", {"depth": -1, "pierce": True})["root"]
    hosts = session.send("DOM.querySelectorAll", {"nodeId": root["nodeId"], "selector": host_selector})["nodeIds"]
    backend_ids = {session.send("DOM.describeNode", {"nodeId": n})["node"]["backendNodeId"] for n in hosts}

    def walk(node, inside_host=False, inside_svg=False):
        inside_host = inside_host or node.get("backendNodeId") in backend_ids
        is_svg = inside_host and node.get("nodeName", "").lower() == "svg"
        texts = [""] if is_svg else []
        for child in node.get("children", []) + node.get("shadowRoots", []):
            found = walk(child, inside_host, inside_svg or is_svg)
            if is_svg:
                texts[0] += "".join(found)
            else:
                texts.extend(found)
        if inside_svg and node.get("nodeType") == 3:
            return [node["nodeValue"]]
        return texts

    return walk(root)


def _mermaid_labels(chapter: Path) -> list[str]:
    """The node labels of the chapter's first mermaid diagram, as written in its source."""
    fence = re.search(r"```mermaid\n(.*?)```", chapter.read_text(encoding="utf-8"), re.S).group(1)
    return re.findall(r'\["([^"]+)"\]', fence)


@pytest.mark.integration
def test_p12_renders_its_flowchart_as_svg(browser, served):
    page, response, problems = browser.open(urljoin(served, "book/p12.html"))
    assert response.status == 200
    page.wait_for_selector("div.mermaid", state="attached")  # Material's host, once the diagram is drawn
    svgs = _shadow_svg(page, "div.mermaid")
    assert len(svgs) == 1
    labels = _mermaid_labels(ROOT / "book" / "p12.md")
    assert labels and all(label in svgs[0] for label in labels), (labels, svgs)
    assert page.locator("pre.mermaid").count() == 0  # no fence left unrendered
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator("div.mermaid").scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "p12.png", full_page=False)
    assert problems == []


@pytest.mark.integration
def test_the_code_is_highlighted(browser, served):
    page, _, _ = browser.open(urljoin(served, "book/p12.html"))
    assert page.locator("div.highlight code span.n, div.highlight code span.k, div.highlight code span.kn").count() > 5


@pytest.mark.integration
def test_the_root_leads_to_the_book(browser, served):
    page, response, problems = browser.open(served)
    assert response.status == 200
    page.wait_for_url(urljoin(served, "book/index.html"))
    assert page.locator("article h1").count() == 1 and problems == []


@pytest.mark.integration
def test_every_navigation_link_resolves(browser, served):
    page, _, problems = browser.open(urljoin(served, "book/index.html"))
    links = sorted({urljoin(page.url, href) for href in page.locator("nav.md-nav--primary a.md-nav__link[href]").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))") if not href.startswith("#")})
    book_pages = [p for p in (ROOT / "book").glob("*.md")]
    assert len(links) >= len(book_pages) - 1  # every page but the home page, which the site title links
    for link in links:
        assert urlparse(link).hostname == LOCAL_HOST, link
        linked, response, more = browser.open(link)
        assert response.status == 200, link
        assert linked.locator("article h1").count() == 1, link
        problems += more + _undrawn_diagrams(linked, link)
        linked.close()
    assert problems == []


def _undrawn_diagrams(page, link: str) -> list[str]:
    """A problem when the page's source has more `mermaid` fences than the page shows diagrams."""
    name = Path(urlparse(link).path).name
    source = ROOT / "book" / ("README.md" if name == "index.html" else name.replace(".html", ".md"))
    fences = source.read_text(encoding="utf-8").count("```mermaid") if source.is_file() else 0
    for _ in range(50):
        drawn = page.locator("div.mermaid").count()
        if drawn == fences:
            return []
        page.wait_for_timeout(200)
    return [f"{link}: {drawn} of {fences} mermaid diagrams drawn"]


def _search(page, query: str) -> list[str]:
    box = page.locator("input.md-search__input")
    box.click()
    box.type(query)
    page.wait_for_selector("li.md-search-result__item", state="attached")
    return page.locator("li.md-search-result__item a.md-search-result__link").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))")


@pytest.mark.integration
@pytest.mark.parametrize("query", ["梯度", "batch"])
def test_search_finds_the_chapter_on_the_loss_that_was_not_reduced(browser, served, query):
    page, _, problems = browser.open(urljoin(served, "book/index.html"))
    results = _search(page, query)
    assert results, query
    assert any(urlparse(href).path.endswith("p12.html") for href in results), results
    assert problems == []


@pytest.mark.integration
def test_search_finds_nothing_for_a_word_the_book_lacks(browser, served):
    page, _, _ = browser.open(urljoin(served, "book/index.html"))
    page.locator("input.md-search__input").click()
    page.locator("input.md-search__input").type("zzqx")
    page.wait_for_selector(".md-search-result__meta", state="attached")
    page.wait_for_timeout(1000)
    assert page.locator("li.md-search-result__item").count() == 0
