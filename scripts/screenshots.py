"""Render pages of the built book to PNG with headless Chromium (for looking at them).

    .venv/bin/python scripts/screenshots.py [--out DIR] [--width PX] [--move] [PAGE ...]

PAGE is a path under _build/html (default: every chapter page).  With --move, each page's
first interactive figure is also shot after its first control is moved to the other end.
"""

import argparse
import functools
import http.server
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

SITE = Path(__file__).resolve().parents[1] / "_build" / "html"
# Wait for what the reader waits for: MathJax's first typesetting pass and the fonts it loads.
TYPESET = """() => ((window.MathJax && MathJax.startup && MathJax.startup.promise)
                      ? MathJax.startup.promise : Promise.resolve())
                     .then(() => document.fonts.ready).then(() => true)"""
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pages", nargs="*")
    ap.add_argument("--out", default="/tmp/screenshots")
    ap.add_argument("--move", action="store_true")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--site", type=Path, default=SITE,
                    help="the built site to serve (default _build/html; a copy stays put while "
                         "the book is rebuilt)")
    args = ap.parse_args()
    site = args.site
    pages = args.pages or sorted(str(p.relative_to(site)) for p in (site / "book").glob("*.html"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for page_path in pages:
            page = browser.new_page(viewport={"width": args.width, "height": 1200})
            page.goto(f"{base}/{page_path}", wait_until="networkidle")
            page.evaluate(TYPESET)
            stem = page_path.replace("/", "_").removesuffix(".html") + f"-{args.width}"
            page.screenshot(path=str(out / f"{stem}.png"), full_page=True)
            print(out / f"{stem}.png")
            fig = page.query_selector(".icl-interactive")
            if args.move and fig:
                control = fig.query_selector("[data-control]")
                fig.scroll_into_view_if_needed()
                fig.screenshot(path=str(out / f"{stem}-figure-before.png"))
                control.evaluate("e => { e.value = e.tagName === 'SELECT' ? e.options.length - 1 : "
                                 "(+e.value === +e.max ? 0 : e.max); "
                                 "e.dispatchEvent(new Event('input')); }")
                fig.screenshot(path=str(out / f"{stem}-figure-after.png"))
                print(out / f"{stem}-figure-after.png")
            page.close()
        browser.close()
    httpd.shutdown()


if __name__ == "__main__":
    main()
