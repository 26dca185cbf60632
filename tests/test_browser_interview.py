"""The Interview questions tab in Chromium, in English and Chinese, at a projector's 1280x800 and a phone's 390x844:
the cards are there, an answer shows only when asked, its tick survives a reload (the answer itself is hidden again),
and a card's button opens its lesson (as the Lesson tab's Start does) or its tab. Pictures: tests/artifacts/."""
import pytest

from browser import artifact, open_view, reload, wait_for_step
from ui.views.interview import QUESTIONS

pytestmark = pytest.mark.browser
WORDS = {
    "en": dict(tab="Interview questions", reveal="Show the answer", seen="answer seen", opened="opened",
               question="How big is a 7B model's KV cache", myth="Common wrong answer", lesson_tab="Lesson",
               lesson="Open the lesson “The KV cache” ▶", step="Step 1 of 3", beams="Open the lesson “Branches and exposure bias” ▶",
               beams_tab="Lesson", summary=f"1 of {len(QUESTIONS)}"),
    "zh": dict(tab="面试问题", reveal="显示答案", seen="已看答案", opened="已打开", question="一个 7B 模型的 KV 缓存有多大",
               myth="常见的错误回答", lesson_tab="课程", lesson="打开课程《KV 缓存》▶", step="第 1 步，共 3 步",
               beams="打开课程《分支与暴露偏差》▶", beams_tab="课程", summary=f"{len(QUESTIONS)} 道题里已看过或打开过 1 道"),
}
SIZES = {"wide": (1280, 800), "phone": (390, 844)}
CARD = "#tbt-interview-card-kv-cache-size"


def open_interview(tab, words):
    wait_for_step(tab, 0)  # the page's own start on load has answered
    open_view(tab, words["tab"])
    tab.locator(CARD).get_by_text(words["question"]).wait_for(timeout=30_000)


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_answer_revealed_keeps_its_tick_after_a_reload(url, new_tab, lang, size):
    words = WORDS[lang]
    tab = new_tab(url, locale="zh-CN" if lang == "zh" else "en-US", size=SIZES[size])
    open_interview(tab, words)
    card, answer = tab.locator(CARD), tab.locator("#tbt-interview-answer-kv-cache-size")
    assert card.get_by_text(words["myth"]).is_visible() and not answer.is_visible()  # predict first: no answer yet
    assert tab.locator("#tbt-interview-card-subwords").is_visible()  # the last card is on the page too
    card.scroll_into_view_if_needed()
    artifact(tab, f"interview-before-{lang}-{size}")
    card.get_by_role("button", name=words["reveal"]).click()
    answer.get_by_text("1,073,741,824", exact=False).wait_for(timeout=30_000)
    head = tab.locator("#tbt-interview-head-kv-cache-size")
    head.get_by_text(words["seen"], exact=False).wait_for(timeout=30_000)
    assert "✔" in head.inner_text() and "✔" not in tab.locator("#tbt-interview-head-sampling").inner_text()
    tab.locator("#tbt-interview-summary").get_by_text(words["summary"], exact=False).wait_for(timeout=30_000)
    card.scroll_into_view_if_needed()
    artifact(tab, f"interview-revealed-{lang}-{size}")
    artifact(tab, f"interview-page-{lang}-{size}", full_page=True)

    reload(tab)
    open_interview(tab, words)
    head.get_by_text(words["seen"], exact=False).wait_for(timeout=30_000)  # this browser remembers
    assert not answer.is_visible()  # the answer itself waits to be asked for again
    assert tab.problems == [], tab.problems


def test_a_card_opens_its_lesson_and_another_its_tab(url, new_tab):
    words = WORDS["en"]
    tab = new_tab(url)
    open_interview(tab, words)
    tab.locator(CARD).get_by_role("button", name=words["lesson"]).click()
    tab.get_by_role("tab", name=words["lesson_tab"], exact=True, selected=True).wait_for(timeout=60_000)
    step = tab.locator("#tbt-lesson-step")
    step.get_by_text(words["step"]).wait_for(timeout=120_000)
    assert "The KV cache" in step.inner_text()
    artifact(tab, "interview-opened-lesson-en-wide")
    open_view(tab, words["tab"])
    tab.locator("#tbt-interview-head-kv-cache-size").get_by_text(words["opened"], exact=False).wait_for(timeout=30_000)
    tab.locator("#tbt-interview-card-exposure-bias").get_by_role("button", name=words["beams"]).click()
    tab.get_by_role("tab", name=words["beams_tab"], exact=True, selected=True).wait_for(timeout=60_000)
    assert tab.problems == [], tab.problems
