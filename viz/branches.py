"""Branches: the tree of a prompt's texts from their fork points, and two of them side by side from where they split.

Pure functions of plain values (model.decoding.branches.BranchSummary-like rows and StepRecords); no torch, no gradio.
"""
from __future__ import annotations

import html

from viz.i18n import counted, t
from viz.labels import names
from viz.style import FATE_COLORS, INK, MUTED, SMALL_SIZE, as_figure, base_layout, chart, narrow_layout, wrap_text

CURRENT_COLOR = FATE_COLORS["chosen"]
OTHER_COLOR = "#56B4E9"  # sky blue (Okabe-Ito), the kept branches
SIDE_COLORS = ("#0072B2", "#D55E00")  # branch A, branch B: blue and vermilion, told apart in grey too by dash
CONTEXT_BEFORE = 3  # tokens shown before the split, so the split is read in its sentence
COLUMNS = 8  # steps in one table of the comparison: with the sides' names, about 750 px
MAX_SHOWN = 40  # tokens after the split in the side-by-side table: one projector screen



def tokens(n: int, lang: str) -> str:
    """'1 token', '12 tokens' (Chinese has no plural)."""
    return counted(n, "branch_tokens_one", "branch_tokens", lang)


def branch_row(r, lang: str) -> str:
    """A branch's name, as its line and the pickers show it: '#3 · 12 tokens · log P -20.41'."""
    return t("branch_row", lang, id=r.id, tokens=tokens(r.length, lang), logp=f"{r.logprob_t1:.2f}")

def branch_tree_chart(rows, lang: str = "en") -> dict:
    """The tree: one horizontal line per text, from its fork point (x = generated steps) to its end, a dotted
    drop from its parent's line at the fork; labelled with its number, length and log P. The current text is bold.

    rows: objects with id, parent, fork, length, logprob_t1 (natural log), current, text (sorted by id).
    """
    rows = list(rows)
    y_of = {r.id: i for i, r in enumerate(rows)}
    data, shapes, wide_labels, phone_labels = [], [], [], []
    for r in rows:
        y = y_of[r.id]
        color, width = (CURRENT_COLOR, 6) if r.current else (OTHER_COLOR, 4)
        label = branch_row(r, lang)
        if r.current:
            here = t("branch_at", lang, at=r.at) if getattr(r, "at", r.length) < r.length else ""
            label = f"<b>{label} · {t('branch_current', lang)}</b>" + (f" · {here}" if here else "")
            if here:  # gone back along it: where the page stands
                data.append({"type": "scatter", "x": [r.at], "y": [y], "mode": "markers", "showlegend": False,
                             "marker": {"symbol": "diamond", "size": 16, "color": INK}, "hoverinfo": "skip",
                             "meta": {"role": "here"}})
        snippet = html.escape(r.text[-60:]).replace("\n", "↵")
        # its label: beside its end on a projector; on a phone (no room beside a long line) above it, from the left
        wide_labels.append({"text": label, "x": r.length, "y": y, "xanchor": "left", "xshift": 10, "yanchor": "middle",
                            "showarrow": False, "font": {"size": SMALL_SIZE}})
        phone_labels.append({"text": label, "x": -0.5, "y": y, "xanchor": "left", "yanchor": "bottom", "yshift": 6,
                             "showarrow": False, "font": {"size": SMALL_SIZE}})
        data.append({"type": "scatter", "x": [r.fork, r.length], "y": [y, y], "mode": "lines+markers",
                     "line": {"color": color, "width": width}, "marker": {"size": [8, 12], "color": color},
                     "hovertext": [t("branch_hover", lang, id=r.id, fork=r.fork,
                                     tokens=tokens(r.length, lang),
                                     logp=f"{r.logprob_t1:.2f}", text=snippet)] * 2,
                     "hovertemplate": "%{hovertext}<extra></extra>", "showlegend": False,
                     "meta": {"role": "branch", "id": r.id, "current": r.current}})
        if r.parent in y_of:
            shapes.append({"type": "line", "x0": r.fork, "x1": r.fork, "y0": y_of[r.parent], "y1": y,
                           "line": {"color": MUTED, "width": 2, "dash": "dot"}})
    longest = max([r.length for r in rows], default=1)
    if len(rows) == 1:  # one text so far: the chart says how to make a second (it looked empty)
        hint = {"text": wrap_text(t("branches_one", lang), 60), "x": 0, "xref": "paper", "xanchor": "left", "y": 0,
                "yref": "paper", "yanchor": "bottom", "yshift": 4, "showarrow": False, "align": "left",
                "font": {"size": SMALL_SIZE + 2, "color": INK}, "name": "one_branch"}
        wide_labels.append(hint)
        phone_labels.append({**hint, "text": wrap_text(t("branches_one", lang), 34)})
    height = max(320, 160 + 56 * len(rows)) + (90 if len(rows) == 1 else 0)
    layout = base_layout(
        t("branches_title", lang), lang, height=height,
        subtitle=t("branches_subtitle", lang, texts=counted(len(rows), "branches_texts_one", "branches_texts", lang)),
        shapes=shapes, annotations=wide_labels,
        xaxis={"title": {"text": t("branches_axis_step", lang)}, "range": [-0.5, longest * 1.6 + 4], "dtick": 5,
               "rangemode": "tozero"},
        yaxis={"tickvals": list(range(len(rows))), "ticktext": [f"#{r.id}" for r in rows], "autorange": "reversed",
               "range": [len(rows) - 0.5, -0.5], "showgrid": False},
    )
    # (the top row's label above its line: the rows start a little lower; one row alone sits high, the hint under it)
    alone = len(rows) == 1
    narrow_layout(layout, annotations=phone_labels, xaxis={"range": [-0.5, longest + 1]},
                  yaxis={"autorange": False, "range": [3.0 if alone else len(rows) - 0.5, -1.1]},
                  **({"height": height + 60} if alone else {}))
    return chart(data, layout)


branch_tree_figure = as_figure(branch_tree_chart)


def split_at(a_steps, b_steps) -> int:
    """Index of the first step where two texts differ (token, settings or forced); their common length if none."""
    n = 0
    for x, y in zip(a_steps, b_steps):
        dx, dy = x.distribution, y.distribution
        if (dx.chosen.id, dx.config, dx.forced) != (dy.chosen.id, dy.config, dy.forced):
            break
        n += 1
    return n


def _cell(step, repeated: bool, lang: str, name: str) -> str:
    """One token of a side: its text, its log p at T = 1 under it; forced and repeated tokens marked."""
    dist = step.distribution
    logp = dist.chosen_logprob_t1
    shade = min(1.0, -logp / 8)  # 0 = certain, 1 = log p <= -8: the darker red, the less the model expected it
    style = f"background:rgba(213,94,0,{0.08 + 0.55 * shade:.2f})"
    marks = ("!" if dist.forced else "") + ("↻" if repeated else "")
    title = t("compare_cell_title", lang, step=step.step, logp=f"{logp:.2f}", rank=dist.chosen_rank)
    if dist.forced:
        title += " · " + t("chips_forced", lang)
    if repeated:
        title += " · " + t("compare_repeated", lang)
    text = name  # escaped once, by viz.labels (token_label escaped it already: html.escape again showed &lt;)
    return (f'<td class="tbt-branch-cell{" tbt-repeated" if repeated else ""}" style="{style}" '
            f'title="{html.escape(title)}"><div class="tbt-branch-token">{text}</div>'
            f'<div class="tbt-branch-logp">{logp:.2f}{(" " + marks) if marks else ""}</div></td>')


def branch_compare_html(a_id: int, a_steps, a_repeated, b_id: int, b_steps, b_repeated, lang: str = "en") -> str:
    """Two texts side by side, aligned by step from a few tokens before they split: each token with its log p.

    a_repeated / b_repeated: one bool per step, True where the token lies in a repeated n-gram (model.decoding.branches).
    The split column has a heavy left border; a summary line gives each side's log P after the split.
    """
    split = split_at(a_steps, b_steps)
    start = max(0, split - CONTEXT_BEFORE)
    end = min(max(len(a_steps), len(b_steps)), split + MAX_SHOWN)
    sides = []
    for name, bid, steps, rep in (("A", a_id, a_steps, a_repeated), ("B", b_id, b_steps, b_repeated)):
        cells, shown = [], names([s.token for s in steps])
        for i in range(start, end):
            cell = _cell(steps[i], bool(rep[i]), lang, shown[i]) if i < len(steps) else '<td class="tbt-branch-empty"></td>'
            cells.append(cell.replace("<td ", '<td data-split="1" ', 1) if i == split else cell)
        after = sum(s.distribution.chosen_logprob_t1 for s in steps[split:])
        label = t("compare_side", lang, side=name, id=bid, n=len(steps) - split, logp=f"{after:.2f}")
        first, _, rest = label.partition(" · ")
        sides.append((f'<th class="tbt-branch-name">{html.escape(first)}<br><small>{html.escape(rest)}</small></th>', cells))
    # COLUMNS steps a table, the tables side by side as far as the width goes, then under one another: no sideways
    # scroll at a 1280 projector (the 43 steps of one table were twice its width)
    tables = []
    for lo in range(start, end, COLUMNS):
        hi = min(end, lo + COLUMNS)
        head = "".join(f'<th class="{"tbt-split" if i == split else ""}">{i + 1}</th>' for i in range(lo, hi))
        rows = "".join(f'<tr>{th}{"".join(cells[lo - start:hi - start])}</tr>' for th, cells in sides)
        tables.append(f'<div class="tbt-branch-part"><table class="tbt-branch-table">'
                      f'<tr><th>{html.escape(t("compare_step", lang))}</th>{head}</tr>{rows}</table></div>')
    note = t("compare_same", lang) if split >= min(len(a_steps), len(b_steps)) and len(a_steps) == len(b_steps) \
        else t("compare_split", lang, step=split + 1)
    legend = t("compare_legend", lang)
    return (f'<div class="tbt-branch-compare" lang="{lang}" data-split="{split}">'
            f'<p class="tbt-branch-note"><b>{html.escape(note)}</b> {html.escape(legend)}</p>'
            f'<div class="tbt-branch-parts">{"".join(tables)}</div></div>'
            f'<style>{COMPARE_CSS}</style>')


# Only this on-demand table uses these rules; sent with it (once per Compare), not per step.
COMPARE_CSS = """
.tbt-branch-parts{display:flex;flex-wrap:wrap;gap:10px 24px}
.tbt-branch-part{max-width:100%;overflow-x:auto}
.tbt-branch-table{border-collapse:collapse;font-size:16px;color:#222}
.tbt-branch-table th{font-weight:normal;color:#666;padding:2px 6px;text-align:center;white-space:nowrap}
.tbt-branch-table th.tbt-branch-name{text-align:left;color:#222;font-weight:bold;white-space:normal;min-width:9em;max-width:13em}
.tbt-branch-name small{font-weight:normal;font-size:14px;color:#444}
.tbt-branch-cell{padding:4px 6px;border:1px solid #fff;text-align:center;white-space:nowrap}
.tbt-branch-token{font-family:monospace;font-size:17px}
.tbt-branch-logp{font-size:14px;color:#444}
.tbt-branch-table [data-split],.tbt-branch-table th.tbt-split{border-left:4px solid #222}
.tbt-repeated{outline:2px dashed #0072B2;outline-offset:-3px}
.tbt-branch-note{font-size:16px;margin:4px 0 8px}
"""


def branch_logp_chart(a_id: int, a_steps, b_id: int, b_steps, lang: str = "en") -> dict:
    """log p of every token of two texts against the step, and where they split: after a forced unlikely token,
    does the model recover (log p back near 0) or keep writing from its own mistake?"""
    split = split_at(a_steps, b_steps)
    data = []
    for (name, bid, steps), color, dash in zip((("A", a_id, a_steps), ("B", b_id, b_steps)), SIDE_COLORS,
                                               ("solid", "dash")):
        data.append({"type": "scatter", "mode": "lines+markers", "name": t("compare_trace", lang, side=name, id=bid),
                     "x": [s.step for s in steps], "y": [s.distribution.chosen_logprob_t1 for s in steps],
                     "text": names([s.token for s in steps]),
                     "hovertemplate": "%{x}: %{text} · log p = %{y:.2f}<extra></extra>",
                     "line": {"color": color, "dash": dash, "width": 3}, "marker": {"size": 7}})
    layout = base_layout(
        t("compare_chart_title", lang), lang, height=420,
        shapes=[{"type": "line", "x0": split + 0.5, "x1": split + 0.5, "yref": "paper", "y0": 0, "y1": 1,
                 "line": {"color": INK, "width": 2, "dash": "dot"}}],
        annotations=[{"x": split + 0.5, "y": 1, "yref": "paper", "text": t("compare_split_mark", lang), "xanchor": "left",
                      "yanchor": "bottom", "showarrow": False, "font": {"size": SMALL_SIZE}}],
        xaxis={"title": {"text": t("branches_axis_step", lang)}},
        yaxis={"title": {"text": t("compare_axis_logp", lang)}},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0.3},
    )
    return chart(data, layout)


branch_logp_figure = as_figure(branch_logp_chart)
