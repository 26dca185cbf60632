"""The paged KV cache: each session's block table (shared prefix blocks marked) and memory against contiguous."""
from __future__ import annotations

from model.speed.paged import PagedLayout
from viz.i18n import counted, t
from viz.plot_head import LEGEND_ROW_PX, head_px
from viz.style import (INK, wrap_text, MUTED, SMALL_SIZE, as_figure, base_layout, bytes_unit, chart, format_bytes, panel_title,
                       token_label)

PRIVATE_COLOR = "#0072B2"  # blue
SHARED_COLOR = "#E69F00"  # orange, hatched as well
WASTE_COLOR = "#FFFFFF"  # outlined, dotted
MAX_ROWS = 12  # sessions drawn; the rest are in the totals
TOTAL_COLORS = {"paged_total_contiguous": "#999999", "paged_total_unshared": "#56B4E9",
                "paged_total_paged": PRIVATE_COLOR, "paged_total_used": "#009E73"}


def paged_chart(layout_record: PagedLayout, lang: str = "en", max_rows: int = MAX_ROWS) -> dict:
    """Top: a row per session (its label, or "session n" when it has none; never its text), a cell per block, filled
    up to the tokens it holds;
    shared prefix blocks hatched orange, the empty slots of a last block outlined. Bottom: bytes of a contiguous
    reservation, paged without and with prefix sharing, and the tokens actually held."""
    rec = layout_record
    rows = rec.sessions[:max_rows]
    n_rows = max(len(rows), 1)
    widest = max([r.blocks for r in rows], default=1) or 1
    cells = {"private": [], "shared": [], "waste": []}  # (row, block index, filled fraction, hover)
    labels = [token_label(r.label) if r.label else t("paged_session", lang, n=y + 1) for y, r in enumerate(rows)]
    for y, r in enumerate(rows):
        label = labels[y]
        for i in range(r.blocks):
            fill = rec.block_size if i < r.blocks - 1 else r.last_block_fill
            hover = t("paged_hover_block", lang, label=label, i=i + 1, fill=fill, block=rec.block_size,
                      shared=t("paged_hover_shared", lang) if r.shared[i] else "")
            cells["shared" if r.shared[i] else "private"].append((y, i, fill / rec.block_size, hover))
            if fill < rec.block_size:
                cells["waste"].append((y, i, fill / rec.block_size, hover))
    styles = {
        "private": ("paged_private", {"color": PRIVATE_COLOR, "line": {"color": PRIVATE_COLOR, "width": 1}}),
        "shared": ("paged_shared", {"color": SHARED_COLOR, "line": {"color": INK, "width": 1.5},
                                    "pattern": {"shape": "/", "fgcolor": INK, "bgcolor": SHARED_COLOR, "solidity": 0.2}}),
        "waste": ("paged_waste", {"color": WASTE_COLOR, "line": {"color": MUTED, "width": 1.5},
                                  "pattern": {"shape": ".", "fgcolor": MUTED, "bgcolor": WASTE_COLOR, "solidity": 0.15}}),
    }
    traces = []
    for kind, items in cells.items():
        word, marker = styles[kind]
        if kind == "waste":  # from the filled part's end to the block's end
            base = [i + 0.05 + 0.9 * f for _, i, f, _ in items]
            length = [0.9 * (1 - f) for _, _, f, _ in items]
        else:
            base = [i + 0.05 for _, i, _, _ in items]
            length = [0.9 * f for _, _, f, _ in items]
        traces.append({"type": "bar", "orientation": "h", "base": base, "x": length, "y": [y for y, *_ in items],
                       "width": 0.7, "marker": marker, "name": t(word, lang), "xaxis": "x", "yaxis": "y",
                       "hovertext": [h for *_, h in items], "hovertemplate": "%{hovertext}<extra></extra>",
                       "meta": {"role": kind}})
    # each row's totals, written at its right end
    traces.append({
        "type": "scatter", "mode": "text", "x": [r.blocks + 0.2 for r in rows], "y": list(range(len(rows))),
        "text": [f"{r.tokens} · {format_bytes(r.allocated_bytes)}" for r in rows], "textposition": "middle right",
        "textfont": {"size": SMALL_SIZE, "color": MUTED}, "showlegend": False, "xaxis": "x", "yaxis": "y",
        "hovertext": [t("paged_hover_row", lang, label=label, tokens=r.tokens, blocks=r.blocks,
                        used=format_bytes(r.used_bytes), allocated=format_bytes(r.allocated_bytes),
                        waste=format_bytes(r.waste_bytes), reserved=format_bytes(r.reserved_bytes))
                      for label, r in zip(labels, rows)],
        "hovertemplate": "%{hovertext}<extra></extra>",
    })

    totals = [("paged_total_contiguous", rec.reserved_bytes), ("paged_total_unshared", rec.unshared_bytes),
              ("paged_total_paged", rec.allocated_bytes), ("paged_total_used", rec.held_bytes)]
    unit, scale = bytes_unit(max(v for _, v in totals) or 1)
    names = [t(key, lang, max=rec.max_tokens) for key, _ in totals]
    traces.append({
        "type": "bar", "orientation": "h", "x": [v / scale for _, v in totals], "y": list(range(len(totals))), "xaxis": "x2",
        "yaxis": "y2", "marker": {"color": [TOTAL_COLORS[key] for key, _ in totals]}, "showlegend": False,
        "text": [format_bytes(v) for _, v in totals], "textposition": "outside", "cliponaxis": False,
        "textfont": {"size": SMALL_SIZE}, "hovertext": [f"{n}: {v:,} B" for n, (_, v) in zip(names, totals)],
        "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"role": "totals"},
    })

    subtitle = wrap_text(t("paged_subtitle", lang, per_token=format_bytes(rec.bytes_per_token),
                           block_bytes=format_bytes(rec.block_bytes)), 90)
    # The title and its subtitle's lines, then the legend (room for two rows), then the table's panel title: the
    # legend is placed from the top in pixels, under the subtitle, so it never runs into it however tall the table.
    title = t("paged_title", lang, sessions=counted(len(rec.sessions), "paged_n_sessions_one", "paged_n_sessions", lang),
              blocks=counted(rec.physical_blocks, "paged_n_blocks_one", "paged_n_blocks", lang), block=rec.block_size)
    head = head_px(title, subtitle)
    top = head + 2 * LEGEND_ROW_PX + 32
    table_px, totals_px, gap_px = 44 * n_rows, 4 * 44, 170  # the gap: the table's axis title, then the totals' title
    plot_h = table_px + totals_px + gap_px
    height = plot_h + top + 60
    y_totals = (0.0, totals_px / plot_h)
    y_table = ((totals_px + gap_px) / plot_h, 1.0)
    annotations = [panel_title(t("paged_panel_table", lang, block=rec.block_size), (0, 1), y_table[1]),
                   panel_title(wrap_text(t("paged_panel_totals", lang, max=rec.max_tokens), 70), (0, 1), y_totals[1])]
    if len(rec.sessions) > len(rows):
        more = counted(len(rec.sessions) - len(rows), "paged_more_one", "paged_more", lang)
        annotations.append({"text": more, "x": 0, "xref": "paper",
                            "xanchor": "left", "y": y_table[0], "yref": "paper", "yanchor": "top", "showarrow": False,
                            "font": {"size": SMALL_SIZE, "color": MUTED}})
    figure_layout = base_layout(
        title, lang,
        subtitle=subtitle, height=height,
        xaxis={"range": [0, widest + 3.2], "title": {"text": t("paged_axis_block", lang)},
               "tickvals": [i + 0.5 for i in range(0, widest, max(1, widest // 16))],
               "ticktext": [str(i + 1) for i in range(0, widest, max(1, widest // 16))], "showgrid": False,
               "zeroline": False, "fixedrange": True},
        yaxis={"domain": list(y_table), "tickvals": list(range(len(rows))),
               "ticktext": labels, "range": [n_rows - 0.5, -0.5], "showgrid": False,
               "fixedrange": True},
        xaxis2={"anchor": "y2", "title": {"text": t("paged_axis_bytes", lang, unit=unit)},
                "range": [0, max(v for _, v in totals) / scale * 1.18 or 1]},
        yaxis2={"domain": list(y_totals), "anchor": "x2", "autorange": "reversed", "fixedrange": True,
                "tickvals": list(range(len(totals))), "ticktext": names},
        barmode="overlay", annotations=annotations, margin={"t": top, "b": 60},
        legend={"orientation": "h", "x": 0, "y": 1 - head / height, "yref": "container", "yanchor": "top",
                "font": {"size": SMALL_SIZE}},
    )
    # the two panels share the left edge, but the table's x axis sits on the table
    figure_layout["xaxis"]["anchor"] = "y"
    # On a phone (assets/js/charts.js): the totals' names on two lines, so the bars get the width, and room at the
    # right for the numbers written beside the bars and rows. The panel titles there take 3 and 5 lines, the legend
    # a row per entry: more room above the table (the legend ran into its title) and between the panels (the
    # table's axis title ran into the totals' title), in px, the panels as tall as on a wide screen.
    gap_n, above_n = 250, LEGEND_ROW_PX + 40
    plot_n = table_px + totals_px + gap_n
    height_n = height + (gap_n - gap_px) + above_n
    at_n = {y_table[1]: 1.0, y_totals[1]: totals_px / plot_n, y_table[0]: (totals_px + gap_n) / plot_n}
    figure_layout["meta"] = {**figure_layout["meta"], "narrow": {
        "height": height_n, "margin": {"l": 130, "r": 16, "t": top + above_n},
        "legend": {"y": 1 - head / height_n},
        "yaxis": {"domain": [(totals_px + gap_n) / plot_n, 1.0]}, "yaxis2": {"domain": [0.0, totals_px / plot_n],
                                                                             "ticktext": [wrap_text(n, 16) for n in names]},
        # (the panel titles over the middle of the chart, not of the plot, which the names push to the right)
        "annotations": [{**a, "text": wrap_text(a["text"].replace("<br>", " "), 30), "y": at_n[a["y"]],
                         **({"x": 0.3} if a.get("xanchor") == "center" else {})} for a in annotations],
        "xaxis": {"range": [0, widest + 5]},
        "xaxis2": {"range": [0, max(v for _, v in totals) / scale * 1.8 or 1]}}}
    return chart(traces, figure_layout)


paged_figure = as_figure(paged_chart)
