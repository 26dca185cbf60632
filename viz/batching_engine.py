"""The engine's own numbers over time (an engine's model in The class, batched): requests running and waiting, and
the KV cache's use with the prefix cache's hit rate, as the engine itself publishes them at /metrics.

Records are read by attribute (model/vllm/metrics.py EngineMetrics and MetricsInterval): viz never
imports the model. Only counts and fractions reach this figure, never a request's text.
"""
from __future__ import annotations

from viz.i18n import t
from viz.style import MUTED, SMALL_SIZE, as_figure, base_layout, chart, domains, panel_title

RUNNING_COLOR = "#0072B2"  # blue
WAITING_COLOR = "#D55E00"  # vermillion
KV_COLOR = "#009E73"  # bluish green
HIT_COLOR = "#CC79A7"  # reddish purple
MIN_SPAN_S = 30  # the time axes show at least this many seconds


def engine_metrics_chart(samples, intervals, now: float, poll_s: float, lang: str = "en") -> dict:
    """Left: requests the engine runs and holds waiting at each reading (seconds ago). Right: the KV cache's use and
    the prefix cache's hit rate of each interval (prefix tokens found / looked up), both in %; no point where the
    interval looked nothing up."""
    x_left, x_right = domains([1, 1], 0.1)
    ago = [s.at - now for s in samples]
    ends = [i.at - now for i in intervals]
    rates = [None if i.hit_rate is None else 100 * i.hit_rate for i in intervals]
    line = {"type": "scatter", "mode": "lines+markers"}
    traces = [
        {**line, "x": ago, "y": [s.running for s in samples], "xaxis": "x", "yaxis": "y",
         "name": t("engine_running", lang), "line": {"color": RUNNING_COLOR, "width": 3, "shape": "hv"},
         "hovertemplate": "%{y}<extra></extra>", "meta": {"role": "running"}},
        {**line, "x": ago, "y": [s.waiting for s in samples], "xaxis": "x", "yaxis": "y",
         "name": t("engine_waiting", lang), "line": {"color": WAITING_COLOR, "width": 3, "dash": "dot", "shape": "hv"},
         "hovertemplate": "%{y}<extra></extra>", "meta": {"role": "waiting"}},
        {**line, "x": ago, "y": [100 * s.kv_usage for s in samples], "xaxis": "x2", "yaxis": "y2",
         "name": t("engine_kv_usage", lang), "line": {"color": KV_COLOR, "width": 3},
         "hovertemplate": "%{y:.1f}%<extra></extra>", "meta": {"role": "kv_usage"}},
        {**line, "x": ends, "y": rates, "xaxis": "x2", "yaxis": "y2", "connectgaps": False,
         "name": t("engine_hit_rate", lang), "line": {"color": HIT_COLOR, "width": 3, "dash": "dash"},
         "marker": {"symbol": "diamond", "size": 8},
         "hovertemplate": "%{y:.0f}%<extra></extra>", "meta": {"role": "hit_rate"}},
    ]
    newest = samples[-1] if samples else None
    title = (t("engine_metrics_title", lang, running=newest.running, waiting=newest.waiting,
               kv=f"{100 * newest.kv_usage:.1f}") if newest else t("engine_metrics_none", lang))
    top = max((max(s.running, s.waiting) for s in samples), default=0)
    span = [min([-MIN_SPAN_S, *ago]) - 1, 0]  # seconds ago, up to now: at least half a minute while few readings exist
    annotations = [panel_title(t("engine_panel_requests", lang), x_left, 1.0),
                   panel_title(t("engine_panel_cache", lang), x_right, 1.0)]
    if len(samples) < 2:
        annotations.append({"text": t("engine_metrics_first", lang, poll=f"{poll_s:.0f}"), "x": sum(x_left) / 2,
                            "xref": "paper", "xanchor": "center", "y": 0.5, "yref": "paper", "showarrow": False,
                            "font": {"size": SMALL_SIZE, "color": MUTED}})
    layout = base_layout(
        title, lang, subtitle=t("engine_metrics_subtitle", lang, poll=f"{poll_s:.0f}"), height=500,
        xaxis={"domain": list(x_left), "title": {"text": t("batch_axis_ago", lang)}, "zeroline": False, "range": span},
        yaxis={"title": {"text": t("engine_axis_requests", lang)}, "rangemode": "tozero",
               **({"dtick": 1} if top < 8 else {})},
        xaxis2={"domain": list(x_right), "anchor": "y2", "title": {"text": t("batch_axis_ago", lang)},
                "zeroline": False, "range": span},
        yaxis2={"anchor": "x2", "title": {"text": "%"}, "range": [0, 105]},
        annotations=annotations, margin={"t": 130, "b": 150},
        legend={"orientation": "h", "x": 0, "y": -0.45, "yanchor": "top", "font": {"size": SMALL_SIZE}},
    )
    return chart(traces, layout)


engine_metrics_figure = as_figure(engine_metrics_chart)
