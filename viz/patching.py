"""Activation patching as a heatmap: layers (bottom: the embeddings' layer) by positions, coloured by how much of
the answer's probability one patched vector restores.

Pure function of a plain record (model.experiments.patching.PatchingGrid: numpy arrays and TokenInfo lists).
"""
from __future__ import annotations

import numpy as np

from viz.i18n import t
from viz.style import MODEL_NAMES, SMALL_SIZE, base_layout, chart, format_prob, narrow_layout, token_label

# Diverging, white at 0: blue where the patch restores the answer, vermillion where it pushes it further away
EFFECT_SCALE = [[0.0, "#A33F00"], [0.25, "#E69F00"], [0.5, "#FFFFFF"], [0.75, "#56B4E9"], [1.0, "#0B4F8A"]]


def position_label(clean: str, corrupted: str) -> str:
    """A position's tick: its token, or both tokens where the prompts differ ('␣E→␣Col' reads clean → corrupted)."""
    return token_label(clean) if clean == corrupted else f"<b>{token_label(clean)}→{token_label(corrupted)}</b>"


def patching_chart(grid, model_name: str = "", lang: str = "en") -> dict:
    """Heatmap of grid.effect: row = the layer whose input is patched (0 = the embeddings), column = position;
    colour = (P_patched - P_corrupted) / (P_clean - P_corrupted) of the answer, clipped to [-1, 1] for the colour
    (the hover gives the value)."""
    effect = np.asarray(grid.effect, dtype=float)  # (layers, n)
    rows, n = effect.shape
    ticks = [position_label(a.display, b.display) for a, b in zip(grid.clean, grid.corrupted)]
    answer = token_label(grid.answer.display)
    template = t("patch_hover", lang)
    hover = [[template.format(layer=r, pos=c, tok=ticks[c], answer=answer, p=format_prob(grid.patched_prob[r, c]),
                              effect=f"{effect[r, c]:+.2f}") for c in range(n)] for r in range(rows)]
    heat = {"type": "heatmap", "z": effect, "zmin": -1, "zmax": 1, "colorscale": EFFECT_SCALE, "name": "patching",
            "colorbar": {"title": {"text": t("patch_colour", lang)}, "thickness": 16, "tickvals": [-1, 0, 1],
                         "ticklabelposition": "outside bottom"},  # the top label under its tick, clear of the title
            "customdata": hover, "hovertemplate": "%{customdata}<extra></extra>", "xgap": 1, "ygap": 1}
    # no text in the cells: a phone keeps only the columns whose texts fit (assets/js/charts.js cellTexts), and here
    # the first columns (the word that differs) matter as much as the last; the hover and the sentence above say it
    layout = base_layout(
        t("patch_title", lang, model=MODEL_NAMES.get(model_name, model_name), answer=answer, layers=rows, n=n), lang,
        subtitle=t("patch_subtitle", lang, answer=answer, clean=format_prob(grid.clean_prob),
                   corrupted=format_prob(grid.corrupted_prob)),
        height=max(460, 200 + 20 * rows),
        xaxis={"title": {"text": t("patch_axis_position", lang)}, "tickvals": list(range(n)), "ticktext": ticks,
               "tickangle": -90, "range": [-0.5, n - 0.5], "tickfont": {"size": SMALL_SIZE}},
        yaxis={"title": {"text": t("patch_axis_layer", lang)}, "range": [-0.5, rows - 0.5],
               "tickfont": {"size": SMALL_SIZE}},
        margin={"t": 130, "b": 190}, plot_bgcolor="white",
    )
    narrow_layout(layout, xaxis={"tickangle": -90})
    return chart([heat], layout)
