"""Heads by what they do: three heatmaps, layer by head, of the previous-token, induction and sink scores.

Pure function of a plain record (model.experiments.heads.HeadScores). Each cell carries [layer, head] as the first
two values of its customdata: a click on it opens that head in the Attention view (assets/js/clicks.js).
"""
from __future__ import annotations

import numpy as np

from viz.i18n import t
from viz.style import (MODEL_NAMES, ATTENTION_SCALE, INK, SMALL_SIZE, axis_ids, base_layout, chart, domains, narrow_layout,
                        panel_title, stacked)

KINDS = ("previous", "induction", "sink")
KIND_KEYS = {"previous": "heads_previous", "induction": "heads_induction", "sink": "heads_sink"}
PHONE_GAP_PX = 100  # between panels stacked on a phone: the axis title of one, the panel title of the next


def heads_chart(scores, model_name: str = "", lang: str = "en") -> dict:
    """One heatmap per kind, side by side (stacked on a phone): x = head, y = layer (0 at the bottom), colour = the
    score in [0, 1]; the heads the page names (scores.top) are outlined."""
    layers, heads = scores.previous.shape
    spans = domains([1.0] * len(KINDS), 0.05)
    data, annotations, layout_axes, narrow_axes = [], [], {}, {}
    panel_px = 60 + 16 * layers  # a panel's height on a phone
    rows = stacked([panel_px] * len(KINDS), [PHONE_GAP_PX] * (len(KINDS) - 1))
    for k, kind in enumerate(KINDS, start=1):
        x_ref, y_ref = axis_ids(k)
        z = np.asarray(scores.kinds[kind], dtype=float)
        name = t(KIND_KEYS[kind], lang)
        hover = t("heads_hover", lang)
        custom = [[[layer, head, hover.format(layer=layer, head=head, kind=name, score=f"{z[layer, head]:.2f}")]
                   for head in range(heads)] for layer in range(layers)]
        data.append({"type": "heatmap", "z": z, "zmin": 0, "zmax": 1, "colorscale": ATTENTION_SCALE, "name": kind,
                     "xaxis": x_ref, "yaxis": y_ref, "customdata": custom, "xgap": 1, "ygap": 1,
                     "hovertemplate": "%{customdata[2]}<extra></extra>", "showscale": k == len(KINDS),
                     "colorbar": {"title": {"text": t("heads_colour", lang)}, "thickness": 14,
                                  "ticklabelposition": "outside bottom"}})  # the top label clear of the title
        top = scores.top(kind)
        data.append({"type": "scatter", "x": [h for _, h, _ in top], "y": [layer for layer, _, _ in top],
                     "xaxis": x_ref, "yaxis": y_ref, "mode": "markers", "hoverinfo": "skip", "showlegend": False,
                     "name": f"{kind} named", "marker": {"symbol": "square-open", "size": 16,
                                                         "color": INK, "line": {"width": 3}}})
        x_key, y_key = f"xaxis{'' if k == 1 else k}", f"yaxis{'' if k == 1 else k}"
        layout_axes[x_key] = {"domain": list(spans[k - 1]), "anchor": y_ref, "title": {"text": t("heads_axis_head", lang)},
                              "tickvals": list(range(heads)), "range": [-0.5, heads - 0.5],
                              "tickfont": {"size": SMALL_SIZE}}
        layout_axes[y_key] = {"anchor": x_ref, "range": [-0.5, layers - 0.5], "tickfont": {"size": SMALL_SIZE},
                              "showticklabels": k == 1, "dtick": 5 if layers > 20 else 2,
                              **({"title": {"text": t("heads_axis_layer", lang)}} if k == 1 else {})}
        annotations.append(panel_title(name, spans[k - 1], 1.0))
        narrow_axes[x_key] = {"domain": [0, 1]}
        narrow_axes[y_key] = {"domain": list(rows[k - 1]), "showticklabels": True}
    layout = base_layout(t("heads_title", lang, model=MODEL_NAMES.get(model_name, model_name), layers=layers, heads=heads), lang,
                         subtitle=t("heads_subtitle", lang, n=scores.length), height=max(480, 220 + 16 * layers),
                         annotations=annotations, margin={"t": 150, "b": 70}, plot_bgcolor="white", **layout_axes)
    narrow = [panel_title(t(KIND_KEYS[kind], lang), (0, 1), rows[k][1]) for k, kind in enumerate(KINDS)]
    narrow_layout(layout, height=len(KINDS) * (panel_px + PHONE_GAP_PX) + 150, annotations=narrow, **narrow_axes)
    return chart(data, layout)
