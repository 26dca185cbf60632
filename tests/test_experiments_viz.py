"""The Patching and Heads charts (viz/patching.py, viz/heads.py) from records made here: the colour is the record's
effect and scores, every cell carries the [layer, head] a click opens, the named heads are outlined, a phone gets
the panels stacked, and every word is there in both languages. The page's parse of a clicked head refuses junk."""
import numpy as np
import pytest

from model.decoding.records import TokenInfo
from model.experiments.heads import HeadScores
from model.experiments.patching import PatchingGrid
from ui.strings import Refusal
from ui.views.heads import named_heads, picked_head
from viz.heads import heads_chart
from viz.patching import patching_chart

pytestmark = pytest.mark.unit
tok = lambda i, s: TokenInfo(i, s, s)  # noqa: E731


def grid() -> PatchingGrid:
    patched = np.array([[0.02, 0.5, 0.02], [0.02, 0.02, 0.4]], np.float32)  # (layers 2, positions 3)
    return PatchingGrid(clean=[tok(1, "The"), tok(2, "␣cat"), tok(3, "␣sat")],
                        corrupted=[tok(1, "The"), tok(4, "␣dog"), tok(3, "␣sat")], answer=tok(9, "␣down"),
                        clean_prob=0.52, corrupted_prob=0.02, clean_top=tok(9, "␣down"), corrupted_top=tok(8, "␣up"),
                        corrupted_top_prob=0.3, patched_prob=patched, ms=1.0, passes=3)


def scores() -> HeadScores:
    rng = np.random.default_rng(0)
    kinds = [rng.uniform(0, 0.2, (4, 3)).astype(np.float32) for _ in range(4)]
    kinds[1][2, 1] = 0.9  # one clear induction head: layer 2, head 1
    return HeadScores(tokens=[tok(i, str(i)) for i in range(9)], prefix=1, length=4, previous=kinds[0],
                      induction=kinds[1], sink=kinds[2], control_induction=kinds[3], ms=1.0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_patching_chart_colours_the_effect(lang):
    chart = patching_chart(grid(), "m", lang)
    heat = chart["data"][0]
    expected = (grid().patched_prob - 0.02) / 0.5
    assert np.allclose(np.asarray(heat["z"]), expected) and heat["z"][0][1] == pytest.approx(0.96)
    assert "␣cat→␣dog" in chart["layout"]["xaxis"]["ticktext"][1]  # the position where the prompts differ
    assert ("修补" in chart["layout"]["title"]["text"]) == (lang == "zh")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_heads_chart_carries_each_cells_head_and_outlines_the_named(lang):
    s = scores()
    chart = heads_chart(s, "m", lang)
    heats = [tr for tr in chart["data"] if tr["type"] == "heatmap"]
    assert [tr["name"] for tr in heats] == ["previous", "induction", "sink"]
    for tr in heats:
        assert all(tr["customdata"][layer][head][:2] == [layer, head] for layer in range(4) for head in range(3))
    assert np.allclose(np.asarray(heats[1]["z"]), s.induction)
    named = next(tr for tr in chart["data"] if tr["name"] == "induction named")
    assert (named["y"][0], named["x"][0]) == (2, 1)
    narrow = chart["layout"]["meta"]["narrow"]  # a phone: the three panels stacked, each the full width
    assert all(narrow[f"xaxis{k}"]["domain"] == [0, 1] for k in ("", "2", "3"))
    assert "L2 H1 (0.90" in named_heads(s, "en").replace("（", " (")


def test_a_clicked_head_is_two_whole_numbers_or_refused():
    assert picked_head("12,3") == (12, 3)
    for junk in ("", "3", "1,2,3", "a,b", "-1,2", None, "1.5,2"):
        with pytest.raises(Refusal):
            picked_head(junk)
