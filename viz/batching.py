"""The server's batching (the last passes: sessions carried and time) and the measured decode pass at batch 1..16,
with the weights it reads (effective memory bandwidth) and prefill against decode tokens/s.

Records are read by attribute (model/decoding/batcher.py PassRecord, model/speed/throughput.py Throughput): viz never imports
torch. Only counts and times reach these figures, never a session's text.
"""
from __future__ import annotations

from viz.i18n import t
from viz.style import MODEL_NAMES, MUTED, SMALL_SIZE, as_figure, base_layout, chart, domains, format_bytes, panel_title

PASS_COLOR = "#0072B2"  # blue
TOKEN_COLOR = "#D55E00"  # vermillion
PREFILL_COLOR = "#009E73"  # bluish green
DECODE_COLOR = "#56B4E9"  # sky blue


def batching_chart(passes, live_sessions: int, now: float, lang: str = "en") -> dict:
    """Left: each remembered pass at its time (seconds ago), its height the sessions it carried. Right: every
    pass's time against the sessions it carried: a pass of many costs little more than a pass of one."""
    x_left, x_right = domains([3, 2], 0.1)
    ago = [p.at - now for p in passes]
    hover = [t("batch_hover_pass", lang, n=p.sessions, ms=f"{p.ms:.0f}", ago=f"{now - p.at:.0f}") for p in passes]
    traces = [
        {"type": "bar", "x": ago, "y": [p.sessions for p in passes], "xaxis": "x", "yaxis": "y",
         "marker": {"color": PASS_COLOR}, "width": [0.6] * len(passes), "hovertext": hover,
         "hovertemplate": "%{hovertext}<extra></extra>", "showlegend": False, "meta": {"role": "passes"}},
        {"type": "scatter", "mode": "markers", "x": [p.sessions for p in passes], "y": [p.ms for p in passes],
         "xaxis": "x2", "yaxis": "y2", "marker": {"color": PASS_COLOR, "size": 9, "opacity": 0.6},
         "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>", "showlegend": False,
         "meta": {"role": "pass_times"}},
    ]
    carried = [p.sessions for p in passes]
    mean = sum(carried) / len(carried) if carried else 0.0
    top = max(carried, default=1)
    title = t("batch_live_title", lang, live=live_sessions, passes=len(passes), mean=f"{mean:.1f}",
              most=max(carried, default=0))
    annotations = [panel_title(t("batch_panel_timeline", lang), x_left, 1.0),
                   panel_title(t("batch_panel_cost", lang), x_right, 1.0)]
    if not passes:
        # centred on its panel (plotly anchors a note left of 1/3 of the paper by its left end: it ran into the
        # right panel's axis title at 1280)
        annotations.append({"text": t("batch_no_passes", lang), "x": sum(x_left) / 2, "xref": "paper",
                            "xanchor": "center", "y": 0.5, "yref": "paper", "showarrow": False, "font": {"size": SMALL_SIZE, "color": MUTED}})
    layout = base_layout(
        title, lang, subtitle=t("batch_live_subtitle", lang), height=460,
        xaxis={"domain": list(x_left), "title": {"text": t("batch_axis_ago", lang)}, "zeroline": False},
        # counted from 1 (its 0 is the axis line): the time axis's first label ("−119") reached under a 0 there
        yaxis={"title": {"text": t("batch_axis_sessions", lang)}, "rangemode": "tozero",
               **({"tickvals": list(range(1, top + 1))} if top <= 12 else {})},
        # from half a session: every pass carries one or more, and a 0 here sat on the time axis's 0 in the corner
        xaxis2={"domain": list(x_right), "anchor": "y2", "title": {"text": t("batch_axis_sessions", lang)},
                "range": [0.5, max(carried, default=1) + 0.5], "dtick": 1 if max(carried, default=0) < 8 else None},
        yaxis2={"anchor": "x2", "title": {"text": t("batch_axis_ms", lang)}, "rangemode": "tozero"},
        annotations=annotations, margin={"t": 130},
    )
    return chart(traces, layout)


def throughput_chart(m, model_name: str, lang: str = "en") -> dict:
    """Left: ms of one decode pass (bars) and ms per token (line) at each batch size. Right: tokens/s of a
    batch-1 decode, the largest batch's decode, and a prefill of a long prompt."""
    x_left, x_right = domains([3, 2], 0.12)
    sizes = [str(p.batch) for p in m.passes]
    biggest = m.passes[-1]
    traces = [
        {"type": "bar", "x": sizes, "y": [p.ms for p in m.passes], "xaxis": "x", "yaxis": "y",
         "name": t("batch_ms_pass", lang), "marker": {"color": PASS_COLOR},
         "text": [f"{p.ms:.0f}" for p in m.passes], "textposition": "outside", "cliponaxis": False,
         "textfont": {"size": SMALL_SIZE},
         "hovertext": [t("batch_hover_measured", lang, n=p.batch, ms=f"{p.ms:.1f}", per=f"{p.ms_per_token:.1f}",
                         runs=", ".join(f"{r:.0f}" for r in p.runs)) for p in m.passes],
         "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"role": "pass_ms"}},
        {"type": "scatter", "mode": "lines+markers", "x": sizes, "y": [p.ms_per_token for p in m.passes],
         "xaxis": "x", "yaxis": "y", "name": t("batch_ms_token", lang),
         "line": {"color": TOKEN_COLOR, "width": 3}, "marker": {"size": 9, "symbol": "diamond"},
         "hovertemplate": "%{y:.1f} ms<extra></extra>", "meta": {"role": "token_ms"}},
    ]
    rates = [(t("batch_rate_decode1", lang), m.decode_tokens_per_s, DECODE_COLOR),
             (t("batch_rate_decode", lang, n=biggest.batch), biggest.tokens_per_s, PASS_COLOR),
             (t("batch_rate_prefill", lang, n=m.prefill_tokens), m.prefill_tokens_per_s, PREFILL_COLOR)]
    traces.append({"type": "bar", "x": [r[0] for r in rates], "y": [r[1] for r in rates], "xaxis": "x2",
                   "yaxis": "y2", "marker": {"color": [r[2] for r in rates]}, "showlegend": False,
                   "text": [f"{r[1]:.0f}" for r in rates], "textposition": "outside", "cliponaxis": False,
                   "textfont": {"size": SMALL_SIZE}, "hovertemplate": "%{x}: %{y:.0f}<extra></extra>",
                   "meta": {"role": "rates"}})
    subtitle = t("batch_measure_subtitle", lang, model=MODEL_NAMES.get(model_name, model_name), params=f"{m.parameters / 1e6:.0f}",
                 bytes=format_bytes(m.weight_bytes), ms=f"{m.decode_ms:.0f}",
                 bandwidth=f"{m.bandwidth_bytes_per_s / 2**30:.1f}", context=m.context_tokens, threads=m.threads)
    layout = base_layout(
        t("batch_measure_title", lang, n=biggest.batch, ratio=f"{biggest.ms / m.decode_ms:.1f}",
          tokens=f"{biggest.tokens_per_s / m.decode_tokens_per_s:.1f}"), lang,
        subtitle=subtitle, height=560,
        xaxis={"domain": list(x_left), "title": {"text": t("batch_axis_batch", lang)}, "type": "category"},
        yaxis={"title": {"text": t("batch_axis_ms", lang)}, "rangemode": "tozero"},
        xaxis2={"domain": list(x_right), "anchor": "y2", "type": "category", "tickangle": 0},
        yaxis2={"anchor": "x2", "title": {"text": t("batch_axis_tps", lang)}, "rangemode": "tozero"},
        annotations=[panel_title(t("batch_panel_passes", lang), x_left, 1.0),
                     panel_title(t("batch_panel_rates", lang), x_right, 1.0)],
        legend={"orientation": "h", "x": 0, "y": -0.3, "font": {"size": SMALL_SIZE}}, margin={"t": 170, "b": 130},
    )
    return chart(traces, layout)


def throughput_sentence(m, lang: str = "en") -> str:
    """The measurement in two plain sentences: what batching costs, and decode against prefill."""
    biggest = m.passes[-1]
    return t("batch_measure_sentence", lang, n=biggest.batch, ms1=f"{m.decode_ms:.0f}", msn=f"{biggest.ms:.0f}",
             per=f"{biggest.ms_per_token:.1f}", bytes=format_bytes(m.weight_bytes),
             bandwidth=f"{m.bandwidth_bytes_per_s / 2**30:.1f}", decode=f"{m.decode_tokens_per_s:.0f}",
             prefill=f"{m.prefill_tokens_per_s:.0f}", ratio=f"{biggest.ms / m.decode_ms:.1f}",
             speed=f"{m.prefill_tokens_per_s / m.decode_tokens_per_s:.0f}") + _noise_note(m, lang)


def _noise_note(m, lang: str) -> str:
    """How the numbers were taken (a warm-up, then the median of the runs), and plainly when they cannot conclude."""
    runs = len(m.passes[0].runs)
    note = " " + t("batch_spread_note", lang, runs=runs)
    return note + (" " + t("batch_noisy", lang) if not getattr(m, "conclusive", True) else "")


batching_figure = as_figure(batching_chart)
throughput_figure = as_figure(throughput_chart)
