"""Issue 49 in headless Chromium: a student writes notes and keeps a chart on the page and gets their summary from
the Save / load tab; the summary and a class report print to PDF (page.pdf, the browser's own print with the print
style sheet) and their text is read back (poppler's pdftotext). One served app and one browser for the module; the
pages and the PDFs' pages are written under tests/artifacts/ to be looked at (phone 390x844, projector 1280x800)."""
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urljoin

import pytest
from gradio_client import Client

from browser import ARTIFACTS, open_offline, open_view, start_text, wait_for_step
from served import DEFAULTS
from ui.strings import t

pytestmark = pytest.mark.browser
NOTES = {"en": "The forced token changed every later step.", "zh": "强制选择的词元改变了后面的每一步。"}
SIZES = {"phone": (390, 844), "projector": (1280, 800)}


def pdf_text(pdf: bytes, name: str) -> str:
    """The PDF's text (pdftotext, its layout kept), and its first pages as PNGs under tests/artifacts/ (pdftoppm)."""
    if not shutil.which("pdftotext"):
        pytest.skip("poppler-utils is not installed (make browser installs it): pdftotext reads the PDF back")
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.pdf"
    path.write_bytes(pdf)
    subprocess.run(["pdftoppm", "-r", "60", "-l", "3", "-png", str(path), str(ARTIFACTS / f"{name}-page")], check=True)
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True,
                          text=True).stdout


def flat(text: str) -> str:
    """Text as a PDF's lines give it back: runs of spaces and line breaks made one space."""
    return re.sub(r"\s+", " ", text)


def printed(chromium, page_html: str, name: str, lang: str, tmp_path: Path, charts: int = 0) -> str:
    """A printable page opened from file:// (every other request refused), looked at on a phone and a projector,
    printed to A4; its text."""
    tab = open_offline(chromium, page_html, tmp_path / f"{name}.html", lang)
    try:
        if charts:
            tab.wait_for_function(f"() => document.body.dataset.drawn === '{charts}'")
        for size, (w, h) in SIZES.items():
            tab.set_viewport_size({"width": w, "height": h})
            tab.screenshot(path=str(ARTIFACTS / f"{name}-{size}.png"))
        assert not tab.problems and not tab.requests, (tab.problems, tab.requests)
        return pdf_text(tab.pdf(format="A4", print_background=True), name)
    finally:
        tab.close()


@pytest.fixture(scope="module")
def room_report(url):
    """A class report: a room, a question, three students (one named 中文名), the teacher's reveal."""
    teacher = Client(url, verbose=False)
    teacher.predict("The capital of France is", "raw", "smollm2", **DEFAULTS, api_name="/start")
    code = re.search(r'data-code="([A-Z0-9]+)"', teacher.predict(**DEFAULTS, api_name="/open_room")[0]).group(1)
    teacher.predict("one-token-at-a-time", **DEFAULTS, api_name="/lesson_open")
    for name, guess in (("Ana", " Paris"), ("中文名", " London"), ("", " London")):
        student = Client(url, verbose=False)
        student.predict(code, "en", name, api_name="/join_room")
        student.predict("en", api_name="/room_state")  # (its page shows the question: its choices)
        student.predict(guess, "en", api_name="/room_guess")
    teacher.predict(" Paris", **DEFAULTS, api_name="/lesson_guess")
    pages = {}
    for lang in ("en", "zh"):
        files, _ = teacher.predict(lang, api_name="/class_report")
        pages[lang] = Path(next(f for f in files if f.endswith(".html"))).read_text(encoding="utf-8")
    teacher.predict("en", api_name="/close_room")
    return pages


def test_a_student_keeps_a_chart_writes_notes_and_prints_the_summary(url, new_tab, chromium, tmp_path):
    page = new_tab(url)
    start_text(page, "The capital of France is")
    page.locator("#tbt-next").click()
    wait_for_step(page, 1)
    page.locator("#tbt-keep-candidates").click()
    page.locator("#tbt-kept-candidates [data-kept='1']").wait_for(timeout=60_000)
    page.locator("#tbt-notes-box").get_by_text(t("notes", "en")).click()
    page.locator("#tbt-notes textarea").fill(NOTES["en"])
    open_view(page, t("tab_session", "en"))
    page.locator("#tbt-summary").click()
    link = page.locator("#tbt-summary-file a[href]").first
    link.wait_for(timeout=60_000)
    summary = page.request.get(urljoin(page.url, link.get_attribute("href"))).body().decode("utf-8")
    assert NOTES["en"] in summary and "Candidates, step 1" in summary
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("#tbt-summary").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "summary-in-app-phone.png"))
    assert not page.problems, page.problems
    text = flat(printed(chromium, summary, "summary-en", "en", tmp_path, charts=1))
    for said in ("My summary", "The texts I wrote", "The capital of France is", NOTES["en"], "Charts I kept",
                 "Candidates, step 1", "Next token"):  # the chart's own title, drawn by plotly.js
        assert said in text, said


def test_the_summary_prints_in_chinese(url, chromium, tmp_path):
    lang = "zh"
    client = Client(url, verbose=False)
    client.predict("今天天气", "raw", "smollm2", **{**DEFAULTS, "lang": lang}, api_name="/start")
    for _ in range(2):
        client.predict(**{**DEFAULTS, "lang": lang}, api_name="/next_token")
    client.predict(1, **{**DEFAULTS, "lang": lang}, api_name="/back")
    summary = Path(client.predict(lang, NOTES[lang], api_name="/my_summary")).read_text(encoding="utf-8")
    text = flat(printed(chromium, summary, f"summary-{lang}", lang, tmp_path))
    for said in ("我的总结", "我写的文本", "今天天气", "我后退的地方", NOTES[lang]):
        assert said in text, said


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_class_report_prints_with_its_counts(room_report, chromium, lang, tmp_path):
    text = flat(printed(chromium, room_report[lang], f"report-{lang}", lang, tmp_path))
    said = {"en": ("Class report", "3 of 3 seats answered; 1 right (33%).", "Most common wrong answer: ␣London (2).",
                   "Ana", "中文名"),
            "zh": ("班级报告", "3 个座位中有 3 个回答；1 个正确（33%）。", "最常见的错误答案：␣London（2 个）。", "Ana", "中文名")}
    for words in said[lang]:
        assert flat(words) in text, words
