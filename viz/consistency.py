"""Self-consistency: the vote of N sampled answers against the greedy answer, each sample's log P, and how the vote
moves as N grows (and with temperature)."""
from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from viz.i18n import t
from viz.plot_head import head_px
from viz.style import (FATE_COLORS, wrap_text, INK, MUTED, SMALL_SIZE, as_figure, base_layout, chart, domains, format_prob,
                       narrow_layout, panel_title, stacked)

if TYPE_CHECKING:  # the records only; viz never imports torch
    from model.strategies.consistency import ConsistencyRun

VOTE_COLOR = FATE_COLORS["kept"]
GREEDY_COLOR = FATE_COLORS["chosen"]
MAX_ANSWERS = 10  # rows drawn; the rest fold into 'other answers'
LABEL_CHARS = 18
ROW_PX = 26  # an answer's row in the top panels


def _label(answer: str, columns: int = 2 * LABEL_CHARS) -> str:
    """An answer cut to LABEL_CHARS characters, and to `columns` columns (a CJK character takes two), "…" ending it."""
    text = answer if answer else "∅"
    text = text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"
    width = [2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text]
    if sum(width) > columns:
        keep = next(i for i in range(len(text)) if sum(width[: i + 1]) > columns - 1)
        text = text[:keep] + "…"
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _snippet(text: str, chars: int = 60) -> str:
    """A sample's text for a hover: one line, at most `chars` characters, no HTML."""
    text = text.replace("\n", " ↵ ")
    text = text if len(text) <= chars else text[: chars - 1] + "…"
    return text.replace("<", "&lt;").replace(">", "&gt;")


def answer_rows(run: ConsistencyRun) -> list[str]:
    """The answers drawn, most votes first, with the greedy answer among them even if no sample gave it."""
    rows = [a for a, _ in run.votes()][:MAX_ANSWERS]
    if run.greedy.answer not in rows:
        rows.append(run.greedy.answer)
    return rows


def consistency_chart(run: ConsistencyRun, lang: str = "en") -> dict:
    """Left: votes per answer (the greedy answer marked ★). Right: every sample's log P beside its answer.
    Bottom: the share of the first k samples that gave the majority answer and the greedy answer, k = 1..N."""
    rows = answer_rows(run)
    counts = dict(run.votes())
    ticks = [("★ " if a == run.greedy.answer else "") + _label(a) for a in rows]
    left, right = domains([0.5, 0.5], gap=0.12)
    bars = {
        "type": "bar", "orientation": "h", "x": [counts.get(a, 0) for a in rows], "y": list(range(len(rows))),
        "xaxis": "x", "yaxis": "y", "showlegend": False, "text": [str(counts.get(a, 0)) for a in rows],
        "textposition": "outside", "cliponaxis": False,
        "marker": {"color": [GREEDY_COLOR if a == run.greedy.answer else VOTE_COLOR for a in rows]},
        "hovertemplate": "%{x}<extra></extra>", "meta": {"role": "votes"},
    }
    index = {a: i for i, a in enumerate(rows)}
    drawn = [(k, s) for k, s in enumerate(run.samples, start=1) if s.answer in index]
    dots = {
        "type": "scatter", "mode": "markers", "x": [s.logprob for _, s in drawn], "y": [index[s.answer] for _, s in drawn],
        "xaxis": "x2", "yaxis": "y2", "name": t("sc_legend_sample", lang),
        "marker": {"size": 11, "color": VOTE_COLOR, "line": {"color": "white", "width": 1}},
        "hovertext": [t("sc_hover_sample", lang, k=k, seed=s.seed, logprob=f"{s.logprob:.2f}", text=_snippet(s.text))
                      for k, s in drawn],
        "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"role": "samples"},
    }
    greedy = {
        "type": "scatter", "mode": "markers", "x": [run.greedy.logprob], "y": [index[run.greedy.answer]],
        "xaxis": "x2", "yaxis": "y2", "name": t("sc_legend_greedy", lang),
        "marker": {"size": 15, "symbol": "star", "color": GREEDY_COLOR, "line": {"color": INK, "width": 1}},
        "hovertemplate": f"{t('sc_legend_greedy', lang)}: %{{x:.2f}}<extra></extra>",
    }
    n = len(run.samples)
    ks = list(range(1, n + 1))
    lines = [
        {"type": "scatter", "mode": "lines+markers", "x": ks, "y": run.running(run.majority), "xaxis": "x3",
         "yaxis": "y3", "name": t("sc_legend_majority", lang, answer=_label(run.majority)),
         "line": {"color": VOTE_COLOR, "width": 3}},
        {"type": "scatter", "mode": "lines+markers", "x": ks, "y": run.running(run.greedy.answer), "xaxis": "x3",
         "yaxis": "y3", "name": t("sc_legend_greedy_share", lang, answer=_label(run.greedy.answer)),
         "line": {"color": GREEDY_COLOR, "width": 2, "dash": "dot"}, "marker": {"symbol": "star"}},
    ]
    top_votes = run.votes()[0][1]
    # the greedy answer in the subtitle: with two long Chinese answers the title ran off a 1280 projector's chart
    title = t("sc_title", lang, n=n, majority=_label(run.majority), votes=top_votes)
    subtitle = wrap_text(t("sc_subtitle", lang, greedy=_label(run.greedy.answer), temperature=f"{run.config.temperature:g}",
                           agree=format_prob(counts.get(run.greedy.answer, 0) / n)), 110)
    y = {"tickvals": list(range(len(rows))), "ticktext": ticks, "autorange": "reversed"}
    # each answer's row at least ROW_PX tall (its label on one line, clear of the next), the top panels 44% of the
    # plot; the legend at the very bottom, under the bottom panel's axis title
    top, bottom = head_px(title, subtitle) + 34, 160
    height = max(720, top + bottom + round(ROW_PX * len(rows) / 0.44))
    layout = base_layout(
        title, lang, subtitle=subtitle, height=height,
        xaxis={"domain": left, "anchor": "y", "title": {"text": t("sc_axis_votes", lang)}, "range": [0, top_votes * 1.25 + 0.5],
               "dtick": max(1, round(top_votes / 5))},
        yaxis={"domain": (0.56, 1.0), "anchor": "x", **y},
        xaxis2={"domain": right, "anchor": "y2", "title": {"text": t("sc_axis_logprob", lang)}},
        yaxis2={"domain": (0.56, 1.0), "anchor": "x2", **y, "showticklabels": False},
        xaxis3={"domain": (0.0, 1.0), "anchor": "y3", "title": {"text": t("sc_axis_n", lang)}, "dtick": 1},
        yaxis3={"domain": (0.0, 0.24), "anchor": "x3", "range": [0, 1.05], "tickformat": ".0%",
                "title": {"text": t("sc_axis_share", lang)}},
        annotations=[panel_title(t("sc_panel_votes", lang), left, 1.0), panel_title(t("sc_panel_logprob", lang), right, 1.0),
                     panel_title(t("sc_panel_running", lang), (0.0, 1.0), 0.31)],
        legend={"orientation": "h", "y": 0, "yref": "container", "x": 0, "yanchor": "bottom",
                "font": {"size": SMALL_SIZE, "color": MUTED}},
        margin={"t": top, "b": bottom},
    )
    # On a phone (assets/js/charts.js): the three panels one under another, each the chart's width, the answers
    # cut to 12 columns (18 Chinese characters left the votes' bars a third of the screen and cut the bottom
    # panel's title), each panel's title over it on two lines; in px, top to bottom
    # (the second gap: log P's axis title takes three lines there)
    rows_px, gaps_px, running_px = ROW_PX * len(rows) + 20, [150, 190], 200
    votes, logprob, running = stacked([rows_px, rows_px, running_px], gaps_px)
    short = [("★ " if a == run.greedy.answer else "") + _label(a, 12) for a in rows]
    panel_titles = [{**panel_title(wrap_text(t(key, lang), 30), (0.0, 1.0), box[1]), "yshift": 6}
                    for key, box in (("sc_panel_votes", votes), ("sc_panel_logprob", logprob), ("sc_panel_running", running))]
    narrow_layout(
        layout, height=top + bottom + 2 * rows_px + running_px + sum(gaps_px),
        xaxis={"domain": [0.0, 1.0]}, yaxis={"domain": list(votes), "ticktext": short},
        xaxis2={"domain": [0.0, 1.0]}, yaxis2={"domain": list(logprob), "ticktext": short, "showticklabels": True},
        yaxis3={"domain": list(running)}, annotations=panel_titles)
    return chart([bars, dots, greedy, *lines], layout)


consistency_figure = as_figure(consistency_chart)
