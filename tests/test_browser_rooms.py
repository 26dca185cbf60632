"""A room in the browser: a teacher's tab opens one, a student's tab joins by the link and follows the teacher's
steps and chart; screenshots of both sides in English and Chinese; no console errors on either."""
import pytest

from browser import artifact, open_view, screenshot, settle, wait_for_step
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
    assert link == f"{url}?room={code}"  # the page's own address, as the browser sees it

    student = new_tab(link, locale)
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
            f"() => document.querySelector('#tbt-room-marker')?.dataset.step === '{step}'",
            timeout=60_000)  # a poll every second; minutes of slack for a loaded machine, not a speed test
    student.locator("#tbt-fig-room .main-svg").first.wait_for(timeout=30_000)  # the teacher's chart
    teacher_tokens = teacher.locator("#tbt-chips .tbt-gen").all_inner_texts()
    assert student.locator("#tbt-room-chips .tbt-gen").all_inner_texts() == teacher_tokens
    assert student.locator("#tbt-room-marker").get_attribute("data-tab") == "candidates"
    settle(student)
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
    student = new_tab(link, "zh-CN")
    student.wait_for_function("() => document.querySelector('#tbt-room-marker')?.dataset.step === '0'",
                              timeout=60_000)
    # a browser in Chinese: the page, its first text and the mirror are in Chinese without a click
    student.get_by_text("老师在第 0 步").wait_for(timeout=30_000)
    # (the student's own first text is in Chinese too, hidden behind the room while it follows)
    assert "第 0 步 · 5/512 个词元" in student.locator("#tbt-marker").text_content()
    assert "灰色边框：老师的提示词" in student.locator("#tbt-room-chips .tbt-chips-legend").inner_text()

    open_view(teacher, "Lesson")
    teacher.get_by_role("button", name="Start this lesson").click()
    teacher.locator("#tbt-lesson-question").get_by_text("The capital of France is").wait_for(timeout=60_000)
    question = student.locator("#tbt-room-question")
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


def phone_tab(chromium, address):
    """A phone-sized tab (390 × 844, touch), recording what goes wrong as browser.open_tab does."""
    tab = chromium.new_page(viewport={"width": 390, "height": 844}, locale="en-US", is_mobile=True, has_touch=True,
                            device_scale_factor=2)
    tab.problems = []
    tab.on("console", lambda m: m.type == "error" and tab.problems.append(m.text))
    tab.on("pageerror", lambda e: tab.problems.append(str(e)))
    tab.on("response", lambda r: r.status >= 400 and tab.problems.append(f"{r.status} {r.request.method} {r.url}"))
    tab.goto(address)
    return tab


def shown(tab, selector: str) -> bool:
    return tab.locator(selector).first.is_visible()


def test_a_class_joins_from_the_wall_follows_one_text_and_gets_feedback(url, new_tab, chromium):
    """A teacher (English, projector-sized) opens a room: the wall shows a big code, the join link (no QR code on a
    loopback server, said so) and the count. One student (Chinese) opens the link, one (a phone) types the code; each sees the teacher's text
    only; they guess the lesson's question; after the reveal each sees their own guess scored and the class split."""
    teacher = new_tab(url, "en-US")
    wait_for_step(teacher, 0)
    open_view(teacher, "Room")
    teacher.click("#tbt-room-open")
    # served on 127.0.0.1: no QR code a phone could not open, but the plain word that only this machine can join
    # (the QR code on a server that listens on the network: test_browser_wall.py)
    teacher.locator(".tbt-room-local").get_by_text(t("room_local_only", "en")).wait_for(timeout=30_000)
    assert teacher.locator("img.tbt-room-qr").count() == 0
    code = teacher.locator(".tbt-room-code").get_attribute("data-code")
    link = teacher.locator("#tbt-room-info a").get_attribute("href")
    assert link == f"{url}?room={code}"
    teacher.locator("#tbt-room-info").scroll_into_view_if_needed()
    screenshot(teacher, "room_wall_open_en")

    scanned = new_tab(link, "zh-CN")  # the link the QR code carries: the page joins on load
    phone = phone_tab(chromium, url)
    try:
        wait_for_step(phone, 0)
        open_view(phone, "Room")
        phone.locator("#tbt-room-code input, #tbt-room-code textarea").first.fill(code.lower())
        phone.click("#tbt-room-join")
        for student in (scanned, phone):
            student.wait_for_function("() => document.querySelector('#tbt-room-marker')?.dataset.step === '0'",
                                      timeout=60_000)
        teacher.wait_for_function("() => document.querySelector('.tbt-room-count')?.dataset.count === '2'",
                                  timeout=30_000)
        assert "2 students joined" in teacher.locator("#tbt-room-joined").inner_text()
        teacher.locator("#tbt-room-joined").scroll_into_view_if_needed()
        screenshot(teacher, "room_wall_joined_en")
        for student in (scanned, phone):  # one text: the teacher's, at the top; the student's own session hidden
            assert shown(student, "#tbt-room-chips") and shown(student, "#tbt-room-explore")
            for own in (".tbt-controls", "#tbt-text", "[role=tablist]", "#tbt-nav", "#tbt-room-back", "#tbt-room-open"):
                assert not shown(student, own), own
        assert phone.locator("#tbt-room-chips").bounding_box()["y"] < 844  # on the phone's first screen
        screenshot(phone, "room_phone_following")
        screenshot(scanned, "room_student_following_zh")

        open_view(teacher, "Lesson")
        teacher.get_by_role("button", name="Start this lesson").click()
        # The class guesses about the teacher's text, each student in their own language: where the lesson's prompt
        # differs by language, the question is worded around the teacher's prompt (ui/views/lesson.py _asked_in)
        for student, words, pick in ((scanned, "在“The capital of France is”之后", "␣Paris"),
                                     (phone, "most likely after", "␣London")):
            question = student.locator("#tbt-room-question")
            question.get_by_text(words).first.wait_for(timeout=60_000)
            question.get_by_label(pick).check()
            student.click("#tbt-room-send")
            student.locator("#tbt-room-sent").get_by_text(
                t("room_guess_sent", "zh" if student is scanned else "en")).wait_for(timeout=30_000)
        assert not shown(phone, "#tbt-text")  # nothing of the student's own session before the reveal
        phone.locator("#tbt-room-question").scroll_into_view_if_needed()
        screenshot(phone, "room_phone_question")
        screenshot(scanned, "room_student_question_zh")

        teacher.locator("#tbt-lesson-guess input").click()
        teacher.get_by_role("option", name="␣Paris").click()
        teacher.get_by_role("button", name="Commit my guess").click()  # the reveal
        phone.locator("#tbt-room-feedback").wait_for(timeout=30_000)
        scanned.locator("#tbt-room-feedback").wait_for(timeout=30_000)
        mine = phone.locator("#tbt-room-feedback").inner_text()
        assert "Your guess ␣London: the model gave it" in mine and "← you" in mine and "2 guesses" in mine
        assert "← 你" in scanned.locator("#tbt-room-feedback").inner_text()
        phone.locator("#tbt-room-feedback").scroll_into_view_if_needed()
        screenshot(phone, "room_phone_feedback")
        screenshot(scanned, "room_student_feedback_zh")
        open_view(teacher, "Room")
        teacher.locator("#tbt-room-joined").scroll_into_view_if_needed()
        screenshot(teacher, "room_wall_after_reveal_en")

        phone.click("#tbt-room-explore")  # the student's own session comes forward ...
        phone.locator("#tbt-text").wait_for(state="visible", timeout=60_000)
        assert shown(phone, "#tbt-room-back") and shown(phone, ".tbt-controls")
        phone.click("#tbt-room-back")  # ... and goes back behind the room
        phone.locator("#tbt-text").wait_for(state="hidden", timeout=30_000)

        for tab in (teacher, scanned, phone):  # every id on the page once (a gr.Group put one on two divs)
            twice = tab.evaluate("""() => { const ids = [...document.querySelectorAll('[id^=tbt-]')].map((e) => e.id);
                return ids.filter((id, i) => ids.indexOf(id) !== i); }""")
            assert twice == [], twice
        assert teacher.problems == [] and scanned.problems == [] and phone.problems == []
    except Exception:
        for name, tab in (("teacher", teacher), ("scanned", scanned), ("phone", phone)):
            artifact(tab, f"room_class_{name}_failed", full_page=True)
        raise
    finally:
        phone.close()
