"""Beam search: the tree of a search up to a step (kept, finished and pruned candidates), and its finished beams
set beside the greedy and the sampled text (log P, length, repeated n-grams).

Pure functions of plain records (model.strategies.beams.BeamStep / TextSummary-like values); no torch, no gradio.
"""
from __future__ import annotations

import html

from viz.i18n import t
from viz.style import (FATE_COLORS, INK, MUTED, SMALL_SIZE, as_figure, base_layout, chart, narrow_layout, text_px,
                        token_label)

BEAM_COLORS = {"kept": FATE_COLORS["kept"], "finished": FATE_COLORS["chosen"], "pruned": "#BBBBBB"}
BEAM_SYMBOLS = {"kept": "circle", "finished": "square", "pruned": "x-thin-open"}
FATE_WORDS = {"kept": "beams_fate_kept", "finished": "beams_fate_finished", "pruned": "beams_fate_pruned"}
ROW_WORDS = {"greedy": "beams_row_greedy", "sampled": "beams_row_sampled"}
BEST_COLOR = "#009E73"  # bluish green: the path of the best finished beam
STEPS_IN_VIEW = 8  # steps the tree shows at once at most (drag to see earlier ones)
LABEL_CHARS = 10  # a token's label on the tree, cut to this many characters
# The plot's width in px (between the axes) that the steps in view share: a 1280 px window's (a 1920 px one has
# more), and a 390 px phone's; each step's column is as wide as its widest label and a gap, so no two touch.
PLOT_PX, PHONE_PLOT_PX, PHONE_LABEL_SIZE, LABEL_GAP_PX = 740, 290, 12, 14
# A white edge around each label: the lines drawn to a token cross its label, which stays readable over them.
HALO = "1px 1px 1px #fff, -1px -1px 1px #fff, 1px -1px 1px #fff, -1px 1px 1px #fff, 0 0 3px #fff"
PHONE_LEGEND_PX = 100  # a phone's legend under the plot: up to four rows, one per fate and the best path


def _short(display: str) -> str:
    text = display if len(display) <= LABEL_CHARS else display[: LABEL_CHARS - 1] + "…"
    return token_label(text)


def _rank_of_slot(step) -> dict[int, int]:
    """Where each live beam of the next step sits on this step's column: slot -> rank."""
    return {c.slot: c.rank for c in step.candidates if c.fate == "kept"}


def steps_in_view(labels: list[str], plot_px: float, size: float) -> int:
    """How many steps a plot `plot_px` wide shows at once so that no two labels of a row touch: 2..STEPS_IN_VIEW."""
    widest = max([text_px(s, size) for s in labels] + [0.0])
    return max(2, min(STEPS_IN_VIEW, int(plot_px // (widest + LABEL_GAP_PX))))


def _x_range(last: int, steps: int) -> list[float]:
    """The x axis's range: the last `steps` steps, the newest at the right (the prompt's dot when it fits)."""
    return [max(-0.9, last - steps + 0.4), last + 0.6]


def path_of(steps, step: int, rank: int) -> list[tuple[int, int]]:
    """The (step, rank) points from the prompt (step 0) to candidate `rank` of step `step` (1-based)."""
    points = [(step, rank)]
    while step > 1:
        parent = steps[step - 1].candidates[rank].parent
        step, rank = step - 1, _rank_of_slot(steps[step - 2])[parent]
        points.append((step, rank))
    points.append((0, 0))
    return points[::-1]


def beam_tree_chart(steps, shown: int, width: int, length_penalty: float, lang: str = "en",
                    best: tuple[int, int] | None = None) -> dict:
    """The search up to step `shown`: x = step, y = rank of the candidate among the step's K best by cumulative
    log P (0 at the top). A line joins each candidate to the live beam it extends. Kept: blue circles (the next
    step's live beams), finished: vermilion squares (ended with an end token or at the length limit, and
    entered the finished list), pruned: grey crosses. Labels are the tokens.

    steps: BeamStep-like records (candidates with rank, parent, display, logprob, score, fate, slot);
    best: (step, rank) of the best finished beam, whose path is drawn bold once the search is shown whole.
    """
    steps = list(steps)[: max(1, shown)]
    data, rows = [], 1
    for fate in ("pruned", "kept", "finished"):  # pruned first: drawn under the others
        line_x, line_y, x, y, text, hover = [], [], [], [], [], []
        for s in steps:
            parent_rank = {0: 0} if s.step == 1 else _rank_of_slot(steps[s.step - 2])  # live slot -> its rank
            for c in s.candidates:
                rows = max(rows, c.rank + 1)
                if c.fate != fate:
                    continue
                line_x += [s.step - 1, s.step, None]
                line_y += [parent_rank.get(c.parent, 0), c.rank, None]
                x.append(s.step)
                y.append(c.rank)
                text.append(_short(c.display))
                hover.append(t("beams_hover", lang, step=s.step, token=token_label(c.display), logp=f"{c.logprob:.2f}",
                               score=f"{c.score:.2f}", fate=t(FATE_WORDS[c.fate], lang), parent=c.parent + 1))
        color = BEAM_COLORS[fate]
        data.append({"type": "scatter", "mode": "lines", "x": line_x, "y": line_y, "hoverinfo": "skip",
                     "showlegend": False, "line": {"color": color, "width": 1 if fate == "pruned" else 2,
                                                   "dash": "dot" if fate == "pruned" else "solid"}})
        data.append({"type": "scatter", "mode": "markers+text", "x": x, "y": y, "text": text,
                     "textposition": "top center", "name": t(FATE_WORDS[fate], lang),
                     "cliponaxis": False,  # (the top row's tokens stand just above the plot area's edge)
                     "textfont": {"size": SMALL_SIZE, "color": MUTED if fate == "pruned" else INK, "shadow": HALO},
                     "marker": {"symbol": BEAM_SYMBOLS[fate], "size": 9 if fate == "pruned" else 11, "color": color,
                                "line": {"color": color, "width": 2}},
                     "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"fate": fate}})
    if best is not None and best[0] <= len(steps):
        points = path_of(steps, *best)
        data.append({"type": "scatter", "mode": "lines", "x": [p[0] for p in points], "y": [p[1] for p in points],
                     "name": t("beams_best_path", lang), "hoverinfo": "skip",
                     "line": {"color": BEST_COLOR, "width": 5}, "opacity": 0.55, "meta": {"role": "best"}})
    data.append({"type": "scatter", "mode": "markers+text", "x": [0], "y": [0], "text": [t("beams_prompt", lang)],
                 "textposition": "middle left", "showlegend": False, "hoverinfo": "skip",
                 "marker": {"size": 13, "color": INK}, "textfont": {"size": SMALL_SIZE}})
    last = len(steps)
    labels = [text for trace in data if trace.get("meta", {}).get("fate") for text in trace["text"]]
    height = max(400, 200 + 34 * rows)
    layout = base_layout(
        t("beams_tree_title", lang, step=last, width=width), lang,
        subtitle=t("beams_tree_subtitle", lang, k=len(steps[0].candidates) if steps else 0, width=width,
                   penalty=f"{length_penalty:g}"),
        height=height, dragmode="pan", margin={"t": 135},
        xaxis={"title": {"text": t("beams_axis_step", lang)}, "range": _x_range(last, steps_in_view(labels, PLOT_PX,
                                                                                                      SMALL_SIZE)),
               "dtick": 1,
               "zeroline": False},
        yaxis={"title": {"text": t("beams_axis_rank", lang)}, "range": [rows - 0.4, -0.8], "dtick": 1,
               "zeroline": False, "tickvals": list(range(rows)), "ticktext": [str(r + 1) for r in range(rows)]},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0.0},
    )
    # On a phone fewer steps in view, and the legend (a row per entry there) under the plot, clear of the subtitle
    narrow_layout(layout, xaxis={"range": _x_range(last, steps_in_view(labels, PHONE_PLOT_PX, PHONE_LABEL_SIZE))},
                  legend={"yref": "container", "y": 0.0, "yanchor": "bottom"}, height=height + PHONE_LEGEND_PX,
                  margin={"t": 110, "b": layout["margin"]["b"] + PHONE_LEGEND_PX})
    return chart(data, layout)


beam_tree_figure = as_figure(beam_tree_chart)


def _kind_label(row, lang: str) -> str:
    if row.kind == "beam":
        return t("beams_row_beam", lang, i=row.index)
    return t(ROW_WORDS[row.kind], lang)


def _tokens_html(row, lang: str) -> str:
    """The text token by token, the ones inside a repeated n-gram boxed."""
    out = []
    title = html.escape(t("compare_repeated", lang))
    for display, repeated in zip(row.displays, row.repeated):
        token = html.escape(display, quote=False)
        out.append(f'<span class="tbt-beam-rep" title="{title}">{token}</span>' if repeated else token)
    return "".join(out)


def beam_texts_html(rows, lang: str = "en") -> str:
    """The finished beams, the greedy and the sampled text side by side: log P (a bar: the longer, the less
    likely), length, log P per token, and how many tokens repeat an earlier 3-gram (a bar, and boxed in the text).

    rows: TextSummary-like values (kind, index, displays, repeated, logprob, score, length, repeated_tokens).
    """
    rows = list(rows)
    worst = max([-r.logprob for r in rows] + [1e-9])
    body = []
    for r in rows:
        per_token = r.logprob / r.length if r.length else 0.0
        share = r.repeated_tokens / r.length if r.length else 0.0
        score = "" if r.score is None else f"{r.score:.3f}"
        logp_bar = f'<div class="tbt-beam-bar" style="width:{100 * -r.logprob / worst:.0f}%"></div>'
        rep_bar = f'<div class="tbt-beam-bar tbt-beam-bar-rep" style="width:{100 * share:.0f}%"></div>'
        body.append(
            f'<tr class="tbt-beam-{r.kind}" data-kind="{r.kind}"><th>{html.escape(_kind_label(r, lang))}</th>'
            f'<td class="tbt-beam-text">{_tokens_html(r, lang)}</td>'
            f'<td class="tbt-num">{r.logprob:.2f}{logp_bar}</td><td class="tbt-num">{per_token:.2f}</td>'
            f'<td class="tbt-num">{r.length}</td><td class="tbt-num">{score}</td>'
            f'<td class="tbt-num">{r.repeated_tokens} / {r.length}{rep_bar}</td></tr>')
    heads = "".join(f"<th>{html.escape(t(k, lang))}</th>" for k in
                    ("beams_col_which", "beams_col_tokens", "beams_col_logp", "beams_col_per_token",
                     "beams_col_length", "beams_col_score", "beams_col_repeated"))
    return (f'<div class="tbt-beam-texts" lang="{lang}"><p class="tbt-beam-note">{html.escape(t("beams_texts_note", lang))}</p>'
            f'<div style="overflow-x:auto"><table class="tbt-beam-table"><tr>{heads}</tr>{"".join(body)}</table></div>'
            f'</div><style>{TEXTS_CSS}</style>')


# Only this table uses these rules; sent with it (once per search), not per step.
TEXTS_CSS = """
.tbt-beam-table{border-collapse:collapse;font-size:16px;color:#222;width:100%}
.tbt-beam-table th{font-weight:normal;color:#555;padding:4px 6px;text-align:left}
.tbt-beam-table tr>th:first-child{font-weight:bold;color:#222;max-width:8em}
.tbt-beam-table td{padding:4px 6px;border-top:1px solid #ddd;vertical-align:top}
.tbt-beam-text{font-family:monospace;font-size:15px;white-space:pre-wrap;word-break:break-word;width:45%}
.tbt-beam-rep{outline:2px dashed #0072B2;outline-offset:-1px;background:#E8F1F8}
.tbt-num{text-align:right;white-space:nowrap}
.tbt-beam-bar{height:6px;background:#D55E00;margin-top:3px;margin-left:auto}
.tbt-beam-bar-rep{background:#0072B2}
.tbt-beam-greedy th,.tbt-beam-sampled th{color:#444}
.tbt-beam-greedy td,.tbt-beam-greedy th{border-top:2px solid #888}
.tbt-beam-note{font-size:16px;margin:4px 0 8px}
"""
