"""The Lesson tab in Chromium: a lesson walked through in English (SmolLM2) and in Chinese (Gemma 3 270M), at a
projector's 1280x800 and a phone's 390x844: each step's text, its Previous / Next buttons and its own chart on one
screen, a question's chart only after the reveal (a guess or the teacher's Reveal), no console errors, and progress
that survives a reload (screenshots: browser.screenshot)."""
import pytest

from browser import open_view, reload, screenshot, settle, tab_named, wait_for_step

pytestmark = pytest.mark.browser
WORDS = {
    "en": dict(tab="Lesson", start="Start this lesson", commit="Commit my guess", next="Next step ▶",
               resume="Resume where you left off", step="Step {i} of {n}", choice="␣Paris", prob=0.5,
               attention="Attention", open="Open the Attention tab ▶", said="The model gave your guess",
               reveal="Reveal the answer"),
    "zh": dict(tab="课程", start="开始这节课", commit="提交我的猜测", next="下一步 ▶",
               resume="从上次停下的地方继续", step="第 {i} 步，共 {n} 步", choice="晴", prob=0.2, attention="注意力",
               open="打开“注意力”标签页 ▶", said="模型给你的猜测", reveal="揭晓答案"),
}
PHONE = {"width": 390, "height": 844}


def open_lesson_tab(tab, words):
    wait_for_step(tab, 0)  # the page's own start on load has answered
    open_view(tab, words["tab"])
    tab.get_by_role("button", name=words["start"]).wait_for(timeout=30_000)


def shows_step(tab, words, i, n=3):
    tab.locator("#tbt-lesson-step").get_by_text(words["step"].format(i=i, n=n)).wait_for(timeout=120_000)


def on_one_screen(tab, *selectors):
    """Each element is inside the viewport (its top on screen, and at least its first 120 px)."""
    height = tab.viewport_size["height"]
    for selector in selectors:
        box = tab.locator(selector).first.bounding_box()
        assert box is not None, selector
        assert 0 <= box["y"] and box["y"] + min(box["height"], 120) <= height, (selector, box, height)


def walk(tab, words, lang, size="wide"):
    """The first lesson: its predict step before and after the reveal, then the next step shows its own chart
    beside its text, and its tab still opens from there."""
    open_lesson_tab(tab, words)
    tab.get_by_role("button", name=words["start"]).click()
    shows_step(tab, words, 1)
    tab.locator("#tbt-lesson-question").wait_for(timeout=30_000)
    assert tab.locator("#tbt-lesson-reveal .tbt-lesson-reveal").count() == 0
    assert not tab.locator("#tbt-lesson-plot").is_visible()  # no chart before the guess
    assert not tab.locator("#tbt-lesson-class").is_visible()  # no room open: nobody's guesses to show
    assert tab.get_by_role("button", name=words["reveal"]).is_visible()
    tab.locator("#tbt-lesson-step").scroll_into_view_if_needed()
    screenshot(tab, f"lesson-before-reveal-{lang}-{size}")

    tab.locator("#tbt-lesson-guess input").click()
    tab.get_by_role("option", name=words["choice"]).click()
    tab.get_by_role("button", name=words["commit"]).click()
    reveal = tab.locator("#tbt-lesson-reveal .tbt-lesson-reveal")
    reveal.wait_for(timeout=120_000)
    assert reveal.get_attribute("data-right") == "true" and float(reveal.get_attribute("data-prob")) > words["prob"]
    assert words["said"] in reveal.inner_text()
    tab.locator("#tbt-lesson-plot .js-plotly-plot").first.wait_for(timeout=30_000)
    screenshot(tab, f"lesson-after-reveal-{lang}-{size}")

    tab.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # left at the bottom, as after a long reveal
    tab.get_by_role("button", name=words["next"]).click()
    shows_step(tab, words, 2)
    wait_for_step(tab, 6)  # its six tokens were written as Start and Next token would
    tab.locator("#tbt-lesson-plot .js-plotly-plot").first.wait_for(timeout=60_000)  # the attention chart, here
    settle(tab)  # the scroll back to the lesson (after the event)
    screenshot(tab, f"lesson-step-{lang}-{size}")
    on_one_screen(tab, "#tbt-lesson-step", "#tbt-lesson-next")
    if size == "wide":  # beside the text; on a phone the chart follows it
        on_one_screen(tab, "#tbt-lesson-plot")
        tab.get_by_role("button", name=words["open"]).click()
        tab.get_by_role("tab", name=words["attention"], selected=True).wait_for(timeout=60_000)
        tab.locator("#tbt-plot-attention .js-plotly-plot").first.wait_for(timeout=30_000)


def test_a_lesson_in_english_and_its_progress_after_a_reload(page):
    words = WORDS["en"]
    walk(page, words, "en")
    reload(page)
    open_lesson_tab(page, words)
    saved = page.locator("#tbt-lesson-saved")
    saved.get_by_text("step 2 of 3").wait_for(timeout=30_000)
    page.get_by_role("button", name=words["resume"]).click()
    shows_step(page, words, 2)
    wait_for_step(page, 6)
    assert page.problems == [], page.problems


def test_a_lesson_in_chinese(url, new_tab):
    tab = new_tab(url, locale="zh-CN")
    tab_named(tab, "候选词元").wait_for(state="attached", timeout=30_000)  # the page switched to Chinese
    walk(tab, WORDS["zh"], "zh")
    assert tab.problems == [], tab.problems


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_lesson_on_a_phone(url, new_tab, lang):
    tab = new_tab(url, locale="zh-CN" if lang == "zh" else "en-US")
    tab.set_viewport_size(PHONE)
    words = WORDS[lang]
    open_lesson_tab(tab, words)
    tab.get_by_role("button", name=words["start"]).click()
    shows_step(tab, words, 1)
    tab.get_by_role("button", name=words["reveal"]).click()  # the teacher's reveal, no guess
    reveal = tab.locator("#tbt-lesson-reveal .tbt-lesson-reveal")
    reveal.wait_for(timeout=120_000)
    assert reveal.get_attribute("data-right") == "none"
    tab.locator("#tbt-lesson-plot .js-plotly-plot").first.wait_for(timeout=30_000)
    screenshot(tab, f"lesson-reveal-{lang}-phone")
    tab.get_by_role("button", name=words["next"]).click()
    shows_step(tab, words, 2)
    tab.locator("#tbt-lesson-plot .js-plotly-plot").first.wait_for(timeout=60_000)
    settle(tab)
    screenshot(tab, f"lesson-step-{lang}-phone")
    on_one_screen(tab, "#tbt-lesson-step", "#tbt-lesson-next")
    assert tab.problems == [], tab.problems
