"""The class as the sampler and beat the model, on the wall: the class's draws against p, and the game's bits.

Plain records in (model/classroom/class_play.py makes them from model/classroom/class_draws.py and
model/classroom/guess_game.py), figures out.
"""
from __future__ import annotations

from viz.i18n import t
from viz.style import (FATE_COLORS, INK, SMALL_SIZE, as_figure, axis_ids, base_layout, chart, domains, format_prob,
                       format_temperature, panel_title, token_label)

CLASS = FATE_COLORS["kept"]  # blue: what the class did
MODEL = FATE_COLORS["chosen"]  # vermillion: what the model says
MAX_PANELS = 3  # rounds side by side (the teacher's T, 0.3, 1.5)


def draws_chart(rounds: list[dict], lang: str = "en") -> dict:
    """The last MAX_PANELS rounds side by side, newest right. Each round: {"labels": token displays, the last the
    other tokens' bin; "probs": p of each bin; "counts": the class's draws; "expected": n * p; "n"; "temperature"}.
    Per bin (a row, the most probable on top): the class's count (solid) beside the count p expects (outlined)."""
    rounds = rounds[-MAX_PANELS:]
    spans = domains([1.0] * max(len(rounds), 1), 0.1)
    data, layout_axes, notes = [], {}, []
    top = max([max(r["counts"] + [0]) for r in rounds] + [max(r["expected"] + [0]) for r in rounds] + [1])
    for k, (r, span) in enumerate(zip(rounds, spans)):
        xa, ya = axis_ids(k + 1)
        y = [f"{token_label(label)}  {format_prob(p)}" for label, p in zip(r["labels"], r["probs"])]
        first = k == 0
        data.append({"type": "bar", "orientation": "h", "y": y, "x": r["counts"], "name": t("cs_legend_class", lang),
                     "xaxis": xa, "yaxis": ya, "marker": {"color": CLASS}, "legendgroup": "class",
                     "showlegend": first, "text": [str(c) for c in r["counts"]], "textposition": "outside",
                     "textfont": {"size": SMALL_SIZE}, "cliponaxis": False, "hovertemplate": t("cs_hover_class", lang) + "<extra></extra>"})
        data.append({"type": "bar", "orientation": "h", "y": y, "x": r["expected"],
                     "name": t("cs_legend_expected", lang), "xaxis": xa, "yaxis": ya,
                     "marker": {"color": "white", "line": {"color": INK, "width": 2}}, "legendgroup": "expected",
                     "showlegend": first, "hovertemplate": t("cs_hover_expected", lang) + "<extra></extra>"})
        suffix = "" if k == 0 else str(k + 1)
        layout_axes[f"xaxis{suffix}"] = {"domain": list(span), "anchor": f"y{suffix}", "range": [0, top * 1.25 + 1],
                                         "rangemode": "tozero", "title": {"text": t("cs_axis_draws", lang)}}
        layout_axes[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "type": "category", "autorange": "reversed",
                                         "tickfont": {"size": SMALL_SIZE}, "automargin": True}
        notes.append(panel_title(t("cs_panel", lang, temperature=format_temperature(r["temperature"]), n=r["n"]),
                                 span, 1.0))
    if not rounds:
        notes.append({"text": t("cs_none", lang), "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5,
                      "y": 0.5, "font": {"size": SMALL_SIZE + 2}})
    layout = base_layout(t("cs_title", lang), lang, t("cs_sub", lang), height=460, barmode="group", bargap=0.2,
                         annotations=notes, legend={"orientation": "h", "y": -0.3, "x": 0}, **layout_axes)
    layout["margin"] = {**layout["margin"], "l": 130, "b": 130}
    return chart(data, layout)


draws_figure = as_figure(draws_chart)


def game_chart(score: dict, lang: str = "en") -> dict:
    """Beat the model: per revealed token, the model's bits (-log2 p) beside the class's; lower is better.
    score: {"tokens": displays, "model_bits", "class_bits", "right", "answered", "model_total", "class_total"}."""
    x = [f"{i + 1}. {token_label(tok)}" for i, tok in enumerate(score["tokens"])]
    hover_class = [t("game_hover_class", lang, right=r, answered=n) for r, n in zip(score["right"], score["answered"])]
    data = [
        {"type": "bar", "x": x, "y": score["class_bits"], "name": t("game_legend_class", lang),
         "marker": {"color": CLASS}, "customdata": hover_class,
         "hovertemplate": "%{x}: %{y:.2f} bits<br>%{customdata}<extra></extra>"},
        {"type": "bar", "x": x, "y": score["model_bits"], "name": t("game_legend_model", lang),
         "marker": {"color": MODEL, "pattern": {"shape": "/"}},
         "hovertemplate": "%{x}: %{y:.2f} bits<extra></extra>"},
    ]
    sub = t("game_sub", lang, klass=f"{score['class_total']:.1f}", model=f"{score['model_total']:.1f}",
            n=len(score["tokens"]))
    layout = base_layout(t("game_title", lang), lang, sub, height=400, barmode="group", bargap=0.25,
                         xaxis={"type": "category", "tickfont": {"size": SMALL_SIZE}},
                         yaxis={"title": {"text": t("game_axis_bits", lang)}, "rangemode": "tozero"},
                         legend={"orientation": "h", "y": -0.25, "x": 0})
    layout["margin"] = {**layout["margin"], "b": 110}
    return chart(data, layout)


game_figure = as_figure(game_chart)
