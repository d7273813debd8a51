"""Shared by the browser tests (built pages, JupyterLab): Debian's chromium under Playwright."""

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Headless as root on a machine whose network is closed: no sandbox, no background traffic.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()
