"""A room in the browser: a teacher's tab opens one, a student's tab joins by the link and follows the teacher's
steps and chart; screenshots of both sides in English and Chinese; no console errors on either."""
import re
from pathlib import Path

import pytest

from browser import CHROMIUM, FLAGS, needs_chromium, under_load, open_tab, url, wait_for_step  # noqa: F401 (url: a fixture)
from ui.strings import t

pytestmark = [needs_chromium, under_load, pytest.mark.skip(
    reason="not reliable yet (issue 15 open): opening the Room tab from Gradio's 'More tabs' menu times out; "
           "rooms are tested through the API in tests/test_rooms.py")]
SHOTS = Path(__file__).resolve().parents[1] / "assets" / "screenshots"


def open_view(page, name: str):
    """Click the tab `name`; at 1280 px the later tabs sit in Gradio's "More tabs" menu."""
    tab = page.get_by_role("tab", name=name, exact=True)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
        return
    page.get_by_label("More tabs").click()
    page.locator(".overflow-dropdown button:visible", has_text=re.compile(f"^{name}$")).first.click()


@pytest.mark.parametrize("lang,locale", [("en", "en-US"), ("zh", "zh-CN")])
def test_a_student_follows_the_teacher(url, lang, locale):  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        teacher = open_tab(browser, url, locale)
        wait_for_step(teacher, 0)
        open_view(teacher, t("tab_room", lang))
        teacher.click("#tbt-room-open")
        code = teacher.locator(".tbt-room-code").get_attribute("data-code", timeout=30_000)
        assert len(code) == 8
        link = teacher.locator("#tbt-room-info a").get_attribute("href")
        assert link == f"?room={code}"

        student = open_tab(browser, url + link, locale)
        try:
            student.wait_for_function("() => document.querySelector('#tbt-room-marker')?.dataset.step === '0'",
                                      timeout=60_000)
        except Exception:
            student.screenshot(path="/tmp/student_fail.png")
            raise
        open_view(teacher, t("tab_candidates", lang))
        for step in (1, 2, 3):
            teacher.click("#tbt-next")
            wait_for_step(teacher, step)
            student.wait_for_function(
                f"() => document.querySelector('#tbt-room-marker')?.dataset.step === '{step}'", timeout=10_000)
        student.locator("#tbt-fig-room .main-svg").first.wait_for(timeout=30_000)  # the teacher's chart
        teacher_tokens = teacher.locator("#tbt-chips .tbt-gen").all_inner_texts()
        assert student.locator("#tbt-room-chips .tbt-gen").all_inner_texts() == teacher_tokens
        assert student.locator("#tbt-room-marker").get_attribute("data-tab") == "candidates"
        student.wait_for_timeout(600)
        teacher.screenshot(path=str(SHOTS / f"room_teacher_{lang}.png"))
        student.screenshot(path=str(SHOTS / f"room_student_{lang}.png"))

        student.click("#tbt-room-explore")
        wait_for_step(student, 3)
        assert student.locator("#tbt-chips .tbt-gen").all_inner_texts() == teacher_tokens
        student.click("#tbt-next")
        wait_for_step(student, 4)
        wait_for_step(teacher, 3)  # the teacher's page is its own

        open_view(teacher, t("tab_room", lang))
        teacher.click("#tbt-room-close")  # (the page's unload closes it too: test_rooms, Rooms.close(..., "left"))
        teacher.get_by_text(t("room_closed_teacher", lang)).wait_for(timeout=20_000)
        student.click("#tbt-room-back")
        student.locator(".tbt-room-ended").wait_for(timeout=20_000)
        assert t("room_closed", lang) in student.locator("#tbt-room-status").inner_text()
        assert student.problems == [] and teacher.problems == []
        browser.close()
