"""The book as a reader sees it: every page in headless Chromium, driven by Playwright.

The site is built once (strict), served on localhost, and opened in the system's
Chromium (Debian's `chromium` package, which `make test` installs where it can). Every
request that leaves localhost is refused and counted: the book must work offline, so
fonts, Mermaid and search all come from the site itself.

Every page is also measured at a laptop's and a phone's width (tests/book_layout.js):
no code block or table whose content is hidden to the side, no diagram text drawn under
11 px, no overlapping labels, no diagram taller than the window without a button that
fits it (the layout is chapters/assets/layout.css and diagrams.js).

A reader who does not see the page is a reader too: axe-core (pinned, fetched by `make test`
from the npm registry, like Mermaid) checks a sample of pages in the light and the dark
colour scheme, and every diagram carries a title and a description for a screen reader.

Skipped, with the reason, where there is no Chromium; Playwright itself is a dev
dependency, so a missing Playwright is an error, not a skip.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, sync_playwright

from benchmarks import plots

pytestmark = pytest.mark.meta

ROOT = Path(__file__).resolve().parent.parent
MERMAID_JS = ROOT / "chapters" / "assets" / "vendor" / "mermaid.min.js"
# axe-core, fetched by the Makefile into the venv (MINIFX_AXE: another copy of axe.min.js).
AXE_JS = Path(os.environ.get("MINIFX_AXE") or ROOT / ".venv" / "axe-core" / "axe.min.js")
# What a root process needs to start Chromium headless in a container with no network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Material closes the shadow root it draws a Mermaid diagram into; open it so the test
# can see the SVG.
OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) {
  return attach.call(this, {...init, mode: "open"});
};
"""


def find_chromium() -> str | None:
    return (
        os.environ.get("MINIFX_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )


CHROMIUM = find_chromium()
if CHROMIUM is None:
    pytestmark = [
        pytestmark,
        pytest.mark.skip(
            reason="no Chromium (install Debian's chromium package, or set MINIFX_CHROMIUM to "
            "its path; `make test` installs it when run as root with apt-get)"
        ),
    ]


@dataclass(frozen=True)
class Site:
    url: str  # the home page, ending in "/"
    directory: Path  # what the server serves

    def pages(self) -> list[str]:
        """Every page, as a path below `url` ('' for the home page)."""
        return sorted(
            ""
            if p.parent == self.directory
            else p.parent.relative_to(self.directory).as_posix() + "/"
            for p in self.directory.rglob("index.html")
        )


@pytest.fixture(scope="module")
def site(book_build) -> Site:
    """The book, built strictly (once per run: tests/conftest.py) and served on localhost."""
    assert MERMAID_JS.is_file(), (
        f"{MERMAID_JS.relative_to(ROOT)} is missing: run `make test` (or `make "
        f"{MERMAID_JS.relative_to(ROOT)}`), which fetches Mermaid from the npm registry"
    )
    assert book_build.returncode == 0, book_build.stderr[-3000:]
    with served(book_build.site) as book:
        yield book


@contextlib.contextmanager
def served(directory: Path) -> Iterator[Site]:
    """`directory`, served on localhost while the block runs."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}/", directory)
    finally:
        server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # one line per request would drown pytest's output
        pass


class Reader:
    """A browser tab that records console errors, page errors and requests to the outside."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        self.outside: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.route("**/*", self._only_localhost)

    def _only_localhost(self, route) -> None:
        if urlparse(route.request.url).hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def open(self, url: str) -> Page:
        self.page.goto(url, wait_until="load")
        return self.page


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def reader(browser) -> Reader:
    context = browser.new_context()
    context.add_init_script(OPEN_SHADOW_ROOTS)
    yield Reader(context.new_page())
    context.close()


def test_search_finds_replace_all_uses_with(site, reader):
    page = reader.open(site.url)
    page.keyboard.press("/")  # the book's search shortcut, as a reader would
    page.keyboard.type("replace_all_uses_with")
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=15_000)
    assert "replace_all_uses_with" in results.first.inner_text()


def test_mermaid_diagrams_render_as_svg(site, reader):
    page = reader.open(site.url)  # the home page draws the pipeline
    page.locator("div.mermaid svg").first.wait_for(timeout=15_000)
    assert page.locator("div.mermaid svg").count() >= 1
    assert page.locator("pre.mermaid").count() == 0, "a diagram was left as text"
    assert not reader.errors, reader.errors


# Mermaid has drawn at least n diagrams (into the shadow roots Material gives them).
DIAGRAMS_DRAWN = """n => [...document.querySelectorAll('article div.mermaid')].filter(
  (d) => d.shadowRoot?.querySelector('svg')).length >= n"""


def wait_for_diagrams(page: Page, site: Site, path: str) -> None:
    """Wait until every diagram of the page at `path` is drawn (its HTML holds each
    one's source in a `<pre class="mermaid">`, which Mermaid replaces as it draws)."""
    html = (site.directory / path / "index.html").read_text(encoding="utf-8")
    page.wait_for_function(DIAGRAMS_DRAWN, arg=html.count('<pre class="mermaid">'), timeout=15_000)


# The words Mermaid drew in bold or italics, with the label they are in.
EMPHASISED_LABELS = """() => [...document.querySelectorAll("article div.mermaid")].flatMap(
  (diagram, i) => [...diagram.shadowRoot.querySelectorAll("strong, em")].map((e) =>
    `diagram ${i + 1}: '${e.textContent}' in '${e.parentElement.textContent}'`))"""


# Each diagram's title and description, as a screen reader gets them (Mermaid writes
# `accTitle:` and `accDescr:` into the SVG's <title> and <desc>, and points to them).
UNNAMED_DIAGRAMS = """() => [...document.querySelectorAll("article div.mermaid")].flatMap(
  (diagram, i) => {
    const svg = diagram.shadowRoot.querySelector("svg");
    const text = (attribute) => (svg.getAttribute(attribute) || "").split(" ")
      .map((id) => svg.querySelector(`[id="${id}"]`)?.textContent.trim() || "").join(" ").trim();
    const missing = [];
    if (text("aria-labelledby").length < 3) missing.push("accTitle");
    if (text("aria-describedby").length < 20) missing.push("accDescr");
    return missing.length ? [`diagram ${i + 1} has no ${missing.join(" and no ")}`] : [];
  })"""


def test_the_diagram_check_finds_a_diagram_without_a_text_alternative(browser):
    page = browser.new_page()
    page.set_content(
        '<article><div class="mermaid" id="bare"></div><div class="mermaid" id="named">'
        "</div></article><script>"
        'document.getElementById("bare").attachShadow({mode: "open"}).innerHTML = "<svg></svg>";'
        'document.getElementById("named").attachShadow({mode: "open"}).innerHTML = '
        '`<svg aria-labelledby="t" aria-describedby="d"><title id="t">A graph</title>'
        '<desc id="d">x flows through relu, which is the output.</desc></svg>`;</script>'
    )
    unnamed = page.evaluate(UNNAMED_DIAGRAMS)
    page.close()
    assert unnamed == ["diagram 1 has no accTitle and no accDescr"], unnamed


@pytest.mark.needs_solutions  # a student release turns the solutions into notes
def test_collapsible_solutions_open(site, reader):
    page = reader.open(site.url + "04-interpreter/")
    solution = page.locator("details").first
    assert solution.get_attribute("open") is None, "solutions start collapsed"
    solution.locator("summary").click()
    page.wait_for_function("document.querySelector('details').open")
    assert solution.locator("pre").first.is_visible()


def test_code_blocks_have_copy_buttons(site, reader):
    page = reader.open(site.url + "01-proxy/")
    buttons = page.locator("button[data-md-type=copy]")
    buttons.first.wait_for(state="attached", timeout=15_000)  # added by the theme's script
    assert buttons.count() >= 5
    assert buttons.count() == page.locator("div.highlight pre > code").count()
    assert buttons.first.get_attribute("title") == "Copy to clipboard"


# Readable without scrolling sideways or zooming (tests/book_layout.js measures a page).
LAYOUT_JS = (ROOT / "tests" / "book_layout.js").read_text(encoding="utf-8")
# The benchmarks' charts hold text TEXT_PX high at the width the book gives them.
LAYOUT_LIMITS = {"minFontPx": 11, "slackPx": 1, "chartTextPx": plots.TEXT_PX}
# A laptop, and a narrow phone: 360 CSS pixels wide, as many Android phones are (an
# iPhone 12 to 15 is 390; what fits 360 fits there too).
WINDOWS = {"desktop": (1280, 800), "phone": (360, 800)}
# The window in which each page is left to settle (no request for half a second: the
# search index loaded) before it is measured. A page fetches the same files at every
# width, and the wait costs half a second a page, so the other window does not wait.
SETTLED = "desktop"
# Everything a reader can open is measured: collapsed blocks opened, every tab shown.
OPEN_EVERYTHING = """() => {
  document.querySelectorAll("details").forEach((d) => (d.open = true));
  const style = document.createElement("style");
  style.textContent = ".tabbed-set > .tabbed-content > .tabbed-block {display: block !important}";
  document.head.append(style);
}"""


def layout_problems(page: Page) -> dict:
    """Open every block and tab of a page whose diagrams are drawn, and measure it
    (book_layout.js)."""
    page.evaluate(OPEN_EVERYTHING)
    page.wait_for_timeout(50)  # let the diagrams' size watcher see the opened blocks
    return page.evaluate(LAYOUT_JS, LAYOUT_LIMITS)


# The names (code with no space in it) in a page's tables that are drawn on two lines.
NAMES_BROKEN_IN_TABLES = """() => [...document.querySelectorAll("article table:not([class]) code")]
  .filter((code) => {
    if (/\\s/.test(code.textContent.trim())) return false;
    const range = document.createRange();
    range.selectNodeContents(code);
    const lines = [...range.getClientRects()].filter((r) => r.width > 0).map((r) => r.top);
    return new Set(lines.map(Math.round)).size > 1;
  })
  .map((code) => code.textContent)"""


@dataclass
class Measured:
    """Every page of the book, opened and measured in one window.

    Each line of the lists names its page.

    Attributes:
        pages: How many pages were opened.
        errors: The console errors and uncaught exceptions of the pages.
        outside: The requests that left localhost (refused).
        emphasised: Diagram text drawn as Markdown emphasis (EMPHASISED_LABELS).
        unnamed: Diagrams a screen reader cannot describe (UNNAMED_DIAGRAMS).
        problems: What `book_layout.js` found.
        totals: How many code blocks, tables, diagrams, ... it measured.
        names_broken: The names in tables drawn on two lines.
    """

    pages: int = 0
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    emphasised: list[str] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    names_broken: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def measured(site, browser):
    """`measured(window)`: every page opened and measured in that window, once however
    many tests read the measurements (opening every page takes half a minute or more)."""
    done: dict[str, Measured] = {}

    def at(window: str) -> Measured:
        if window not in done:
            done[window] = measure_every_page(site, browser, window)
        return done[window]

    return at


def measure_every_page(site: Site, browser, window: str) -> Measured:
    """Open every page in a window of `WINDOWS` as a `Reader`, let it settle in the
    SETTLED window, wait for its diagrams and check them, open all it holds, and measure
    it."""
    width, height = WINDOWS[window]
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_init_script(OPEN_SHADOW_ROOTS)
    reader = Reader(context.new_page())
    counted = ["code", "tables", "diagrams", "labels", "panned", "images"]
    result = Measured(totals=dict.fromkeys(counted, 0))
    try:
        for path in site.pages():
            reader.errors.clear()
            page = reader.open(site.url + path)
            if window == SETTLED:
                page.wait_for_load_state("networkidle")
            wait_for_diagrams(page, site, path)
            result.emphasised += [f"/{path}: {p}" for p in page.evaluate(EMPHASISED_LABELS)]
            result.unnamed += [f"/{path}: {p}" for p in page.evaluate(UNNAMED_DIAGRAMS)]
            layout = layout_problems(page)
            result.problems += [f"/{path} at {width} px: {p}" for p in layout["problems"]]
            for key in result.totals:
                result.totals[key] += layout["counts"][key]
            result.names_broken += [f"/{path}: {n}" for n in page.evaluate(NAMES_BROKEN_IN_TABLES)]
            result.errors += [f"/{path} at {width} px: {error}" for error in reader.errors]
            result.pages += 1
    finally:
        context.close()
    result.outside = sorted(set(reader.outside))
    return result


@pytest.mark.parametrize("window", WINDOWS)
def test_every_page_loads_with_no_console_error_and_nothing_fetched_from_outside(measured, window):
    result = measured(window)
    assert result.pages >= 20, result.pages
    assert not result.errors, "console errors:\n" + "\n".join(result.errors)
    assert not result.outside, f"requests that left localhost: {result.outside}"


def test_the_page_check_finds_errors_late_ones_too_and_requests_to_the_outside(browser, tmp_path):
    (tmp_path / "index.html").write_text("<article><p>Nothing wrong here.</p></article>")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "index.html").write_text(
        '<article><img src="https://example.com/logo.png" width="10"></article>'
        '<script>console.error("logged at once");'
        'setTimeout(() => { throw new Error("thrown after the load") }, 100);</script>'
    )
    with served(tmp_path) as site:
        result = measure_every_page(site, browser, SETTLED)
    assert result.pages == 2
    for error in ["logged at once", "thrown after the load"]:
        assert f"/broken/ at 1280 px: {error}" in result.errors, result.errors
    assert result.outside == ["https://example.com/logo.png"]


def test_diagram_labels_are_drawn_as_written(measured):
    """Mermaid reads a label as Markdown: `__torch_function__` is drawn as a bold
    "torch_function", `_x_` and `a*b*c` in italics. The book writes no emphasis in its
    diagrams, so every emphasis drawn is a name that lost its underscores or stars (write
    them `\\_\\_torch_function\\_\\_` in the diagram's source).

    And a diagram is a picture: a reader who cannot see it hears its title and description,
    written after its first line (or, for a figure included from chapters/figures/, after
    the include) as `accTitle: ...` and `accDescr: ...`, which say what it draws."""
    result = measured("desktop")  # the labels are the same text at every width
    assert result.totals["diagrams"] >= 15, result.totals  # it looked at the diagrams
    assert not result.emphasised, "diagram text drawn as Markdown emphasis:\n" + "\n".join(
        result.emphasised
    )
    assert not result.unnamed, "diagrams a screen reader cannot describe:\n" + "\n".join(
        result.unnamed
    )


@pytest.mark.parametrize("window", WINDOWS)
def test_every_page_is_readable_without_scrolling_sideways_or_zooming(measured, window):
    width = WINDOWS[window][0]
    result = measured(window)
    problems, totals = result.problems, result.totals
    # The measurements saw the book (they cannot pass by finding nothing to measure).
    assert totals["code"] >= 300 and totals["tables"] >= 50, totals
    assert totals["diagrams"] >= 15 and totals["labels"] >= 200, totals
    assert totals["images"] >= 4, totals
    # A graph too wide for a phone at a readable size scrolls sideways (diagrams.js):
    # draw it narrower (examples.figures.narrow) or split it.
    assert totals["panned"] == 0, f"{totals['panned']} diagrams scroll sideways at {width} px"
    assert not problems, f"{len(problems)} layout problems:\n" + "\n".join(problems)


def test_names_in_tables_stay_whole_at_laptop_width(measured):
    """At 1280 px every table has room for its names: an API page's parameter table
    printed "gm_or_gr|aph" and "directio|n" when code in a cell could break anywhere."""
    result = measured("desktop")  # 1280 px wide
    broken = result.names_broken
    assert result.totals["tables"] >= 50  # it looked at the book's tables
    assert not broken, "names broken across two lines in a table:\n" + "\n".join(broken)


# A page with one of each problem: the measurement finds and names every one.
BROKEN_PAGE = """
<article>
  <h2>Wide things</h2>
  <pre><code style="display:block; overflow:auto; width:200px">WIDE_CODE</code></pre>
  <div style="overflow-x:auto; width:200px"><table><tr><td>WIDE_CELL</td></tr></table></div>
  <h2>Diagrams</h2>
  <div class="mermaid" id="tiny"></div>
  <div class="mermaid" id="crowded"></div>
  <div class="mermaid" id="tall"></div>
  <div class="diagram" style="overflow-x:auto; width:200px"><div class="mermaid" id="wide"></div></div>
  <h2>Tables that do not line up</h2>
  <table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
  <table><tr><th>a</th><th>b</th></tr><tr><td>a long cell</td><td>2</td></tr></table>
  <h2>Charts</h2>
  <div style="width:200px"><img src="chart.png" width="480" style="max-width:100%"></div>
  <img src="unsized.png">
</article>
<script>
  const node = (x, label) =>
    `<g class="node"><rect x="${x}" y="0" width="300" height="40"/>` +
    `<text x="${x}" y="30" font-size="16">${label}</text></g>`;
  // 1000 units drawn 100 px wide: 16-unit text is 1.6 px high.
  document.getElementById("tiny").attachShadow({mode: "open"}).innerHTML =
    `<svg width="100" viewBox="0 0 1000 100">${node(0, "small")}</svg>`;
  document.getElementById("crowded").attachShadow({mode: "open"}).innerHTML =
    `<svg width="400" viewBox="0 0 400 100">${node(0, "first")}${node(20, "second")}</svg>`;
  document.getElementById("tall").attachShadow({mode: "open"}).innerHTML =
    `<svg width="300" height="3000" viewBox="0 0 300 3000">${node(0, "alone")}</svg>`;
  // Drawn at its own size, in a box that scrolls it sideways (as diagrams.js does).
  document.getElementById("wide").attachShadow({mode: "open"}).innerHTML =
    `<svg width="600" viewBox="0 0 600 100">${node(300, "far right")}</svg>`;
</script>
""".replace("WIDE_CODE", "x" * 400).replace("WIDE_CELL", "y" * 400)


def test_layout_measurement_names_each_problem(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_content(BROKEN_PAGE)
    measured = page.evaluate(LAYOUT_JS, LAYOUT_LIMITS)
    context.close()
    problems = measured["problems"]
    expected = [
        "code block 1 under 'Wide things' (starts 'xxxx",
        "table under 'Wide things' (starts 'yyyy",
        "diagram 1 under 'Diagrams': text 'small' is 1.6 px high",
        "diagram 2 under 'Diagrams': text 'first' overlaps text 'second'",
        "diagram 2 under 'Diagrams': text 'first' overlaps the box 'second'",
        "diagram 3 under 'Diagrams': 3000 px tall in a 800 px window, with no button",
        "diagram 4 under 'Diagrams' (starts ''): 400 px of 600 hidden to the side",
        "table under 'Tables that do not line up' (header 'ab'): columns",
        "image 1 under 'Charts' ('chart.png'): drawn 200 px wide of 480, its text 6.9 px high",
        "image 2 under 'Charts' ('unsized.png'): no width attribute",
    ]
    for start in expected:
        assert any(p.startswith(start) for p in problems), (start, problems)
    assert measured["counts"]["panned"] == 1, measured["counts"]


# axe-core's checks (WCAG 2.x A and AA, and its best practices) on the page as drawn.
AXE_VIOLATIONS = """async (context) => {
  const result = await axe.run(context, {resultTypes: ["violations"]});
  return result.violations.map((v) => `${v.id} (${v.impact}): ${v.help}: ` +
    v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
}"""
# One page of each kind, as axe takes seconds a page: the home page (a diagram, tables),
# a chapter (diagrams in tabs, code, admonitions, collapsed solutions), the glossary (a
# page of links), Performance (the charts) and an API page (signatures, source listings,
# parameter tables). The theme's header, navigation, search and footer are on each.
AXE_PAGES = ["", "07-subgraph-rewriting/", "glossary/", "performance/", "api/passes/shape_prop/"]
# Light on a phone (390 px, an iPhone's width), dark on a laptop: the book follows the
# reader's system (prefers-color-scheme) until the reader picks a scheme.
AXE_READERS = {"light": (390, 844, "default"), "dark": (1280, 800, "slate")}


def _axe(page: Page, context: str | dict = "html") -> list[str]:
    assert AXE_JS.is_file(), (
        f"{AXE_JS} is missing: run `make test` (or `make .venv/axe-core/axe.min.js`), which "
        "fetches axe-core from the npm registry, or set MINIFX_AXE to an axe.min.js"
    )
    page.add_script_tag(path=str(AXE_JS))
    return page.evaluate(AXE_VIOLATIONS, context)


@pytest.mark.parametrize("scheme", AXE_READERS)
def test_pages_pass_axe_in_light_and_dark(site, browser, scheme):
    width, height, drawn = AXE_READERS[scheme]
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    context.add_init_script(OPEN_SHADOW_ROOTS)  # so that axe sees into the diagrams
    page = context.new_page()
    problems = []
    try:
        for path in AXE_PAGES:
            assert page.goto(site.url + path, wait_until="load").ok, f"/{path} is gone"
            wait_for_diagrams(page, site, path)
            shown = page.evaluate("document.body.dataset.mdColorScheme")
            assert shown == drawn, f"/{path}: a reader who prefers {scheme} got {shown!r}"
            problems += [f"/{path}: {problem}" for problem in _axe(page)]
    finally:
        context.close()
    assert not problems, (
        f"{len(problems)} accessibility problems in the {scheme} scheme at {width} px:\n"
        + "\n".join(problems)
    )


# A page with one of each problem the book has had: axe finds and names every one.
INACCESSIBLE_PAGE = """
<html lang="en"><title>t</title><body><main>
  <p style="color:#212121">A sentence of running text with <a href="#x"
  style="color:#4051b5; text-decoration:none">a link</a> in it, told apart from the words
  around it by its colour alone, which is too close to theirs.</p>
  <p style="color:#7f7f7f; background:#171717">Small print a little too faint.</p>
  <img src="chart.png" width="10" height="10">
  <table><tr><th></th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
  <nav><a href="#a">a</a></nav><nav><a href="#b">b</a></nav>
  <div role="dialog"><input aria-label="q"></div>
</main></body></html>
"""


def test_axe_finds_each_problem(browser):
    page = browser.new_page()
    page.set_content(INACCESSIBLE_PAGE)
    found = {problem.split(" ")[0] for problem in _axe(page)}
    page.close()
    expected = {
        "link-in-text-block",
        "color-contrast",
        "image-alt",
        "empty-table-header",
        "landmark-unique",
        "aria-dialog-name",
    }
    assert expected <= found, (expected - found, found)
