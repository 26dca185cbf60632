"""The page at a projector and on a phone, read from the DOM (bounding boxes and computed styles, never pixels):
every tab, in English (SmolLM2) and Chinese (Gemma 3 270M), at 390x844, 1280x800 and 1920x1080, has no chart text
over another, none cut by its chart or its clip path, no blank or cut-off chart, none below 4.5:1 against what it
is drawn on, and no caption or table wider than the window; a clicker's keys; presenter mode, remembered by the browser.

The check and the way through the tabs are bench/layout_audit.py's (CHECK, audit, TABS): `python -m
bench.layout_audit` prints the same findings for a chosen tab, size or language. Screenshots go to
tests/artifacts/layout/ (ignored): look at them.
"""
import pytest

from bench.layout_audit import PHONE, SIZES, TABS, audit
from browser import ARTIFACTS, reload, wait_for_step

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(lm):
    """The page as `python app.py` serves it by default (the language chooses the model), on both models."""
    import app as app_module
    from model.decoding.loading import load_model
    from model.serving.sessions import ModelRegistry
    from served import served

    default = app_module.registry(None)
    models = ModelRegistry(default.default, {"smollm2": lm, "gemma3-270m": load_model("gemma3-270m")},
                           by_language=default.by_language)
    with served(models) as (_, address, _demo):
        yield address


@pytest.mark.parametrize("lang, locale", [("en", "en-US"), ("zh", "zh-CN")])
def test_every_tab_at_three_sizes_has_no_overlapping_cut_or_faint_text(url, new_tab, lang, locale):
    """A projector's page read at 1920 and 1280, and a phone's page opened at 390, as a phone opens it (a window
    turned narrow under a drawn chart: tests/test_browser_narrow.py)."""
    desk = new_tab(url, locale)
    found = audit(desk, lang, TABS, [size for size in SIZES if size != PHONE], ARTIFACTS / "layout")
    phone = new_tab(url, locale, size=PHONE)
    found.update(audit(phone, lang, TABS, [PHONE], ARTIFACTS / "layout", home=PHONE))
    assert len(found) == len(TABS) * len(SIZES)  # every tab was opened and read at every size
    bad = [f"{tab} {width}: {p}" for (tab, _, width), ps in found.items() for p in ps]
    assert not bad, f"{len(bad)} findings:\n" + "\n".join(bad)
    assert desk.problems == [] and phone.problems == [], desk.problems + phone.problems


def test_a_clickers_keys_step_blank_and_show_themselves(url, new_tab):
    page = new_tab(url)
    page.locator("#tbt-marker").wait_for(timeout=60_000)
    page.keyboard.press("PageDown")  # a clicker's next
    wait_for_step(page, 1)
    page.keyboard.press("n")
    wait_for_step(page, 2)
    page.keyboard.press("PageUp")  # a clicker's previous
    wait_for_step(page, 1)
    blanked = "() => document.documentElement.hasAttribute('data-tbt-blank')"
    opacity = "() => getComputedStyle(document.querySelector('#tbt-tabs [role=tabpanel]')).opacity"
    page.keyboard.press("b")  # blanks the chart area: no step back (B stepped back before issue 22)
    assert page.evaluate(blanked) and page.evaluate(opacity) == "0"
    page.keyboard.press(".")
    assert not page.evaluate(blanked) and page.evaluate(opacity) == "1"
    page.keyboard.press("?")
    assert page.locator("#tbt-keys").evaluate("e => getComputedStyle(e).position") == "fixed"
    assert "PageDown" in page.locator("#tbt-keys").inner_text()
    page.keyboard.press("Escape")
    assert page.locator("#tbt-keys").evaluate("e => getComputedStyle(e).position") != "fixed"
    # typing in a field is typing: no key steps, blanks or plays
    page.locator("#tbt-prompt textarea").click()
    page.keyboard.type("n b . p ?")
    page.keyboard.press("PageDown")
    page.wait_for_timeout(1500)
    assert page.locator("#tbt-marker").get_attribute("data-step") == "1" and not page.evaluate(blanked)
    assert page.problems == []


def test_presenter_mode_is_remembered_by_the_browser(url, new_tab):
    page = new_tab(url)
    page.locator("#tbt-marker").wait_for(timeout=60_000)
    page.locator("#tbt-presenter input").check()
    assert page.evaluate("() => localStorage.getItem('tbt-presenter')") == "1"
    reload(page)
    page.locator("#tbt-marker").wait_for(timeout=60_000)
    page.wait_for_function("() => document.querySelector('#tbt-presenter input')?.checked === true", timeout=30_000)
    assert page.evaluate("() => document.documentElement.hasAttribute('data-tbt-presenter')")
    # the sampling settings folded away (the prompt stays: Gradio's form wrapper keeps it out of app.css's rule)
    assert page.locator(".tbt-controls .tbt-settings").first.evaluate("e => getComputedStyle(e).display") == "none"
    page.locator("#tbt-next").click()
    wait_for_step(page, 1)
    page.wait_for_timeout(500)
    (ARTIFACTS / "layout").mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "layout" / "presenter_1280.png"))
    page.locator("#tbt-presenter input").uncheck()
    assert page.evaluate("() => localStorage.getItem('tbt-presenter')") == "0"
    assert page.problems == [], page.problems  # (reload drops only what the reload itself cut off)
