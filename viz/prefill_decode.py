"""Prefill against decode: tokens per second of each, where each is bound (a roofline of this machine's measured
ceilings), what a long prefill does to a class's decode steps three ways, and the engine's own numbers.

Pure functions of plain records (model.speed.prefill_decode.PrefillDecode, model.vllm.prefill.EngineProbe).
"""
from __future__ import annotations

import math

from viz.i18n import t
from viz.style import (KEY_COLOR, MUTED, SMALL_SIZE, as_figure, base_layout, chart, domains, legend_key, model_name,
                        narrow_layout)

PREFILL_COLOR, DECODE_COLOR = "#D55E00", "#0072B2"  # vermillion, blue (colour-blind safe)
TRANSFER_COLOR, CEILING = "#999999", "#444444"
KIND_COLORS = {"decode": DECODE_COLOR, "prefill": PREFILL_COLOR, "chunk": PREFILL_COLOR, "transfer": TRANSFER_COLOR}
# the words of each kind, by key (every key a literal: tests/test_strings.py finds them)
BOUND = {"memory": "pd_bound_memory", "compute": "pd_bound_compute"}
HOVER = {"prefill": "pd_hover_prefill", "decode": "pd_hover_decode"}
KIND = {"prefill": "pd_kind_prefill", "decode": "pd_kind_decode"}
POINTS = {"prefill": "pd_points_prefill", "decode": "pd_points_decode"}
NAME = {"prefill": "pd_name_prefill", "decode": "pd_name_decode"}
SEGMENT = {"decode": "pd_seg_decode", "prefill": "pd_seg_prefill", "chunk": "pd_seg_chunk", "transfer": "pd_seg_transfer"}


def _si(x: float) -> str:
    """A rate such as 41.2 G: three significant figures and a unit prefix."""
    for value, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= value:
            return f"{x / value:.3g} {prefix}"
    return f"{x:.3g} "


def speed_chart(m, lang: str = "en") -> dict:
    """Two panels: tokens per second of a prefill by prompt length (left) and of a decode step by batch (right),
    each bar's hover with its pass time, time per token and bound."""
    (left, right) = domains([1.0, 1.0], 0.12)
    data = []
    for p_list, axes, color, kind in ((m.prefill, ("x", "y"), PREFILL_COLOR, "prefill"),
                                      (m.decode, ("x2", "y2"), DECODE_COLOR, "decode")):
        hover = [t(HOVER[kind], lang, size=p.size, ms=f"{p.ms:.1f}", per=f"{p.ms_per_token:.2f}",
                   tps=f"{p.tokens_per_s:,.0f}", bound=t(BOUND[p.bound(m.peak)], lang),
                   runs=", ".join(f"{r:.1f}" for r in p.runs)) for p in p_list]
        data.append({"type": "bar", "x": [str(p.size) for p in p_list], "y": [p.tokens_per_s for p in p_list],
                     "marker": {"color": color}, "text": [f"{p.tokens_per_s:,.0f}" for p in p_list],
                     "textposition": "outside", "cliponaxis": False, "customdata": hover,
                     "hovertemplate": "%{customdata}<extra></extra>", "xaxis": axes[0], "yaxis": axes[1],
                     "showlegend": False, "meta": {"role": kind}})
    top = max(p.tokens_per_s for p in [*m.prefill, *m.decode]) * 1.18
    layout = base_layout(
        t("pd_speed_title", lang, model=model_name(m.model)), lang,
        subtitle=t("pd_speed_subtitle", lang, context=m.context_tokens, threads=m.threads), height=480,
        xaxis={"domain": list(left), "title": {"text": t("pd_axis_prompt", lang)}, "type": "category"},
        yaxis={"title": {"text": t("pd_axis_tps", lang)}, "range": [0, top]},
        xaxis2={"domain": list(right), "anchor": "y2", "title": {"text": t("pd_axis_batch", lang)}, "type": "category"},
        yaxis2={"anchor": "x2", "range": [0, top], "matches": "y", "showticklabels": False},
        margin={"t": 110})
    narrow_layout(layout, xaxis={"domain": [0, 1]}, xaxis2={"visible": False})
    return chart(data, layout)


def roofline_chart(m, lang: str = "en") -> dict:
    """Achieved FLOPs per second against arithmetic intensity (FLOPs per byte), log-log, under this machine's two
    measured ceilings: memory (bandwidth x intensity) and the FLOP rate, meeting at the balance point."""
    peak = m.peak
    passes = [*m.prefill, *m.decode]
    lo = min(p.intensity for p in passes) / 2
    hi = max(max(p.intensity for p in passes) * 2, peak.balance * 4)
    xs = [lo * (hi / lo) ** (i / 40) for i in range(41)]
    ceiling = [min(peak.flops_per_s, peak.bytes_per_s * x) for x in xs]
    data = [{"type": "scatter", "mode": "lines", "x": xs, "y": ceiling, "name": t("pd_roof", lang),
             "line": {"color": CEILING, "width": 2}, "hoverinfo": "skip", "meta": {"role": "roof"}}]
    for kind, color, symbol in (("prefill", PREFILL_COLOR, "circle"), ("decode", DECODE_COLOR, "diamond")):
        chosen = [p for p in passes if p.kind == kind]
        data.append({
            "type": "scatter", "mode": "markers+text", "x": [p.intensity for p in chosen],
            "y": [p.flops_per_s for p in chosen], "name": t(POINTS[kind], lang),
            "text": [str(p.size) for p in chosen], "textposition": "top center" if kind == "prefill" else "bottom center",
            "textfont": {"size": SMALL_SIZE, "color": color},
            "marker": {"color": color, "size": 12, "symbol": symbol},
            "customdata": [t("pd_roof_hover", lang, kind=t(KIND[kind], lang), size=p.size,
                             intensity=f"{p.intensity:.3g}", flops=_si(p.flops_per_s),
                             share=f"{p.flops_per_s / min(peak.flops_per_s, peak.bytes_per_s * p.intensity):.0%}",
                             bound=t(BOUND[p.bound(peak)], lang)) for p in chosen],
            "hovertemplate": "%{customdata}<extra></extra>", "meta": {"role": kind}})
    layout = base_layout(
        t("pd_roof_title", lang, model=model_name(m.model)), lang,
        subtitle=t("pd_roof_subtitle", lang, flops=_si(peak.flops_per_s), bw=_si(peak.bytes_per_s),
                   balance=f"{peak.balance:.3g}", threads=peak.threads), height=520,
        xaxis={"type": "log", "title": {"text": t("pd_axis_intensity", lang)}, "range": [math.log10(lo), math.log10(hi)]},
        yaxis={"type": "log", "title": {"text": t("pd_axis_flops", lang)}},
        shapes=[{"type": "line", "x0": peak.balance, "x1": peak.balance, "xref": "x", "y0": 0, "y1": 1,
                 "yref": "y domain", "line": {"color": MUTED, "dash": "dot", "width": 1}}],
        annotations=[{"text": t("pd_balance", lang, balance=f"{peak.balance:.3g}"), "x": math.log10(peak.balance),
                      "xref": "x", "y": 0.02, "yref": "y domain", "xanchor": "left", "showarrow": False,
                      "font": {"size": SMALL_SIZE, "color": MUTED}}],
        legend={"orientation": "h", "y": -0.22, "x": 0}, margin={"t": 110, "b": 120})
    return chart(data, layout)


def timeline_chart(m, lang: str = "en") -> dict:
    """The class's decode passes (blue) and the long prefill (vermillion: one pass, or its chunks), on one row per
    way to run it; the split way's second row is the PD model's other machine (its prefill, then the cache sent)."""
    rows = {"unchunked": t("pd_row_unchunked", lang), "chunked": t("pd_row_chunked", lang, chunk=m.chunk),
            "split": t("pd_row_split", lang)}
    other = t("pd_row_other", lang)
    data, seen = [], set()
    for line in m.timelines:
        for s in line.segments:
            row = other if s.machine == 1 else rows[line.name]
            name = t(SEGMENT[s.kind], lang)
            data.append({"type": "bar", "orientation": "h", "y": [row], "x": [s.end - s.start], "base": [s.start],
                         "marker": {"color": KIND_COLORS[s.kind], "line": {"color": "white", "width": 1}},
                         "name": name, "legendgroup": s.kind, "showlegend": s.kind not in seen,
                         "hovertemplate": t("pd_seg_hover", lang, kind=name, start=f"{s.start:.0f}", end=f"{s.end:.0f}",
                                            ms=f"{s.end - s.start:.0f}") + "<extra></extra>",
                         "meta": {"role": s.kind, "timeline": line.name}})
            seen.add(s.kind)
    order = [rows["unchunked"], rows["chunked"], rows["split"], other]
    worst = {line.name: line for line in m.timelines}
    layout = base_layout(
        t("pd_time_title", lang, n=m.long_prefill, batch=m.class_batch), lang,
        subtitle=t("pd_time_subtitle", lang, un=f"{worst['unchunked'].worst_gap:.0f}",
                   ch=f"{worst['chunked'].worst_gap:.0f}", sp=f"{worst['split'].worst_gap:.0f}",
                   link=f"{m.link_bytes_per_s / 1e9:.1f}"), height=440,
        barmode="overlay", bargap=0.35,
        xaxis={"title": {"text": t("pd_axis_ms", lang)}, "rangemode": "tozero"},
        yaxis={"categoryorder": "array", "categoryarray": order[::-1], "tickfont": {"size": SMALL_SIZE}},
        legend={"orientation": "h", "y": -0.25, "x": 0}, margin={"t": 110, "b": 110, "l": 230})
    narrow_layout(layout, margin={"l": 150})
    return chart(data, layout)


def engine_probe_chart(probe, lang: str = "en") -> dict:
    """The engine's probe: the streamed decode's gaps between tokens as they arrived (bars, the ones after the long
    prompt was sent in vermillion), and the engine's steps by the tokens they carried (its own histogram)."""
    (left, right) = domains([1.4, 1.0], 0.12)
    gaps = probe.gaps_ms
    colors = [PREFILL_COLOR if i >= probe.sent_at else DECODE_COLOR for i in range(len(gaps))]
    steps = probe.delta.histograms["step_tokens"].per_bucket()
    data = [
        {"type": "bar", "x": list(range(1, len(gaps) + 1)), "y": gaps, "marker": {"color": colors},
         "name": t("pd_engine_gaps", lang), "showlegend": False, "xaxis": "x", "yaxis": "y",
         "hovertemplate": t("pd_engine_gap_hover", lang) + "<extra></extra>", "meta": {"role": "gaps"}},
        {"type": "bar", "x": [f"≤ {le:g}" for le, _ in steps], "y": [n for _, n in steps], "marker": {"color": KEY_COLOR},
         "name": t("pd_engine_steps", lang), "showlegend": False, "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": t("pd_engine_step_hover", lang) + "<extra></extra>", "meta": {"role": "steps"}},
        legend_key(t("pd_engine_before", lang), DECODE_COLOR), legend_key(t("pd_engine_after", lang), PREFILL_COLOR),
    ]
    layout = base_layout(
        t("pd_engine_title", lang, model=probe.model, n=probe.long_tokens), lang,
        subtitle=t("pd_engine_subtitle", lang, steps=probe.steps, largest=f"{probe.largest_step or 0:g}"),
        height=460,
        xaxis={"domain": list(left), "title": {"text": t("pd_engine_axis_token", lang)}},
        yaxis={"title": {"text": t("pd_axis_ms", lang)}, "rangemode": "tozero"},
        xaxis2={"domain": list(right), "anchor": "y2", "type": "category",
                "title": {"text": t("pd_engine_axis_step", lang)}},
        yaxis2={"anchor": "x2", "title": {"text": t("pd_engine_axis_steps", lang)}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.25, "x": 0}, margin={"t": 110, "b": 120})
    narrow_layout(layout, xaxis={"domain": [0, 1]}, xaxis2={"visible": False})
    return chart(data, layout)


roofline_figure = as_figure(roofline_chart)  # the same charts as go.Figures, for a gr.Plot
timeline_figure = as_figure(timeline_chart)
engine_probe_figure = as_figure(engine_probe_chart)


def figures_table(m, lang: str = "en") -> str:
    """Every measured figure as a Markdown table (the view's and the bench's words): per pass, its time, time per
    token, tokens per second, FLOPs per byte, achieved share of its ceiling and bound."""
    head = "| " + " | ".join(t(k, lang) for k in ("pd_col_pass", "pd_col_ms", "pd_col_per", "pd_col_tps",
                                                   "pd_col_intensity", "pd_col_rate", "pd_col_bound")) + " |"
    lines = [head, "|" + "---|" * 7]
    for p in [*m.prefill, *m.decode]:
        name = t(NAME[p.kind], lang, size=p.size)
        lines.append(f"| {name} | {p.ms:.1f} | {p.ms_per_token:.2f} | {p.tokens_per_s:,.0f} | {p.intensity:.3g} | "
                     f"{_si(p.flops_per_s)}FLOP/s | {t(BOUND[p.bound(m.peak)], lang)} |")
    return "\n".join(lines)


def prefill_decode_summary(m, lang: str = "en") -> str:
    """The measurement in a few sentences: the ceilings, the fastest of each kind, and the three timelines' worst
    gap for the class."""
    fast_prefill = max(m.prefill, key=lambda p: p.tokens_per_s)
    one = m.decode[0]
    big = max(m.decode, key=lambda p: p.tokens_per_s)
    lines = {line.name: line for line in m.timelines}
    normal = m.pass_of("decode", m.class_batch).ms if any(p.size == m.class_batch for p in m.decode) else None
    return t("pd_summary", lang, flops=_si(m.peak.flops_per_s), bw=_si(m.peak.bytes_per_s),
             balance=f"{m.peak.balance:.3g}", threads=m.peak.threads,
             pn=fast_prefill.size, ptps=f"{fast_prefill.tokens_per_s:,.0f}", pper=f"{fast_prefill.ms_per_token:.2f}",
             dtps=f"{one.tokens_per_s:,.0f}", dms=f"{one.ms:.1f}", bn=big.size, btps=f"{big.tokens_per_s:,.0f}",
             bms=f"{big.ms:.1f}", ratio=f"{fast_prefill.tokens_per_s / one.tokens_per_s:.0f}",
             batch=m.class_batch, normal=f"{normal or 0:.0f}", n=m.long_prefill,
             un=f"{lines['unchunked'].worst_gap:.0f}", ch=f"{lines['chunked'].worst_gap:.0f}", chunk=m.chunk,
             sp=f"{lines['split'].worst_gap:.0f}", ft_un=f"{lines['unchunked'].first_token_ms:.0f}",
             ft_ch=f"{lines['chunked'].first_token_ms:.0f}", ft_sp=f"{lines['split'].first_token_ms:.0f}",
             ms=f"{m.ms / 1000:.1f}", passes=m.passes)


def engine_probe_summary(probe, lang: str = "en") -> str:
    """The engine's probe in words: its steps and their largest, chunked or not, its prefill time and gaps."""
    h = probe.delta.histograms
    before = [g for i, g in enumerate(probe.gaps_ms) if 0 < i < probe.sent_at]
    after = probe.gaps_ms[probe.sent_at:] or [0.0]
    key = {True: "pd_engine_chunked", False: "pd_engine_whole", None: "pd_engine_no_steps"}[probe.chunked]
    said = t("pd_engine_summary", lang, n=probe.long_tokens, steps=probe.steps, largest=f"{probe.largest_step or 0:g}",
             prefill=f"{1000 * (h['prefill_s'].mean or 0):.0f}", ttft=f"{1000 * (h['ttft_s'].mean or 0):.0f}",
             itl=f"{1000 * (h['itl_s'].mean or 0):.1f}", long_ms=f"{probe.long_ms:.0f}",
             before=f"{(sum(before) / len(before)) if before else 0:.1f}", worst=f"{max(after):.0f}")
    said += " " + t(key, lang, n=probe.long_tokens, largest=f"{probe.largest_step or 0:g}")
    if probe.others:
        said += " " + t("pd_engine_others", lang)
    return said
