"""The page in headless Chromium (Debian's, driven by Playwright): type, step, see every chart, switch language."""
import os
import shutil
from pathlib import Path

import pytest

import app as app_module
from model.sessions import ModelRegistry, SessionStore

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).parent / "artifacts"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (make test installs it)")


@pytest.fixture(scope="module")
def url(lm):
    page = app_module.App(ModelRegistry("smollm2", {"smollm2": lm}), SessionStore())
    demo = app_module.build(page, "smollm2")
    app_module.launch(demo, "127.0.0.1", None, prevent_thread_lock=True, quiet=True)
    yield demo.local_url
    demo.close()


@pytest.fixture
def page(url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 800}, locale="en-US")
        tab.problems = []
        tab.on("console", lambda m: m.type == "error" and tab.problems.append(m.text))
        tab.on("pageerror", lambda e: tab.problems.append(str(e)))
        tab.goto(url)
        yield tab
        browser.close()


def marker(page):
    return page.locator("#tbt-marker")


def wait_for_step(page, step: int):
    """Wait until the page shows `step` (the status marker is re-rendered with it)."""
    page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.step === '{step}'", timeout=60_000)


def plot_drawn(page, elem_id: str):
    page.locator(f"#{elem_id} .js-plotly-plot .main-svg").first.wait_for(timeout=30_000)


def test_step_three_times_see_every_chart_and_switch_language(page):
    marker(page).wait_for(timeout=60_000)  # the page starts a session on load
    page.locator("#tbt-prompt textarea").fill("The best way to learn is")
    rev = marker(page).get_attribute("data-rev")
    page.locator("#tbt-start").click()
    page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.rev !== '{rev}'", timeout=60_000)
    assert "learn" in page.locator("#tbt-chips").inner_text()
    for step in (1, 2, 3):
        page.locator("#tbt-next").click()
        wait_for_step(page, step)
    assert page.locator("#tbt-chips .tbt-gen").count() == 3
    # The chips' look comes from the page's style sheet (viz.chips.CHIP_CSS), not from a <style> in each step
    assert page.locator("#tbt-chips .tbt-gen").first.evaluate("e => getComputedStyle(e).borderRadius") == "5px"
    assert page.locator("#tbt-chips style").count() == 0
    plot_drawn(page, "tbt-plot-candidates")
    assert "draw picks" in page.locator("#tbt-plot-candidates").inner_text()
    # The title is drawn once, as HTML above the plot (app.js), not by plotly.js as well.
    assert "Next token (position" in page.locator("#tbt-cap-candidates").inner_text()
    title_px = page.locator("#tbt-cap-candidates .tbt-cap-title").evaluate("e => getComputedStyle(e).fontSize")
    assert title_px == "20px"  # the caption's look (viz.style.CAPTION_CSS) reached the page
    assert page.evaluate("() => document.getElementById('tbt-fig-candidates').layout.title") is None
    assert page.locator("#tbt-fig-candidates .gtitle").count() == 0

    for tab, plot in [("Temperature", "tbt-plot-temperature"), ("Attention", "tbt-plot-attention"),
                      ("KV cache", "tbt-plot-kv")]:
        page.get_by_role("tab", name=tab).click()
        plot_drawn(page, plot)
    assert "future" in page.locator("#tbt-plot-attention").inner_text()
    assert "formula" in page.locator("#tbt-plot-kv").inner_text()

    page.get_by_role("tab", name="Candidates").click()
    page.keyboard.press("ArrowRight")  # the presenter's key for Next token
    wait_for_step(page, 4)
    page.keyboard.press("ArrowLeft")
    wait_for_step(page, 3)
    page.locator("#tbt-chips .tbt-gen").first.click()  # back to the step that wrote the first token
    wait_for_step(page, 0)

    page.get_by_label("中文").check()
    page.get_by_role("button", name="下一个词元").wait_for(timeout=30_000)
    page.get_by_role("button", name="下一个词元").click()
    wait_for_step(page, 1)
    page.wait_for_function("() => document.querySelector('#tbt-plot-candidates')?.innerText.includes('下一个词元')",
                           timeout=30_000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser.png"), full_page=True)
    assert page.problems == []


def test_moving_temperature_redraws_the_candidates_without_a_step(page):
    marker(page).wait_for(timeout=60_000)
    plot_drawn(page, "tbt-plot-candidates")
    before = page.locator("#tbt-plot-candidates").inner_text()
    box = page.locator("#tbt-temperature input[type='number']")
    box.fill("0")
    box.press("Enter")
    page.wait_for_function("() => document.querySelector('#tbt-plot-candidates')?.innerText.includes('no draw')",
                           timeout=30_000)
    assert marker(page).get_attribute("data-step") == "0"
    assert page.locator("#tbt-plot-candidates").inner_text() != before
    assert page.problems == []


def test_temperature_moves_are_drawn_from_the_bundle_and_the_answers_do_not_draw_again(page):
    marker(page).wait_for(timeout=60_000)
    plot_drawn(page, "tbt-plot-candidates")
    box = page.locator("#tbt-temperature input[type='number']")
    box.fill("0.5")  # the first touch asks for every temperature's chart
    box.press("Enter")
    page.wait_for_function("() => document.querySelector('.tbt-figbundle')?.dataset.key === "
                           "document.getElementById('tbt-fig-candidates').dataset.key", timeout=30_000)
    page.wait_for_timeout(500)  # the answer to the first move
    page.evaluate("""() => { const gd = document.getElementById('tbt-fig-candidates');
                              window.draws = 0; gd.on('plotly_afterplot', () => window.draws++); }""")
    box.fill("1.5")
    box.press("Enter")
    title = lambda: page.evaluate("() => document.getElementById('tbt-cap-candidates').textContent")  # noqa: E731
    page.wait_for_function("() => window.draws >= 1", timeout=5_000)
    drawn_at_once = title()
    page.wait_for_timeout(1500)  # the server's answer to the move arrives, is the same chart, and is not drawn
    assert page.evaluate("() => window.draws") == 1
    assert title() == drawn_at_once
    assert page.evaluate("() => document.getElementById('tbt-fig-candidates').dataset.t") == "1.50"
    assert page.problems == []
