"""Predict first (issue 33, item 9): a candidate chart's hidden draw (viz.candidates.hidden_draw) says nothing of the
token the draw picks, and changes no number but the draw panel's stretches, which are the running total of the final
probabilities in draw order (the formula, computed here from the record)."""
from __future__ import annotations

import copy
import json

import pytest

from model.decoding.records import SamplingConfig
from test_viz import CUTS, make_dist
from viz import candidate_chart
from viz.style import FATE_COLORS

pytestmark = pytest.mark.unit


def hide(chart: dict) -> dict:
    """The chart as the page draws it with the switch on (assets/js/charts.js hideDraw, written again here)."""
    chart = copy.deepcopy(chart)
    hidden = chart["layout"]["meta"]["predict"]
    for i, keys in hidden["traces"].items():
        chart["data"][int(i)].update(keys)
    for key, value in hidden["layout"].items():
        old = chart["layout"].get(key)
        chart["layout"][key] = {**old, **value} if isinstance(value, dict) and isinstance(old, dict) else value
    del chart["layout"]["meta"]["predict"]
    return chart


@pytest.mark.parametrize("config, u", [(CUTS, 0.3), (SamplingConfig(), 0.995), (SamplingConfig(top_p=0.9), 0.5)],
                         ids=["cuts", "chosen-deep", "top-p"])
def test_the_hidden_draw_names_no_chosen_token_and_keeps_every_number(config, u):
    dist = make_dist(config, u=u, n_candidates=15)
    shown, hidden = candidate_chart(dist), hide(candidate_chart(dist))
    chosen = dist.chosen.display.replace("<", "&lt;").replace(">", "&gt;")
    text = json.dumps(hidden["layout"]["title"], ensure_ascii=False) + json.dumps([a["text"] for a in hidden["layout"]["annotations"]], ensure_ascii=False)
    assert chosen in json.dumps(shown["layout"]["title"], ensure_ascii=False) and chosen not in json.dumps(hidden["layout"]["title"], ensure_ascii=False)
    assert f"{dist.u:.3f}" in json.dumps(shown["layout"]["annotations"], ensure_ascii=False) and f"{dist.u:.3f}" not in text
    assert not any(s.get("name") == "u" for s in hidden["layout"]["shapes"])
    assert not any("<b>" in tick for tick in hidden["layout"]["yaxis"]["ticktext"])
    colors = json.dumps([tr.get("marker") for tr in hidden["data"]], ensure_ascii=False)
    assert FATE_COLORS["chosen"] in json.dumps([tr.get("marker") for tr in shown["data"]], ensure_ascii=False)
    assert FATE_COLORS["chosen"] not in colors
    assert not any("★" in s for tr in hidden["data"] for s in (tr.get("text") or []))
    # the bars' numbers are the chart's own; the rows past the top 12 (the chosen token's, if any) are out of view
    for a, b in zip(shown["data"], hidden["data"]):
        if (a.get("meta") or {}).get("role") in ("t1", "final"):
            assert a["x"] == b["x"] and a["y"] == b["y"]
    assert hidden["layout"]["yaxis"]["range"] == [min(12, len(dist.candidates)) - 0.5, -0.5]
    # the draw panel: the final probabilities' running total in draw order, the chosen token with no row of its own
    draw = next(tr for tr in hidden["data"] if (tr.get("meta") or {}).get("role") == "draw")
    order = sorted((c for c in dist.candidates if c.final_prob > 0), key=lambda c: (-c.final_prob, c.token.id))
    total, starts = 0.0, []
    for c in order[:12]:
        starts.append(total)
        total += c.final_prob
    assert draw["base"][: len(starts)] == pytest.approx(starts)
    assert draw["x"][: len(starts)] == pytest.approx([c.final_prob for c in order[:12]])
    assert len(draw["base"]) == len(hidden["layout"]["yaxis2"]["ticktext"]) <= 13  # (and 'all other tokens')
