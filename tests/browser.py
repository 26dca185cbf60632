"""Helpers of the browser tests: Debian's Chromium driven by Playwright, against the app on its own port.

The fixtures are in conftest.py: `url` (the module's server), `chromium` (the module's browser), `page` and
`new_tab(url, locale)` (a fresh tab per test; `tab.problems` collects console errors, page errors and failed
requests). A test module marks itself `pytestmark = pytest.mark.browser`.

Screenshots: screenshot(tab, name) writes SHOTS/screenshots/<name>.png, SHOTS being laid out as assets/: the suite
writes under tests/artifacts/shots/ (ignored); `make screenshots` sets TBT_SHOTS=assets to refresh the pictures the
README shows. artifact(tab, name) is for the rest (full pages, a failure's picture). No test writes a tracked file.
"""
import json
import os
import shutil
from pathlib import Path

from bench.layout_audit import settle  # noqa: F401 (the wait for a page that stopped changing: tests import it here)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).parent / "artifacts"  # ignored (.gitignore): logs, full-page shots, failure shots
SHOTS = Path(os.environ.get("TBT_SHOTS") or ARTIFACTS / "shots")


def screenshot(tab, name: str, folder: str = "screenshots") -> Path:
    """The tab as it is now (its viewport), as SHOTS/<folder>/<name>.png; folder "" for the README's first picture
    (assets/screenshot.png)."""
    path = SHOTS / folder / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(path))
    return path


def open_offline(browser, html: str, path: Path, lang: str):
    """An exported page (viz/offline.py) written to `path` and opened from file://, every request but the file itself
    aborted (and recorded in `tab.requests`; console and page errors in `tab.problems`)."""
    path.write_text(html, encoding="utf-8")
    tab = browser.new_page(viewport={"width": 1280, "height": 800})
    tab.problems, tab.requests = [], []
    tab.on("console", lambda m: m.type == "error" and tab.problems.append(m.text))
    tab.on("pageerror", lambda e: tab.problems.append(str(e)))

    def only_the_file(route):
        if route.request.url == path.as_uri():
            route.continue_()
        else:
            tab.requests.append(route.request.url)
            route.abort()

    tab.route("**/*", only_the_file)
    tab.goto(path.as_uri())
    return tab


# What a full-page picture's own resize makes a Gradio-drawn plot throw: Chromium lays the page out at its whole
# height for the picture and back, and a gr.Plot re-drawn by Gradio in between may throw this (plotly.js). Seen only
# under a loaded machine, in tests that take full-page artifacts; not the page's fault, and dropped only then.
CUT_BY_FULL_PAGE = ("Something went wrong with axis scaling",)


def artifact(tab, name: str, full_page: bool = False) -> Path:
    """The tab as it is now, as tests/artifacts/<name>.png: for looking at, never shown in the README."""
    ARTIFACTS.mkdir(exist_ok=True)
    before = len(tab.problems)
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)
    if full_page:
        settle(tab)  # (the page's answer to being resized back)
        tab.problems[before:] = [p for p in tab.problems[before:] if not any(cut in p for cut in CUT_BY_FULL_PAGE)]
    return ARTIFACTS / f"{name}.png"


def open_tab(browser, url, locale="en-US", size=(1280, 800)):
    """A tab on the page (1280x800, as a projector shows it, unless `size` says) that records what goes wrong in
    `problems`."""
    tab = browser.new_page(viewport={"width": size[0], "height": size[1]}, locale=locale)
    tab.problems = []
    tab.on("console", lambda m: m.type == "error" and tab.problems.append(m.text))
    tab.on("pageerror", lambda e: tab.problems.append(str(e)))
    tab.on("response", lambda r: r.status >= 400 and tab.problems.append(f"{r.status} {r.request.method} {r.url}"))
    tab.goto(url)
    return tab


# What the page's own requests say when a reload cuts them off: the reload's doing, not the page's fault
CUT_BY_RELOAD = ("AbortError", "Connection errored out")


def reload(tab):
    """Reload the tab; drop the errors of requests the reload itself cut off (an event in flight, the queue's
    stream), and keep every other problem, including any after the new page has loaded."""
    before = len(tab.problems)
    tab.reload()
    tab.problems[before:] = [p for p in tab.problems[before:] if not any(cut in p for cut in CUT_BY_RELOAD)]


def open_view(page, name: str):
    """Open the tab named `name` as a reader does: its part of the story first if its tab is not on view (a part's
    button; on a phone, the menu), then the tab itself; wait until it is the selected one. (Every view keeps its
    role "tab" and its name: the navigation shows the open part's tabs, ui/nav.py.)"""
    tab = page.get_by_role("tab", name=name, exact=True, include_hidden=True)
    tab.wait_for(state="attached", timeout=30_000)
    if not tab.is_visible():
        tab_id = tab.get_attribute("data-tab-id")
        part = page.locator(f"#tbt-nav [data-tbt-tabs~='{tab_id}']")
        if part.is_visible():
            part.click()  # the part's last open tab (or its first) opens with it
        else:  # a phone: the menu of every view
            page.locator("#tbt-nav select").select_option(tab_id)
    tab = page.get_by_role("tab", name=name, exact=True, include_hidden=True)
    if tab.get_attribute("aria-selected") != "true":
        tab.click()
    page.get_by_role("tab", name=name, exact=True, selected=True, include_hidden=True).wait_for(state="attached",
                                                                                               timeout=30_000)


def tab_named(page, name: str):
    """The tab button named `name`, wherever its part is (shown or not): for waiting until the page has relabelled."""
    return page.get_by_role("tab", name=name, exact=True, include_hidden=True)


def marker(page):
    return page.locator("#tbt-marker")


def start_text(page, prompt: str, timeout: int = 180_000):
    """Type `prompt` and press Start, and wait until the page shows the new text's step 0.

    The page starts a session of its own on load: it is waited for first, and then the marker's revision, so that
    no later click lands on the load's session (a Next racing the Start would step the text that Start replaces).
    """
    marker(page).wait_for(timeout=timeout)
    page.locator("#tbt-prompt textarea").fill(prompt)
    rev = marker(page).get_attribute("data-rev")
    page.locator("#tbt-start").click()
    page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.rev !== '{rev}'", timeout=timeout)


def wait_for_step(page, step: int):
    """Wait until the page shows `step` (the status marker is re-rendered with it)."""
    page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.step === '{step}'",
                           timeout=180_000)  # a step waits behind the model lock: long on a loaded machine


def plot_drawn(page, elem_id: str):
    page.locator(f"#{elem_id} .js-plotly-plot .main-svg").first.wait_for(timeout=90_000)


LANGUAGES = {"en": "English", "zh": "中文"}  # the language radio's choices (ui/controls.py)


def choose_language(page, lang: str):
    """Switch the page to `lang` with its radio and wait until the page has answered: Next token relabelled in that
    language, then the page quiet (every label written again, the step drawn again in it)."""
    from ui.strings import t

    page.get_by_label(LANGUAGES[lang]).check()
    page.wait_for_function(f"() => document.getElementById('tbt-next')?.textContent.trim() === "
                           f"{json.dumps(t('btn_next', lang))}", timeout=180_000)
    settle(page)
