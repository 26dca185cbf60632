"""The Switch off view's figure and texts, from a plain record (no model): bars before and after, the movers in
percentage points, the KL in the subtitle, the part-off text marked from the split, in both languages."""
import pytest

from model.decoding.records import TokenInfo
from model.experiments.ablation import Ablation, Moved, Part
from viz.ablation import ablation_chart, ablation_html, part_text

pytestmark = pytest.mark.unit


def tok(i, text):
    return TokenInfo(i, text, text)


def a_record(differ_at=2):
    shown = [Moved(tok(1, "Rome"), 0.6, 0.2), Moved(tok(2, "Milan"), 0.1, 0.5), Moved(tok(3, "<b>"), 0.05, 0.04)]
    return Ablation(part=Part("head", 3, 2), method="mean", positions=12, shown=shown, rose=[shown[1]],
                    fell=[shown[0]], kl_nats=0.4321, max_abs_logit_change=2.5,
                    on=[tok(1, "Rome"), tok(4, "."), tok(5, "␣It")], off=[tok(1, "Rome"), tok(6, ","), tok(7, "␣a")],
                    on_ended=False, off_ended=True, differ_at=differ_at, ms=1.0, passes=6)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_before_and_after_side_by_side(lang):
    fig = ablation_chart(a_record(), "smollm2", lang)
    before, after, moved = fig["data"]
    assert before["x"] == [0.05, 0.1, 0.6] and after["x"] == [0.04, 0.5, 0.2]  # most probable before at the top
    assert before["y"][0] == "&lt;b&gt; #3"  # a token's text is escaped for plotly
    assert moved["x"] == pytest.approx([-40.0, 40.0])  # fell at the bottom, rose at the top, percentage points
    assert "0.432" in fig["layout"]["title"]["subtitle"]["text"]
    assert part_text(Part("head", 3, 2), lang) in fig["layout"]["title"]["text"]


def test_the_two_texts_marked_from_the_split():
    page = ablation_html(a_record(), "en")
    assert page.count('class="tbt-abl-side"') == 2 and page.count("tbt-abl-off") >= 1
    assert 'data-split="2"' in page and "split at step 2" in page
    assert page.count("outline:3px") == 2  # the first token that differs, framed on both sides
    assert "■" in page  # the part-off side ended its text
    same = ablation_html(a_record(differ_at=None), "zh")
    assert 'data-split="0"' in same and "outline" not in same
