"""Issue 33's classroom polish in headless Chromium, each at the size where it failed, in English and Chinese:
the Beams tree's labels apart from one another and its phone legend clear of the subtitle (item 4), the Tokenizers
view's chips all on view on a phone (item 7). Screenshots go to tests/artifacts/ (ignored)."""
import pytest

from browser import artifact, choose_language, open_view, plot_drawn, reload, settle, wait_for_step
from viz.style import FATE_COLORS

pytestmark = pytest.mark.browser
WORDS = {"en": dict(beams="Beams", search="Search", end="Run to the end", tokenizers="Tokenizers"),
         "zh": dict(beams="束搜索", search="搜索", end="运行到底", tokenizers="分词器")}

# The tree as drawn: each token label's box (the texts of the marker traces), the legend's and the subtitle's
TREE = """() => {
  const gd = document.querySelector('#tbt-plot-beams .js-plotly-plot');
  const box = (n) => { const b = n.getBoundingClientRect(); return {l: b.left, r: b.right, t: b.top, b: b.bottom}; };
  // the labels on view: in the plot area's width (plotly hides those of steps panned out of it: display none)
  const g = gd.getBoundingClientRect(), s = gd._fullLayout._size, left = g.left + s.l, right = left + s.w;
  const labels = [...gd.querySelectorAll('.scatterlayer .textpoint')]
    .filter((p) => getComputedStyle(p).display !== 'none').map((p) => p.querySelector('text'))
    .filter((t) => t && (t.textContent || '').trim() && t.getBoundingClientRect().width > 0).map(box)
    .filter((b) => (b.l + b.r) / 2 >= left && (b.l + b.r) / 2 <= right);
  const legend = gd.querySelector('.legend'), sub = gd.querySelector('.gtitle-subtitle');
  return {labels, legend: legend && box(legend), subtitle: sub && box(sub), lang: gd.layout.meta.lang};
}"""


def overlap(a, b, slack=1.0) -> bool:
    return a["l"] + slack < b["r"] and b["l"] + slack < a["r"] and a["t"] + slack < b["b"] and b["t"] + slack < a["b"]


def set_language(tab, lang):
    if lang == "zh":
        choose_language(tab, "zh")


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)], ids=["1280", "phone"])
def test_the_beams_tree_labels_do_not_overlap_and_its_legend_clears_the_subtitle(url, new_tab, size):
    """Before: at 1280 x 800 the labels of one row ran together ('populaticapitaproxim...'); on a phone, at the end
    of a search, the legend's four rows covered the subtitle."""
    tab = new_tab(url, size=size)
    tab.wait_for_function("() => document.querySelector('#tbt-marker')?.dataset.step === '0'", timeout=180_000)
    open_view(tab, WORDS["en"]["beams"])
    tab.get_by_role("button", name=WORDS["en"]["search"], exact=True).click()
    tab.wait_for_function("() => (document.querySelector('#tbt-beams-summary')?.innerText || '').includes('Step 1 of')",
                          timeout=300_000)
    tab.get_by_role("button", name=WORDS["en"]["end"], exact=True).click()
    for lang in ("en", "zh"):
        set_language(tab, lang)
        tab.wait_for_function(f"() => !!document.querySelector('.tbt-beam-texts[lang={lang}]')", timeout=300_000)
        plot_drawn(tab, "tbt-plot-beams")
        settle(tab)  # (a phone's re-layout: charts.js refit)
        tree = tab.evaluate(TREE)
        assert tree["lang"] == lang and len(tree["labels"]) >= 8, tree
        crossed = [(a, b) for i, a in enumerate(tree["labels"]) for b in tree["labels"][i + 1 :] if overlap(a, b)]
        assert not crossed, crossed[:3]
        assert tree["legend"] and tree["subtitle"] and not overlap(tree["legend"], tree["subtitle"], 0), tree
        tab.locator("#tbt-plot-beams").scroll_into_view_if_needed()
        artifact(tab, f"polish_beams_{lang}_{size[0]}")
    assert tab.problems == []


def test_the_tokenizers_chips_are_all_on_view_on_a_phone(url, new_tab):
    """Before: on a phone SmolLM2's chips sat in the stepping text's two-line scrolling box, their second row
    hidden under the Gemma heading."""
    for lang in ("en", "zh"):  # (a tab each: the view's HTML is made when its tab is opened, in the page's language)
        tab = new_tab(url, size=(390, 844))
        tab.wait_for_function("() => document.querySelector('#tbt-marker')?.dataset.step === '0'", timeout=180_000)
        set_language(tab, lang)
        open_view(tab, WORDS[lang]["tokenizers"])
        tab.wait_for_function(f"() => !!document.querySelector('.tbt-tokenizers[lang={lang}] .tbt-tok-model')",
                              timeout=180_000)
        blocks = tab.evaluate("""() => [...document.querySelectorAll('.tbt-tokenizers .tbt-tok-model')].map((m) => {
            const chips = m.querySelector('.tbt-chips'), b = m.getBoundingClientRect();
            const parts = [...chips.querySelectorAll('.tbt-chip, .tbt-cgroup-char')].map((c) => c.getBoundingClientRect());
            return {top: b.top, bottom: b.bottom, clipped: chips.scrollHeight > chips.clientHeight + 1,
                    lowest: Math.max(...parts.map((p) => p.bottom)), n: parts.length};
        })""")
        assert len(blocks) >= 2, blocks
        for above, below in zip(blocks, blocks[1:]):
            # every chip of a block within it, above the next block's heading, none scrolled out of sight
            assert not above["clipped"] and above["lowest"] <= below["top"] + 1, (lang, blocks)
        tab.locator("#tbt-tok-result").scroll_into_view_if_needed()
        artifact(tab, f"polish_tokenizers_{lang}_390")
        assert tab.problems == []


# The stepping chart as drawn: its caption, the draw's line (a shape named u) and the chosen fate's colour on a bar
CHART = """() => {
  const gd = document.getElementById('tbt-fig-candidates'), cap = document.getElementById('tbt-cap-candidates');
  const colors = JSON.stringify((gd.data || []).map((tr) => tr.visible === false ? null : tr.marker));
  return {caption: cap ? cap.innerText : '', u: (gd.layout.shapes || []).some((s) => s.name === 'u'),
          chosen: colors.includes(%r), text: document.querySelector('.tbt-decoded')?.innerText || ''};
}"""
CHOSEN = {"en": "the draw picks", "zh": "抽取结果是"}
ASKED = {"en": "which will the draw pick?", "zh": "抽取会选中哪一个？"}
SWITCH = {"en": "Predict first", "zh": "先猜后看"}


def chart_now(tab, step=None):
    if step is not None:
        wait_for_step(tab, step)
    settle(tab)  # (the chart is drawn in the same task as the step's text)
    return tab.evaluate(CHART % FATE_COLORS["chosen"])


def three_steps(tab, lang, hidden: bool) -> str:
    """Reset, then three Next tokens at the default seed; at each step the chart hides or shows its draw."""
    tab.locator("#tbt-reset").click()
    shown = chart_now(tab, 0)
    for step in (1, 2, 3):
        assert (ASKED[lang] in shown["caption"]) == hidden and (CHOSEN[lang] in shown["caption"]) != hidden, shown
        assert shown["u"] != hidden and shown["chosen"] != hidden, shown
        tab.locator("#tbt-next").click()
        shown = chart_now(tab, step)
    return shown["text"]


def test_predict_first_hides_the_draw_until_next_and_changes_no_token(url, new_tab):
    """Before: the caption said 'the draw picks ␣solve' before Next. With predict first on, the chart for the step
    about to be drawn shows no chosen token, no u; Next takes the step (the text shows the token drawn) and the next
    chart hides its draw again. The same seed gives the same text, switch on or off; the switch survives presenter
    mode toggled twice and a reload."""
    tab = new_tab(url, size=(1280, 800))
    chart_now(tab, 0)
    for lang in ("en", "zh"):
        set_language(tab, lang)
        plain = three_steps(tab, lang, hidden=False)
        tab.get_by_label(SWITCH[lang]).check()
        predicted = three_steps(tab, lang, hidden=True)
        assert predicted == plain and len(plain) > len("The capital of France is"), (plain, predicted)
        artifact(tab, f"polish_predict_{lang}_1280")
        presenter = tab.locator("#tbt-presenter input")
        presenter.check()
        settle(tab)
        shown = chart_now(tab, 3)
        assert ASKED[lang] in shown["caption"] and not shown["u"], shown
        artifact(tab, f"polish_predict_presenter_{lang}_1280")
        presenter.uncheck()
        reload(tab)  # (the page comes back in its browser's language, English, on a new session)
        tab.wait_for_function(f"() => (document.getElementById('tbt-cap-candidates')?.innerText || '')"
                              f".includes({ASKED['en']!r})", timeout=180_000)
        assert not chart_now(tab)["u"]
        tab.wait_for_function("() => document.querySelector('#tbt-predict input')?.checked === true", timeout=60_000)
        tab.locator("#tbt-predict input").uncheck()  # off again, and drawn again at once
        tab.wait_for_function("() => !document.documentElement.hasAttribute('data-tbt-predict')")
        settle(tab)
        shown = chart_now(tab)
        assert CHOSEN["en"] in shown["caption"] and shown["u"], shown
    assert tab.problems == []
