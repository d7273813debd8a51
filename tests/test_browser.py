"""Browser tests over the built book, in Debian's chromium driven by Playwright.

Run after the build (``scripts/build.sh``): ``pytest tests -m browser``.  Each page must load
with no console error and no request to another host, show typeset math, load every image,
and every static interactive figure must change its picture when its control moves.
"""

import functools
import http.server
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.browser

SITE = Path(__file__).resolve().parents[1] / "_build" / "html"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Pages Sphinx generates that carry no book content.
SKIP = {"genindex.html", "search.html"}


def book_pages():
    if not SITE.is_dir():
        return []
    return sorted(str(p.relative_to(SITE)) for p in SITE.rglob("*.html")
                  if "_static" not in p.parts and "_sources" not in p.parts and p.name not in SKIP)


@pytest.fixture(scope="module")
def server():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built book at {SITE}; run scripts/build.sh first")
    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser, server, page_path):
    context = browser.new_context(viewport={"width": 1280, "height": 1600})
    page = context.new_page()
    errors, foreign, failed = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    host = urlparse(server).netloc

    def on_request(req):
        u = urlparse(req.url)
        if u.scheme in ("http", "https", "ws", "wss") and u.netloc != host:
            foreign.append(req.url)

    page.on("request", on_request)
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.goto(f"{server}/{page_path}", wait_until="load")
    page.wait_for_load_state("networkidle")
    return context, page, errors, foreign, failed


def test_there_are_pages():
    assert "index.html" in book_pages() or (SITE / "index.html").is_file()
    assert any(p.startswith("book/") for p in book_pages()), book_pages()


@pytest.mark.parametrize("page_path", book_pages() or ["index.html"])
def test_page_loads_offline_with_math_and_images(browser, server, page_path):
    context, page, errors, foreign, failed = open_page(browser, server, page_path)
    try:
        assert foreign == [], f"requests to other hosts: {foreign}"
        assert errors == [], f"console errors: {errors}"
        assert failed == [], f"failed requests: {failed}"
        # Math: MathJax has typeset every formula; no raw TeX delimiters remain in the text.
        has_math = page.evaluate("document.querySelectorAll('.math, span.math, div.math').length")
        if has_math:
            page.wait_for_function("document.querySelectorAll('mjx-container').length > 0", timeout=20_000)
            raw = page.evaluate("""() => Array.from(document.querySelectorAll('.math'))
                                   .filter(e => !e.querySelector('mjx-container')).length""")
            assert raw == 0, f"{raw} formulas were not typeset"
        body = page.inner_text("article") if page.query_selector("article") else page.inner_text("body")
        for delimiter in ("\\(", "\\)", "$$", "\\begin{"):
            assert delimiter not in body, f"raw TeX {delimiter!r} left in the text"
        broken = page.evaluate("""() => Array.from(document.images)
                                  .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80))""")
        assert broken == [], f"images that did not load: {broken}"
    finally:
        context.close()


def test_static_interactive_figures_respond(browser, server):
    pages = [p for p in book_pages() if "icl-interactive" in (SITE / p).read_text(encoding="utf-8")]
    assert pages, "no page has an interactive figure"
    checked = 0
    for page_path in pages:
        context, page, errors, _, _ = open_page(browser, server, page_path)
        try:
            for fig in page.query_selector_all(".icl-interactive"):
                img = fig.query_selector("img.icl-frame")
                for control in fig.query_selector_all("[data-control]"):
                    before_src, before_frame = img.get_attribute("src"), img.get_attribute("data-frame")
                    tag = control.evaluate("e => e.tagName")
                    n = int(control.evaluate("e => e.tagName === 'SELECT' ? e.options.length : (+e.max + 1)"))
                    if n < 2:
                        continue
                    current = int(control.evaluate("e => +e.value"))
                    target = 0 if current != 0 else n - 1
                    if tag == "SELECT":
                        control.select_option(value=str(target))
                    else:
                        control.evaluate(f"e => {{ e.value = {target}; e.dispatchEvent(new Event('input')); }}")
                    assert img.get_attribute("data-frame") != before_frame, page_path
                    assert img.get_attribute("src") != before_src, f"{page_path}: image did not change"
                    checked += 1
            assert errors == [], errors
        finally:
            context.close()
    assert checked >= 1
