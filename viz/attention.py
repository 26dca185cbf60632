"""Causal attention as a heatmap (the future masked, the newest row framed) and the grouped-query head map."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from model.decoding.records import ModelInfo
from viz.i18n import t
from viz.style import (narrow_traces, ATTENTION_SCALE, as_figure, chart, figure, FATE_COLORS, INK, MASK_FUTURE, MASK_WINDOW, MUTED,
                       SMALL_SIZE, base_layout, legend_key, narrow_layout, token_label, wrap_text)

MAX_TICKS = 28  # more token labels than this on an axis overlap at 14 px: label every other one


def attention_masks(n: int, sliding_window: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Boolean (n, n) masks for a block of consecutive positions: (future j > i, outside window i - j >= window)."""
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    future = j > i
    outside = (i - j >= sliding_window) if sliding_window else np.zeros((n, n), dtype=bool)
    return future, outside


def _staircase(n: int, offset: int) -> str:
    """SVG path along the right edge of cells j = i - offset: the causal edge (0) or the window edge (window)."""
    points = []
    for r in range(max(offset, 0), n):
        x = r - offset + 0.5
        points += [(x, r - 0.5), (x, r + 0.5)]
    return "M " + " L ".join(f"{x},{y}" for x, y in points) if points else ""


def _title(layer: int, head: int | None, info: ModelInfo, lang: str) -> str:
    if head is None:
        return t("attn_title_mean", lang, layer=layer, heads=info.heads)
    if info.group_size == 1:
        return t("attn_title_mha", lang, layer=layer, head=head)
    return t("attn_title_head", lang, layer=layer, head=head, kv_head=info.kv_head_of(head), group=info.group_size)


def attention_chart(matrix: np.ndarray, labels: list[str], layer: int, head: int | None, info: ModelInfo,
                    first_position: int = 0, sliding_window: int | None = None, lang: str = "en") -> dict:
    """Heatmap of one layer's attention: row = query position (top to bottom), column = key position.

    `matrix` is the (T, T) block of positions first_position .. first_position + T - 1 of the full
    attention (for example the last 48 tokens), `labels` their TokenInfo.display strings; `head` None means
    the mean over heads. Cells with j > i (the future) are NaN in the weights and drawn as a grey mask;
    with `sliding_window`, cells with i - j >= window are masked in a darker grey and the window edge drawn.
    The last row (the newest token) is framed.
    """
    weights = np.array(matrix, dtype=float)
    n = weights.shape[0]
    if weights.shape != (n, n) or len(labels) != n:
        raise ValueError(f"attention_figure needs a square (T, T) matrix and T labels, got {weights.shape} "
                         f"and {len(labels)} labels: pass attention_matrix(...)[a:b, a:b] and the labels of a..b-1")
    future, outside = attention_masks(n, sliding_window)
    weights[future | outside] = np.nan
    mask = np.full((n, n), np.nan)
    mask[future], mask[outside] = 0.0, 1.0

    names = [token_label(s) for s in labels]
    positions = range(first_position, first_position + n)
    # T x T cells: look the template up once (t() without values returns it unfilled) and fill it from plain
    # floats, which format faster than numpy scalars; as an object array plotly takes it without a walk per cell.
    template = t("attn_hover", lang)
    shown = [["" if math.isnan(w) else f"{w:.3f}" for w in row] for row in weights.tolist()]
    hover = np.array([[template.format(qpos=qp, qtok=names[r], kpos=kp, ktok=names[c], w=shown[r][c])
                       for c, kp in enumerate(positions)] for r, qp in enumerate(positions)], dtype=object)
    mask_hover = np.where(future, t("attn_future", lang),
                          t("attn_window", lang, window=sliding_window) if sliding_window else "")
    finite = weights[np.isfinite(weights)]
    top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0

    traces = [
        {"type": "heatmap", "z": mask, "zmin": 0, "zmax": 1, "showscale": False, "hoverongaps": False, "name": "mask",
         "colorscale": [[0, MASK_FUTURE], [0.5, MASK_FUTURE], [0.5, MASK_WINDOW], [1, MASK_WINDOW]],
         "text": mask_hover, "hovertemplate": "%{text}<extra></extra>"},
        {"type": "heatmap", "z": weights, "zmin": 0, "zmax": top, "colorscale": ATTENTION_SCALE, "hoverongaps": False,
         "name": "weights", "colorbar": {"title": {"text": t("attn_weight", lang)}, "thickness": 16,
                      "ticklabelposition": "outside bottom"},  # the top label under its tick, clear of the title
         "text": hover, "hovertemplate": "%{text}<extra></extra>"},
        legend_key(t("attn_future", lang), MASK_FUTURE),
    ]
    shapes = [{"type": "path", "path": _staircase(n, 0), "line": {"color": MUTED, "width": 1.5}, "name": "causal_edge"}]
    if sliding_window and sliding_window < n:
        shapes.append({"type": "path", "path": _staircase(n, sliding_window), "name": "window_edge",
                       "line": {"color": INK, "width": 2, "dash": "dash"}})
        traces.append(legend_key(t("attn_window", lang, window=sliding_window), MASK_WINDOW))
    shapes.append({"type": "rect", "x0": -0.5, "x1": n - 0.5, "y0": n - 1.5, "y1": n - 0.5, "name": "newest",
                   "line": {"color": FATE_COLORS["chosen"], "width": 3}})
    traces.append(legend_key(t("attn_newest", lang), FATE_COLORS["chosen"], "square-open"))
    annotations = []
    if n > 2:
        annotations.append({"x": n * 0.72, "y": n * 0.25, "text": t("attn_future_short", lang), "showarrow": False,
                            "font": {"size": SMALL_SIZE + 4, "color": MUTED}})

    step = math.ceil(n / MAX_TICKS)
    ticks = {"tickvals": list(range(0, n, step)), "ticktext": names[::step], "tickfont": {"size": SMALL_SIZE}}
    layout = base_layout(
        _title(layer, head, info, lang), lang, height=700, shapes=shapes, annotations=annotations,
        xaxis={"title": {"text": t("attn_axis_key", lang)}, "tickangle": -60, "range": [-0.5, n - 0.5],
               "constrain": "domain", **ticks},
        # Square cells: a query row and a key column are the same positions.
        yaxis={"title": {"text": t("attn_axis_query", lang)}, "autorange": "reversed", "scaleanchor": "x",
               "constrain": "domain", **ticks},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0}, margin={"t": 120, "b": 110},
        plot_bgcolor="white",
    )
    # on a phone the long axis titles wrapped to three lines beside the token labels and ran into them: short ones
    narrow_layout(layout, xaxis={"title": {"text": t("attn_axis_key_short", lang)}},
                  yaxis={"title": {"text": t("attn_axis_query_short", lang)}, "automargin": True},
                  margin={"l": 40, "r": 8, "b": 120})
    # on a phone the colour bar lies flat under the chart, from its bottom edge: beside it, it took the 70 px the
    # square of cells needed (the heat map was about 200 px wide at 390)
    narrow_traces(layout, weights={"colorbar": {"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom",
                                                "x": 0.5, "xanchor": "center", "len": 0.9, "thickness": 12,
                                                "title": {"side": "top"}}})
    return chart(traces, layout)


attention_figure = as_figure(attention_chart)


def gqa_figure(info: ModelInfo, lang: str = "en", head: int | None = None) -> go.Figure:
    """Which KV head each query head reads (h // group size): query heads on top, KV heads below, one line each.

    With `head` given, that query head's line is drawn heavier so the student can follow it.
    """
    group = info.group_size
    centre = [k * group + (group - 1) / 2 for k in range(info.kv_heads)]
    # Shade every other group so the groups read at a glance.
    shapes = [{"type": "rect", "x0": k * group - 0.5, "x1": (k + 1) * group - 0.5, "y0": -0.3, "y1": 1.3,
               "fillcolor": "#F2F2F2", "line": {"width": 0}, "layer": "below"} for k in range(0, info.kv_heads, 2)]
    traces = []
    for h in range(info.heads):
        picked = h == head
        traces.append({
            "type": "scatter", "x": [h, centre[info.kv_head_of(h)]], "y": [1, 0], "mode": "lines", "showlegend": False,
            "hoverinfo": "skip",
            "line": {"color": FATE_COLORS["chosen"] if picked else MUTED, "width": 5 if picked else 2},
        })
    traces.append({
        "type": "scatter", "x": list(range(info.heads)), "y": [1] * info.heads, "mode": "markers+text",
        "text": [str(h) for h in range(info.heads)],
        "marker": {"size": 30, "color": "white", "line": {"color": INK, "width": 2}}, "showlegend": False,
        "hovertext": [t("gqa_query", lang, h=h) + " → " + t("gqa_kv", lang, k=info.kv_head_of(h))
                      for h in range(info.heads)], "hovertemplate": "%{hovertext}<extra></extra>", "name": "query",
    })
    traces.append({
        "type": "scatter", "x": centre, "y": [0] * info.kv_heads, "mode": "markers+text",
        "text": [str(k) for k in range(info.kv_heads)], "marker": {"size": 34, "symbol": "square", "color": INK},
        "textfont": {"color": "white"}, "showlegend": False,
        "hovertext": [t("gqa_kv", lang, k=k) for k in range(info.kv_heads)],
        "hovertemplate": "%{hovertext}<extra></extra>", "name": "kv",
    })
    # Gradio draws this chart (not the page's script, which would put a long title in the HTML caption and wrap it):
    # the name as the title, what it says under it as the subtitle, so a phone's 320 px hold each
    title, _, said = t("gqa_title", lang, heads=info.heads, kv_heads=info.kv_heads, group=group).replace("：", ":", 1) \
        .partition(":")
    layout = base_layout(
        title, lang, subtitle=wrap_text(said.strip(), 36 if lang == "en" else 28), height=320, shapes=shapes, xaxis={"visible": False, "range": [-0.8, info.heads - 0.2]},
        yaxis={"tickvals": [0, 1], "ticktext": [t("gqa_row_kv", lang), t("gqa_row_query", lang)],
               "range": [-0.35, 1.35], "showgrid": False, "zeroline": False},
    )
    # on a phone (assets/js/charts.js) each head's circle no wider than its share of the width: nine heads' 30 px
    # circles overlapped in the 220 px a phone leaves the plot; the rows' names on two lines, for room
    across = max(12, min(30, round(22 * 9 / max(info.heads, 1))))
    narrow_traces(layout, query={"marker": {"size": across}}, kv={"marker": {"size": across + 4}})
    narrow_layout(layout, yaxis={"ticktext": [t("gqa_row_kv_short", lang), t("gqa_row_query_short", lang)]})
    return figure(traces, layout)
