"""The lens heatmap and the race's texts and chart, from plain records (no model): what each cell, mark and line
says, in both languages."""
import numpy as np
import pytest

from model.inside.lens import LogitLens
from model.strategies.race import Race, RaceSide, RaceStep
from model.decoding.records import SamplingConfig, TokenInfo
from viz.lens import TEXT_COLUMNS, lens_chart, pinned_chart
from viz.race import race_chart, race_html, settings_text

pytestmark = pytest.mark.unit


def tok(i, text):
    return TokenInfo(i, text, text)


def a_lens(n=4, layers=3):
    rng = np.random.default_rng(0)
    probs = rng.random((layers + 1, n)).astype(np.float32)
    tops = [[tok(10 + r * n + c, f"t{r}{c}<b>") for c in range(n)] for r in range(layers + 1)]
    return LogitLens(tokens=[tok(c, f"in{c}") for c in range(n)], start=7,
                     targets=[tok(100 + c, f"nx{c}") for c in range(n)], target_is_next=[True] * (n - 1) + [False],
                     top_ids=np.array([[t.id for t in row] for row in tops]), top_tokens=tops, top_prob=probs,
                     target_prob=probs / 2, target_rank=np.ones((layers + 1, n), dtype=np.int64),
                     final_max_abs_diff=0.0, ms=1.0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lens_heatmap_cells(lang):
    lens = a_lens()
    fig = lens_chart(lens, "smollm2", lang)
    heat = fig["data"][0]
    assert np.allclose(np.asarray(heat["z"]), lens.target_prob) and heat["zmin"] == 0 and heat["zmax"] == 1
    assert heat["text"][2][1] == "t21&lt;…"  # the top token cut to five characters, then escaped for plotly
    assert "position 8" in heat["customdata"][0][1] or "位置 8" in heat["customdata"][0][1]
    layout = fig["layout"]
    assert layout["yaxis"]["ticktext"][0] == ("emb" if lang == "en" else "嵌入") and layout["yaxis"]["ticktext"][-1] == "3"
    assert layout["xaxis2"]["ticktext"] == ["nx0", "nx1", "nx2", "nx3*"]  # the last: the model's own top token
    assert layout["shapes"][0]["name"] == "output" and layout["shapes"][0]["y0"] == 2.5  # the top row framed


def test_lens_heatmap_drops_cell_text_past_its_width():
    fig = lens_chart(a_lens(n=TEXT_COLUMNS + 1), "m")
    assert "text" not in fig["data"][0] and fig["data"][0]["customdata"].shape == (4, TEXT_COLUMNS + 1)


def a_race(split=3):
    def side(cfg, ids, ended=False):
        return RaceSide(cfg, [RaceStep(tok(i, f"w{i}"), -0.5 * k, -0.25 * k, 1.0 + k, 0.5 + k, 0.1 * k)
                              for k, i in enumerate(ids, start=1)], ended)
    a = side(SamplingConfig(seed=5), [1, 2, 3, 4])
    b = side(SamplingConfig(temperature=0.7, top_p=0.9, order="temperature_last", seed=5), [1, 2, 9], ended=True)
    return Race(6, a, b, split, 4, 12.0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_race_texts_mark_the_split(lang):
    page = race_html(a_race(), lang)
    assert 'data-split="3"' in page and page.count('outline:3px') == 2  # the first differing token of each side
    assert ("step 3" in page) if lang == "en" else ("第 3 步" in page)
    assert "■" in page  # side B ended
    assert "log P -5.00" in page or "log P -5.00" in page.replace("时 ", "")  # A: -0.5 - 1 - 1.5 - 2
    same = race_html(a_race(split=None), lang)
    assert 'data-split="0"' in same and "outline" not in same


def test_settings_in_one_line():
    assert settings_text(SamplingConfig(temperature=0.7, top_p=0.9, order="temperature_last", seed=5)) == \
        "T 0.7 · top-p 0.9 · temperature last · seed 5"
    assert settings_text(SamplingConfig(top_k=40, min_p=0.05, repetition_penalty=1.2), "zh") == \
        "T 1 · top-k 40 · min-p 0.05 · 惩罚 1.2 · Hugging Face 顺序 · 种子 0"


def test_race_chart_lines_and_split():
    fig = race_chart(a_race())
    logp, entropy = fig["data"][0], fig["data"][1]
    assert logp["y"] == [-0.5, -1.5, -3.0, -5.0]  # the running log P at T = 1
    assert entropy["y"] == [1.5, 2.5, 3.5, 4.5] and entropy["yaxis"] == "y2"
    assert [s["x0"] for s in fig["layout"]["shapes"]] == [2.5, 2.5]


def test_commitment_strip_and_commitment_rows():
    from model.inside.lens import commitment
    from viz.lens import commitment_chart

    top_ids = np.array([[1, 5, 3, 2], [7, 5, 3, 2], [7, 5, 3, 8], [7, 6, 3, 8]])  # (layers + 1, W)
    targets = np.array([7, 5, 3, 8])
    assert commitment(top_ids, targets).tolist() == [1, -1, 0, 2]  # 5 is not the last row's top: never
    lens = a_lens(n=4, layers=3)
    lens.committed, lens.drawn_at_commit = commitment(top_ids, targets), [True, None, False, None]
    lens.target_is_next = [True, True, True, False]
    for lang in ("en", "zh"):
        fig = commitment_chart(lens, "smollm2", lang)
        bars = {tr["marker"]["color"]: tr for tr in fig["data"] if tr["type"] == "bar"}
        assert bars["#009E73"]["x"] == [0] and bars["#009E73"]["y"][0] == 1  # green: the step's u draws it
        assert bars["#E69F00"]["x"] == [2] and bars["#E69F00"]["y"][0] == 0  # orange: it would draw another
        never = next(tr for tr in fig["data"] if tr["type"] == "scatter")
        assert never["x"] == [1]  # the sampled token no layer ranked first; the last column has no next token yet


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pinned_chart_lines(lang):
    lens = a_lens(n=4, layers=3)
    probs = np.array([[0.0, 0.1], [0.2, 0.3], [0.4, 0.05], [0.9, 0.01]])
    fig = pinned_chart(lens, 3, [tok(5, "␣Paris"), tok(6, "<b>")], probs, "smollm2", lang)
    lines = fig["data"]
    assert [tr["name"] for tr in lines[:2]] == ["␣Paris", "&lt;b&gt;"]  # escaped for plotly
    assert lines[0]["y"] == [0.0, 0.2, 0.4, 0.9] and lines[1]["y"] == [0.1, 0.3, 0.05, 0.01]
    assert all(tr["x"] == [0, 1, 2, 3] for tr in lines)  # the heat map's rows: emb, 1 .. layers
    compared = lines[2]
    assert compared["line"]["dash"] == "dash" and "nx3*" in compared["name"]  # the last column: the model's top
    assert np.allclose(compared["y"], lens.target_prob[:, 3])
    assert fig["layout"]["xaxis"]["ticktext"][0] == ("emb" if lang == "en" else "嵌入")
    assert ("position 10" if lang == "en" else "位置 10") in fig["layout"]["title"]["text"]  # start 7 + column 3
    assert "90.0%" in lines[0]["customdata"][3]
    inner = pinned_chart(lens, 1, [], np.zeros((4, 0)), "m", lang)
    assert len(inner["data"]) == 1 and "nx1" in inner["data"][0]["name"] and "*" not in inner["data"][0]["name"]
