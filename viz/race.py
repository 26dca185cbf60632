"""A sampler race drawn: the two texts side by side, where they split, and each step's log p and entropy.

Pure functions of a plain record (model.strategies.race.Race: sides of RaceStep rows with TokenInfo); no torch, no gradio.
"""
from __future__ import annotations

import html

from viz.branches import SIDE_COLORS
from viz.i18n import t
from viz.labels import names
from viz.style import INK, SMALL_SIZE, as_figure, base_layout, chart, format_temperature

SIDES = ("A", "B")


def settings_text(cfg, lang: str = "en") -> str:
    """A side's settings in one line: T, the cuts that are on, the order, the seed."""
    parts = [f"T {format_temperature(cfg.temperature)}"]
    if cfg.top_k:
        parts.append(f"top-k {cfg.top_k}")
    if cfg.top_p < 1:
        parts.append(f"top-p {cfg.top_p:g}")
    if cfg.min_p > 0:
        parts.append(f"min-p {cfg.min_p:g}")
    if cfg.repetition_penalty != 1:
        parts.append(t("race_penalty", lang, value=f"{cfg.repetition_penalty:g}"))
    parts.append(t("race_order_hf", lang) if cfg.order == "transformers" else t("race_order_last", lang))
    parts.append(t("race_seed", lang, seed=cfg.seed))
    return " · ".join(parts)


def _side_html(name: str, side, split: int | None, lang: str) -> str:
    """One side's text: the tokens both sides share in plain ink, from the split on in the side's colour, the
    split token framed; each token's hover gives its step, log p (T = 1 and as drawn) and entropy."""
    color = SIDE_COLORS[SIDES.index(name)]
    spans, shown = [], names([s.token for s in side.steps])
    for i, s in enumerate(side.steps, start=1):
        after = split is not None and i >= split
        title = t("race_token_title", lang, step=i, logp=f"{s.logprob_t1:.2f}", logq=f"{s.logprob_sampled:.2f}",
                  h=f"{s.entropy_sampled_bits:.2f}", u=f"{s.u:.3f}")
        style = f"color:{color};font-weight:bold" if after else ""
        if split is not None and i == split:
            style += f";outline:3px solid {color};outline-offset:1px"
        text = shown[i - 1]  # escaped once (token_label escapes: html.escape again showed &lt;)
        spans.append(f'<span class="tbt-race-token" data-step="{i}" style="{style}" title="{html.escape(title)}">'
                     f'{text}</span>')
    end = " ■" if side.ended else ""
    summary = t("race_side_summary", lang, side=name, settings=settings_text(side.config, lang), n=len(side.steps),
                logp=f"{side.logprob_t1:.2f}", logq=f"{side.logprob_sampled:.2f}", h=f"{side.mean_entropy_t1_bits:.2f}")
    return (f'<div class="tbt-race-side" data-side="{name}" style="border-left:6px solid {color}">'
            f'<p class="tbt-race-summary">{html.escape(summary)}</p>'
            f'<p class="tbt-race-text">{"<wbr>".join(spans)}{end}</p></div>')  # <wbr>: a line may break between tokens


def race_html(race, lang: str = "en") -> str:
    """Both texts, the step where they first differ named, and what the colours mean."""
    split = race.diverged_at
    note = t("race_split", lang, step=split) if split is not None else t("race_same", lang, n=len(race.a.steps))
    sides = "".join(_side_html(name, side, split, lang) for name, side in zip(SIDES, (race.a, race.b)))
    return (f'<div class="tbt-race" lang="{lang}" data-split="{split or 0}">'
            f'<p class="tbt-race-note"><b>{html.escape(note)}</b> {html.escape(t("race_legend", lang))}</p>'
            f'{sides}</div><style>{RACE_CSS}</style>')


# Only this on-demand block uses these rules; sent with it.
RACE_CSS = """
.tbt-race{font-size:16px;color:#222}
.tbt-race-note{margin:4px 0 8px}
.tbt-race-side{padding:4px 10px;margin:8px 0;background:#fafafa}
.tbt-race-summary{font-size:15px;color:#333;margin:2px 0}
.tbt-race-text{font-family:monospace;font-size:17px;line-height:1.7;overflow-wrap:anywhere;margin:4px 0}
.tbt-race-token{padding:0 1px}
"""


def race_chart(race, lang: str = "en") -> dict:
    """Per step, each side: the running log P of its text at T = 1 (top) and the entropy of the distribution it drew
    from (bottom), with the split marked. Blue and solid for A, vermilion and dashed for B."""
    data = []
    for name, side, color, dash in zip(SIDES, (race.a, race.b), SIDE_COLORS, ("solid", "dash")):
        x = list(range(1, len(side.steps) + 1))
        running, total = [], 0.0
        for s in side.steps:
            total += s.logprob_t1
            running.append(total)
        words = names([s.token for s in side.steps])
        common = {"x": x, "text": words, "mode": "lines+markers", "line": {"color": color, "dash": dash, "width": 3},
                  "marker": {"size": 6}, "legendgroup": name}
        data.append({"type": "scatter", "y": running, "name": t("race_trace", lang, side=name), **common,
                     "hovertemplate": "%{x}: %{text} · log P = %{y:.2f}<extra></extra>"})
        data.append({"type": "scatter", "y": [s.entropy_sampled_bits for s in side.steps], "xaxis": "x2",
                     "yaxis": "y2", "showlegend": False, "name": t("race_trace", lang, side=name), **common,
                     "hovertemplate": "%{x}: %{text} · H = %{y:.2f} bits<extra></extra>"})
    shapes, annotations = [], []
    if race.diverged_at is not None:
        for axes in (("x", "y"), ("x2", "y2")):
            shapes.append({"type": "line", "x0": race.diverged_at - 0.5, "x1": race.diverged_at - 0.5,
                           "xref": axes[0], "yref": f"{axes[1]} domain", "y0": 0, "y1": 1, "name": "split",
                           "line": {"color": INK, "width": 2, "dash": "dot"}})
        annotations.append({"x": race.diverged_at - 0.5, "y": 1, "xref": "x", "yref": "y domain", "showarrow": False,
                            "text": t("race_split_mark", lang), "xanchor": "left", "yanchor": "bottom",
                            "font": {"size": SMALL_SIZE}})
    layout = base_layout(
        t("race_chart_title", lang), lang, height=560, shapes=shapes, annotations=annotations,
        xaxis={"domain": [0, 1], "anchor": "y", "matches": "x2", "showticklabels": False},
        yaxis={"domain": [0.55, 1], "title": {"text": t("race_axis_logp", lang)}},
        xaxis2={"domain": [0, 1], "anchor": "y2", "title": {"text": t("race_axis_step", lang)}},
        yaxis2={"domain": [0, 0.42], "title": {"text": t("race_axis_entropy", lang)}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0.3},
    )
    return chart(data, layout)


race_figure = as_figure(race_chart)
