"""The chain rule over a generated text, teacher forcing over a whole text, and GLTR-coloured token HTML."""
from __future__ import annotations

import html
import math

from model.inside.chain import ChainRecord, StepwiseComparison, TeacherForcing
from viz.i18n import t
from viz.labels import names
from viz.style import (CHOSEN_INK, FATE_COLORS, INK, KEY_COLOR, MUTED, SMALL_SIZE, as_figure, base_layout, chart, format_bits,
                       format_prob, line_label, token_label, vertical_line)

T1_COLOR = "#0072B2"  # what the model believes (T = 1): the 'kept' blue of the candidate chart
SAMPLED_COLOR = "#56B4E9"  # what the draw used: sky blue, lighter, beside it
FORK_COLOR = FATE_COLORS["chosen"]  # vermillion: the steps where the text could have gone elsewhere
PROMPT_COLOR = "#BBBBBB"  # the prompt's positions, as the chips draw the prompt
MISS_COLOR = FATE_COLORS["chosen"]  # where the actual token is not the model's top-1
MAX_TICK_LABELS = 40  # more tokens than this: number the x axis instead of writing every token under it
# Rank buckets, light to dark (Paul Tol's colour-blind-safe YlOrBr scheme): the expected tokens stay pale, the
# surprising ones stand out, and the order reads in grey too. Text colour per shade for contrast.
BUCKET_COLORS = ("#FFF7BC", "#FEC44F", "#EC7014", "#993404")
BUCKET_INK = ("#111111", "#111111", "#111111", "#FFFFFF")
SPACE_MARK = '<i style="font-style:normal;opacity:0.45">␣</i>'  # a token's leading space, faint as in the chips


def _x_axis(labels: list[str], positions: list[int], title: str) -> dict:
    """An x axis at integer positions: the tokens written under it when there are few, else plain numbers."""
    axis = {"title": {"text": title}, "range": [min(positions, default=0) - 0.6, max(positions, default=0) + 0.6]}
    if len(positions) <= MAX_TICK_LABELS:
        axis.update(tickvals=positions, ticktext=labels, tickangle=-60 if len(positions) > 12 else 0)
    return axis


def _zero_on_top(values: list[float]) -> list[float]:
    """A range for values <= 0 with 0 near the top: two axes given this share their zero line."""
    low = min([v for v in values if v is not None] + [-1.0])
    return [low * 1.08, -low * 0.04]


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def chain_chart(chain: ChainRecord, lang: str = "en") -> dict:
    """The chain rule over a generated text, one x position per step (customdata = the step number on every point).

    Top: for each token a bar of ln P at T = 1 (what the model believes) and beside it ln P under the distribution
    the draw used (after temperature and cuts; missing for a forced token outside the kept set), with the running
    sum of the T = 1 bars as a line on the right axis, ending at ln P(text | prompt).
    Bottom: the T = 1 entropy of each step's distribution (and, dotted, of the one sampled from); fork points, where
    the entropy reaches the record's fork_bits, are large vermillion diamonds labelled with their token.
    The subtitle gives ln P(text), perplexity and its definition.
    """
    links = chain.links
    steps = [k.step for k in links]
    labels = names([k.token for k in links])
    hovers = [t("chain_hover", lang, step=k.step, token=labels[i], lp=_fmt(k.logprob_t1),
                p=format_prob(math.exp(k.logprob_t1)), lps=_fmt(k.logprob_sampled), cum=_fmt(k.cum_logprob_t1),
                rank=k.rank, h=format_bits(k.entropy_t1_bits), hs=format_bits(k.entropy_sampled_bits))
              + ("<br>" + t("chain_forced", lang) if k.forced else "") for i, k in enumerate(links)]
    common = {"customdata": steps, "hovertext": hovers, "hovertemplate": "%{hovertext}<extra></extra>"}
    traces = [
        {"type": "bar", "x": steps, "y": [k.logprob_t1 for k in links], "xaxis": "x", "yaxis": "y", "offsetgroup": "t1",
         "name": t("chain_t1", lang), "marker": {"color": T1_COLOR}, "meta": {"role": "t1"}, **common},
        {"type": "bar", "x": steps, "y": [k.logprob_sampled for k in links], "xaxis": "x", "yaxis": "y",
         "offsetgroup": "sampled", "name": t("chain_sampled", lang),
         "marker": {"color": SAMPLED_COLOR, "line": {"color": T1_COLOR, "width": 1}}, "meta": {"role": "sampled"},
         **common},
        {"type": "scatter", "x": steps, "y": [k.cum_logprob_t1 for k in links], "xaxis": "x", "yaxis": "y2",
         "mode": "lines+markers", "name": t("chain_cum", lang), "line": {"color": INK, "width": 2, "dash": "dash"},
         "marker": {"size": 6}, "meta": {"role": "cum"}, **common},
    ]
    outside = [k for k in links if k.logprob_sampled is None]
    if outside:  # probability 0 under the sampled distribution: no bar can be drawn, so say so where it would be
        traces.append({"type": "scatter", "x": [k.step for k in outside], "y": [0.0] * len(outside), "xaxis": "x",
                       "yaxis": "y", "mode": "markers+text", "text": ["p = 0"] * len(outside),
                       "textposition": "bottom center",
                       "marker": {"symbol": "x-thin-open", "size": 12, "color": SAMPLED_COLOR, "line": {"width": 2}},
                       "name": t("chain_outside", lang), "textfont": {"size": SMALL_SIZE}, "meta": {"role": "outside"},
                       "customdata": [k.step for k in outside],
                       "hovertemplate": t("chain_outside", lang) + "<extra></extra>"})
    traces.append({"type": "scatter", "x": steps, "y": [k.entropy_t1_bits for k in links], "xaxis": "x2",
                   "yaxis": "y3", "mode": "lines+markers", "name": t("chain_entropy", lang),
                   "line": {"color": KEY_COLOR, "width": 2}, "marker": {"size": 6}, "meta": {"role": "entropy"}, **common})
    traces.append({"type": "scatter", "x": steps, "y": [k.entropy_sampled_bits for k in links], "xaxis": "x2",
                   "yaxis": "y3", "mode": "lines", "name": t("chain_entropy_sampled", lang),
                   "line": {"color": KEY_COLOR, "width": 1.5, "dash": "dot"}, "meta": {"role": "entropy_sampled"},
                   **common})
    forks = [i for i, k in enumerate(links) if k.fork]
    traces.append({"type": "scatter", "x": [steps[i] for i in forks], "y": [links[i].entropy_t1_bits for i in forks],
                   "xaxis": "x2", "yaxis": "y3", "mode": "markers+text", "text": [labels[i] for i in forks],
                   "textposition": "top center", "textfont": {"size": SMALL_SIZE, "color": CHOSEN_INK},  # 6.4:1
                   "marker": {"symbol": "diamond", "size": 14, "color": FORK_COLOR, "line": {"color": "white", "width": 1}},
                   "name": t("chain_fork", lang, bits=format_bits(chain.fork_bits)), "meta": {"role": "fork"},
                   "customdata": [steps[i] for i in forks], "hovertext": [hovers[i] for i in forks],
                   "hovertemplate": "%{hovertext}<extra></extra>"})

    if links:
        subtitle = t("chain_subtitle", lang, n=chain.tokens, lp=f"{chain.logprob_t1:.2f}",
                     bits=f"{chain.logprob_t1_bits:.1f}", ppl=f"{chain.perplexity:.2f}")
    else:
        subtitle = t("chain_subtitle_empty", lang)
    subtitle += "<br>" + t("chain_subtitle_2", lang)
    entropies = [k.entropy_t1_bits for k in links] + [k.entropy_sampled_bits for k in links]
    # A pale band through both panels at each fork, so its bars above stand out too.
    fork_bands = [{"type": "rect", "name": "fork", "xref": "x", "x0": steps[i] - 0.5, "x1": steps[i] + 0.5,
                   "yref": "paper", "y0": 0, "y1": 1, "fillcolor": FORK_COLOR, "opacity": 0.08, "line": {"width": 0},
                   "layer": "below"} for i in forks]
    top, bottom = (0.42, 1.0), (0.0, 0.32)
    axis_title = t("chain_axis_step", lang)
    layout = base_layout(
        t("chain_title", lang), lang, subtitle=subtitle, height=680,
        xaxis={"domain": (0, 1), "anchor": "y", "showticklabels": False, "range": _x_axis([], steps, "")["range"]},
        yaxis={"domain": top, "anchor": "x", "title": {"text": t("chain_axis_logp", lang)},
               "range": _zero_on_top([k.logprob_t1 for k in links] + [k.logprob_sampled for k in links])},
        yaxis2={"overlaying": "y", "side": "right", "anchor": "x", "showgrid": False, "tickmode": "auto",
                "title": {"text": t("chain_axis_cum", lang)}, "range": _zero_on_top([k.cum_logprob_t1 for k in links])},
        xaxis2={"domain": (0, 1), "anchor": "y3", "matches": "x", **_x_axis(labels, steps, axis_title)},
        yaxis3={"domain": bottom, "anchor": "x2", "title": {"text": t("chain_axis_entropy", lang)},
                "range": [0, max(entropies + [chain.fork_bits, 1.0]) * 1.25]},
        shapes=[*fork_bands, {"type": "line", "name": "fork_bits", "xref": "x2 domain", "x0": 0, "x1": 1, "yref": "y3",
                 "y0": chain.fork_bits, "y1": chain.fork_bits, "line": {"color": FORK_COLOR, "width": 1, "dash": "dot"}}],
        barmode="group", bargap=0.25, bargroupgap=0.05, hovermode="closest", margin={"t": 185, "r": 80},
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "font": {"size": SMALL_SIZE}},
    )
    return chart(traces, layout)


chain_figure = as_figure(chain_chart)


def teacher_chart(tf: TeacherForcing, lang: str = "en", comparison: StepwiseComparison | None = None) -> dict:
    """Teacher forcing: every position of a text predicted in one parallel pass (customdata = the position).

    Top: per position t, a bar of P(actual token | true tokens before it), grey for the prompt's positions; where
    the model's top-1 was another token, a vermillion diamond at that token's probability, labelled in the hover.
    Bottom: the cross-entropy -ln P of each position (nats) and the mean line: the training loss on this text.
    With `comparison` (the session's stepwise decoding of the same tokens) the subtitle sets the one pass's time
    against the serial steps' and gives the largest logit difference, with why it is only float error. A record
    from an engine (tf.on_engine) says its pass was one request, and its differences are of log-probabilities.
    """
    pos = tf.positions
    xs = [p.position for p in pos]
    labels = names([p.token for p in pos])
    hovers = [t("tf_hover", lang, position=p.position, token=labels[i], p=format_prob(p.prob), rank=p.rank,
                top1=token_label(p.top1.display), top1_p=format_prob(p.top1_prob), ce=f"{p.cross_entropy_nats:.2f}",
                ce_bits=f"{p.cross_entropy_bits:.2f}")
              + ("<br>" + t("tf_in_prompt", lang) if p.in_prompt else "") for i, p in enumerate(pos)]
    misses = [i for i, p in enumerate(pos) if p.differs]
    traces = []
    for role, rows, color in (("prompt", [i for i, p in enumerate(pos) if p.in_prompt], PROMPT_COLOR),
                              ("text", [i for i, p in enumerate(pos) if not p.in_prompt], T1_COLOR)):
        if not rows:
            continue
        pick = lambda values: [values[i] for i in rows]  # noqa: E731
        name = t("tf_prompt" if role == "prompt" else "tf_prob", lang)
        cells = {"customdata": pick(xs), "hovertext": pick(hovers), "hovertemplate": "%{hovertext}<extra></extra>"}
        traces.append({"type": "bar", "x": pick(xs), "y": [pos[i].prob for i in rows], "xaxis": "x", "yaxis": "y",
                       "name": name, "legendgroup": role, "marker": {"color": color}, "meta": {"role": f"prob_{role}"},
                       **cells})
        traces.append({"type": "bar", "x": pick(xs), "y": [pos[i].cross_entropy_nats for i in rows], "xaxis": "x2",
                       "yaxis": "y2", "name": name, "legendgroup": role, "showlegend": False,
                       "marker": {"color": color}, "meta": {"role": f"ce_{role}"}, **cells})
    traces.append({"type": "scatter", "x": [xs[i] for i in misses], "y": [pos[i].top1_prob for i in misses],
                   "xaxis": "x", "yaxis": "y", "mode": "markers", "name": t("tf_top1", lang, n=len(misses)),
                   "meta": {"role": "top1"},
                   "marker": {"symbol": "diamond", "size": 10, "color": MISS_COLOR, "line": {"color": "white", "width": 1}},
                   "customdata": [xs[i] for i in misses], "hovertext": [hovers[i] for i in misses],
                   "hovertemplate": "%{hovertext}<extra></extra>"})
    span = [min(xs, default=0) - 0.5, max(xs, default=0) + 0.5]
    traces.append({"type": "scatter", "x": span, "y": [tf.mean_loss_nats] * 2, "xaxis": "x2", "yaxis": "y2",
                   "mode": "lines", "line": {"color": INK, "width": 2, "dash": "dash"}, "meta": {"role": "mean_loss"},
                   "name": t("tf_mean_line", lang, loss=f"{tf.mean_loss_nats:.2f}", ppl=f"{tf.perplexity:.2f}"),
                   "hoverinfo": "skip"})
    shapes, annotations = [], []
    if 0 < tf.prompt_len <= max(xs, default=0):  # the first generated token's position
        edge = tf.prompt_len - 0.5
        for axes in (("x", "y"), ("x2", "y2")):
            shapes.append(vertical_line(edge, "prompt_end", {"color": MUTED, "width": 2, "dash": "dot"}, axes))
        annotations.append(line_label(edge, t("tf_generated", lang), {"size": SMALL_SIZE, "color": MUTED}, "right"))
    subtitle = t("tf_subtitle_engine" if tf.on_engine else "tf_subtitle", lang, n=len(pos), ms=f"{tf.forward_ms:.0f}",
                 threads=tf.threads, loss=f"{tf.mean_loss_nats:.2f}", bits=f"{tf.mean_loss_bits:.2f}",
                 ppl=f"{tf.perplexity:.2f}")
    if comparison is not None:
        subtitle += "<br>" + t("tf_vs_steps", lang, parallel=f"{comparison.parallel_ms:.0f}",
                               serial=f"{comparison.serial_ms:.0f}", steps=len(comparison.steps_ms),
                               speedup=f"{comparison.speedup:.1f}")
        largest = max(comparison.max_abs_diff, comparison.next_max_abs_diff)
        subtitle += "<br>" + t("tf_same_logprobs" if comparison.on_engine else "tf_same_logits", lang,
                               diff=f"{largest:.1e}")
    top, bottom = (0.46, 1.0), (0.0, 0.36)
    layout = base_layout(
        t("tf_title", lang), lang, subtitle=subtitle, height=640 + 22 * subtitle.count("<br>"),
        xaxis={"domain": (0, 1), "anchor": "y", "showticklabels": False, "range": _x_axis([], xs, "")["range"]},
        yaxis={"domain": top, "anchor": "x", "title": {"text": t("tf_axis_prob", lang)}, "range": [0, 1.05],
               "tickformat": ".0%"},
        xaxis2={"domain": (0, 1), "anchor": "y2", "matches": "x", **_x_axis(labels, xs, t("tf_axis_position", lang))},
        yaxis2={"domain": bottom, "anchor": "x2", "title": {"text": t("tf_axis_ce", lang)}, "rangemode": "tozero"},
        shapes=shapes, annotations=annotations, bargap=0.15, hovermode="closest",
        margin={"t": 150 + 22 * subtitle.count("<br>")},
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "font": {"size": SMALL_SIZE}},
    )
    return chart(traces, layout)


teacher_figure = as_figure(teacher_chart)


def bucket_names(edges: tuple[int, ...], lang: str = "en") -> list[str]:
    """The rank buckets' names: 'top 1', 'top 10', 'top 100', 'beyond 100' for edges (1, 10, 100)."""
    names = [t("gltr_top1", lang) if edge == 1 else t("gltr_top", lang, k=f"{edge:,}") for edge in edges]
    return names + [t("gltr_beyond", lang, k=f"{edges[-1]:,}")]


def gltr_html(tf: TeacherForcing, lang: str = "en") -> str:
    """A scored text as HTML, each token shaded by its rank bucket under the model (GLTR, Gehrmann et al. 2019).

    Each token is a <span class="tbt-gltr tbt-gltr-b{bucket}" data-position="{t}"> with its rank, probability and
    the model's top-1 in the title; the first token (nothing predicts it) is unshaded. Token text is HTML-escaped;
    a newline token breaks the line. A legend names each bucket's colour and how many tokens fell in it, and the
    total log-probability and perplexity.
    """
    if len(tf.edges) + 1 > len(BUCKET_COLORS):
        raise ValueError(f"at most {len(BUCKET_COLORS) - 1} bucket edges can be coloured, got {tf.edges}")
    base = "display:inline-block;margin:1px 0;padding:1px 2px;border-radius:3px;white-space:pre;"
    first = tf.tokens[0]
    shown = [html.unescape(n) for n in names([first, *(p.token for p in tf.positions)])]  # escaped below, once
    spans = [f'<span class="tbt-gltr tbt-gltr-first" data-position="0" style="{base}border:1px dashed #999" '
             f'title="{html.escape(t("gltr_first", lang), quote=True)}">'
             f'{html.escape(shown[0], quote=False).replace("␣", SPACE_MARK)}</span>']
    for i, p in enumerate(tf.positions, start=1):
        title = t("gltr_title", lang, position=p.position, rank=f"{p.rank:,}", p=format_prob(p.prob),
                  top1=p.top1.display, top1_p=format_prob(p.top1_prob))
        style = f"{base}background:{BUCKET_COLORS[p.bucket]};color:{BUCKET_INK[p.bucket]}"
        text = html.escape(shown[i], quote=False).replace("␣", SPACE_MARK)
        spans.append(f'<span class="tbt-gltr tbt-gltr-b{p.bucket}" data-position="{p.position}" data-rank="{p.rank}" '
                     f'style="{style}" title="{html.escape(title, quote=True)}">{text}</span>'
                     + "<br>" * p.token.display.count("↵"))
    counts = tf.bucket_counts()
    keys = "".join(
        f'<span class="tbt-gltr-key" style="display:inline-block;padding:0 6px;margin:0 4px;border-radius:4px;'
        f'background:{BUCKET_COLORS[b]};color:{BUCKET_INK[b]}">{html.escape(name)}: {counts[b]}</span>'
        for b, name in enumerate(bucket_names(tf.edges, lang)))
    summary = t("gltr_summary", lang, n=len(tf.positions), lp=f"{tf.total_logprob:.2f}", ppl=f"{tf.perplexity:.2f}")
    legend = (f'<div class="tbt-gltr-legend" style="font-size:15px;color:#444;margin-top:10px">'
              f'{html.escape(t("gltr_legend", lang))} {keys}<br>{html.escape(summary)}</div>')
    return (f'<div class="tbt-gltr-text" lang="{lang}" style="font-size:18px;line-height:1.9">{"".join(spans)}</div>'
            f'{legend}')
