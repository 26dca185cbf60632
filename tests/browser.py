"""Shared pieces of the browser tests: Debian's Chromium driven by Playwright, against the app on its own port.

A test module uses them as fixtures: `from browser import url, page, needs_chromium, under_load` then
`pytestmark = [needs_chromium, under_load]` (a module gets its own server and a fresh tab per test; `page.problems`
collects console errors, page errors and failed requests).
"""
import os
import shutil
from pathlib import Path

import pytest

from served import served

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).parent / "artifacts"
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                    reason="Debian's chromium is not installed (make test installs it)")
# A browser test shares 2 cores with its server, the model and Chromium: under load a wait can run out with
# nothing wrong (the whole suite in one run saw this). A failure must happen three times to count.
under_load = pytest.mark.flaky(reruns=2, reruns_delay=10)


@pytest.fixture(scope="module")
def url(lm):
    with served(lm) as (page, url, _):
        yield url


def open_tab(browser, url, locale="en-US"):
    """A tab on the page (1280x800, as a projector shows it) that records what goes wrong in `problems`."""
    tab = browser.new_page(viewport={"width": 1280, "height": 800}, locale=locale)
    tab.problems = []
    tab.on("console", lambda m: m.type == "error" and tab.problems.append(m.text))
    tab.on("pageerror", lambda e: tab.problems.append(str(e)))
    tab.on("response", lambda r: r.status >= 400 and tab.problems.append(f"{r.status} {r.request.method} {r.url}"))
    tab.goto(url)
    return tab


@pytest.fixture
def page(url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield open_tab(browser, url)
        browser.close()


def open_view(page, name: str):
    """Click the tab `name` (every tab is on view: the row wraps) and wait until it is the selected one."""
    page.get_by_role("tab", name=name, exact=True).click()
    page.get_by_role("tab", name=name, exact=True, selected=True).wait_for(timeout=30_000)


def marker(page):
    return page.locator("#tbt-marker")


def wait_for_step(page, step: int):
    """Wait until the page shows `step` (the status marker is re-rendered with it)."""
    page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.step === '{step}'", timeout=60_000)


def plot_drawn(page, elem_id: str):
    page.locator(f"#{elem_id} .js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
