"""The Constraints tab in headless Chromium, English and Chinese: write under a list of allowed words, and the
candidates chart shows the tokens the constraint removed as their own fate (✂ grammar)."""
from browser import artifact, marker, open_view, plot_drawn, tab_named

import pytest

pytestmark = pytest.mark.browser
WORDS = {"en": dict(tab="Constraints", run="Write under the constraint", wrote="Wrote", fate="cut by the constraint"),
         "zh": dict(tab="约束解码", run="在约束下续写", wrote="写出了", fate="被约束")}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_constraints_tab_draws_the_grammar_cut(page, lang):
    words = WORDS[lang]
    marker(page).wait_for(timeout=180_000)
    if lang == "zh":
        page.get_by_text("中文", exact=True).click()
        tab_named(page, words["tab"]).wait_for(state="attached", timeout=30_000)
    open_view(page, words["tab"])
    page.locator("#tbt-constrain-run").click()
    page.locator("#tbt-constrain-summary").get_by_text(words["wrote"]).wait_for(timeout=180_000)
    plot_drawn(page, "tbt-plot-constrain")
    legend = page.locator("#tbt-plot-constrain .legendtext").all_text_contents()  # SVG: no innerText
    assert any(words["fate"] in text for text in legend), legend
    numbers = page.locator("#tbt-constrain-summary").inner_text()
    assert "`" not in numbers
    page.locator("#tbt-constrain-summary").scroll_into_view_if_needed()
    artifact(page, f"constraints_{lang}")
    page.locator("#tbt-plot-constrain").scroll_into_view_if_needed()
    artifact(page, f"constraints_chart_{lang}")
    assert not page.problems, page.problems


SC_WORDS = {"en": dict(tab="Self-consistency", wrote="samples in"), "zh": dict(tab="自洽投票", wrote="个样本")}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_consistency_tab_votes(page, lang):
    words = SC_WORDS[lang]
    marker(page).wait_for(timeout=180_000)
    page.locator("#tbt-prompt textarea").fill("Question: what is 7 + 5?\nAnswer:")
    page.locator("#tbt-start").click()
    page.wait_for_function("() => (document.querySelector('#tbt-chips')?.innerText || '').includes('5?')",
                           timeout=180_000)
    if lang == "zh":
        page.get_by_text("中文", exact=True).click()
        tab_named(page, words["tab"]).wait_for(state="attached", timeout=30_000)
    open_view(page, words["tab"])
    page.locator("#tbt-sc-run").click()
    page.locator("#tbt-sc-summary").get_by_text(words["wrote"]).wait_for(timeout=300_000)
    plot_drawn(page, "tbt-plot-sc")
    # under the chart, each row's text beside its answer: the greedy row and the N samples (issue 32, item 8)
    assert page.locator("#tbt-sc-texts li").count() == 1 + int(page.locator("#tbt-sc-n input").first.input_value())
    page.locator("#tbt-sc-summary").scroll_into_view_if_needed()
    artifact(page, f"consistency_{lang}")
    page.locator("#tbt-plot-sc").scroll_into_view_if_needed()
    artifact(page, f"consistency_chart_{lang}")
    page.locator("#tbt-sc-texts").scroll_into_view_if_needed()
    artifact(page, f"consistency_texts_{lang}")
    assert not page.problems, page.problems


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_json_example_ends_within_its_budget(page, lang):
    """Issue 33, item 8: the JSON example stopped unfinished (its reason ran past the 24 tokens). Switched to JSON,
    the page sets the example and its budget, and the run ends: the summary says so and the text is JSON."""
    import json

    from ui.strings import t

    marker(page).wait_for(timeout=180_000)
    if lang == "zh":
        page.get_by_text("中文", exact=True).click()
        tab_named(page, WORDS[lang]["tab"]).wait_for(state="attached", timeout=30_000)
    open_view(page, WORDS[lang]["tab"])
    page.locator("#tbt-constrain-kind").get_by_text(t("constrain_kind_json", lang)).click()
    page.wait_for_function("() => document.querySelector('#tbt-constrain-tokens input')?.value === '48'",
                           timeout=30_000)
    page.locator("#tbt-constrain-run").click()
    summary = page.locator("#tbt-constrain-summary")
    summary.get_by_text(WORDS[lang]["wrote"]).wait_for(timeout=300_000)
    assert t("constrain_ended_eos", lang) in summary.inner_text()
    written = summary.locator("code").first.inner_text()  # the text written, as the summary quotes it
    assert set(json.loads(written)) == {"answer", "reason"}, written
    summary.scroll_into_view_if_needed()
    artifact(page, f"constraints_json_{lang}")
    assert not page.problems, page.problems
