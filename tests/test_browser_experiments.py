"""The Patching and Heads tabs in headless Chromium: prompts of different lengths are refused in the page's
language and change nothing; a grid is drawn one row per layer; the heads are scored, and a click on a named
induction head opens it in the Attention view (the page's layer and head set). Pictures go to tests/artifacts/."""
import pytest

from browser import artifact, open_view, plot_drawn, settle

pytestmark = pytest.mark.browser
WORDS = {
    "en": dict(patch="Patching", run_p="Patch every layer and position", heads="Heads", run_h="Score every head",
               attention="Attention", lengths="same number of tokens"),
    "zh": dict(patch="激活修补", run_p="修补每一层、每个位置", heads="注意力头", run_h="给每个头打分", attention="注意力",
               lengths="词元数必须相同"),
}


def heatmap_rows(page, plot: str) -> int:
    return page.evaluate(f"() => (document.getElementById({plot!r})?.data || [])"
                         ".filter((tr) => tr.type === 'heatmap').map((tr) => tr.z.length)[0] || 0")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_patching_refuses_unequal_prompts_then_draws_its_grid(new_tab, url, lang):
    w = WORDS[lang]
    page = new_tab(url, "zh-CN" if lang == "zh" else "en-US", (1920, 1080))
    page.wait_for_function("() => document.querySelector('#tbt-marker')?.dataset.step === '0'", timeout=180_000)
    open_view(page, w["patch"])
    page.locator("#tbt-patch-corrupted textarea").fill("The Statue of Liberty in New York is in the city of")
    page.get_by_role("button", name=w["run_p"], exact=True).click()
    page.get_by_text(w["lengths"]).first.wait_for(timeout=120_000)  # the refusal, in the page's language
    assert heatmap_rows(page, "tbt-fig-patching") == 0  # nothing drawn
    page.locator("#tbt-patch-clean textarea").fill("The cat sat")
    page.locator("#tbt-patch-corrupted textarea").fill("The dog sat")
    page.get_by_role("button", name=w["run_p"], exact=True).click()
    page.wait_for_function("() => (document.querySelector('#tbt-patch-result')?.innerText || '').length > 20",
                           timeout=600_000)
    # (on a machine shared with a class, the grid's drawing itself has taken over a minute)
    page.wait_for_function("() => (document.getElementById('tbt-fig-patching')?.data || []).length > 0",
                           timeout=300_000)
    plot_drawn(page, "tbt-plot-patching")
    assert heatmap_rows(page, "tbt-fig-patching") == 30  # SmolLM2: the input of each of its 30 layers
    page.locator("#tbt-plot-patching").scroll_into_view_if_needed()
    artifact(page, f"patching_test_{lang}")
    assert page.problems == []


def test_a_clicked_head_opens_in_the_attention_view(page):
    w = WORDS["en"]
    page.wait_for_function("() => document.querySelector('#tbt-marker')?.dataset.step === '0'", timeout=180_000)
    open_view(page, w["heads"])
    page.get_by_role("button", name=w["run_h"], exact=True).click()
    page.wait_for_function("() => (document.querySelector('#tbt-heads-result')?.innerText || '').length > 20",
                           timeout=600_000)
    plot_drawn(page, "tbt-plot-heads")
    settle(page)
    x, y, layer, head = page.evaluate("""() => {
      const gd = document.getElementById('tbt-fig-heads');
      const named = gd.data.find((t) => t.name === 'induction named');
      const xa = gd._fullLayout.xaxis2, ya = gd._fullLayout.yaxis2, box = gd.getBoundingClientRect();
      return [box.left + xa._offset + xa.l2p(named.x[0]), box.top + ya._offset + ya.l2p(named.y[0]),
              named.y[0], named.x[0]];
    }""")
    assert f"L{layer} H{head}" in page.locator("#tbt-heads-result").inner_text()  # the head the page names
    page.mouse.click(x, y)
    page.get_by_role("tab", name=w["attention"], exact=True, selected=True).wait_for(timeout=60_000)
    page.wait_for_function(f"() => document.querySelector('#tbt-layer input[type=number]')?.value === '{layer}'",
                           timeout=60_000)
    assert page.locator("#tbt-head input").input_value().startswith(f"head {head} ")
    plot_drawn(page, "tbt-plot-attention")
    artifact(page, "heads_click_test")
    assert page.problems == []
