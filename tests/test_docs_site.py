"""The documentation site: it builds (strict), the reference documents every public name (`diface`,
`diface.testing`, `diface.extend`), and every page works in a browser.

The build needs the `docs` extra (mkdocs, mkdocs-material, mkdocstrings); the browser checks need
selenium and Debian's chromium and chromedriver (`.ci/run` installs them). Each part skips cleanly
without its tools. Set `DIFACE_SCREENSHOTS=<dir>` to keep a full-page screenshot of every page there.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import diface
import diface.extend
import diface.testing

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
#: Debian's (what .ci/run installs); elsewhere, point these variables at a Chromium and its chromedriver
CHROMIUM = Path(os.environ.get("DIFACE_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("DIFACE_CHROMEDRIVER", "/usr/bin/chromedriver"))
DIRECTIVE = re.compile(r"^::: (diface(?:\.\w+)*)\s*$", re.MULTILINE)
#: identifiers the site's search must find whole (material's default tokenizer would keep them, the old
#: theme's split them at the underscores and kept the punctuation around them)
SEARCH_TERMS = ("has_aux", "prepare_hvp", "jax_enable_x64")


def _missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


needs_mkdocs = pytest.mark.skipif(
    bool(_missing("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")),
    reason="the docs extra is not installed: pip install -c constraints.txt -e '.[docs]'",
)


def _browser_missing() -> str | None:
    if _missing("selenium"):
        return "selenium is not installed (the docs extra)"
    for tool in (CHROMIUM, CHROMEDRIVER):
        if not tool.exists():
            return f"{tool} is missing: apt-get install chromium chromium-driver (or set DIFACE_CHROMIUM/_CHROMEDRIVER)"
    return None


# ---------------------------------------------------------------------------------------------------------
# the reference covers the public API (no tools needed)


def documented() -> set[str]:
    """Every `::: diface...` directive of the reference pages."""
    return {name for page in REFERENCE.glob("*.md") for name in DIRECTIVE.findall(page.read_text())}


def test_reference_documents_every_public_name():
    names = documented()
    public = {f"{m.__name__}.{n}" for m in (diface, diface.testing, diface.extend) for n in m.__all__}
    assert not public - names, f"public names missing from docs/reference/: {sorted(public - names)}"


#: the families a row of the reference index may name instead of listing each member
_FAMILIES = {
    "their value variants": lambda n: n.startswith("value_"),
    "every `prepare_*`": lambda n: n.startswith("prepare_") or n == "Prep",
    "preparations": lambda n: n.startswith("prepare_"),
    "the errors derived from it": lambda n: n.endswith("Error"),
}


def _table_rows(text: str) -> list[list[str]]:
    """The body rows of every Markdown table of `text`, as lists of cells."""
    rows = [line.strip().strip("|").split("|") for line in text.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in r] for r in rows if not set("".join(r)) <= set("- ")]


def test_reference_index_lists_each_page():
    """Each row of docs/reference/index.md names the public names its page documents (or their family,
    "their value variants"), and names nothing the page does not document; every page has its row."""
    rows = {}
    for cells in _table_rows((REFERENCE / "index.md").read_text()):
        link = re.match(r"\[[^]]+\]\(([\w-]+\.md)\)", cells[0])
        if link:
            rows[link.group(1)] = cells[1]
    pages = {p.name for p in REFERENCE.glob("*.md")} - {"index.md"}
    assert set(rows) == pages, f"rows missing: {sorted(pages - set(rows))}; extra: {sorted(set(rows) - pages)}"
    for page, row in rows.items():
        on_page = {d.removeprefix("diface.") for d in DIRECTIVE.findall((REFERENCE / page).read_text())}
        on_page &= set(diface.__all__)
        listed = set(re.findall(r"`(\w+)`", row)) & set(diface.__all__)
        families = [test for phrase, test in _FAMILIES.items() if phrase in row]
        unlisted = {n for n in on_page - listed if not any(test(n) for test in families)}
        assert not unlisted, f"reference/index.md's row of {page} lacks {sorted(unlisted)}"
        assert listed <= on_page, f"reference/index.md's row of {page} names {sorted(listed - on_page)}: not there"


def test_reference_index_and_home_page_name_every_engine():
    """The home page's engine table and the reference index's Backends row name every registered
    engine (`diface.backends.__all__`), each a public name of diface; the home page's text names each."""
    import diface.backends

    engines = set(diface.backends.__all__)
    assert engines <= set(diface.__all__)
    home = (ROOT / "docs" / "index.md").read_text()
    table = home.split("## Engines", 1)[1].split("\n\n", 2)[1]
    in_table = {m for cells in _table_rows(table) for m in re.findall(r"`di\.(\w+)\(", cells[0])}
    assert in_table == engines, f"docs/index.md's engine table: {sorted(in_table ^ engines)} missing or extra"
    row = next(c[1] for c in _table_rows((REFERENCE / "index.md").read_text()) if c[0].startswith("[Backends]"))
    assert engines <= set(re.findall(r"`(\w+)`", row)), "reference/index.md's Backends row lacks an engine"
    intro = home.split("```", 1)[0]
    for name in ("finite differences", "tape", "autograd", "PyTorch", "JAX", "TensorFlow", "MLX", "PyTensor"):
        assert name in intro, f"docs/index.md's introduction does not name {name}"
    assert len(engines) == 8, "a new engine: name it in docs/index.md's introduction and in this test"


def test_reference_pages_are_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in REFERENCE.glob("*.md"):
        assert f"reference/{page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"


# ---------------------------------------------------------------------------------------------------------
# the build


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if _missing("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.skip("the docs extra is not installed: pip install -c constraints.txt -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-5000:]}\n{done.stderr[-5000:]}"
    return out


def pages(site: Path) -> list[str]:
    """Every page of the built site, as a path from its root ('' for the home)."""
    paths = (p.parent.relative_to(site).as_posix() for p in site.rglob("index.html"))
    return sorted("" if path == "." else path + "/" for path in paths)


@needs_mkdocs
def test_build_is_strict_and_offline(site):
    """No warning (strict), every nav page built, and nothing loaded from another host."""
    built = pages(site)
    assert "" in built and "reference/" in built and "backends/tape/" in built and len(built) >= 30
    remote = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.IGNORECASE)
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert not remote.search(text), f"{page.relative_to(site)} loads something from another host"
        assert "fonts.googleapis" not in text


@needs_mkdocs
def test_reference_renders_every_public_name(site):
    """Each public name has its heading (its anchor) in the built reference, with its signature."""
    html = "".join(p.read_text() for p in (site / "reference").rglob("index.html"))
    public = [f"{m.__name__}.{n}" for m in (diface, diface.testing, diface.extend) for n in m.__all__]
    missing = [name for name in public if f'id="{name}"' not in html]
    assert not missing, f"no heading in the built reference for {missing}"
    assert html.count("doc-signature") >= len(public) // 2  # signatures, set apart from the heading
    assert "language-pycon" in html  # the doctests render as highlighted sessions, not block quotes


@needs_mkdocs
def test_search_index_keeps_identifiers_whole(site):
    import json

    index = json.loads((site / "search" / "search_index.json").read_text())
    separator = re.compile(index["config"]["separator"])
    for term in SEARCH_TERMS:
        assert separator.split(term) == [term], f"the search tokenizer splits {term}"
        assert any(term in separator.split(doc["text"]) for doc in index["docs"]), f"no page has the token {term}"
    assert "prepare_hvp" in separator.split("di.prepare_hvp(f, b, x)")


# ---------------------------------------------------------------------------------------------------------
# in a browser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    reason = _browser_missing()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(condition, timeout: float = 10.0, step: float = 0.05):
    end = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > end:
            return value
        time.sleep(step)


#: what each page reports, measured in the page
PAGE_STATE = """
const images = Array.from(document.images);
const blocks = Array.from(document.querySelectorAll('div.highlight pre'));
return {
  title: document.title,
  h1: (document.querySelector('article h1') || {}).textContent || '',
  imagesLoading: images.filter(i => !i.complete).length,
  brokenImages: images.filter(i => i.complete && i.naturalWidth === 0).map(i => i.getAttribute('src')),
  codeBlocks: blocks.length,
  highlighted: blocks.filter(b => b.querySelector('code span[class]')).length,
  pageWidth: document.documentElement.scrollWidth,
  viewWidth: document.documentElement.clientWidth,
  overflowing: blocks.filter(b => b.scrollWidth > b.clientWidth
                                  && getComputedStyle(b.querySelector('code') || b).overflowX === 'visible').length,
};
"""


def _screenshot(driver, path: Path, full: bool) -> None:
    """A PNG of the page: the viewport, or the whole page (height capped at 12000 px)."""
    if full:
        import base64

        height = min(12000, driver.execute_script("return document.documentElement.scrollHeight"))
        shot = driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": 1280, "height": height, "scale": 1},
            },
        )
        path.write_bytes(base64.b64decode(shot["data"]))
    else:
        driver.save_screenshot(str(path))


@needs_mkdocs
def test_every_page_in_a_browser(site, server, browser, tmp_path):
    """Every page loads with a title and a heading, no broken image, no console error, highlighted code,
    and nothing wider than the window (long code lines scroll inside their box); a screenshot of each."""
    keep = os.environ.get("DIFACE_SCREENSHOTS")
    shots = Path(keep) if keep else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    browser.get_log("browser")  # drop anything from before
    problems = []
    for page in pages(site):
        browser.get(server + page)
        _wait(lambda: browser.execute_script("return document.readyState") == "complete")
        state = _wait(lambda: (s := browser.execute_script(PAGE_STATE)) and s["imagesLoading"] == 0 and s)
        state = state or browser.execute_script(PAGE_STATE)
        errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        name = page.rstrip("/") or "home"
        _screenshot(browser, shots / (name.replace("/", "__") + ".png"), full=bool(keep))
        if not state["title"] or "diface" not in state["title"] or not state["h1"].strip():
            problems.append(f"{name}: title {state['title']!r}, heading {state['h1']!r}")
        if state["brokenImages"]:
            problems.append(f"{name}: broken images {state['brokenImages']}")
        if errors:
            problems.append(f"{name}: console errors {errors}")
        if state["codeBlocks"] and state["highlighted"] < state["codeBlocks"] // 2:
            problems.append(f"{name}: {state['highlighted']} of {state['codeBlocks']} code blocks highlighted")
        if state["pageWidth"] > state["viewWidth"] or state["overflowing"]:
            problems.append(f"{name}: wider than the window ({state['pageWidth']} > {state['viewWidth']} px)")
    assert not problems, "\n".join(problems)


#: the texts of the search results shown now (read in one call: material re-renders them as they come)
RESULTS = "return Array.from(document.querySelectorAll('li.md-search-result__item')).map(li => li.textContent)"


@needs_mkdocs
def test_search_finds_identifiers(server, browser):
    """material's search box, typed into as a person would, finds pages for each identifier."""
    from selenium.webdriver.common.by import By

    found = {}
    for term in SEARCH_TERMS:
        browser.get(server)  # a fresh page: the search closed and empty
        _wait(lambda: browser.execute_script("return document.readyState") == "complete")
        box = browser.find_element(By.CSS_SELECTOR, "input.md-search__input")
        box.click()
        box.send_keys(term)
        results = _wait(lambda t=term: [r for r in browser.execute_script(RESULTS) if t in r], timeout=20)
        found[term] = len(results)
        if not results:
            meta = browser.execute_script(
                "return (document.querySelector('.md-search-result__meta') || {}).textContent"
            )
            pytest.fail(f"searching {term!r} found nothing that shows it ({meta!r})")
    assert all(found.values()), found
