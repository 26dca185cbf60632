"""Speculative decoding round by round: drafted tokens kept or rejected, the target's own token, u against p."""
from __future__ import annotations

import html

from model.speed.speculative_records import SpecRound, SpeculativeRun
from viz.i18n import t
from viz.labels import candidate_name, names
from viz.plot_head import LEGEND_ROW_PX, head_px
from viz.style import (INK, MUTED, SMALL_SIZE, as_figure, base_layout, chart, domains, format_prob, panel_title, wrap_text,
                       token_label)

# Okabe-Ito, as everywhere; each kind of cell also has its own mark (and the rejected one a dark outline), so
# colour is not the only cue.
CELL_STYLE = {  # kind: (fill, outline, text colour, mark)
    "accepted": ("#009E73", "#009E73", "white", "✓"),
    "rejected": ("#D55E00", INK, "#000000", "✗"),  # black on vermillion: 5.4:1 (white was 3.9:1)
    "unchecked": ("#FFFFFF", "#AAAAAA", MUTED, ""),
    "residual": ("#0072B2", "#0072B2", "white", "→"),
    "bonus": ("#56B4E9", "#56B4E9", INK, "+"),
    "own": ("#6E6E6E", "#6E6E6E", "white", "·"),  # white on this grey: 5.1:1 (on #999999 it was 2.9:1)
}
CELL_WORDS = {"accepted": "spec_accepted", "rejected": "spec_rejected", "unchecked": "spec_unchecked",
              "residual": "spec_residual", "bonus": "spec_bonus", "own": "spec_own"}
MAX_ROUNDS = 16  # rows drawn; earlier rounds stay in the running counts
TOKEN_CHARS = 9  # a cell shows this many characters of a token


def _cell_text(label: str, mark: str) -> str:
    """A cell's words: its mark and its token's label (viz.labels, escaped), cut to TOKEN_CHARS characters."""
    text = html.unescape(label)
    text = text if len(text) <= TOKEN_CHARS else text[: TOKEN_CHARS - 1] + "…"
    return f"{mark} {token_label(text)}".strip()


def _replacement_kind(r: SpecRound) -> str:
    return "own" if not r.drafted else r.replacement_kind


def _cells(rounds: list[SpecRound], k: int, lang: str) -> dict[str, list[tuple[float, int, str, str]]]:
    """Per kind of cell: (x slot, row, text, hover). Drafts sit in slots 0..k-1, the target's token in slot k."""
    cells = {kind: [] for kind in CELL_STYLE}
    for row, r in enumerate(rounds):
        shown = names(list(r.drafted))  # a draft's bytes grouped into the characters they make
        for i, tok in enumerate(r.drafted):
            if i < len(r.checks):
                c = r.checks[i]
                kind = "accepted" if c.accepted else "rejected"
                hover = t("spec_hover_check", lang, token=shown[i], position=c.position,
                          p=format_prob(c.p), u=f"{c.u:.3f}", verdict=t(CELL_WORDS[kind], lang))
                if not c.accepted:
                    hover += "<br>" + t("spec_hover_top", lang, token=token_label(c.target_top.display))
            else:
                kind, hover = "unchecked", f"{shown[i]}<br>{t('spec_unchecked', lang)}"
            cells[kind].append((i, row, _cell_text(shown[i], CELL_STYLE[kind][3]), hover))
        kind = _replacement_kind(r)
        replacement = candidate_name(list(r.drafted[: r.accepted]), r.replacement)
        hover = t("spec_hover_replacement", lang, token=replacement,
                  position=r.position + r.accepted, kind=t(CELL_WORDS[kind], lang), p=format_prob(r.replacement_p),
                  u=f"{r.replacement_u:.3f}")
        cells[kind].append((k + 0.25, row, _cell_text(replacement, CELL_STYLE[kind][3]), hover))
    return cells


def speculative_chart(run: SpeculativeRun, model_name: str, lang: str = "en", max_rounds: int = MAX_ROUNDS) -> dict:
    """The run round by round (the last `max_rounds` rows), each check's u against p(draft), and tokens per pass.

    Top: a row per round; the drafted tokens as boxes (kept, rejected, not checked after a rejection) and, in
    the last column, the token the target put in: drawn from the residual at a rejection, the bonus token after
    all drafts were kept, or a plain step when nothing could be copied. Bottom left: every check as a point
    (p, u): kept exactly below the diagonal u = p. Bottom right: tokens each round added, and the running
    tokens per pass against plain decoding's 1.
    """
    k = run.draft_len
    shown = run.rounds[-max_rounds:]
    first = len(run.rounds) - len(shown)
    n_rows = max(len(shown), 1)
    subtitle = wrap_text(t("spec_subtitle", lang, k=k, rate=format_prob(run.acceptance_rate), saved=run.passes_saved,
                           model=model_name), 110) + "<br>" + wrap_text(
        t("spec_subtitle_greedy" if run.config.temperature == 0 else "spec_subtitle_sampling", lang), 110)
    title = t("spec_title", lang, tokens=len(run.generated), passes=run.passes, tpp=f"{run.tokens_per_pass:.2f}")
    # from the top: the title and subtitle, the legend (room for two rows) placed under them in pixels, the rounds'
    # panel title, then the slots' names over the table
    head = head_px(title, subtitle)
    top = head + 2 * LEGEND_ROW_PX + 10 + 30 + 34
    bottom, gap_px, table_px, panels_px = 70, 120, 38 * n_rows, 300
    height = top + bottom + table_px + gap_px + panels_px
    plot_h = table_px + gap_px + panels_px
    y_panels = (0.0, panels_px / plot_h)
    y_table = ((panels_px + gap_px) / plot_h, 1.0)
    x_left, x_right = domains([1, 1], 0.12)

    traces = []
    for kind, rows in _cells(shown, k, lang).items():
        fill, outline, ink, _ = CELL_STYLE[kind]
        marker = {"color": fill, "line": {"color": outline, "width": 2 if kind == "rejected" else 1.5}}
        traces.append({
            "type": "bar", "orientation": "h", "name": t(CELL_WORDS[kind], lang), "legendgroup": kind,
            "base": [x + 0.04 for x, *_ in rows], "x": [0.92] * len(rows), "y": [row for _, row, *_ in rows],
            "width": 0.78, "marker": marker, "text": [text for *_, text, _ in rows], "textposition": "inside",
            "insidetextanchor": "middle", "textangle": 0, "constraintext": "inside",
            "textfont": {"size": SMALL_SIZE, "color": ink}, "hovertext": [h for *_, h in rows],
            "hovertemplate": "%{hovertext}<extra></extra>", "xaxis": "x", "yaxis": "y", "meta": {"role": kind},
            "showlegend": bool(rows) or kind in ("accepted", "rejected"),
        })

    # u against p(draft), every check of the whole run
    checks = [c for r in run.rounds for c in r.checks]
    for ok in (True, False):
        pts = [c for c in checks if c.accepted == ok]
        kind = "accepted" if ok else "rejected"
        traces.append({
            "type": "scatter", "mode": "markers", "x": [c.p for c in pts], "y": [c.u for c in pts],
            "xaxis": "x2", "yaxis": "y2", "showlegend": False, "legendgroup": kind,
            "marker": {"size": 11, "color": CELL_STYLE[kind][0], "symbol": "circle" if ok else "x-thin-open",
                       "line": {"width": 2.5, "color": CELL_STYLE[kind][0]}},
            "hovertext": [t("spec_hover_check", lang, token=token_label(c.token.display), position=c.position,
                            p=format_prob(c.p), u=f"{c.u:.3f}", verdict=t(CELL_WORDS[kind], lang)) for c in pts],
            "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"role": f"check_{kind}"},
        })
    traces.append({"type": "scatter", "mode": "lines", "x": [0, 1], "y": [0, 1], "xaxis": "x2", "yaxis": "y2",
                   "line": {"color": INK, "width": 1.5, "dash": "dash"}, "name": t("spec_line_u_p", lang),
                   "hoverinfo": "skip", "showlegend": False})

    # tokens per round and the running tokens per pass
    numbers = [r.round for r in run.rounds]
    traces.append({
        "type": "bar", "x": numbers, "y": [len(r.new_tokens) for r in run.rounds], "xaxis": "x3", "yaxis": "y3",
        "name": t("spec_this_round", lang), "marker": {"color": "#CCCCCC"}, "showlegend": False,
        "hovertext": [t("spec_hover_round", lang, n=r.round, drafted=len(r.drafted), kept=r.accepted,
                        new=len(r.new_tokens), positions=r.pass_positions, ms=f"{r.forward_ms:.0f}")
                      for r in run.rounds],
        "hovertemplate": "%{hovertext}<extra></extra>",
    })
    traces.append({
        "type": "scatter", "mode": "lines+markers", "x": numbers, "y": [r.tokens_per_pass for r in run.rounds],
        "xaxis": "x3", "yaxis": "y3", "name": t("spec_running", lang), "showlegend": False,
        "line": {"color": "#0072B2", "width": 3}, "marker": {"size": 7},
        "hovertemplate": "%{y:.2f}<extra></extra>",
    })

    annotations = [
        {**panel_title(t("spec_panel_rounds", lang) + ("" if first == 0 else
                       f" ({t('spec_more_rounds', lang, shown=len(shown), total=len(run.rounds))})"), (0, 1), y_table[1]),
         "yshift": 30},
        {**panel_title(t("spec_panel_checks", lang), x_left, y_panels[1]), "yshift": 10},
        {**panel_title(t("spec_panel_rate", lang), x_right, y_panels[1]), "yshift": 10},
        {"text": t("spec_line_u_p", lang), "x": 0.58, "y": 0.3, "xref": "x2", "yref": "y2", "showarrow": False,
         "xanchor": "left", "font": {"size": SMALL_SIZE, "color": MUTED}},
        {"text": t("spec_plain_line", lang), "x": 1, "y": 1, "xref": "x3 domain", "yref": "y3", "showarrow": False,
         "xanchor": "right", "yanchor": "top", "yshift": -2,
         "font": {"size": SMALL_SIZE, "color": MUTED}},
        {"text": f"— {t('spec_running', lang)}", "x": 0, "y": 1, "xref": "x3 domain", "yref": "y3 domain",
         "showarrow": False, "xanchor": "left", "yanchor": "top", "font": {"size": SMALL_SIZE, "color": "#0072B2"}},
        {"text": f"▮ {t('spec_this_round', lang)}", "x": 0, "y": 0.93, "xref": "x3 domain", "yref": "y3 domain",
         "showarrow": False, "xanchor": "left", "yanchor": "top", "font": {"size": SMALL_SIZE, "color": MUTED}},
    ]
    shapes = [{"type": "line", "xref": "x3 domain", "x0": 0, "x1": 1, "yref": "y3", "y0": 1, "y1": 1,
               "line": {"color": MUTED, "width": 2, "dash": "dot"}}]
    peak = max([1.0] + [len(r.new_tokens) for r in run.rounds] + [r.tokens_per_pass for r in run.rounds])
    slots = [t("spec_slot", lang, n=i + 1) for i in range(k)] + [t("spec_slot_target", lang)]
    layout = base_layout(
        title, lang,
        subtitle=subtitle, height=height,
        xaxis={"domain": [0, 1], "range": [0, k + 1.3], "tickvals": [i + 0.5 for i in range(k)] + [k + 0.75],
               "ticktext": slots, "side": "top", "showgrid": False, "zeroline": False, "fixedrange": True},
        yaxis={"domain": list(y_table), "tickvals": list(range(len(shown))),
               "ticktext": [t("spec_round", lang, n=r.round) for r in shown], "range": [n_rows - 0.5, -0.5],
               "showgrid": False, "zeroline": False, "fixedrange": True},
        xaxis2={"domain": list(x_left), "anchor": "y2", "range": [-0.03, 1.03], "tickformat": ".0%",
                "title": {"text": t("spec_axis_p", lang), "font": {"size": SMALL_SIZE}}},
        yaxis2={"domain": list(y_panels), "anchor": "x2", "range": [-0.03, 1.03],
                "title": {"text": t("spec_axis_u", lang), "font": {"size": SMALL_SIZE}}},
        xaxis3={"domain": list(x_right), "anchor": "y3", "title": {"text": t("spec_axis_round", lang)},
                "dtick": max(1, len(run.rounds) // 8)},
        # the top third left empty for the two notes, so no line runs through them
        yaxis3={"domain": list(y_panels), "anchor": "x3", "range": [0, 1.6 * peak], "dtick": 1,
                "title": {"text": t("spec_axis_tpp", lang)}},
        barmode="overlay", bargap=0.2, annotations=annotations, shapes=shapes,
        legend={"orientation": "h", "x": 0, "y": 1 - head / height, "yref": "container", "yanchor": "top",
                "font": {"size": SMALL_SIZE}},
        margin={"t": top, "b": bottom},
    )
    # On a phone (assets/js/charts.js): the bottom panels one under the other, the slots numbered, room for a legend
    # row per entry and for the panel titles on two lines, a cell's text only where it fits in its box
    # (and the rounds' title higher by lift_px: a phone turns the slots' names upright, "target" reached into it)
    gap2_px, legend_px, lift_px = 130, 5 * LEGEND_ROW_PX, 30
    plot_n = table_px + gap_px + 2 * panels_px + gap2_px
    y_rate = (0.0, panels_px / plot_n)
    y_checks = ((panels_px + gap2_px) / plot_n, (2 * panels_px + gap2_px) / plot_n)
    y_rounds = ((2 * panels_px + gap2_px + gap_px) / plot_n, 1.0)
    titles = [{**a, "text": wrap_text(a["text"], 34), "x": 0.5 if i else a["x"], "y": y,
               **({"yshift": a["yshift"] + lift_px} if i == 0 else {})}
              for i, (a, y) in enumerate(zip(annotations[:3], (y_rounds[1], y_checks[1], y_rate[1])))]
    height_n = height + legend_px + lift_px + panels_px + gap2_px
    layout["meta"] = {**layout["meta"], "narrow": {
        "height": height_n, "margin": {"t": top + legend_px + lift_px}, "legend": {"y": 1 - head / height_n},
        "xaxis": {"ticktext": [str(i + 1) for i in range(k)] + [t("spec_slot_target", lang)]},
        "yaxis": {"domain": list(y_rounds)},
        "xaxis2": {"domain": [0, 1], "range": [-0.1, 1.03]}, "yaxis2": {"domain": list(y_checks)},
        "xaxis3": {"domain": [0, 1]}, "yaxis3": {"domain": list(y_rate)},
        "annotations": titles + annotations[3:], "uniformtext": {"mode": "hide", "minsize": 10}}}
    return chart(traces, layout)


speculative_figure = as_figure(speculative_chart)
