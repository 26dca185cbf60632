"""The Logit lens and Sampler race tabs in headless Chromium, English and Chinese: the lens draws one row per layer
(plus the embeddings) over the positions asked for; the race shows both texts and its chart. Screenshots go to
tests/artifacts/."""
import pytest

from browser import artifact, choose_language, marker, open_view, plot_drawn, settle
from model.inside.lens import OWN_PINS

pytestmark = pytest.mark.browser
WORDS = {
    "en": dict(lens="Logit lens", read="Read every layer", race="Sampler race", go="Race", result="layers ×",
               side="A (T 1"),
    "zh": dict(lens="逻辑透镜", read="读取每一层", race="采样器比赛", go="开始比赛", result="层 ×", side="A（T 1"),
}


def lens_rows(page) -> int:
    return page.evaluate("() => (document.getElementById('tbt-fig-lens')?.data || [])"
                         ".filter((tr) => tr.type === 'heatmap').map((tr) => tr.z.length)[0] || 0")


def test_lens_and_race_tabs(page):
    marker(page).wait_for(timeout=180_000)
    page.wait_for_function("() => document.querySelector('#tbt-marker')?.dataset.step === '0'", timeout=180_000)
    for step in (1, 2):
        page.locator("#tbt-next").click()
        page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.step === '{step}'",
                               timeout=180_000)
    for lang in ("en", "zh"):
        w = WORDS[lang]
        if lang == "zh":
            choose_language(page, "zh")
        open_view(page, w["lens"])
        page.get_by_role("button", name=w["read"], exact=True).click()
        page.wait_for_function(f"() => document.querySelector('#tbt-lens-result')?.innerText.includes({w['result']!r})",
                               timeout=180_000)
        plot_drawn(page, "tbt-plot-lens")
        assert lens_rows(page) == 31  # SmolLM2: the embeddings and 30 layers
        page.locator("#tbt-plot-lens").scroll_into_view_if_needed()
        artifact(page, f"lens_{lang}")
        open_view(page, w["race"])
        page.locator("#tbt-race-steps input[type='number']").fill("12")
        page.locator("#tbt-race-steps input[type='number']").press("Enter")
        page.get_by_role("button", name=w["go"], exact=True).click()
        page.wait_for_function(f"() => document.querySelector('#tbt-race-texts')?.innerText.includes({w['side']!r})",
                               timeout=180_000)
        plot_drawn(page, "tbt-plot-race")
        assert page.locator("#tbt-race-texts .tbt-race-side").count() == 2
        page.locator("#tbt-race-texts").scroll_into_view_if_needed()
        artifact(page, f"race_{lang}")
    assert page.problems == []


PINS = {"en": dict(chart="Chart the pinned tokens", refused="is 3 tokens"),
        "zh": dict(chart="画出固定的词元", refused="是 3 个词元")}


def pin_lines(page) -> list[str]:
    return page.evaluate("() => (document.querySelector('#tbt-plot-lens-pins .js-plotly-plot')?.data || [])"
                         ".map((tr) => tr.name)")


@pytest.mark.parametrize("size", [(1920, 1080), (390, 844)])
def test_lens_pinned_tokens(new_tab, url, size):
    """The model's own top tokens pinned at the last position after a read (issue 47): a line each and the compared
    token; a bad pin is refused in the page's language, naming how it tokenizes, and the chart stays."""
    for lang in ("en", "zh"):
        page = new_tab(url, size=size)
        marker(page).wait_for(timeout=180_000)
        page.wait_for_function("() => document.querySelector('#tbt-marker')?.dataset.step === '0'", timeout=180_000)
        w = {**WORDS[lang], **PINS[lang]}
        if lang == "zh":
            choose_language(page, "zh")
        open_view(page, w["lens"])
        page.get_by_role("button", name=w["read"], exact=True).click()
        plot_drawn(page, "tbt-plot-lens-pins")  # the pinned tokens follow the read at its last position
        # (issue 47) the pins start as the model's own OWN_PINS most probable tokens at the last position: a line
        # each, and the compared token's
        page.wait_for_function("() => document.querySelector('#tbt-plot-lens-pins .js-plotly-plot')?.data?.length "
                               f"=== {OWN_PINS + 1}", timeout=60_000)
        lines = pin_lines(page)
        box = page.locator("#tbt-lens-pins textarea, #tbt-lens-pins input").first
        own = [pin.replace(" ", "␣") for pin in box.input_value().split(",")]
        assert len(own) == OWN_PINS and lines[:OWN_PINS] == own and "*" in lines[OWN_PINS], (lines, own)
        if lang == "en":
            assert own[0] == "␣Paris", own  # SmolLM2's own top after "The capital of France is"
        box.fill(" Paris, Parisian nights")
        box.press("Enter")
        page.locator(".toast-body", has_text=w["refused"]).first.wait_for(timeout=30_000)
        assert pin_lines(page) == lines  # refused: the chart as it was
        box.fill(" Paris, London")
        page.locator("#tbt-plot-lens-pins").scroll_into_view_if_needed()
        settle(page, quiet_ms=100, frames=2)
        artifact(page, f"lens_pins_{lang}_{size[0]}x{size[1]}")
        assert page.problems == []
