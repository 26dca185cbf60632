"""The Switch off tab and the lens's commitment strip in headless Chromium, English and Chinese, at a projector's
1920x1080 and a phone's 390x844: switching a head off draws the candidates before and after and the two texts; the
lens draws its strip under the heat map. Screenshots go to tests/artifacts/."""
import pytest

from browser import artifact, open_view, plot_drawn, wait_for_step

pytestmark = pytest.mark.browser
WORDS = {
    "en": dict(tab="Switch off", go="Switch off and compare", result="KL(before", lens="Logit lens",
               read="Read every layer", lens_result="layers ×"),
    "zh": dict(tab="关闭部件", go="关闭并比较", result="KL(之前", lens="逻辑透镜", read="读取每一层",
               lens_result="层 ×"),
}
SIZES = {"projector": (1920, 1080), "phone": (390, 844)}


def traces(page, elem_id: str) -> list[str]:
    return page.evaluate(f"() => (document.querySelector('#{elem_id} .js-plotly-plot')?.data || [])"
                         ".map((tr) => tr.type)")


@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("lang", WORDS, ids=str)
def test_switch_off_and_the_commitment_strip(url, new_tab, lang, size):
    w = WORDS[lang]
    page = new_tab(url, "zh-CN" if lang == "zh" else "en-US", SIZES[size])
    wait_for_step(page, 0)
    for step in (1, 2, 3):
        page.locator("#tbt-next").click()
        wait_for_step(page, step)
    open_view(page, w["tab"])
    page.get_by_role("button", name=w["go"], exact=True).click()
    page.wait_for_function(f"() => document.querySelector('#tbt-abl-result')?.innerText.includes({w['result']!r})",
                           timeout=240_000)
    plot_drawn(page, "tbt-plot-ablation")
    assert page.locator("#tbt-abl-texts .tbt-abl-side").count() == 2
    assert page.locator("#tbt-abl-texts .tbt-abl-off").count() == 1  # the text written with the part off, marked
    page.locator("#tbt-plot-ablation").scroll_into_view_if_needed()
    artifact(page, f"ablation_{lang}_{size}")
    page.locator("#tbt-abl-texts").scroll_into_view_if_needed()
    artifact(page, f"ablation_texts_{lang}_{size}")
    open_view(page, w["lens"])
    page.get_by_role("button", name=w["read"], exact=True).click()
    page.wait_for_function(f"() => document.querySelector('#tbt-lens-result')?.innerText.includes({w['lens_result']!r})",
                           timeout=240_000)
    plot_drawn(page, "tbt-plot-lens-commit")
    assert "bar" in traces(page, "tbt-plot-lens-commit")
    page.locator("#tbt-plot-lens-commit").scroll_into_view_if_needed()
    artifact(page, f"lens_commit_{lang}_{size}")
    assert page.problems == []
