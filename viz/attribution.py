"""Why this token: each context token's attribution as shaded chips (integrated gradients, gradient x input) beside
the same step's attention, and the same numbers as bars.

Pure functions of a plain record (model.inside.attribution.Attribution: numpy arrays and TokenInfo lists).
"""
from __future__ import annotations

import html

import numpy as np
from plotly.colors import sample_colorscale, unlabel_rgb

from viz.chips import LIGHT_INK, DARK_INK
from viz.i18n import t
from viz.style import KEY_COLOR, INK, MUTED, SMALL_SIZE, base_layout, chart, domains, narrow_layout, token_label

# Diverging, white at 0 (colour-blind safe, as the patching view's): blue raises the logit, vermillion lowers it
SIGNED_SCALE = [[0.0, "#A33F00"], [0.25, "#E69F00"], [0.5, "#FFFFFF"], [0.75, "#56B4E9"], [1.0, "#0B4F8A"]]
ATTENTION_SCALE = "Greens"  # sequential: a weight in [0, 1], its own hue so it is never read as an attribution
UP, DOWN, ATTENTION = "#0B4F8A", "#A33F00", KEY_COLOR


def _ink(background: str) -> str:
    r, g, b = unlabel_rgb(background)
    return LIGHT_INK if (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255 < 0.55 else DARK_INK


def signed_shade(value: float, largest: float) -> tuple[str, str]:
    """Background and text colour of a chip whose attribution is `value`, on a scale where +-`largest` is the
    darkest blue / vermillion and 0 white."""
    x = 0.5 if largest <= 0 else 0.5 + 0.5 * max(-1.0, min(1.0, value / largest))
    background = sample_colorscale(SIGNED_SCALE, [x])[0]
    return background, _ink(background)


def weight_shade(value: float, largest: float) -> tuple[str, str]:
    """Background and text colour of a chip whose attention weight is `value` (largest: the darkest)."""
    x = 0.0 if largest <= 0 else max(0.0, min(1.0, value / largest))
    background = sample_colorscale(ATTENTION_SCALE, [0.05 + 0.85 * x])[0]
    return background, _ink(background)


def _row(name: str, tokens, values: np.ndarray, shade, hover_key: str, lang: str, kept_first: bool) -> str:
    """One labelled line of chips, each shaded by its value; the first one outlined only if it was kept on the path."""
    largest = float(np.max(np.abs(values))) if len(values) else 0.0
    chips = []
    for i, (tok, v) in enumerate(zip(tokens, values)):
        text = html.escape(tok.display, quote=False).replace("␣", '<i class="tbt-space">␣</i>')
        if i == 0 and kept_first:
            title = t("attr_chip_kept", lang, tok=tok.display)
            chips.append(f'<span class="tbt-chip tbt-attr tbt-attr-kept" data-value="0" '
                         f'title="{html.escape(title)}">{text}</span>')
            continue
        background, ink = shade(float(v), largest)
        light = " tbt-light" if ink == LIGHT_INK else ""
        title = t(hover_key, lang, pos=i, tok=tok.display, value=f"{v:+.3f}" if shade is signed_shade else f"{v:.3f}")
        chips.append(f'<span class="tbt-chip tbt-attr{light}" style="--shade:{background}" data-value="{v!r}" '
                     f'title="{html.escape(title)}">{text}</span>')
    return (f'<div class="tbt-attr-row"><span class="tbt-attr-name">{html.escape(name)}</span>'
            f'<span class="tbt-attr-chips">{"".join(chips)}</span></div>')


def attribution_chips_html(record, lang: str = "en") -> str:
    """The context's chips three times, each line shaded by one reading of the same step: integrated gradients and
    gradient x input (signed: blue raises the target's logit, vermillion lowers it; white nothing), then the
    attention of the step (green, mean over layers and heads). A chip's title gives its number; the first chip is
    outlined, not shaded, in the two attribution lines (kept on the path: no attribution)."""
    target = token_label(record.target.display)
    rows = [
        _row(t("attr_row_ig", lang), record.tokens, record.integrated, signed_shade, "attr_chip_ig", lang, True),
        _row(t("attr_row_gxi", lang), record.tokens, record.grad_input, signed_shade, "attr_chip_gxi", lang, False),
        _row(t("attr_row_attention", lang), record.tokens, record.attention, weight_shade, "attr_chip_attention",
             lang, False),
    ]
    legend = t("attr_chips_legend", lang, target=target)
    return (f'<div class="tbt-attr-block" lang="{lang}" data-target="{record.target.id}" '
            f'data-position="{record.position}">{"".join(rows)}'
            f'<div class="tbt-chips-legend">{html.escape(legend)}</div></div>')


def attribution_chart(record, model_name: str = "", lang: str = "en") -> dict:
    """Two panels over the context's positions: above, each token's integrated gradient (bars, signed, in logits)
    and gradient x input (diamonds); below, the same step's attention (bars: mean over layers and heads; dots: the
    last layer's mean over heads)."""
    n = len(record.tokens)
    x = list(range(n))
    ticks = [token_label(tok.display) for tok in record.tokens]
    names = [t("attr_row_ig", lang), t("attr_row_gxi", lang), t("attr_row_attention", lang),
             t("attr_attention_last", lang)]
    colors = [UP if v >= 0 else DOWN for v in record.integrated]
    hover = t("attr_bar_hover", lang)
    custom = [hover.format(pos=i, tok=ticks[i], ig=f"{record.integrated[i]:+.3f}", gxi=f"{record.grad_input[i]:+.3f}",
                           att=f"{record.attention[i]:.3f}") for i in x]
    top, bottom = domains([1.0, 0.8], 0.16)[::-1]
    data = [
        {"type": "bar", "x": x, "y": record.integrated.tolist(), "name": names[0], "marker": {"color": colors},
         "customdata": custom, "hovertemplate": "%{customdata}<extra></extra>", "xaxis": "x", "yaxis": "y",
         "meta": {"role": "integrated"}},
        {"type": "scatter", "mode": "markers", "x": x, "y": record.grad_input.tolist(), "name": names[1],
         "marker": {"symbol": "diamond", "size": 11, "color": INK}, "hoverinfo": "skip", "xaxis": "x", "yaxis": "y",
         "meta": {"role": "grad_input"}},
        {"type": "bar", "x": x, "y": record.attention.tolist(), "name": names[2], "marker": {"color": ATTENTION},
         "customdata": custom, "hovertemplate": "%{customdata}<extra></extra>", "xaxis": "x2", "yaxis": "y2",
         "meta": {"role": "attention"}},
        {"type": "scatter", "mode": "markers", "x": x, "y": record.attention_last.tolist(), "name": names[3],
         "marker": {"symbol": "circle-open", "size": 10, "color": INK}, "hoverinfo": "skip", "xaxis": "x2",
         "yaxis": "y2", "meta": {"role": "attention_last"}},
    ]
    axis = {"tickvals": x, "ticktext": ticks, "tickangle": -60 if n > 8 else 0, "range": [-0.6, n - 0.4],
            "tickfont": {"size": SMALL_SIZE}}
    layout = base_layout(
        t("attr_title", lang, target=token_label(record.target.display), model=model_name), lang,
        subtitle=t("attr_subtitle", lang, total=f"{record.integrated.sum():.3f}", logit=f"{record.logit:.3f}",
                   base=f"{record.baseline_logit:.3f}", gap=f"{record.delta:.1e}", points=record.steps),
        height=620,
        xaxis={**axis, "anchor": "y", "showticklabels": False},
        yaxis={"title": {"text": t("attr_axis_logit", lang)}, "domain": list(top), "zeroline": True,
               "zerolinecolor": MUTED},
        xaxis2={**axis, "anchor": "y2", "matches": "x"},
        yaxis2={"title": {"text": t("attr_axis_attention", lang)}, "domain": list(bottom), "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.28, "x": 0, "font": {"size": SMALL_SIZE}},
        margin={"t": 120, "b": 150}, bargap=0.25,
    )
    narrow_layout(layout, legend={"y": -0.4}, margin={"b": 190})
    return chart(data, layout)
