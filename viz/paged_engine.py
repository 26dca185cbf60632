"""The engine's own KV blocks, from its KV cache events: each session's chain of block hashes, the blocks sessions
share, the removed ones, and how far the engine agrees with this app's block model of the same texts."""
from __future__ import annotations

from model.vllm.kv_events import EngineBlocksView
from viz.i18n import counted, t
from viz.plot_head import LEGEND_ROW_PX, head_px
from viz.paged import MAX_ROWS, PRIVATE_COLOR, SHARED_COLOR
from viz.style import INK, MUTED, SMALL_SIZE, as_figure, base_layout, chart, token_label, wrap_text

REMOVED_COLOR = "#D9D9D9"  # grey, crossed
MISSING_COLOR = "#FFFFFF"  # outlined, dotted: a full block of the text the engine holds no block for


def engine_blocks_chart(record: EngineBlocksView, lang: str = "en", max_rows: int = MAX_ROWS) -> dict:
    """A row per session (its label, or "session n"), a cell per full block of its text at the engine's block size:
    the engine's block holding it (its hash's first hex digits; orange and hatched when another session's chain lists
    the same block, grey and crossed once the engine removed it), or a dotted outline where the engine has none."""
    rows = record.rows[:max_rows]
    n_rows = max(len(rows), 1)
    widest = max([r.full_blocks for r in rows], default=1) or 1
    labels = [token_label(r.label) if r.label else t("paged_session", lang, n=y + 1) for y, r in enumerate(rows)]
    cells = {"paged_engine_own": [], "paged_engine_shared": [], "paged_engine_removed": [], "paged_engine_missing": []}
    for y, (label, r) in enumerate(zip(labels, rows)):
        for i in range(r.full_blocks):
            if i < len(r.hashes):
                kind = "paged_engine_removed" if r.removed[i] else "paged_engine_shared" if r.shared[i] else "paged_engine_own"
                hover = t("paged_engine_hover", lang, label=label, i=i + 1, hash=r.hashes[i],
                          state=t(kind, lang))
                cells[kind].append((y, i, r.hashes[i], hover))
            else:
                cells["paged_engine_missing"].append((y, i, "", t("paged_engine_hover_missing", lang, label=label, i=i + 1)))
    styles = {
        "paged_engine_own": {"color": PRIVATE_COLOR, "line": {"color": PRIVATE_COLOR, "width": 1}},
        "paged_engine_shared": {"color": SHARED_COLOR, "line": {"color": INK, "width": 1.5},
                          "pattern": {"shape": "/", "fgcolor": INK, "bgcolor": SHARED_COLOR, "solidity": 0.2}},
        "paged_engine_removed": {"color": REMOVED_COLOR, "line": {"color": MUTED, "width": 1.5},
                           "pattern": {"shape": "x", "fgcolor": MUTED, "bgcolor": REMOVED_COLOR, "solidity": 0.2}},
        "paged_engine_missing": {"color": MISSING_COLOR, "line": {"color": MUTED, "width": 1.5},
                           "pattern": {"shape": ".", "fgcolor": MUTED, "bgcolor": MISSING_COLOR, "solidity": 0.15}},
    }
    traces = []
    for kind, items in cells.items():
        traces.append({
            "type": "bar", "orientation": "h", "base": [i + 0.05 for _, i, _, _ in items], "x": [0.9] * len(items),
            "y": [y for y, *_ in items], "width": 0.7, "marker": styles[kind], "name": t(kind, lang),
            "text": [h for _, _, h, _ in items], "textposition": "inside", "insidetextanchor": "middle",
            "textfont": {"size": SMALL_SIZE, "family": "monospace", "color": "white" if kind == "paged_engine_own" else INK},
            "hovertext": [h for *_, h in items], "hovertemplate": "%{hovertext}<extra></extra>",
            "meta": {"role": kind, "hashes": [h for _, _, h, _ in items]}, "showlegend": True,
        })
    title = t("paged_engine_title", lang, live=counted(record.live, "paged_n_blocks_one", "paged_n_blocks", lang),
              block=record.block_size)
    subtitle = wrap_text(t("paged_engine_agree" if record.agree else "paged_engine_differ", lang,
                           engine=record.engine_shared, model=record.model_shared, block=record.block_size,
                           removed=record.removed_seen), 90)
    head = head_px(title, subtitle)
    top = head + 2 * LEGEND_ROW_PX + 20
    height = top + 52 * n_rows + 90
    layout = base_layout(
        title, lang, subtitle=subtitle, height=height, barmode="overlay", margin={"t": top, "b": 60},
        xaxis={"range": [0, widest + 0.2], "title": {"text": t("paged_engine_axis", lang, block=record.block_size)},
               "tickvals": [i + 0.5 for i in range(widest)], "ticktext": [str(i + 1) for i in range(widest)],
               "showgrid": False, "zeroline": False, "fixedrange": True},
        yaxis={"tickvals": list(range(len(rows))), "ticktext": labels, "range": [n_rows - 0.5, -0.5],
               "showgrid": False, "fixedrange": True},
        legend={"orientation": "h", "x": 0, "y": 1 - head / height, "yref": "container", "yanchor": "top",
                "font": {"size": SMALL_SIZE}},
    )
    layout["meta"] = {**layout["meta"], "paged_engine_shared": record.engine_shared, "model_shared": record.model_shared}
    return chart(traces, layout)


engine_blocks_figure = as_figure(engine_blocks_chart)
