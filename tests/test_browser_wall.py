"""Issue 33 in the browser: the room's wall at 1280 x 800 on a server that listens on the network (its QR code read
back from the screenshot: not a loopback address), one link per language (?lang=), the teacher-only panel off a
phone that follows and the Join box off the teacher's wall, in English and Chinese."""
import io

import pytest
from PIL import Image

from browser import open_view, screenshot, tab_named, wait_for_step
from ui.reach import is_loopback, network_address
from ui.strings import t

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(lm):
    """The app listening on every interface, as a class's server (`--host 0.0.0.0`): the tabs open it on loopback."""
    from served import served

    if network_address() is None:
        pytest.skip("this machine has no network address")
    with served(lm, host="0.0.0.0") as (_, address, _demo):
        yield address


def read_qr(tab) -> list[str]:
    """The QR codes in the tab's screenshot, read by zxing-cpp (not the code that drew them: segno)."""
    import zxingcpp

    shot = Image.open(io.BytesIO(tab.screenshot()))
    return [found.text for found in zxingcpp.read_barcodes(shot)]


def inside(tab, selector: str, height: int) -> bool:
    box = tab.locator(selector).first.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


@pytest.mark.parametrize("lang,locale", [("en", "en-US"), ("zh", "zh-CN")])
def test_the_wall_fits_1280x800_and_its_qr_code_opens_on_the_network(url, new_tab, lang, locale):
    teacher = new_tab(url, locale, (1280, 800))
    wait_for_step(teacher, 0)
    open_view(teacher, t("tab_room", lang))
    teacher.click("#tbt-room-open")
    teacher.locator("img.tbt-room-qr").wait_for(timeout=30_000)
    code = teacher.locator(".tbt-room-code").get_attribute("data-code")
    link = teacher.locator("#tbt-room-info a").get_attribute("href")
    host = link.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[0]
    assert link.endswith(f"/?room={code}") and not is_loopback(host), link
    # the code, the QR code and the count on the screen at once (before: the QR code at 574-814 px of 800)
    teacher.wait_for_function("""() => { const c = document.querySelector('#tbt-room-joined');
        const r = c && c.getBoundingClientRect(); return r && r.height > 0 && r.bottom <= innerHeight; }""",
                              timeout=10_000)
    for part in (".tbt-room-code", "img.tbt-room-qr", ".tbt-room-count"):
        assert inside(teacher, part, 800), part
    assert not teacher.locator("#tbt-room-code").is_visible()  # no student's Join box on the teacher's wall
    screenshot(teacher, f"room_wall_1280_{lang}")
    assert read_qr(teacher) == [link]  # what a phone's camera reads: the link, on the machine's network address

    student = new_tab(link, locale, (390, 844))  # the link opens (this machine is on that network too)
    student.wait_for_function("() => document.querySelector('#tbt-room-marker')?.dataset.step === '0'",
                              timeout=60_000)
    teacher.wait_for_function("() => document.querySelector('.tbt-room-count')?.dataset.count === '1'",
                              timeout=30_000)
    assert not student.locator("#tbt-cp-teacher").is_visible()  # the teacher-only panel is not on a phone
    assert not student.locator("#tbt-room-open").is_visible()
    screenshot(student, f"room_phone_390_{lang}")
    assert teacher.problems == [] and student.problems == []


@pytest.mark.parametrize("lang,locale", [("zh", "en-US"), ("en", "zh-CN")])
def test_lang_in_the_address_chooses_the_pages_language(url, new_tab, lang, locale):
    """A teacher hands out one link per language: ?lang= wins over the browser's own language."""
    tab = new_tab(f"{url}?lang={lang}", locale, (1280, 800))
    wait_for_step(tab, 0)
    tab_named(tab, t("tab_room", lang)).wait_for(state="attached", timeout=30_000)
    tab.locator("#tbt-marker").get_by_text("第 0 步" if lang == "zh" else "Step 0").wait_for(timeout=30_000)
    screenshot(tab, f"lang_link_{lang}")
    assert tab.problems == []
