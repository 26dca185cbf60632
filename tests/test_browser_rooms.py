"""A room in the browser: a teacher's tab opens one, a student's tab joins by the link and follows the teacher's
steps and chart; screenshots of both sides in English and Chinese; no console errors on either."""
import pytest

from browser import artifact, open_view, screenshot, wait_for_step
from ui.strings import t

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lang,locale", [("en", "en-US"), ("zh", "zh-CN")])
def test_a_student_follows_the_teacher(url, new_tab, lang, locale):
    teacher = new_tab(url, locale)
    wait_for_step(teacher, 0)
    open_view(teacher, t("tab_room", lang))
    teacher.click("#tbt-room-open")
    code = teacher.locator(".tbt-room-code").get_attribute("data-code", timeout=30_000)
    assert len(code) == 8
    link = teacher.locator("#tbt-room-info a").get_attribute("href")
    assert link == f"?room={code}"

    student = new_tab(url + link, locale)
    try:
        student.wait_for_function("() => document.querySelector('#tbt-room-marker')?.dataset.step === '0'",
                                  timeout=60_000)
    except Exception:
        artifact(student, f"room_student_{lang}_not_following")
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
    screenshot(teacher, f"room_teacher_{lang}")
    screenshot(student, f"room_student_{lang}")

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


def test_the_class_guesses_before_the_teacher_reveals(url, new_tab):
    """A teacher (English) asks a lesson's question in a room; a student (Chinese) sees it, with the chart held
    back, and sends a guess; the teacher's Lesson tab counts it; after the reveal the student sees the chart."""
    teacher = new_tab(url, "en-US")
    wait_for_step(teacher, 0)
    open_view(teacher, "Room")
    teacher.click("#tbt-room-open")
    link = teacher.locator("#tbt-room-info a").get_attribute("href", timeout=30_000)
    student = new_tab(url + link, "zh-CN")
    student.wait_for_function("() => document.querySelector('#tbt-room-marker')?.dataset.step === '0'",
                              timeout=60_000)
    # a browser in Chinese: the page, its first text and the mirror are in Chinese without a click
    student.get_by_text("老师在第 0 步").wait_for(timeout=30_000)
    student.get_by_text("第 0 步 · 5/512 个词元").wait_for(timeout=30_000)
    assert "灰色边框：你的提示词" in student.locator(".tbt-chips-legend").first.inner_text()

    open_view(teacher, "Lesson")
    teacher.get_by_role("button", name="Start this lesson").click()
    teacher.locator("#tbt-lesson-question").get_by_text("The capital of France is").wait_for(timeout=60_000)
    question = student.locator("#tbt-room-question").first  # (a gr.Group puts its id on two nested divs)
    question.get_by_text("The capital of France is").wait_for(timeout=30_000)
    student.locator("#tbt-plot-room").get_by_text(t("guesses_wait_title", "zh")).wait_for(timeout=30_000)
    question.get_by_label("␣Paris").check()
    student.click("#tbt-room-send")
    student.get_by_text(t("room_guess_sent", "zh")).wait_for(timeout=30_000)

    teacher.click("#tbt-lesson-class")
    plot = teacher.locator("#tbt-lesson-class-plot")
    plot.locator(".main-svg").first.wait_for(timeout=30_000)
    assert "1 of 1 students" in plot.inner_text()
    plot.scroll_into_view_if_needed()
    screenshot(teacher, "room_guesses_teacher_en")
    question.scroll_into_view_if_needed()
    screenshot(student, "room_guesses_student_zh")

    teacher.locator("#tbt-lesson-guess input").click()
    teacher.get_by_role("option", name="␣Paris").click()
    teacher.get_by_role("button", name="Commit my guess").click()  # the reveal
    student.get_by_text(t("room_guess_revealed", "zh")).wait_for(timeout=30_000)
    student.wait_for_function(f"""() => !(document.querySelector('#tbt-plot-room')?.innerText || '')
        .includes({t("guesses_wait_title", "zh")!r})""", timeout=30_000)
    assert student.problems == [] and teacher.problems == []
