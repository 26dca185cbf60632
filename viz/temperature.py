"""Temperature as small multiples: the same step's candidates at several temperatures, plus entropy and nucleus size."""
from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from model.records import Distribution, TemperatureSweep
from viz.i18n import t
from model.records import FATES
from viz.style import (FATE_COLORS, FATE_MARKS, INK, SMALL_SIZE, add_fate_legend, base_layout, fate_label,
                       format_prob, format_temperature, prob_ticks, token_label)

CURRENT_TINT = "#FBE7D9"  # a light vermillion behind the current temperature's panel

SHOWN = 8  # candidates per small panel: enough to see the flattening, few enough to read


def _panel_title(temperature: float, current: bool, lang: str) -> str:
    name = (t("temp_panel_greedy", lang) if temperature == 0
            else t("temp_panel", lang, t=format_temperature(temperature)))
    return f"<b>{t('temp_current', lang, panel=name)}</b>" if current else name


def temperature_figure(dists: list[Distribution], sweep: TemperatureSweep, current_temperature: float,
                       lang: str = "en") -> go.Figure:
    """One step's candidates re-drawn at several temperatures, and how spread out the choice is against T.

    Top row: one small horizontal bar chart per distribution in `dists` (its config.temperature in the
    panel title), the same tokens in the same order and the same probability range in every panel, bars
    coloured by fate; the panel at `current_temperature` is framed. Bottom row: entropy of the final
    distribution (bits) and the number of tokens kept against T, from `sweep`, with the current T marked.
    """
    n = max(len(dists), 2)
    half = n // 2
    fig = make_subplots(
        rows=2, cols=n, row_heights=[0.58, 0.42], vertical_spacing=0.2, horizontal_spacing=0.05,
        shared_yaxes=False,
        specs=[[{} for _ in range(n)],
               [{"colspan": half}] + [None] * (half - 1) + [{"colspan": n - half}] + [None] * (n - half - 1)],
        subplot_titles=[_panel_title(d.config.temperature, math.isclose(d.config.temperature, current_temperature),
                                     lang) for d in dists] + [""] * (n - len(dists))
        + [t("temp_entropy_panel", lang), t("temp_nucleus_panel", lang)],
    )
    reference = sorted(dists[0].candidates, key=lambda c: c.rank)[:SHOWN] if dists else []
    ids = [c.token.id for c in reference]
    top = max((c.final_prob for d in dists for c in d.candidates if c.token.id in ids), default=1.0)
    for col, dist in enumerate(dists, start=1):
        by_id = {c.token.id: c for c in dist.candidates}
        cands = [by_id[i] for i in ids if i in by_id]
        fig.add_trace(go.Bar(
            x=[c.final_prob for c in cands], y=[ids.index(c.token.id) for c in cands], orientation="h",
            marker={"color": [FATE_COLORS[c.fate] for c in cands]}, showlegend=False,
            text=[FATE_MARKS[c.fate] for c in cands], textposition="outside", textfont={"size": SMALL_SIZE},
            hovertext=[f"<b>{token_label(c.token.display)}</b><br>{format_prob(c.final_prob)}<br>"
                       f"{fate_label(c.fate, lang)}" for c in cands],
            hovertemplate="%{hovertext}<extra></extra>", meta={"temperature": dist.config.temperature},
        ), row=1, col=col)
        fig.update_xaxes(range=[0, top * 1.2], tickvals=prob_ticks(top, most=2), tickformat=".0%", row=1, col=col)
        fig.update_yaxes(autorange="reversed", tickvals=list(range(len(ids))), showticklabels=col == 1,
                         ticktext=[token_label(c.token.display) for c in reference], row=1, col=col)
        if math.isclose(dist.config.temperature, current_temperature):
            axis = "" if col == 1 else str(col)
            fig.add_shape(type="rect", xref=f"x{axis} domain", yref=f"y{axis} domain", x0=0, x1=1, y0=0, y1=1,
                          fillcolor=CURRENT_TINT, line={"color": FATE_COLORS["chosen"], "width": 2},
                          layer="below", name="current")
    if dists:
        fig.update_xaxes(title_text=t("temp_axis_prob", lang), row=1, col=1)

    for col, (values, key, log) in ((1, (sweep.entropy_bits, "temp_entropy", False)),
                                    (half + 1, (sweep.nucleus_size, "temp_nucleus", True))):
        fig.add_trace(go.Scatter(
            x=sweep.temperatures, y=values, mode="lines+markers", line={"color": INK, "width": 2},
            marker={"size": 8}, showlegend=False, name=t(key, lang),
            hovertemplate="T = %{x:g}: %{y:,.3~f}<extra></extra>",
        ), row=2, col=col)
        ticks = [m * 10**e for e in range(6) for m in (1, 2, 5)] if log else None  # 1, 2, 5, 10, 20, ...
        fig.update_yaxes(title_text=t(key, lang), type="log" if log else "linear", tickvals=ticks, row=2, col=col)
        fig.update_xaxes(title_text=t("temp_axis_t", lang), row=2, col=col)
        fig.add_vline(x=current_temperature, row=2, col=col, name="current_t",
                      line={"color": FATE_COLORS["chosen"], "width": 2, "dash": "dash"},
                      annotation={"text": t("temp_current_line", lang, t=format_temperature(current_temperature)),
                                  "font": {"size": SMALL_SIZE, "color": FATE_COLORS["chosen"]}},
                      annotation_position="top right")
    present = {c.fate for d in dists for c in d.candidates if c.token.id in ids}
    add_fate_legend(fig, [f for f in FATES if f in present], lang)
    base_layout(fig, t("temp_title", lang), lang, subtitle=t("temp_subtitle", lang, p=f"{sweep.top_p:g}"), height=680)
    fig.update_layout(legend={"orientation": "h", "y": -0.1, "yanchor": "top", "x": 0}, margin={"b": 90})
    return fig
