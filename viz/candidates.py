"""The next-token candidates: their probabilities before and after the settings, and the inverse-CDF draw."""
from __future__ import annotations

import math
from dataclasses import replace
from itertools import accumulate
from typing import NamedTuple

from model.decoding.records import FATES, Candidate, Distribution, TokenInfo
from viz.chips import chosen_how
from viz.i18n import t
from viz.labels import candidate_name
from viz.style import (FATE_COLORS, FATE_MARKS, FATE_PATTERNS, FONT_SIZE, INK, MUTED, SMALL_SIZE, as_figure, base_layout,
                       chart, domains, fate_label, format_bits, format_prob, narrow_layout, prob_ticks, stacked,
                       text_px, token_label, vertical_line)

CUT_FATES = ("top_k", "top_p", "min_p", "greedy", "grammar")
LEGEND_BELOW_PX = 66  # the legend's top under the plot area: below the axes' tick labels and titles
PHONE_LEGEND_EXTRA_PX = 60  # ... on a phone, lower still: the draw's axis title wraps to two lines there
OTHER_COLOR = "#EEEEEE"  # the draw panel's 'all other tokens' and '... n more' stretches


def _plain(token: TokenInfo, lang: str | None = None) -> str:
    """A token named by its display alone (no text before it known)."""
    return token_label(token.display)


class DrawSegment(NamedTuple):
    """One stretch of the running total [start, end) that the draw u can land in."""

    label: str  # plotly-safe text for the axis
    start: float
    end: float
    candidate: Candidate | None  # None for the '... n more' and 'all other tokens' stretches


def shown_candidates(dist: Distribution, top_n: int = 12) -> list[Candidate]:
    """The `top_n` most probable candidates at T = 1 in rank order, plus the chosen one if it is not among them."""
    shown = sorted(dist.candidates, key=lambda c: c.rank)[:top_n]
    if all(c.token.id != dist.chosen.id for c in shown):
        shown.append(dist.chosen_candidate)
    return shown


def not_shown_mass(dist: Distribution, shown: list[Candidate]) -> tuple[float, float]:
    """Probability (at T = 1, and final) of every token without a bar: the record's tail plus its unshown candidates."""
    ids = {c.token.id for c in shown}
    rest = [c for c in dist.candidates if c.token.id not in ids]
    return (dist.tail_mass_t1 + sum(c.prob_t1 for c in rest), dist.tail_mass_final + sum(c.final_prob for c in rest))


def draw_order(dist: Distribution) -> list[Candidate]:
    """The candidates the draw can pick, in the order u walks them: final probability descending, ties by id."""
    return sorted((c for c in dist.candidates if c.final_prob > 0), key=lambda c: (-c.final_prob, c.token.id))


def draw_segments(dist: Distribution, top_n: int = 12, lang: str = "en", named=None,
                  chosen_row: bool = True) -> list[DrawSegment]:
    """The running total of the final probabilities in draw order, cut to about `top_n` stretches.

    The chosen token keeps its own stretch (unless not `chosen_row`: the draw hidden); candidates between the
    first rows and it fold into one '... n more' stretch, and everything after the last row (other tokens) into
    'all other tokens'.
    """
    order = draw_order(dist)
    starts, total = [], 0.0
    for c in order:
        starts.append(total)
        total += c.final_prob
    where = next((i for i, c in enumerate(order) if c.token.id == dist.chosen.id), -1) if chosen_row else -1
    if len(order) <= top_n or where < top_n:
        rows = list(range(min(len(order), top_n)))
    else:  # the chosen token sits deep in the draw order: fold the middle
        rows = list(range(top_n - 2)) + [None, where]

    segments = []
    for k, i in enumerate(rows):
        if i is None:
            first, last = rows[k - 1] + 1, where
            segments.append(DrawSegment(t("cand_gap", lang, n=last - first), starts[first], starts[last], None))
        else:
            c = order[i]
            segments.append(DrawSegment((named or _plain)(c.token), starts[i], starts[i] + c.final_prob, c))
    end = segments[-1].end if segments else 0.0
    if 1.0 - end > 1e-9:
        segments.append(DrawSegment(t("cand_others", lang), end, 1.0, None))
    return segments


def _prob_before(candidate: Candidate, stage: str, stages: tuple[str, ...]) -> float:
    """The candidate's probability entering `stage`: after the last earlier stage that recorded one."""
    for earlier in reversed(stages[: stages.index(stage)]):
        if earlier in candidate.stage_probs:
            return candidate.stage_probs[earlier]
    return candidate.prob_t1


def _penalized_logit(c: Candidate, dist: Distribution) -> float | None:
    """A repeated candidate's logit after the repetition penalty (z / penalty if z > 0, else z * penalty), or None
    for a token not in the text. The record does not say which tokens are in the text; the penalty does: it moves a
    repeated token's log-probability by exactly that change against the others (log p' - log p at T = 1 is the
    same for every token it leaves alone, and the most of all the candidates')."""
    theta = dist.config.repetition_penalty
    shift = lambda x: math.log(x.stage_probs["repetition_penalty"]) - math.log(x.prob_t1)
    usable = [x for x in dist.candidates if x.prob_t1 > 0 and x.stage_probs.get("repetition_penalty", 0) > 0]
    if c not in usable:
        return None
    expected = (c.logit / theta if c.logit > 0 else c.logit * theta) - c.logit
    moved = shift(c) - max(shift(x) for x in usable)
    return c.logit + expected if expected and abs(moved - expected) < 1e-3 + 1e-3 * abs(expected) else None


def _hover(c: Candidate, dist: Distribution, lang: str, named=None) -> str:
    active = {s.name for s in dist.stages if s.active}
    lines = [
        f"<b>{(named or _plain)(c.token, lang)}</b>   {t('hover_id', lang)} {c.token.id} · {t('hover_rank', lang)} {c.rank}",
        f"{t('hover_logit', lang)}: {c.logit:.2f}",
        f"{t('hover_t1', lang)}: {format_prob(c.prob_t1)}",
    ]
    penalized = _penalized_logit(c, dist) if "repetition_penalty" in active else None
    if penalized is not None:
        lines.insert(2, f"{t('hover_logit_penalized', lang)}: {penalized:.2f}")
    stages = list(dist.config.stages)
    if "grammar" in c.stage_probs:  # a constraint's stage runs right after the repetition penalty (model/decoding/sampling.py)
        stages.insert(stages.index("repetition_penalty") + 1, "grammar")
    for stage in stages:
        if stage in active and stage in c.stage_probs:
            name = t("stage_grammar", lang) if stage == "grammar" else t(f"stage_{stage}", lang)
            after = t("hover_after", lang, stage=name)
            lines.append(f"{after}: {format_prob(c.stage_probs[stage])}")
    lines.append(f"<b>{t('hover_final', lang)}: {format_prob(c.final_prob)}</b>")
    lines.append(f"{t('hover_fate', lang)}: {fate_label(c.fate, lang)}")
    return "<br>".join(lines)


def _bar_label(c: Candidate) -> str:
    """The text beside a candidate's bars: its probability at T = 1, after the settings, and its fate's mark."""
    return f"{format_prob(c.prob_t1)} → {format_prob(c.final_prob)} {FATE_MARKS[c.fate]}"


def _bar_panel(dist: Distribution, shown: list[Candidate], lang: str, named=None) -> tuple[list[dict], dict, dict]:
    """Left panel: a hatched/outlined bar at T = 1 and a solid bar for the final probability, per fate.

    Returns (traces, x axis, y axis).
    """
    traces = []
    for fate in FATES:
        rows = [(i, c) for i, c in enumerate(shown) if c.fate == fate]
        if not rows:
            continue
        ys = [i for i, _ in rows]
        hovers = [_hover(c, dist, lang, named) for _, c in rows]
        color, cut = FATE_COLORS[fate], fate in CUT_FATES
        outline = {"color": "rgba(255,255,255,0)", "line": {"color": color, "width": 2}}
        if cut:
            outline["pattern"] = {"shape": FATE_PATTERNS[fate], "fgcolor": color, "bgcolor": "white", "solidity": 0.35}
        traces.append({
            "type": "bar", "x": [c.prob_t1 for _, c in rows], "y": ys, "xaxis": "x", "yaxis": "y", "orientation": "h",
            "width": 0.8, "name": fate_label(fate, lang), "legendgroup": fate, "showlegend": cut, "hovertext": hovers,
            "hovertemplate": "%{hovertext}<extra></extra>", "marker": outline, "meta": {"role": "t1", "fate": fate},
        })
        if not cut:
            traces.append({
                "type": "bar", "x": [c.final_prob for _, c in rows], "y": ys, "xaxis": "x", "yaxis": "y",
                "orientation": "h", "width": 0.5, "name": fate_label(fate, lang), "legendgroup": fate,
                "hovertext": hovers, "hovertemplate": "%{hovertext}<extra></extra>", "marker": {"color": color},
                "meta": {"role": "final", "fate": fate},
            })
    # Legend key for the outline bars, and a text label beside each bar so colour is not the only cue.
    traces.append({"type": "bar", "x": [None], "y": [None], "xaxis": "x", "yaxis": "y", "orientation": "h",
                   "name": t("cand_legend_t1", lang), "marker": {"color": "white", "line": {"color": MUTED, "width": 2}},
                   "hoverinfo": "skip"})
    longest = max(max(c.prob_t1, c.final_prob) for c in shown)
    labels = [_bar_label(c) for c in shown]
    traces.append({
        "type": "scatter", "x": [max(c.prob_t1, c.final_prob) + 0.01 * longest for c in shown],
        "y": list(range(len(shown))), "xaxis": "x", "yaxis": "y", "mode": "text", "textposition": "middle right",
        "showlegend": False, "hoverinfo": "skip", "textfont": {"size": SMALL_SIZE}, "text": labels,
        "meta": {"role": "labels"},
    })
    # The axis reaches past the longest bar far enough for its label: a panel is at least about 370 px wide on a
    # projector (a phone's is fitted again in the browser: assets/js/charts.js), a label's character at most 9 px.
    reach = max(1.55, 1.01 / (1 - min(0.6, 9 * max(len(s) for s in labels) / 370)))
    ticks = [(named or _plain)(c.token) for c in shown]
    ticks = [f"<b>{s}</b>" if c.token.id == dist.chosen.id else s for s, c in zip(ticks, shown)]
    xaxis = {"range": [0, longest * reach], "tickvals": prob_ticks(longest), "tickformat": ".0%",
             "title": {"text": t("cand_axis_prob", lang)}}
    yaxis = {"tickvals": list(range(len(shown))), "ticktext": ticks, "autorange": "reversed"}
    return traces, xaxis, yaxis


def _draw_panel(dist: Distribution, top_n: int, lang: str, named=None) -> tuple[list[dict], list[dict], list[dict], dict, dict]:
    """Right panel: each kept token's stretch of the running total, the draw u and the top-p threshold.

    Returns (traces, shapes, annotations, x axis, y axis).
    """
    segments = draw_segments(dist, top_n, lang, named)
    ys = list(range(len(segments)))
    traces = [{
        "type": "bar", "xaxis": "x2", "yaxis": "y2", "orientation": "h", "width": 0.7, "showlegend": False,
        "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"role": "draw"}, **_stretches(segments, lang),
    }]
    lines = []
    if dist.config.top_p < 1:
        traces.append({
            "type": "scatter", "xaxis": "x2", "yaxis": "y2",
            "mode": "lines+markers", "name": t("cand_legend_after_top_p", lang),
            "line": {"color": FATE_COLORS["top_p"], "width": 2, "dash": "dot"},
            "marker": {"size": 8, "symbol": "diamond"}, "hovertemplate": "%{x:.3f}<extra></extra>",
            "meta": {"role": "before_top_p"}, **_before_top_p(dist, segments),
        })
        lines.append(_line(dist.config.top_p, "top_p", t("cand_top_p_line", lang, p=f"{dist.config.top_p:g}"),
                           FATE_COLORS["top_p"], "dot", label_y=-0.75))
    if dist.config.temperature != 0:  # greedy takes the argmax: there is no draw to show
        lines.append(_line(dist.u, "u", t("cand_u_line", lang, u=f"{dist.u:.3f}"), "black", "solid", label_y=-1.3))
    # Two empty rows above the first stretch hold the line labels clear of the bars.
    xaxis = {"range": [0, 1.0], "tickformat": ".0%", "title": {"text": t("cand_axis_cum", lang)}}
    yaxis = {"tickvals": ys, "ticktext": [s.label for s in segments], "range": [len(segments) - 0.5, -1.7]}
    return traces, [shape for shape, _ in lines], [label for _, label in lines], xaxis, yaxis


def _stretches(segments: list[DrawSegment], lang: str, hidden: bool = False) -> dict:
    """The draw panel's bars' keys: each stretch of the running total, coloured by its token's fate (the chosen
    one as kept when the draw is `hidden`)."""
    fate = lambda c: "kept" if hidden and c.fate == "chosen" else c.fate  # noqa: E731
    return {
        "base": [s.start for s in segments], "x": [s.end - s.start for s in segments], "y": list(range(len(segments))),
        "marker": {"color": [FATE_COLORS[fate(s.candidate)] if s.candidate else OTHER_COLOR for s in segments],
                   "line": {"color": MUTED, "width": 1}},
        "hovertext": [(f"<b>{s.label}</b><br>" if s.candidate else "")
                      + t("hover_segment", lang, start=f"{s.start:.3f}", end=f"{s.end:.3f}")
                      + f"<br>{t('hover_final', lang)}: {format_prob(s.end - s.start)}" for s in segments],
    }


def _before_top_p(dist: Distribution, segments: list[DrawSegment]) -> dict:
    """The running total of the probabilities *entering* top-p (the nucleus is cut on it) at each row: x and y."""
    order = draw_order(dist)
    entering = accumulate(_prob_before(c, "top_p", dist.config.stages) for c in order)
    ends = dict(zip((c.token.id for c in order), entering))
    rows = [(y, ends[s.candidate.token.id]) for y, s in enumerate(segments) if s.candidate]
    return {"x": [x for _, x in rows], "y": [y for y, _ in rows]}


def hidden_draw(dist: Distribution, data: list[dict], layout: dict, shown: list[Candidate], top_n: int,
                lang: str, named, title: str, subtitle: str) -> dict:
    """What 'predict first' changes on a candidate chart, for the page to apply while that switch is on
    (assets/js/charts.js hideDraw): the candidates and their fates, but not which one the draw picks.

    {"traces": {index: keys replaced}, "layout": {key: value replacing (a dict: merged into) the chart's}}: the
    chosen token's bars, labels, hover and stretch drawn as any kept token's, its row (when it is outside the top
    `top_n`) and its bold tick gone, the draw u's line and label gone, the title and subtitle without it (`title`,
    `subtitle`). The numbers are the chart's own: only what says which token is drawn changes.
    """
    segments = draw_segments(dist, top_n, lang, named, chosen_row=False)
    rows = min(len(shown), top_n)  # (a row past the top `top_n` is the chosen token's: shown_candidates)
    kept = FATE_COLORS["kept"]
    as_kept = lambda c: replace(c, fate="kept") if c.fate == "chosen" else c  # noqa: E731
    traces = {}
    for i, trace in enumerate(data):
        meta = trace.get("meta") or {}
        if meta.get("fate") == "chosen":
            chosen = [c for c in shown if c.fate == "chosen"]
            marker = {"color": kept} if meta.get("role") == "final" else {"color": "rgba(255,255,255,0)",
                                                                          "line": {"color": kept, "width": 2}}
            traces[i] = {"marker": marker, "name": fate_label("kept", lang), "legendgroup": "kept", "showlegend": False,
                         "hovertext": [_hover(as_kept(c), dist, lang, named) for c in chosen]}
        elif meta.get("role") == "labels":
            traces[i] = {"text": [_bar_label(as_kept(c)) for c in shown]}
        elif meta.get("role") == "draw":
            traces[i] = _stretches(segments, lang, hidden=True)
        elif meta.get("role") == "before_top_p":
            traces[i] = _before_top_p(dist, segments)
    u_label = t("cand_u_line", lang, u=f"{dist.u:.3f}")
    draw_title = t("cand_panel_draw", lang, u=f"{dist.u:.3f}")
    annotations = [({**a, "text": t("cand_panel_draw_predict", lang)} if a["text"] == draw_title else a)
                   for a in layout["annotations"] if a["text"] != u_label]
    return {"traces": traces, "layout": {
        "title": {**layout["title"], "text": title, "subtitle": {**layout["title"]["subtitle"], "text": subtitle}},
        "yaxis": {"ticktext": [(named or _plain)(c.token) for c in shown], "autorange": False,
                  "range": [rows - 0.5, -0.5]},
        "yaxis2": {"tickvals": list(range(len(segments))), "ticktext": [s.label for s in segments],
                   "range": [len(segments) - 0.5, -1.7]},
        "shapes": [shape for shape in layout["shapes"] if shape.get("name") != "u"],
        "annotations": annotations,
    }}


def _line(x: float, name: str, label: str, color: str, dash: str, label_y: float) -> tuple[dict, dict]:
    """A vertical line across the draw panel and its label beside it, on the side with room: (shape, annotation)."""
    line = vertical_line(x, name, {"color": color, "width": 3 if name == "u" else 2, "dash": dash}, ("x2", "y2"))
    right = x > 0.6
    label = {"x": x, "y": label_y, "xref": "x2", "yref": "y2", "text": label, "showarrow": False,
             "xanchor": "right" if right else "left", "xshift": -5 if right else 5,
             "font": {"size": SMALL_SIZE + 1, "color": color}}
    return line, label


def engine_note(dist: Distribution, lang: str = "en") -> str:
    """The line a distribution from an engine (model/vllm/session.py) carries: how much its top N hold at
    T = 1, that the rest is unknown, and "approximate" when the settings' result depends on that rest; "" for a
    local model's (every probability known). The live chart's subtitle and the exported page both show it."""
    if not getattr(dist, "top_n", 0):
        return ""
    note = t("cand_engine_note", lang, n=dist.top_n, known=format_prob(dist.known_mass),
             tail=format_prob(1 - dist.known_mass))
    return note + (" · " + t("cand_engine_approximate", lang) if dist.approximate else "")


def engine_sampler_trace(shown: list[Candidate], probs: dict[int, float], lang: str) -> dict:
    """The engine's own post-sampler probability of each shown candidate it told about: a diamond on the candidate's
    row, beside the app's solid bar (0 where the engine's sampler cut it)."""
    rows = [(i, c, probs[c.token.id]) for i, c in enumerate(shown) if c.token.id in probs]
    return {"type": "scatter", "x": [q for _, _, q in rows], "y": [i for i, _, _ in rows], "xaxis": "x", "yaxis": "y",
            "mode": "markers", "name": t("cand_engine_sampler", lang),
            "marker": {"symbol": "diamond", "size": 10, "color": INK, "line": {"color": "white", "width": 1.5}},
            "hovertext": [t("cand_engine_sampler_hover", lang, prob=format_prob(q), app=format_prob(c.final_prob))
                          for _, c, q in rows],
            "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"role": "engine_sampler"}}


def candidate_chart(dist: Distribution, lang: str = "en", top_n: int = 12, grammar_mass: float | None = None,
                    context: list[TokenInfo] = (), engine_sampler: dict | None = None) -> dict:
    """The candidates for one next token under one SamplingConfig.

    Left: the `top_n` most probable candidates at T = 1 (plus the chosen one), each with an outline bar at
    T = 1 (hatched when a stage cut it) and a solid bar for the final probability, coloured by fate.
    Right: the inverse-CDF draw, the kept tokens' stretches of the running total in draw order with the
    uniform draw u (and the top-p threshold when top_p < 1). Hover shows every stage's probability.
    grammar_mass: under a constraint (model/strategies/constrain.py), the probability its stage removed, said in the subtitle.
    context: the last tokens of the text so far (TokenDisplay.tail), so a byte token is named by the character it
    finishes or starts (viz.labels.candidate_name).
    engine_sampler: an engine's own post-sampler distribution beside the app's, {"probs": {token id: probability},
    "note": the sentence saying how far they agree or why they differ}: diamonds on the bars, the note under the
    title (model/vllm/processed.py); {"note": ...} alone when the engine could not be asked.
    """
    names = {}  # (a token is named several times: its bar, its stretch, its hover, and again for the hidden draw)

    def named(token, lang=None):
        if (token.id, lang) not in names:
            names[token.id, lang] = candidate_name(context, token, lang)
        return names[token.id, lang]

    greedy = dist.config.temperature == 0
    spec = getattr(dist, "speculative", None)
    draw_title = t("cand_panel_greedy", lang) if greedy else t("cand_panel_draw", lang, u=f"{dist.u:.3f}")
    if spec is not None and spec.kind != "bonus":  # the accept test or the residual chose it, not this u
        draw_title = t("cand_panel_spec", lang)
    left, right = domains([0.58, 0.42], gap=0.16)
    shown = shown_candidates(dist, top_n)
    bars, bars_x, bars_y = _bar_panel(dist, shown, lang, named)
    draw, shapes, labels, draw_x, draw_y = _draw_panel(dist, top_n, lang, named)
    chosen = dist.chosen_candidate
    key = ("cand_title_marked" if getattr(dist, "marked_forced", False) else "cand_title_forced" if dist.forced
           else "cand_title_spec" if spec is not None and spec.kind != "bonus" else "cand_title")
    title = t(key, lang, position=dist.position, token=f"<b>{named(dist.chosen)}</b>")
    kept = f"{dist.stages[-1].kept:,}" if dist.stages else "?"
    tail_t1, tail_final = not_shown_mass(dist, shown)
    subtitle = t("cand_subtitle", lang, tail_t1=format_prob(tail_t1),
                 tail_final=format_prob(tail_final), h_t1=format_bits(dist.entropy_t1_bits),
                 h_final=format_bits(dist.entropy_final_bits), kept=kept)
    drawn = [t("cand_chosen_note", lang, token=candidate_name(context, dist.chosen, lang),
               prob=format_prob(chosen.prob_t1), logprob=f"{dist.chosen_logprob_t1:.2f}", rank=dist.chosen_rank)]
    if spec is not None:
        drawn.append(chosen_how(dist, lang))
    notes = []  # (the lines that do not say which token is drawn)
    if grammar_mass is not None:
        removed = next((s.removed for s in dist.stages if s.name == "grammar"), 0)
        notes.append(t("cand_grammar_note", lang, mass=format_prob(grammar_mass), removed=f"{removed:,}"))
    if note := engine_note(dist, lang):
        notes.append(note)
    if engine_sampler:
        notes.append(engine_sampler["note"])
        if engine_sampler.get("probs"):
            bars.append(engine_sampler_trace(shown, engine_sampler["probs"], lang))
            farthest = max(engine_sampler["probs"].get(c.token.id, 0.0) for c in shown)
            labels_trace = next(tr for tr in bars if (tr.get("meta") or {}).get("role") == "labels")
            pad = labels_trace["x"][0] - max(shown[0].prob_t1, shown[0].final_prob)  # the labels' gap after a bar
            labels_trace["x"] = [max(x, engine_sampler["probs"].get(c.token.id, 0.0) + pad)  # clear of a diamond
                                 for x, c in zip(labels_trace["x"], shown)]
            bars_x["range"] = [0, max(bars_x["range"][1], 1.08 * farthest)]  # a diamond past every bar stays in
    hidden_subtitle = "<br>".join([subtitle, *notes])
    subtitle = "<br>".join([subtitle, *drawn, *notes])
    # (the top holds the title, the subtitle's lines and the panels' titles; the bottom the axes' titles and the
    # legend LEGEND_BELOW_PX under the plot: no more, so a projector's 1280 x 800 holds the text and the whole chart)
    height, top, bottom = max(560, 280 + 30 * len(shown)), 126 + 24 * subtitle.count("<br>") - 24, 104
    layout = base_layout(
        title, lang, subtitle=subtitle, height=height,
        xaxis={"domain": left, "anchor": "y", **bars_x}, yaxis={"domain": (0.0, 1.0), "anchor": "x", **bars_y},
        xaxis2={"domain": right, "anchor": "y2", **draw_x}, yaxis2={"domain": (0.0, 1.0), "anchor": "x2", **draw_y},
        annotations=[over_panel(t("cand_panel_bars", lang), "x", "y"), over_panel(draw_title, "x2", "y2"), *labels],
        shapes=shapes, barmode="overlay", bargap=0.2, margin={"t": top, "b": bottom},
        # The legend sits a fixed LEGEND_BELOW_PX below the plot, clear of the axis titles whatever the height.
        legend={"orientation": "h", "y": -LEGEND_BELOW_PX / (height - top - bottom), "x": 0, "yanchor": "top"},
    )
    layout["meta"]["predict"] = hidden_draw(dist, bars + draw, layout, shown, top_n, lang, named,
                                            t("cand_title_predict", lang, position=dist.position), hidden_subtitle)
    # On a phone (assets/js/charts.js): the draw under the candidates, not dropped (the caption says which token it
    # drew, and how): each panel the phone's width, the room between them for the candidates' axis and the draw's
    # title, the chart taller by the draw's panel; the panels' titles and the lines' labels follow their panels
    rows = len(draw_y["ticktext"]) + 2  # (its two empty rows hold the lines' labels)
    bars_px, draw_px, gap_px = 30 * len(shown) + 20, 26 * rows, 120
    (bars_d, draw_d) = stacked([bars_px, draw_px], [gap_px])
    phone_height = height + draw_px + gap_px  # (the candidates keep their rows' room)
    # both panels start at the left edge there: the left margin holds the longer of their labels ("all other
    # tokens"), and the legend goes lower, clear of the draw's axis title, which the phone's narrower ticks push down
    left_px = max(layout["margin"]["l"], max(text_px(label, FONT_SIZE) for label in draw_y["ticktext"]) + 14)
    margin = layout["margin"]
    plot_px = phone_height - margin["t"] - margin["b"]  # (the plot's height there: the margins grow alike)
    narrow_layout(layout, height=phone_height + PHONE_LEGEND_EXTRA_PX, xaxis={"domain": [0.0, 1.0]},
                  yaxis={"domain": list(bars_d)}, xaxis2={"domain": [0.0, 1.0]}, yaxis2={"domain": list(draw_d)},
                  margin={"l": round(left_px), "b": margin["b"] + PHONE_LEGEND_EXTRA_PX},
                  legend={"orientation": "h", "x": 0, "yanchor": "top",
                          "y": -(LEGEND_BELOW_PX + PHONE_LEGEND_EXTRA_PX) / plot_px})
    return chart(bars + draw, layout)


def over_panel(text: str, x: str, y: str) -> dict:
    """A panel's title, centred over the panel of axes `x` and `y` (in their domains: on a phone, where the panels
    are stacked, it moves with its panel)."""
    return {"text": text, "x": 0.5, "xref": f"{x} domain", "xanchor": "center", "y": 1.0, "yref": f"{y} domain",
            "yanchor": "bottom", "showarrow": False, "font": {"size": FONT_SIZE}}


candidate_figure = as_figure(candidate_chart)
