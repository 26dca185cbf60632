"""Medusa, one verifying pass and the whole run: the heads' guesses, the tree of candidates, the tree attention mask
the pass ran with, what the model accepted; and tokens per pass over the text beside prompt lookup's and plain
decoding's."""
from __future__ import annotations

import html

from model.speed.medusa_records import MedusaRound, MedusaRun
from viz.i18n import t
from viz.plot_head import LEGEND_ROW_PX, head_px
from viz.style import (INK, MUTED, SMALL_SIZE, as_figure, base_layout, chart, domains, format_prob, legend_key,
                       panel_title, stacked, token_label, wrap_text)

# Okabe-Ito, as everywhere; each kind also has its own mark, so colour is not the only cue
NODE_STYLE = {  # kind: (fill, outline, mark)
    "root": ("#6E6E6E", "#6E6E6E", "●"),  # the text's last token, chosen by the pass before
    "accepted": ("#009E73", "#009E73", "✓"),  # a guess the model agreed with: written
    "rejected": ("#D55E00", INK, "✗"),  # checked (its parent was right) and not the model's token
    "unreached": ("#FFFFFF", "#AAAAAA", ""),  # computed in the pass, but its parent was wrong
    "own": ("#56B4E9", INK, "+"),  # the model's own token after the accepted path: written too (a bonus token)
}
NODE_WORDS = {"root": "medusa_root", "accepted": "medusa_accepted", "rejected": "medusa_rejected",
              "unreached": "medusa_unreached", "own": "medusa_own"}
GUESS_STYLE = {  # a head's guess: (z value, fill)
    "accepted": (2, "#009E73"), "tree": (1, "#F3EBA0"), "out": (0, "#F2F2F2")}
GUESS_WORDS = {"accepted": "medusa_guess_accepted", "tree": "medusa_guess_tree", "out": "medusa_guess_out"}
ALLOWED, BLOCKED = "#0072B2", "#EEEEEE"
TOKEN_CHARS = 8  # characters of a token shown in a cell or beside a node
ROW_PX = 22  # a row of the mask


def _short(display: str) -> str:
    text = html.unescape(display)
    return token_label(text if len(text) <= TOKEN_CHARS else text[: TOKEN_CHARS - 1] + "…")


def node_kinds(r: MedusaRound) -> list[str]:
    """Each node's kind (NODE_STYLE): the root, accepted, rejected (its parent was on the accepted path) or unreached."""
    on_path = {0, *r.accepted}
    return ["root"] + ["accepted" if i in r.accepted else "rejected" if p in on_path else "unreached"
                       for i, p in enumerate(r.parents, 1)]


def tree_layout(parents: list[int], extra_parent: int | None = None) -> list[float]:
    """A row for every node of [root] + candidates (+ one more child of `extra_parent`, last): leaves one row each
    in depth-first order, a parent on its first child's row (so the first guesses run in a straight line)."""
    n = len(parents) + 1 + (extra_parent is not None)
    children: dict[int, list[int]] = {}
    for i, p in enumerate(parents, 1):
        children.setdefault(p, []).append(i)
    if extra_parent is not None:
        children.setdefault(extra_parent, []).append(n - 1)
    rows, next_row = [0.0] * n, [0]

    def place(node: int) -> float:
        kids = children.get(node, [])
        if not kids:
            rows[node] = next_row[0]
            next_row[0] += 1
        else:
            rows[node] = [place(k) for k in kids][0]
        return rows[node]

    place(0)
    return rows


def _guess_cells(r: MedusaRound) -> tuple[list[list[int]], list[list[str]]]:
    """The guesses' grid, [head][rank]: z (GUESS_STYLE) and each cell's text (★: the model's own token there)."""
    accepted = {(r.depth[i], r.rank[i]) for i in r.accepted}
    in_tree = {(d, k) for d, k in zip(r.depth[1:], r.rank[1:])}
    path = [0, *r.accepted]
    z, text = [], []
    for k, row in enumerate(r.guesses, 1):
        # the model's own token at this position is known along the accepted path (and one past it)
        model_token = r.greedy[path[k - 1]].id if k - 1 < len(path) else None
        zr, tr = [], []
        for rank, g in enumerate(row):
            kind = "accepted" if (k, rank) in accepted else "tree" if (k, rank) in in_tree else "out"
            star = "★" if g.token.id == model_token else ""
            zr.append(GUESS_STYLE[kind][0])
            tr.append(f"{star}{_short(g.token.display)}<br>{format_prob(g.prob)}")
        z.append(zr)
        text.append(tr)
    return z, text


def medusa_pass_chart(run: MedusaRun, index: int, lang: str = "en") -> dict:
    """One verifying pass of the run (index from 0): top, each head's first guesses (the tree's ones tinted, the
    accepted ones green, ★ the model's own token there where the pass knows it); bottom left, the tree of candidates
    (numbered: the mask's rows and columns), coloured by what the pass made of them; bottom right, the tree attention
    mask the pass ran with: row i may attend to column j (blue) only if j is i or one of its ancestors, and every row
    attends to the whole text before the root."""
    r = run.rounds[index]
    n = len(r.tokens)
    kinds = node_kinds(r)
    own = r.new_tokens[-1] if len(r.new_tokens) > len(r.accepted) else None
    last = r.accepted[-1] if r.accepted else 0
    rows = tree_layout(r.parents, last if own is not None else None)
    K = len(r.guesses)
    labels = [f"{i} {_short(tok.display)}" for i, tok in enumerate(r.tokens)]

    title = t("medusa_pass_title", lang, n=r.round, passes=run.passes, accepted=len(r.accepted),
              new=len(r.new_tokens), nodes=n - 1)
    subtitle = wrap_text(t("medusa_pass_subtitle", lang, root=_short(r.tokens[0].display), position=r.position), 120)
    head = head_px(title, subtitle)
    guesses_px = 40 * max(K, 1)
    tree_rows = max(rows) + 1 if rows else 1
    lower_px = max(ROW_PX * n, 30 * tree_rows, 180)
    top = head + 2 * LEGEND_ROW_PX + 40 + 34  # the title, two legend rows, the panel's title, the guesses' ranks
    gap_px, bottom = 96, 140
    y_guess, y_lower = stacked([guesses_px, lower_px], [gap_px])
    x_tree, x_mask = domains([1, 1.1], 0.1)

    traces = []
    # ---- the heads' guesses -----------------------------------------------------------------------------------
    if r.guesses:
        z, text = _guess_cells(r)
        hover = [[t("medusa_hover_guess", lang, head=k, ahead=k + 1, rank=rank + 1, token=token_label(g.token.display),
                    p=format_prob(g.prob)) for rank, g in enumerate(row)] for k, row in enumerate(r.guesses, 1)]
        scale = [[0.0, GUESS_STYLE["out"][1]], [0.33, GUESS_STYLE["out"][1]], [0.34, GUESS_STYLE["tree"][1]],
                 [0.66, GUESS_STYLE["tree"][1]], [0.67, GUESS_STYLE["accepted"][1]], [1.0, GUESS_STYLE["accepted"][1]]]
        traces.append({
            "type": "heatmap", "z": z, "zmin": 0, "zmax": 2, "colorscale": scale, "showscale": False,
            "x": list(range(len(z[0]))), "y": list(range(K)), "text": text, "texttemplate": "%{text}",
            "textfont": {"size": SMALL_SIZE}, "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
            "xgap": 3, "ygap": 3, "xaxis": "x", "yaxis": "y", "meta": {"role": "guesses"}})
    for kind in ("accepted", "tree", "out"):
        traces.append(legend_key(t(GUESS_WORDS[kind], lang), GUESS_STYLE[kind][1]))

    # ---- the tree ---------------------------------------------------------------------------------------------
    xs = list(r.depth) + ([r.depth[last] + 1] if own is not None else [])
    edge_x, edge_y, path_x, path_y = [], [], [], []
    for i, p in enumerate(r.parents, 1):
        on_path = i in r.accepted
        (path_x if on_path else edge_x).extend([xs[p], xs[i], None])
        (path_y if on_path else edge_y).extend([rows[p], rows[i], None])
    traces.append({"type": "scatter", "mode": "lines", "x": edge_x, "y": edge_y, "xaxis": "x2", "yaxis": "y2",
                   "line": {"color": "#AAAAAA", "width": 1.5}, "hoverinfo": "skip", "showlegend": False})
    traces.append({"type": "scatter", "mode": "lines", "x": path_x, "y": path_y, "xaxis": "x2", "yaxis": "y2",
                   "line": {"color": NODE_STYLE["accepted"][0], "width": 4}, "hoverinfo": "skip", "showlegend": False})
    if own is not None:
        traces.append({"type": "scatter", "mode": "lines", "x": [xs[last], xs[-1]], "y": [rows[last], rows[-1]],
                       "xaxis": "x2", "yaxis": "y2", "line": {"color": NODE_STYLE["own"][0], "width": 3, "dash": "dot"},
                       "hoverinfo": "skip", "showlegend": False})
    for kind in NODE_STYLE:
        nodes = [i for i, k in enumerate(kinds) if k == kind]
        if kind == "own":
            nodes = [n] if own is not None else []
        fill, outline, mark = NODE_STYLE[kind]
        names = [f"{mark} {i} {_short(own.display)}" if kind == "own" else
                 labels[i] if kind == "root" else f"{mark} {labels[i]}".strip() for i in nodes]
        hovers = [t("medusa_hover_own", lang, token=token_label(own.display)) if kind == "own" else
                  t("medusa_hover_node", lang, i=i, token=token_label(r.tokens[i].display), depth=r.depth[i],
                    rank=r.rank[i] + 1, greedy=token_label(r.greedy[i].display), kind=t(NODE_WORDS[kind], lang))
                  for i in nodes]
        traces.append({
            "type": "scatter", "mode": "markers+text", "x": [xs[i] for i in nodes], "y": [rows[i] for i in nodes],
            "xaxis": "x2", "yaxis": "y2", "name": t(NODE_WORDS[kind], lang), "legendgroup": kind,
            "marker": {"symbol": "square", "size": 14, "color": fill, "line": {"color": outline, "width": 2}},
            "text": names, "textposition": "middle right", "textfont": {"size": SMALL_SIZE, "color": INK},
            "hovertext": hovers, "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"role": f"node_{kind}"},
            "showlegend": kind != "root"})

    # ---- the mask -----------------------------------------------------------------------------------------------
    allowed = [[1] + [int(v) for v in row] for row in r.mask]  # column 0: the text before the root
    cols = [t("medusa_mask_text", lang, n=r.position)] + labels
    mask_hover = [[t("medusa_hover_mask_text", lang, i=i, n=r.position)] +
                  [t("medusa_hover_mask_yes" if a else "medusa_hover_mask_no", lang, i=i, j=j)
                   for j, a in enumerate(row[1:])] for i, row in enumerate(allowed)]
    traces.append({
        "type": "heatmap", "z": allowed, "zmin": 0, "zmax": 1, "colorscale": [[0, BLOCKED], [1, ALLOWED]],
        "showscale": False, "x": list(range(n + 1)), "y": list(range(n)), "xgap": 1, "ygap": 1,
        "hovertext": mask_hover, "hovertemplate": "%{hovertext}<extra></extra>", "xaxis": "x3", "yaxis": "y3",
        "meta": {"role": "mask"}})
    traces.append(legend_key(t("medusa_mask_allowed", lang), ALLOWED))
    traces.append(legend_key(t("medusa_mask_blocked", lang), BLOCKED))
    # the accepted rows outlined: the path whose keys and values the cache keeps
    shapes = [{"type": "rect", "xref": "x3", "yref": "y3", "x0": -0.5, "x1": n + 0.5, "y0": i - 0.5, "y1": i + 0.5,
               "line": {"color": NODE_STYLE["accepted"][0], "width": 3}} for i in [0, *r.accepted]]

    depth_ticks = list(range(max(xs) + 1))
    annotations = [
        {**panel_title(t("medusa_panel_guesses", lang), (0, 1), y_guess[1]), "yshift": 30},
        {**panel_title(t("medusa_panel_tree", lang), x_tree, y_lower[1]), "yshift": 36},
        {**panel_title(t("medusa_panel_mask", lang), x_mask, y_lower[1]), "yshift": 36},
    ]
    height = top + guesses_px + gap_px + lower_px + bottom
    layout = base_layout(
        title, lang, subtitle=subtitle, height=height,
        xaxis={"domain": [0.1, 1], "tickvals": list(range(5)), "side": "top", "showgrid": False, "zeroline": False,
               "ticktext": [t("medusa_rank", lang, r=k + 1) for k in range(5)], "fixedrange": True},
        yaxis={"domain": list(y_guess), "tickvals": list(range(K)), "autorange": "reversed", "showgrid": False,
               "ticktext": [t("medusa_head", lang, k=k, ahead=k + 1) for k in range(1, K + 1)], "fixedrange": True},
        xaxis2={"domain": list(x_tree), "anchor": "y2", "range": [-0.3, max(xs) + 1.2], "tickvals": depth_ticks,
                "ticktext": [t("medusa_depth_root", lang)] + [t("medusa_depth", lang, k=k) for k in depth_ticks[1:]],
                "side": "top", "showgrid": False, "zeroline": False, "fixedrange": True},
        yaxis2={"domain": list(y_lower), "anchor": "x2", "range": [tree_rows - 0.5, -0.5], "visible": False,
                "fixedrange": True},
        xaxis3={"domain": list(x_mask), "anchor": "y3", "tickvals": list(range(n + 1)), "ticktext": cols,
                "tickangle": -90, "showgrid": False, "zeroline": False, "fixedrange": True,
                "tickfont": {"size": 12}},
        yaxis3={"domain": list(y_lower), "anchor": "x3", "tickvals": list(range(n)), "ticktext": labels,
                "autorange": "reversed", "showgrid": False, "zeroline": False, "fixedrange": True,
                "tickfont": {"size": 12}},
        annotations=annotations, shapes=shapes,
        legend={"orientation": "h", "x": 0, "y": 1 - head / height, "yref": "container", "yanchor": "top",
                "font": {"size": SMALL_SIZE}},
        margin={"t": top, "b": bottom, "l": 130},
    )
    # On a phone: the three panels one under the other
    tree_px, mask_px, gap2 = max(30 * tree_rows, 160), max(ROW_PX * n, 200), 150
    y_g, y_t, y_m = stacked([guesses_px, tree_px, mask_px], [gap_px, gap2])
    height_n = height + tree_px + gap2 + 3 * LEGEND_ROW_PX
    layout["meta"] = {**layout["meta"], "narrow": {
        "height": height_n, "margin": {"t": top + 3 * LEGEND_ROW_PX, "l": 110},
        "legend": {"y": 1 - head / height_n},
        "yaxis": {"domain": list(y_g)}, "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": list(y_t)},
        "xaxis3": {"domain": [0, 1]}, "yaxis3": {"domain": list(y_m)},
        "annotations": [{**annotations[0]}, {**annotations[1], "x": 0.5, "y": y_t[1]},
                        {**annotations[2], "x": 0.5, "y": y_m[1], "yshift": 90}]}}
    return chart(traces, layout)


def medusa_run_chart(run: MedusaRun, lang: str = "en") -> dict:
    """The whole run: left, the tokens each verifying pass wrote (its accepted guesses, green, on the one token of
    the model's own every pass writes) and the running tokens per pass; right, tokens per pass of plain decoding,
    prompt lookup and Medusa on the same text, with each one's wall time per token on this machine."""
    passes = [r.round for r in run.rounds]
    title = t("medusa_run_title", lang, tokens=len(run.generated), passes=run.passes, tpp=f"{run.tokens_per_pass:.2f}",
              lookup=f"{run.lookup.tokens_per_pass:.2f}")
    same = all(run.same_as_plain.values())
    subtitle = wrap_text(t("medusa_run_subtitle_same" if same else "medusa_run_subtitle_differs", lang,
                           top1=" · ".join(format_prob(a) for a in run.top1), nodes=run.tree_size), 120)
    head = head_px(title, subtitle)
    x_left, x_right = domains([1.6, 1], 0.14)
    own = [1 if len(r.new_tokens) > len(r.accepted) else 0 for r in run.rounds]
    traces = [
        {"type": "bar", "x": passes, "y": own, "name": t("medusa_own", lang), "marker": {"color": NODE_STYLE["own"][0]},
         "xaxis": "x", "yaxis": "y", "hovertemplate": "%{y}<extra></extra>", "meta": {"role": "own"}},
        {"type": "bar", "x": passes, "y": [len(r.accepted) for r in run.rounds], "name": t("medusa_accepted", lang),
         "marker": {"color": NODE_STYLE["accepted"][0]}, "xaxis": "x", "yaxis": "y",
         "hovertext": [t("medusa_hover_pass", lang, n=r.round, accepted=len(r.accepted), new=len(r.new_tokens),
                         positions=r.pass_positions, ms=f"{r.forward_ms:.0f}") for r in run.rounds],
         "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"role": "accepted"}},
        {"type": "scatter", "mode": "lines+markers", "x": passes, "y": [r.tokens_per_pass for r in run.rounds],
         "name": t("medusa_running", lang), "line": {"color": INK, "width": 2}, "xaxis": "x", "yaxis": "y",
         "hovertemplate": "%{y:.2f}<extra></extra>"},
    ]
    ways = [("medusa_way_plain", "#999999"), ("medusa_way_lookup", "#E69F00"),
            ("medusa_way_medusa", NODE_STYLE["accepted"][0])]
    names = [t(key, lang) for key, _ in ways]
    values = [run.plain.tokens_per_pass, run.lookup.tokens_per_pass, run.tokens_per_pass]
    ms = [run.plain.ms_per_token, run.lookup.ms_per_token, run.ms_per_token]
    traces.append({
        "type": "bar", "x": names, "y": values, "xaxis": "x2", "yaxis": "y2", "showlegend": False,
        "marker": {"color": [c for _, c in ways]},
        "text": [t("medusa_way_bar", lang, tpp=f"{v:.2f}", ms=f"{m:.0f}") for v, m in zip(values, ms)],
        "textposition": "outside", "textfont": {"size": SMALL_SIZE}, "cliponaxis": False,
        "hovertemplate": "%{x}: %{y:.2f}<extra></extra>", "meta": {"role": "ways"}})
    peak = max([1.0] + [len(r.new_tokens) for r in run.rounds] + values)
    height = 470
    annotations = [
        {**panel_title(t("medusa_panel_passes", lang), x_left, 1.0), "yshift": 10},
        {**panel_title(t("medusa_panel_ways", lang), x_right, 1.0), "yshift": 10},
    ]
    layout = base_layout(
        title, lang, subtitle=subtitle, height=height, barmode="stack",
        xaxis={"domain": list(x_left), "title": {"text": t("medusa_axis_pass", lang)}, "dtick": max(1, len(passes) // 10)},
        yaxis={"title": {"text": t("medusa_axis_tokens", lang)}, "range": [0, 1.15 * peak + 0.5], "dtick": 1},
        xaxis2={"domain": list(x_right), "anchor": "y2", "fixedrange": True},
        yaxis2={"anchor": "x2", "range": [0, 1.3 * peak + 0.3], "title": {"text": t("medusa_axis_tpp", lang)}},
        annotations=annotations,
        legend={"orientation": "h", "x": 0, "y": 1 - head / height, "yref": "container", "yanchor": "top",
                "font": {"size": SMALL_SIZE}},
        margin={"t": head + LEGEND_ROW_PX + 50},
    )
    y_ways, y_passes = stacked([260, 300], [120])[::-1]
    height_n = height + 400
    layout["meta"] = {**layout["meta"], "narrow": {
        "height": height_n, "margin": {"t": head + 2 * LEGEND_ROW_PX + 60}, "legend": {"y": 1 - head / height_n},
        "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": list(y_passes)},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": list(y_ways)},
        "annotations": [{**annotations[0], "x": 0.5, "y": y_passes[1]}, {**annotations[1], "x": 0.5, "y": y_ways[1]}]}}
    return chart(traces, layout)


medusa_pass_figure = as_figure(medusa_pass_chart)
medusa_run_figure = as_figure(medusa_run_chart)
