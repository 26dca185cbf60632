"""The KV cache: its measured size against the formula, step time with and without it, and a size calculator."""
from __future__ import annotations

import plotly.graph_objects as go

from model.decoding.records import CacheTiming, KVBytes, ModelInfo
from viz import i18n
from viz.style import (as_figure, chart, figure, FONT_SIZE, INK, KEY_COLOR, MUTED, SMALL_SIZE, VALUE_COLOR, base_layout,
                       bytes_unit, format_bytes, line_label, narrow_layout, text_px, vertical_line, wrap_text)

__all__ = ["kv_growth_figure", "cache_timing_figure", "kv_calculator_figure", "format_bytes"]
PHONE_FONT = round(FONT_SIZE * 0.85)  # a chart's type on a phone (assets/js/charts.js NARROW_FONT)


def kv_growth_chart(points: list[KVBytes], prefill_tokens: int, info: ModelInfo, lang: str = "en") -> dict:
    """Cache bytes against tokens held: measured K and V stacked as bars, the formula as a line over them.

    The y axis is in the binary unit that fits the largest value (KiB, MiB, ...); hover shows exact sizes.
    A dashed line marks the end of the prompt (prefill); the subtitle spells out the bytes per token.
    """
    points = sorted(points, key=lambda p: p.tokens)
    unit, scale = bytes_unit(max([max(p.measured, p.formula) for p in points], default=0))
    tokens = [p.tokens for p in points]
    hover = [i18n.t("kv_hover", lang, tokens=p.tokens, measured=format_bytes(p.measured), keys=format_bytes(p.keys),
                    values=format_bytes(p.values), formula=format_bytes(p.formula)) for p in points]
    traces = [{"type": "bar", "x": tokens, "y": [v / scale for v in values], "name": i18n.t(key, lang),
               "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
               "marker": {"color": color, "line": {"color": MUTED, "width": 0.5}}, "meta": {"role": key}}
              for key, values, color in (("kv_keys", [p.keys for p in points], KEY_COLOR),
                                         ("kv_values", [p.values for p in points], VALUE_COLOR))]
    traces.append({"type": "scatter", "x": [0] + tokens, "y": [0] + [p.formula / scale for p in points],
                   "name": i18n.t("kv_formula", lang), "mode": "lines", "line": {"color": INK, "width": 3, "dash": "dash"},
                   "hovertext": [""] + hover, "hovertemplate": "%{hovertext}<extra></extra>",
                   "meta": {"role": "formula", "scale": scale}})
    per_token = 2 * info.layers * info.kv_heads * info.head_dim * info.bytes_per_value
    subtitle = i18n.t("kv_subtitle", lang, layers=info.layers, kv_heads=info.kv_heads, head_dim=info.head_dim,
                      bpv=info.bytes_per_value, dtype=info.dtype, per_token=f"{per_token:,} B ({format_bytes(per_token)})")
    layout = base_layout(
        i18n.t("kv_title", lang), lang, subtitle=subtitle,
        shapes=[vertical_line(prefill_tokens, "prefill", {"color": MUTED, "width": 2, "dash": "dot"})],
        annotations=[line_label(prefill_tokens, i18n.t("kv_prefill", lang, n=prefill_tokens), {"size": SMALL_SIZE},
                                "left")],
        xaxis={"title": {"text": i18n.t("kv_axis_tokens", lang)}, "range": [0, max(tokens, default=0) + 1]},  # from 0
        # (both axes start at 0: the y axis's "0" a little left of the x axis's, not over it)
        yaxis={"title": {"text": i18n.t("kv_axis_bytes", lang, unit=unit)}, "rangemode": "tozero", "ticklabelstandoff": 6},
        barmode="stack", bargap=0.1, legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
        margin={"t": 130},
    )
    return chart(traces, layout)


kv_growth_figure = as_figure(kv_growth_chart)


def _noise_note(t: CacheTiming, lang: str) -> str:
    """What the measurement can conclude: medians with min-max bars after a warm-up, and the lengths where the runs
    overlapped (or were too few), said plainly."""
    if not t.cached_range:
        return ""
    unsure = [n for n, ok in zip(t.seq_len, t.conclusive) if not ok]
    note = i18n.t("timing_spread_note", lang)
    if unsure:
        note += " " + i18n.t("timing_noisy", lang, lengths=", ".join(map(str, unsure)))
    return "<br>" + note


def cache_timing_figure(t: CacheTiming, lang: str = "en", fit: tuple[float, float] | None = None) -> go.Figure:
    """Measured milliseconds per decode step against sequence length, with the KV cache and without it; `fit`:
    (slope ms per token, intercept ms) of a line fitted to the cached step's times, drawn over them (a lesson's
    step_time question, model.classroom.myths)."""
    traces = []
    for key, ms, ranges, color, symbol, dash in (
            ("timing_cached", t.cached_ms, t.cached_range, KEY_COLOR, "circle", "solid"),
            ("timing_full", t.full_ms, t.full_range, INK, "diamond", "dash")):
        name = i18n.t(key, lang)
        spread = {} if not ranges else {"error_y": {  # the fastest and slowest run around the median
            "type": "data", "symmetric": False, "array": [hi - m for m, (_, hi) in zip(ms, ranges)],
            "arrayminus": [m - lo for m, (lo, _) in zip(ms, ranges)], "color": color, "thickness": 1.5}}
        traces.append({
            **spread,
            "type": "scatter", "x": t.seq_len, "y": ms, "name": name, "mode": "lines+markers",
            "line": {"color": color, "width": 3, "dash": dash}, "marker": {"size": 9, "symbol": symbol},
            "hovertext": [f"{name}<br>" + i18n.t("timing_hover", lang, n=n, ms=f"{m:.1f}") for n, m in zip(t.seq_len, ms)],
            "hovertemplate": "%{hovertext}<extra></extra>",
        })
    if fit is not None and t.seq_len:
        slope, intercept = fit
        ends = [min(t.seq_len), max(t.seq_len)]
        traces.append({"type": "scatter", "x": ends, "y": [intercept + slope * n for n in ends], "mode": "lines",
                       "name": i18n.t("timing_fit", lang, slope=f"{slope * 1000:+.2f}"),  # (its sign said once)
                       "line": {"color": KEY_COLOR, "width": 2, "dash": "dot"}, "hoverinfo": "skip",
                       "meta": {"role": "fit", "slope": slope, "intercept": intercept}})
    subtitle = i18n.t("timing_subtitle", lang) + _noise_note(t, lang)
    # The legend under the chart, from the bottom of the figure: above the plot it ran into the subtitle once that took
    # three lines and the legend two (a lesson's reveal beside its text, with the fitted line's entry: issue 47)
    layout = base_layout(
        i18n.t("timing_title", lang), lang, subtitle=subtitle, height=520 + LEGEND_BELOW_PX,
        xaxis={"title": {"text": i18n.t("timing_axis_len", lang)}},
        yaxis={"title": {"text": i18n.t("timing_axis_ms", lang)}, "rangemode": "tozero"},
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
        margin={"t": 60 + 24 * (subtitle.count("<br>") + 1), "b": 60 + LEGEND_BELOW_PX},
    )
    return figure(traces, layout)


LEGEND_BELOW_PX = 70  # room under the x axis's title for a legend of two rows


def kv_calculator_figure(rows: list[tuple[str, int]], lang: str = "en") -> go.Figure:
    """Horizontal bars of cache bytes for labelled configurations (presets, MHA / GQA / MQA), sizes written out."""
    unit, scale = bytes_unit(max([n for _, n in rows], default=0))
    ys = list(range(len(rows)))
    bar = {
        "type": "bar", "x": [n / scale for _, n in rows], "y": ys, "orientation": "h", "marker": {"color": KEY_COLOR},
        "text": [format_bytes(n) for _, n in rows], "textposition": "outside", "textfont": {"size": SMALL_SIZE + 2},
        "cliponaxis": False, "hovertext": [f"{label}<br>{n:,} B = {format_bytes(n)}" for label, n in rows],
        "hovertemplate": "%{hovertext}<extra></extra>",
    }
    largest = max([n for _, n in rows], default=0) / scale
    layout = base_layout(
        i18n.t("calc_title", lang), lang, subtitle=i18n.t("calc_subtitle", lang), height=max(320, 170 + 56 * len(rows)),
        xaxis={"title": {"text": i18n.t("calc_axis", lang, unit=unit)}, "range": [0, largest * 1.2 or 1]},
        yaxis={"tickvals": ys, "ticktext": [label for label, _ in rows], "autorange": "reversed"},
        margin={"t": 110},
    )
    # On a phone (assets/js/charts.js): a row's name on lines of at most 18 columns, and the margin as wide as its
    # longest line at the phone's type (its whole text, measured as one line, left the bars 20 px of a 390 screen)
    names = ["<br>".join(wrap_text(part, 18) for part in label.split("<br>")) for label, _ in rows]
    widest = max([text_px(line, PHONE_FONT) for name in names for line in name.split("<br>")], default=0)
    return figure([bar], narrow_layout(layout, yaxis={"ticktext": names}, margin={"l": round(widest) + 16}))
