"""The Beams tab in headless Chromium, English then Chinese: Search draws step 1, Next step grows the tree by one
step, Run to the end shows the finished beams beside the greedy and the sampled text. Screenshots go to
tests/artifacts/ (ignored)."""
import pytest

from browser import artifact, choose_language, open_view, plot_drawn

pytestmark = pytest.mark.browser
WORDS = {"en": dict(tab="Beams", search="Search", next="Next step", end="Run to the end", step="Step {n} of",
                    greedy="greedy (B = 1)", sampled="sampled (your settings)"),
         "zh": dict(tab="束搜索", search="搜索", next="下一步", end="运行到底", step="第 {n} 步",
                    greedy="贪心（B = 1）", sampled="采样（你的设置）")}


def summary_has(page, text: str):
    page.wait_for_function(f"() => (document.querySelector('#tbt-beams-summary')?.innerText || '').includes({text!r})",
                           timeout=300_000)


def tree_steps(page) -> int:
    """The last step the drawn tree reaches (its x)."""
    return page.evaluate("""() => Math.max(...(document.querySelector('#tbt-plot-beams .js-plotly-plot')?.data || [])
        .flatMap((tr) => (tr.x || []).filter((x) => x !== null)))""")


def test_beams_tab(page):
    page.wait_for_function("() => document.querySelector('#tbt-marker')?.dataset.step === '0'", timeout=180_000)
    for lang in ("en", "zh"):
        w = WORDS[lang]
        if lang == "zh":
            choose_language(page, "zh")
        open_view(page, w["tab"])
        page.get_by_role("button", name=w["search"], exact=True).click()
        summary_has(page, w["step"].format(n=1))
        plot_drawn(page, "tbt-plot-beams")
        assert tree_steps(page) == 1
        page.get_by_role("button", name=w["next"], exact=True).click()
        summary_has(page, w["step"].format(n=2))
        page.wait_for_function("() => Math.max(...(document.querySelector('#tbt-plot-beams .js-plotly-plot')?.data"
                               " || []).flatMap((tr) => (tr.x || []).filter((x) => x !== null))) === 2",
                               timeout=60_000)
        page.locator("#tbt-plot-beams").scroll_into_view_if_needed()
        artifact(page, f"beams_tree_{lang}")
        page.get_by_role("button", name=w["end"], exact=True).click()
        page.wait_for_function(f"() => !!document.querySelector('.tbt-beam-texts[lang={lang}]')", timeout=120_000)
        table = page.locator(".tbt-beam-table").inner_text()
        assert w["greedy"] in table and w["sampled"] in table
        page.locator(".tbt-beam-table").scroll_into_view_if_needed()
        artifact(page, f"beams_texts_{lang}")
    assert page.problems == []
