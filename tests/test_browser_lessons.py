"""The Lesson tab in Chromium: a lesson walked through in English and in Chinese, a step before and after its
reveal (screenshots: browser.screenshot), no console errors, and progress that survives a reload."""
import pytest

from browser import open_view, screenshot, wait_for_step

pytestmark = pytest.mark.browser
WORDS = {
    "en": dict(tab="Lesson", start="Start this lesson", commit="Commit my guess", next="Next step ▶",
               resume="Resume where you left off", step="Step {i} of {n}", choice="␣Paris", attention="Attention",
               open="Open the Attention tab ▶", said="The model gave your guess"),
    "zh": dict(tab="课程", start="开始这节课", commit="提交我的猜测", next="下一步 ▶",
               resume="从上次停下的地方继续", step="第 {i} 步，共 {n} 步", choice="␣Paris", attention="注意力",
               open="打开“注意力”标签页 ▶", said="模型给你的猜测"),
}


def open_lesson_tab(tab, words):
    wait_for_step(tab, 0)  # the page's own start on load has answered
    open_view(tab, words["tab"])
    tab.get_by_role("button", name=words["start"]).wait_for(timeout=30_000)


def shows_step(tab, words, i, n=3):
    tab.locator("#tbt-lesson-step").get_by_text(words["step"].format(i=i, n=n)).wait_for(timeout=60_000)


def walk(tab, words, lang):
    """The first lesson: its predict step before and after the reveal, then the next step opens its tab."""
    open_lesson_tab(tab, words)
    tab.get_by_role("button", name=words["start"]).click()
    shows_step(tab, words, 1)
    tab.locator("#tbt-lesson-question").wait_for(timeout=30_000)
    assert tab.locator("#tbt-lesson-reveal .tbt-lesson-reveal").count() == 0
    assert not tab.locator("#tbt-lesson-plot").is_visible()  # no chart before the guess
    screenshot(tab, f"lesson-before-reveal-{lang}")

    tab.locator("#tbt-lesson-guess input").click()
    tab.get_by_role("option", name=words["choice"]).click()
    tab.get_by_role("button", name=words["commit"]).click()
    reveal = tab.locator("#tbt-lesson-reveal .tbt-lesson-reveal")
    reveal.wait_for(timeout=60_000)
    assert reveal.get_attribute("data-right") == "true" and float(reveal.get_attribute("data-prob")) > 0.5
    assert words["said"] in reveal.inner_text()
    tab.locator("#tbt-lesson-plot .js-plotly-plot").first.wait_for(timeout=30_000)
    tab.locator("#tbt-lesson-reveal").scroll_into_view_if_needed()
    tab.evaluate("window.scrollBy(0, 120)")
    screenshot(tab, f"lesson-after-reveal-{lang}")

    tab.get_by_role("button", name=words["next"]).click()
    shows_step(tab, words, 2)
    wait_for_step(tab, 6)  # its six tokens were written as Start and Next token would
    tab.evaluate("window.scrollTo(0, 0)")
    screenshot(tab, f"lesson-step-{lang}")
    tab.get_by_role("button", name=words["open"]).click()
    tab.get_by_role("tab", name=words["attention"], selected=True).wait_for(timeout=60_000)  # the step's tab opens
    tab.locator("#tbt-plot-attention .js-plotly-plot").first.wait_for(timeout=30_000)
    tab.evaluate("window.scrollTo(0, 0)")
    screenshot(tab, f"lesson-attention-step-{lang}")


def test_a_lesson_in_english_and_its_progress_after_a_reload(page):
    words = WORDS["en"]
    walk(page, words, "en")
    page.reload()
    open_lesson_tab(page, words)
    saved = page.locator("#tbt-lesson-saved")
    saved.get_by_text("step 2 of 3").wait_for(timeout=30_000)
    page.get_by_role("button", name=words["resume"]).click()
    shows_step(page, words, 2)
    wait_for_step(page, 6)
    assert page.problems == [], page.problems


def test_a_lesson_in_chinese(url, new_tab):
    tab = new_tab(url, locale="zh-CN")
    tab.get_by_role("tab", name="候选词元").wait_for(timeout=30_000)  # the page switched to Chinese
    walk(tab, WORDS["zh"], "zh")
    assert tab.problems == [], tab.problems
