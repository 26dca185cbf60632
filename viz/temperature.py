"""Temperature as small multiples: the same step's candidates at several temperatures, plus entropy and nucleus size."""
from __future__ import annotations

import math

from model.decoding.records import FATES, Candidate, Distribution, TemperatureSweep
from viz.i18n import t
from viz.labels import candidate_name
from viz.style import (CHOSEN_INK, FATE_COLORS, FATE_MARKS, INK, SMALL_SIZE, as_figure, axis_ids, axis_key, base_layout,
                       chart, domains, fate_label, fate_legend, format_prob, format_temperature, line_label,
                       narrow_layout, panel_title, prob_ticks, stacked, vertical_line)

CURRENT_TINT = "#FBE7D9"  # a light vermillion behind the current temperature's panel

SHOWN = 8  # candidates per small panel: enough to see the flattening, few enough to read


def _panel_title(temperature: float, current: bool, lang: str) -> str:
    name = (t("temp_panel_greedy", lang) if temperature == 0
            else t("temp_panel", lang, t=format_temperature(temperature)))
    return f"<b>{t('temp_current', lang, panel=name)}</b>" if current else name


def _bar_panels(dists: list[Distribution], reference: list[Candidate], current_temperature: float, n: int,
                columns: list[tuple[float, float]], row: tuple[float, float], lang: str, context: list = ()):
    """Top row: panel k (from 1) on axes xk / yk, one per distribution, bars of the `reference` tokens.

    Every one of the `n` columns gets its axes, an empty panel included. Returns (traces, axes, shapes, titles).
    """
    ids = [c.token.id for c in reference]
    top = max((c.final_prob for d in dists for c in d.candidates if c.token.id in ids), default=1.0)
    axes = {}
    for k in range(1, n + 1):
        x, y = axis_ids(k)
        axes[axis_key(x)] = {"domain": columns[k - 1], "anchor": y}
        axes[axis_key(y)] = {"domain": row, "anchor": x}
    traces, shapes, titles = [], [], []
    for k, dist in enumerate(dists, start=1):
        x, y = axis_ids(k)
        current = math.isclose(dist.config.temperature, current_temperature)
        titles.append(panel_title(_panel_title(dist.config.temperature, current, lang), columns[k - 1], row[1]))
        by_id = {c.token.id: c for c in dist.candidates}
        cands = [by_id[i] for i in ids if i in by_id]
        traces.append({
            "type": "bar", "x": [c.final_prob for c in cands], "y": [ids.index(c.token.id) for c in cands],
            "xaxis": x, "yaxis": y, "orientation": "h", "marker": {"color": [FATE_COLORS[c.fate] for c in cands]},
            "showlegend": False, "text": [FATE_MARKS[c.fate] for c in cands], "textposition": "outside",
            "textfont": {"size": SMALL_SIZE},
            "hovertext": [f"<b>{candidate_name(context, c.token, lang)}</b><br>{format_prob(c.final_prob)}<br>"
                          f"{fate_label(c.fate, lang)}" for c in cands],
            "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"temperature": dist.config.temperature},
        })
        axes[axis_key(x)].update(range=[0, top * 1.2], tickvals=prob_ticks(top, most=2), tickformat=".0%")
        axes[axis_key(y)].update(autorange="reversed", tickvals=list(range(len(ids))), showticklabels=k == 1,
                                 ticktext=[candidate_name(context, c.token) for c in reference])
        if current:
            shapes.append({"type": "rect", "xref": f"{x} domain", "yref": f"{y} domain", "x0": 0, "x1": 1, "y0": 0,
                           "y1": 1, "fillcolor": CURRENT_TINT, "line": {"color": FATE_COLORS["chosen"], "width": 2},
                           "layer": "below", "name": "current"})
    if dists:
        axes["xaxis"]["title"] = {"text": t("temp_axis_prob", lang)}
    return traces, axes, shapes, titles


def _sweep_panels(sweep: TemperatureSweep, current_temperature: float, first: int,
                  columns: list[tuple[float, float]], row: tuple[float, float], lang: str, context: list = ()):
    """Bottom row: entropy and tokens kept against T, on axes `first` and `first` + 1, each under `columns`.

    Returns (traces, axes, shapes, titles, labels).
    """
    label = t("temp_current_line", lang, t=format_temperature(current_temperature))
    traces, axes, shapes, titles, labels = [], {}, [], [], []
    for k, x_domain, values, key, panel, log in (
            (first, columns[0], sweep.entropy_bits, "temp_entropy", "temp_entropy_panel", False),
            (first + 1, columns[1], sweep.nucleus_size, "temp_nucleus", "temp_nucleus_panel", True)):
        x, y = axis_ids(k)
        traces.append({
            "type": "scatter", "x": sweep.temperatures, "y": values, "xaxis": x, "yaxis": y, "mode": "lines+markers",
            "line": {"color": INK, "width": 2}, "marker": {"size": 8}, "showlegend": False, "name": t(key, lang),
            "hovertemplate": "T = %{x:g}: %{y:,.3~f}<extra></extra>",
        })
        titles.append(panel_title(t(panel, lang), x_domain, row[1]))
        axes[axis_key(x)] = {"domain": x_domain, "anchor": y, "title": {"text": t("temp_axis_t", lang)}}
        axes[axis_key(y)] = {"domain": row, "anchor": x, "title": {"text": t(key, lang)},
                             "type": "log" if log else "linear"}
        if log:
            axes[axis_key(y)]["tickvals"] = [m * 10**e for e in range(6) for m in (1, 2, 5)]  # 1, 2, 5, 10, 20, ...
        shapes.append(vertical_line(current_temperature, "current_t",
                                    {"color": FATE_COLORS["chosen"], "width": 2, "dash": "dash"}, (x, y)))
        # at the foot of the line, on a white ground, in the chosen colour's dark ink (4.5:1 and clear of the
        # top tick label, which it covered)
        labels.append({**line_label(current_temperature, label, {"size": SMALL_SIZE, "color": CHOSEN_INK}, "right",
                                    (x, y)), "y": 0, "yanchor": "bottom", "bgcolor": "rgba(255,255,255,0.9)"})
    return traces, axes, shapes, titles, labels


def temperature_chart(dists: list[Distribution], sweep: TemperatureSweep, current_temperature: float,
                      lang: str = "en", context: list = ()) -> dict:
    """One step's candidates re-drawn at several temperatures, and how spread out the choice is against T.

    Top row: one small horizontal bar chart per distribution in `dists` (its config.temperature in the
    panel title), the same tokens in the same order and the same probability range in every panel, bars
    coloured by fate; the panel at `current_temperature` is framed. Bottom row: entropy of the final
    distribution (bits) and the number of tokens kept against T, from `sweep`, with the current T marked.
    """
    n = max(len(dists), 2)  # at least two columns: the bottom row's two panels split them in halves
    columns = domains([1] * n, gap=0.05)
    halves = domains([1, 1], gap=0.16)  # room between them for the right panel's y title and ticks
    bottom_row, top_row = domains([0.42, 0.58], gap=0.2)
    reference = sorted(dists[0].candidates, key=lambda c: c.rank)[:SHOWN] if dists else []
    bars, bar_axes, frames, bar_titles = _bar_panels(dists, reference, current_temperature, n, columns, top_row, lang,
                                                       context)
    lines, line_axes, marks, line_titles, labels = _sweep_panels(sweep, current_temperature, n + 1, halves,
                                                                 bottom_row, lang)
    ids = {c.token.id for c in reference}
    present = {c.fate for d in dists for c in d.candidates if c.token.id in ids}
    subtitle = t("temp_subtitle", lang, p=f"{sweep.top_p:g}") + "<br>" + t("temp_no_star", lang, n=len(reference))
    layout = base_layout(t("temp_title", lang), lang, subtitle=subtitle,
                         height=700, automargin=True, **bar_axes, **line_axes, shapes=frames + marks,
                         annotations=bar_titles + line_titles + labels,
                         legend={"orientation": "h", "y": -0.2, "yanchor": "top", "x": 0}, margin={"b": 120})
    # room above the top row for its panel titles, besides the title's own (the page draws that as HTML above)
    layout["margin"]["t"] = layout["meta"]["title_px"] + PANEL_TITLE_PX
    return chart(bars + lines + fate_legend([f for f in FATES if f in present], lang),
                 _narrow(layout, n, bar_axes, line_axes, bar_titles, line_titles, labels, lang))


PANEL_TITLE_PX = 34
# On a phone: a row of two bar panels, a line panel, and between them: tick labels and the next panel's title; below
# the last bar row its axis title too; below the entropy panel its ticks, axis title and the nucleus panel's title
BAR_ROW_PX, LINE_ROW_PX, BAR_GAP_PX, AXIS_GAP_PX = 190, 190, 56, 104


def _narrow(layout: dict, n: int, bar_axes: dict, line_axes: dict, bar_titles: list, line_titles: list, labels: list,
            lang: str) -> dict:
    """On a phone: the bar panels two by two (the token names left of each row), the entropy and the nucleus panel
    below them, each the whole width; the panel titles moved with their panels."""
    rows = (n + 1) // 2
    heights = [BAR_ROW_PX] * rows + [LINE_ROW_PX, LINE_ROW_PX]
    gaps = [BAR_GAP_PX] * (rows - 1) + [AXIS_GAP_PX, AXIS_GAP_PX]
    row_domains = stacked(heights, gaps)
    columns = domains([1, 1], gap=0.08)
    keys, titles = {}, []
    for k in range(1, n + 1):
        x, y = axis_ids(k)
        column, row = columns[(k - 1) % 2], row_domains[(k - 1) // 2]
        keys[axis_key(x)] = {"domain": column, "title": {"text": t("temp_axis_prob", lang) if k == n - 1 or n == 1 else ""}}
        keys[axis_key(y)] = {"domain": row, "showticklabels": (k - 1) % 2 == 0}
        if k <= len(bar_titles):
            titles.append({**bar_titles[k - 1], "x": sum(column) / 2, "y": row[1]})
    for i, (key, title) in enumerate(zip(sorted(k for k in line_axes if k.startswith("x")), line_titles)):
        row = row_domains[rows + i]
        y_key = "yaxis" + key[5:]
        keys[key] = {"domain": (0.0, 1.0)}
        keys[y_key] = {"domain": row}
        titles.append({**title, "x": 0.5, "y": row[1]})
    margin = layout["margin"]
    height = sum(heights) + sum(gaps) + margin["t"] + margin["b"]
    keys.update(height=height, annotations=titles + labels,
                legend={**layout["legend"], "y": -70 / (height - margin["t"] - margin["b"])})
    return narrow_layout(layout, **keys)


temperature_figure = as_figure(temperature_chart)
