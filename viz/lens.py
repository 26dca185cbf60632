"""The logit lens as a heatmap: layers (bottom: the embeddings, top: the model's output) by positions.

Pure function of a plain record (model.inside.lens.LogitLens: numpy arrays and TokenInfo lists); no torch, no gradio.
"""
from __future__ import annotations

import math

import numpy as np

from viz.style import MODEL_NAMES, ATTENTION_SCALE
from viz.i18n import t
from viz.style import (FATE_COLORS, SMALL_SIZE, as_figure, base_layout, chart, format_prob, narrow_layout, wrap_text,
                        token_label)

TEXT_COLUMNS = 16  # up to this many positions, each cell names its top token; beyond, only the hover does
CELL_CHARS = 5  # a cell's token text, cut to this many characters (14 px in a cell about 50 px wide)
MAX_TICKS = 28  # as the attention heatmap: beyond this, every other token label
TITLE_COLUMNS, SUBTITLE_COLUMNS = 72, 110  # the strip's and the pins' long titles, in lines that fit at 1280 (878 px)


def _short(label: str) -> str:
    return label if len(label) <= CELL_CHARS else label[: CELL_CHARS - 1] + "…"


def lens_chart(lens, model_name: str = "", lang: str = "en") -> dict:
    """Heatmap of lens.target_prob: row = layer (0 = embeddings, the top row = the last layer, the model's output),
    column = position; colour = the probability that layer's reading gives the token that came next; each cell's
    text (up to TEXT_COLUMNS positions) and hover name that reading's top token.

    The bottom axis names the token at each position, the top axis the token compared there (the text's next
    token; at the last position, marked *, the model's own top token, since nothing follows it yet).
    """
    probs = np.asarray(lens.target_prob, dtype=float)  # (L + 1, W)
    rows, n = probs.shape
    layer_names = [t("lens_embeddings", lang)] + [str(i) for i in range(1, rows)]
    inputs = [token_label(tok.display) for tok in lens.tokens]
    targets = [token_label(tok.display) + ("" if nxt else "*") for tok, nxt in zip(lens.targets, lens.target_is_next)]
    tops = [[token_label(tok.display) for tok in row] for row in lens.top_tokens]
    shorts = [[token_label(_short(tok.display)) for tok in row] for row in lens.top_tokens]
    template = t("lens_hover", lang)
    top_p, ranks = np.asarray(lens.top_prob).tolist(), np.asarray(lens.target_rank).tolist()
    hover = np.array([[template.format(layer=layer_names[r], pos=lens.start + c, tok=inputs[c], top=tops[r][c],
                                       top_p=format_prob(top_p[r][c]), target=targets[c],
                                       p=format_prob(probs[r, c]), rank=ranks[r][c])
                       for c in range(n)] for r in range(rows)], dtype=object)
    cell_text = shorts if n <= TEXT_COLUMNS else None
    heat = {"type": "heatmap", "z": probs, "zmin": 0, "zmax": 1, "colorscale": ATTENTION_SCALE, "name": "lens",
            "colorbar": {"title": {"text": t("lens_colour", lang)}, "thickness": 16,
                      "ticklabelposition": "outside bottom"},  # the top label under its tick, clear of the title
            "customdata": hover, "hovertemplate": "%{customdata}<extra></extra>", "xgap": 1, "ygap": 1}
    if cell_text is not None:
        heat.update(text=cell_text, texttemplate="%{text}", textfont={"size": SMALL_SIZE})
    # the top axis: the token compared at each position, on an invisible trace of its own
    top_axis = {"type": "scatter", "x": list(range(n)), "y": [rows - 1] * n, "xaxis": "x2", "mode": "markers",
                "marker": {"opacity": 0}, "hoverinfo": "skip", "showlegend": False, "name": "targets"}
    step = math.ceil(n / MAX_TICKS)
    shapes = [{"type": "rect", "x0": -0.5, "x1": n - 0.5, "y0": rows - 1.5, "y1": rows - 0.5, "name": "output",
               "line": {"color": FATE_COLORS["chosen"], "width": 3}}]
    layout = base_layout(
        t("lens_title", lang, model=MODEL_NAMES.get(model_name, model_name), layers=rows - 1, n=n), lang,
        subtitle=t("lens_subtitle", lang), height=max(420, 180 + 24 * rows), shapes=shapes,
        xaxis={"title": {"text": t("lens_axis_input", lang)}, "tickvals": list(range(0, n, step)),
               "ticktext": inputs[::step], "tickangle": -60, "range": [-0.5, n - 0.5], "tickfont": {"size": SMALL_SIZE}},
        xaxis2={"title": {"text": t("lens_axis_target", lang)}, "overlaying": "x", "side": "top", "matches": "x",
                "tickvals": list(range(0, n, step)), "ticktext": targets[::step], "tickangle": -60,
                "tickfont": {"size": SMALL_SIZE}, "showgrid": False},
        yaxis={"title": {"text": t("lens_axis_layer", lang)}, "tickvals": list(range(rows)), "ticktext": layer_names,
               "range": [-0.5, rows - 0.5], "tickfont": {"size": SMALL_SIZE}},
        margin={"t": 200, "b": 110}, plot_bgcolor="white",
    )
    # on a phone the few columns shown keep their token labels upright where they fit (a Chinese token turned on
    # its side is hard to read; assets/js/charts.js still turns those too wide for their column)
    narrow_layout(layout, xaxis={"tickangle": 0}, xaxis2={"tickangle": 0})
    return chart([heat, top_axis], layout)


lens_figure = as_figure(lens_chart)


COMMIT_COLORS = {"drawn": "#009E73", "not_drawn": "#E69F00", "prompt": "#BBBBBB"}  # Okabe-Ito green, orange; grey
COMMIT_NAMES = {"drawn": "lens_commit_drawn", "not_drawn": "lens_commit_not_drawn", "prompt": "lens_commit_prompt"}
NEVER_COLOR = "#D55E00"


def commitment_chart(lens, model_name: str = "", lang: str = "en") -> dict:
    """The commitment strip, under the heat map and on its columns: for each position, the first layer from which the
    token that came next stays every layer's top token (bar height; 0 = the embeddings). Green: a generated token that
    its step's own u (settings and seed) also draws from that layer's reading; orange: one it would not; grey: a
    prompt token (no step drew it); a vermilion × at the top: the last layer's top is another token, so it never
    commits (a sampled token the model did not rank first)."""
    rows = np.asarray(lens.top_prob).shape[0]  # layers + 1
    committed = np.asarray(lens.committed).tolist()
    drawn = list(lens.drawn_at_commit)
    n = len(committed)
    targets = [token_label(tok.display) + ("" if nxt else "*") for tok, nxt in zip(lens.targets, lens.target_is_next)]
    kind = ["prompt" if d is None else ("drawn" if d else "not_drawn") for d in drawn]
    data = []
    for name in ("drawn", "not_drawn", "prompt"):
        cols = [c for c in range(n) if kind[c] == name and committed[c] >= 0 and lens.target_is_next[c]]
        data.append({"type": "bar", "x": cols, "y": [committed[c] for c in cols], "name": t(COMMIT_NAMES[name], lang),
                     "marker": {"color": COMMIT_COLORS[name]}, "text": [str(committed[c]) for c in cols],
                     "textposition": "outside", "cliponaxis": False, "textfont": {"size": SMALL_SIZE},
                     "customdata": [t("lens_commit_hover", lang, tok=targets[c], pos=lens.start + c + 1,
                                      layer=committed[c]) for c in cols],
                     "hovertemplate": "%{customdata}<extra></extra>"})
    never = [c for c in range(n) if committed[c] < 0 and lens.target_is_next[c]]
    data.append({"type": "scatter", "mode": "markers", "x": never, "y": [rows] * len(never),
                 "name": t("lens_commit_never", lang),
                 "marker": {"symbol": "x", "size": 14, "color": NEVER_COLOR, "line": {"width": 2}},
                 "customdata": [t("lens_commit_never_hover", lang, tok=targets[c], pos=lens.start + c + 1)
                                for c in never], "hovertemplate": "%{customdata}<extra></extra>"})
    step = math.ceil(n / MAX_TICKS)
    layout = base_layout(
        t("lens_commit_title", lang, model=MODEL_NAMES.get(model_name, model_name)), lang,
        subtitle=wrap_text(t("lens_commit_subtitle", lang), SUBTITLE_COLUMNS), height=470,
        xaxis={"title": {"text": t("lens_axis_target", lang)}, "tickvals": list(range(0, n, step)),
               "ticktext": targets[::step], "tickangle": -60, "range": [-0.5, n - 0.5],
               "tickfont": {"size": SMALL_SIZE}},
        yaxis={"title": {"text": t("lens_commit_axis", lang)}, "range": [0, rows + 3.5]},  # the bars' numbers under the legend
        legend={"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"}, bargap=0.15,
        margin={"t": 190, "b": 110}, plot_bgcolor="white",
    )
    narrow_layout(layout, xaxis={"tickangle": 0})
    return chart(data, layout)


commitment_figure = as_figure(commitment_chart)


PIN_COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"]  # Okabe-Ito
COMPARED_COLOR = "#222222"


def pinned_chart(lens, column: int, pins, probs, model_name: str = "", lang: str = "en") -> dict:
    """The pinned tokens through the layers at one column of the lens: x = layer (emb, 1 .. layers, the heat map's
    rows), y = each layer's lens probability of each pinned token (`pins`: TokenInfo, `probs`: (layers + 1, K)), a
    line each; and, dashed, the token compared there (the token that came next; at the last position, marked *, the
    model's own top token), from the heat map's own column (lens.target_prob)."""
    probs = np.asarray(probs, dtype=float)
    rows = np.asarray(lens.target_prob).shape[0]
    layer_names = [t("lens_embeddings", lang)] + [str(i) for i in range(1, rows)]
    target, is_next = lens.targets[column], lens.target_is_next[column]
    compared = token_label(target.display) + ("" if is_next else "*")
    lines = [(token_label(tok.display), probs[:, k], PIN_COLORS[k % len(PIN_COLORS)], "solid")
             for k, tok in enumerate(pins)]
    lines.append((t("lens_pin_compared", lang, tok=compared), np.asarray(lens.target_prob, dtype=float)[:, column],
                  COMPARED_COLOR, "dash"))
    data = [{"type": "scatter", "mode": "lines+markers", "x": list(range(rows)), "y": ys.tolist(), "name": name,
             "line": {"color": color, "width": 3, "dash": dash}, "marker": {"size": 6, "color": color},
             "customdata": [t("lens_pin_hover", lang, tok=name, layer=layer_names[r], p=format_prob(ys[r]))
                            for r in range(rows)], "hovertemplate": "%{customdata}<extra></extra>"}
            for name, ys, color, dash in lines]
    where = token_label(lens.tokens[column].display)
    layout = base_layout(
        wrap_text(t("lens_pin_title", lang, model=MODEL_NAMES.get(model_name, model_name), pos=lens.start + column, tok=where), TITLE_COLUMNS), lang,
        subtitle=wrap_text(t("lens_pin_subtitle", lang), SUBTITLE_COLUMNS), height=490,
        xaxis={"title": {"text": t("lens_axis_layer", lang)}, "tickvals": list(range(rows)), "ticktext": layer_names,
               "range": [-1.3, rows - 0.7], "tickfont": {"size": SMALL_SIZE}},  # "emb" clear of the "0%" tick
        yaxis={"title": {"text": t("lens_pin_axis", lang)}, "range": [0, 1.02], "tickformat": ".0%"},
        legend={"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"},
        margin={"t": 190}, plot_bgcolor="white",
    )
    return chart(data, layout)


pinned_figure = as_figure(pinned_chart)
