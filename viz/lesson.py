"""A lesson's reveal as HTML: the engine's answer (a model/classroom/quiz.py reveal record) in the page's words."""
from __future__ import annotations

import html
from typing import Callable

import plotly.graph_objects as go

from model.decoding.records import CacheTiming
from viz import i18n
from viz.kv_cache import cache_timing_figure
from viz.style import INK, KEY_COLOR, base_layout, figure, format_bytes

Say = Callable[..., str]  # say(key, **fmt): one of the page's texts in its language (ui/strings.py)


def reveal_percent(p: float) -> str:
    """A probability in [0, 1] as the reveal says it: one decimal, three below 0.1 % ('0.042%')."""
    return f"{100 * p:.1f}%" if p >= 0.001 else f"{100 * p:.3f}%"


def bold_marked(text: str) -> str:
    """The page's strings mark emphasis as **so**: each marked part in <b>, the marks gone."""
    parts = text.replace("**", "\0").split("\0")
    return "".join(f"<b>{part}</b>" if i % 2 else part for i, part in enumerate(parts))


def reveal_html(answer: dict, say: Say) -> str:
    """The reveal of a question's answer: the verdict and what the engine says, with its numbers in data-
    attributes too (data-kind, data-right; data-token-id and data-prob for a token; data-bytes for a cache).

    `answer`: model.classroom.quiz.reveal_record's record; `say`: the page's words in its language. Token texts are
    HTML-escaped; the words are the page's own (their **marks** become bold).
    """
    code = lambda s: f"<code>{html.escape(s)}</code>"  # noqa: E731
    pct = reveal_percent
    kind = answer["kind"]
    right = answer["right"]  # None: revealed without a guess (no verdict)
    verdict = "" if right is None else say("lesson_right" if right else "lesson_wrong")
    data = f'data-kind="{kind}" data-right="{"none" if right is None else str(right).lower()}"'
    if kind in ("next_token", "kept_by_top_p"):
        data += f' data-token-id="{answer["token_id"]}" data-prob="{answer["prob"]!r}"'
    if kind == "next_token" and right is None:
        body = say("lesson_reveal_answer", top=code(answer["top"]), top_prob=pct(answer["top_prob"]),
                   rank=answer["rank"], vocab=answer["vocab"], chosen=code(answer["chosen"]))
    elif kind == "next_token":
        body = say("lesson_reveal_token", guess=code(answer["token"]), prob=pct(answer["prob"]), rank=answer["rank"],
                   vocab=answer["vocab"], top=code(answer["top"]), top_prob=pct(answer["top_prob"]),
                   chosen=code(answer["chosen"]))
        if answer["several"]:
            body = say("lesson_first_token", token=code(answer["token"])) + " " + body
    elif kind == "kept_by_top_p":
        body = say("lesson_reveal_top_p", token=code(answer["token"]), prob=pct(answer["prob"]), rank=answer["rank"],
                   before=pct(answer["before"]), p=answer["p"], fate=say("lesson_yes" if answer["kept"] else "lesson_no"))
    elif kind == "order":
        body = say("lesson_reveal_order", first=answer["first"], last=answer["last"])
        if "temperature" in answer:  # what changes: the same logits and settings, the stages in the other order
            cuts = [f"{name} {value:g}" for name, value, off in (("top-k", answer["top_k"], 0),
                                                               ("top-p", answer["top_p"], 1.0),
                                                               ("min-p", answer["min_p"], 0.0)) if value != off]
            body += " " + say("lesson_reveal_order_what", temperature=f"{answer['temperature']:g}",
                              cuts=", ".join(cuts), diff=abs(answer["first"] - answer["last"]))
    elif kind == "step_time":
        body = _step_time(answer, say)
    elif kind == "kept_count":
        shown = ", ".join(f"{code(tok)} {pct(prob)} (Σ {pct(total)})" for tok, prob, total in answer["nucleus"])
        more = answer["kept"] - len(answer["nucleus"])
        body = say("lesson_reveal_kept_count", p=f"{answer['p']:g}", kept=answer["kept"], vocab=answer["vocab"],
                   myth=answer["myth"], tokens=shown + (say("lesson_reveal_more", n=more) if more > 0 else ""))
        data += f' data-kept="{answer["kept"]}"'
    elif kind == "beam_vs_sample":
        texts = answer["texts"]
        lines = [say(key, width=answer["width"], text=code(texts[name]["text"]),
                     logp=f"{texts[name]['logprob']:.2f}", repeated=texts[name]["repeated"],
                     n=len(texts[name]["tokens"]), ngrams=texts[name]["ngrams"])
                 for name, key in (("beam", "lesson_reveal_beam_text"), ("sampled", "lesson_reveal_sampled_text"))]
        higher = {"beam": "lesson_reveal_beam_higher", "sampled": "lesson_reveal_sampled_higher",
                  "same": "lesson_reveal_texts_same"}[answer["answer"]]
        repeats = {"beam": "lesson_reveal_repeats_beam", "sampled": "lesson_reveal_repeats_sampled",
                   "same": "lesson_reveal_repeats_same"}[answer["more_repeats"]]
        body = " ".join(lines) + " " + say(higher) + " " + say(repeats)
        data += "".join(f' data-{name}-logp="{texts[name]["logprob"]!r}"' for name in ("beam", "sampled"))
    elif kind == "prefill_vs_decode":
        body = say("lesson_reveal_pd", tokens=answer["tokens"], ptps=f"{answer['prefill_tps']:,.0f}",
                   pms=f"{answer['prefill_ms']:.1f}", dtps=f"{answer['decode_tps']:,.0f}",
                   dms=f"{answer['decode_ms']:.1f}", ratio=f"{answer['ratio']:.0f}")
        body += " " + say({"prefill": "lesson_reveal_pd_prefill", "decode": "lesson_reveal_pd_decode",
                           None: "lesson_reveal_pd_noisy"}[answer["answer"]])
        data += f' data-answer="{answer["answer"] or "none"}" data-ratio="{answer["ratio"]!r}"'
    elif kind == "top_attribution":
        shown = "; ".join(say("lesson_reveal_attr_choice", token=code(r["token"]), ig=f"{r['ig']:+.2f}",
                              att=f"{r['attention']:.3f}") if r["ig"] is not None
                          else say("lesson_reveal_attr_absent", token=code(r["token"])) for r in answer["choices"])
        body = say("lesson_reveal_attr", target=code(answer["target"]), steps=answer["steps"],
                   gap=f"{answer['delta']:.1e}", choices=shown, most=code(answer["most_attention"]))
        if answer["answer"] is not None:
            best = next(r for r in answer["choices"] if r["text"] == answer["answer"])
            body += " " + say("lesson_reveal_attr_top", token=code(best["token"]))
        data += f' data-answer="{html.escape(answer["answer"] or "", quote=True)}"'
    else:
        body = say("lesson_reveal_cache", layers=answer["layers"], kv_heads=answer["kv_heads"],
                   head_dim=answer["head_dim"], tokens=answer["tokens"], bytes_per=answer["bytes_per"],
                   bytes=answer["bytes"], size=format_bytes(answer["bytes"]))
        data += f' data-bytes="{answer["bytes"]}"'
    if kind == "step_time":
        data += f' data-answer="{answer["answer"] or "none"}" data-slope="{answer["slope"]!r}"'
    verdict = f"<b>{verdict}</b> " if verdict else ""
    return f'<div class="tbt-lesson-reveal" {data}><p>{verdict}{bold_marked(body)}</p></div>'


def _step_time(answer: dict, say: Say) -> str:
    """A step_time reveal: the measured times at the ends, the fitted line, the rule and what it concluded."""
    ms = lambda x: f"{x:.1f}"  # noqa: E731
    body = say("lesson_reveal_step_time", tokens=answer["tokens"], short=answer["seq_len"][0],
               long=answer["seq_len"][-1], short_ms=ms(answer["cached_ms"][0]), long_ms=ms(answer["cached_ms"][-1]),
               runs=min(answer["runs"]), slope=f"{answer['slope'] * 1000:.2f}", fit_short=ms(answer["fit_short"]),
               fit_long=ms(answer["fit_long"]), growth=f"{answer['growth']:.0%}")
    if answer["answer"] is not None:
        return body + " " + say({"grows": "lesson_reveal_step_grows", "same": "lesson_reveal_step_same"}[answer["answer"]],
                                growth=f"{answer['growth']:.0%}")
    # the machine too busy to measure: said as that (never as a verdict against what the numbers show), why, and
    # what a guess is graded on instead (model.classroom.myths.step_grade)
    short, long = answer["cached_range"][0], answer["cached_range"][-1]
    why = say("lesson_step_busy_overlap", short=answer["seq_len"][0], long=f"{answer['seq_len'][-1]:,}",
              short_low=ms(short[0]), short_high=ms(short[1]), long_low=ms(long[0]), long_high=ms(long[1])) \
        if answer.get("busy") == "overlap" else \
        say("lesson_step_busy_runs", runs=min(answer["runs"][0], answer["runs"][-1]), long=f"{answer['seq_len'][-1]:,}")
    return body + " " + say("lesson_reveal_step_noisy", why=why) + " " + say("lesson_reveal_step_known")


def answer_figure(answer: dict, lang: str) -> go.Figure | None:
    """The chart a measured reveal draws from its record: a step_time question's is the KV cache view's measurement
    chart with the fitted line, a beam_vs_sample question's the two texts' log P; None for any other question
    (the step's view draws its own)."""
    if answer["kind"] == "step_time":
        timing = CacheTiming(answer["seq_len"], answer["cached_ms"], answer["full_ms"],
                             [tuple(r) for r in answer["cached_range"]], [tuple(r) for r in answer["full_range"]],
                             answer["runs"])
        return cache_timing_figure(timing, lang, fit=(answer["slope"], answer["intercept"]))
    if answer["kind"] == "beam_vs_sample":
        return logprob_figure(answer, lang)
    if answer["kind"] == "prefill_vs_decode":
        return pd_figure(answer, lang)
    if answer["kind"] == "top_attribution":
        return attribution_choices_figure(answer, lang)
    return None


def pd_figure(answer: dict, lang: str) -> go.Figure:
    """A prefill against one decode step: tokens per second of each (medians), every run as a dot."""
    names = [i18n.t("lesson_pd_bar_prefill", lang, n=answer["tokens"]), i18n.t("lesson_pd_bar_decode", lang)]
    medians = [answer["prefill_tps"], answer["decode_tps"]]
    bars = {"type": "bar", "x": names, "y": medians, "marker": {"color": ["#D55E00", "#0072B2"]},
            "text": [f"{v:,.0f}" for v in medians], "textposition": "outside", "cliponaxis": False,
            "hoverinfo": "skip", "meta": {"role": "tps"}}
    runs = {"type": "scatter", "mode": "markers", "x": [names[0]] * len(answer["prefill_runs"]) +
            [names[1]] * len(answer["decode_runs"]), "y": answer["prefill_runs"] + answer["decode_runs"],
            "marker": {"color": INK, "size": 8}, "hovertemplate": "%{y:,.0f}<extra></extra>", "meta": {"role": "runs"}}
    layout = base_layout(i18n.t("lesson_pd_title", lang), lang, subtitle=i18n.t("lesson_pd_subtitle", lang),
                         yaxis={"title": {"text": i18n.t("pd_axis_tps", lang)}, "rangemode": "tozero"},
                         showlegend=False, margin={"t": 120})
    return figure([bars, runs], layout)


def attribution_choices_figure(answer: dict, lang: str) -> go.Figure:
    """The question's tokens' integrated gradients (bars: blue raises the logit, vermillion lowers it), each bar's
    attention in its label."""
    rows = [r for r in answer["choices"] if r["ig"] is not None]
    names = [html.escape(r["token"], quote=False) for r in rows]
    bar = {"type": "bar", "x": names, "y": [r["ig"] for r in rows],
           "marker": {"color": ["#0B4F8A" if r["ig"] >= 0 else "#A33F00" for r in rows]},
           "text": [i18n.t("lesson_attr_bar_text", lang, ig=f"{r['ig']:+.2f}", att=f"{r['attention']:.3f}")
                    for r in rows], "textposition": "outside", "cliponaxis": False, "hoverinfo": "skip",
           "meta": {"role": "ig"}}
    layout = base_layout(i18n.t("lesson_attr_title", lang, target=html.escape(answer["target"], quote=False)), lang,
                         subtitle=i18n.t("lesson_attr_subtitle", lang, steps=answer["steps"]),
                         yaxis={"title": {"text": i18n.t("attr_axis_logit", lang)}, "zeroline": True},
                         showlegend=False, margin={"t": 120})
    return figure([bar], layout)


def logprob_figure(answer: dict, lang: str) -> go.Figure:
    """Beam search's text against sampling's: a bar of log P each (one forward pass), its repeats in the label."""
    texts = answer["texts"]
    names = [i18n.t("myth_beam", lang, width=answer["width"]), i18n.t("myth_sampled", lang)]
    rows = [texts["beam"], texts["sampled"]]
    bar = {"type": "bar", "x": names, "y": [r["logprob"] for r in rows], "marker": {"color": [KEY_COLOR, INK]},
           "text": [f"{r['logprob']:.2f}" for r in rows], "textposition": "outside", "cliponaxis": False,
           "hovertext": [i18n.t("myth_bar_hover", lang, name=name, logp=f"{r['logprob']:.2f}", repeated=r["repeated"],
                                n=len(r["tokens"])) for name, r in zip(names, rows)],
           "hovertemplate": "%{hovertext}<extra></extra>", "meta": {"role": "logp"}}
    layout = base_layout(i18n.t("myth_logp_title", lang), lang, subtitle=i18n.t("myth_logp_subtitle", lang),
                         yaxis={"title": {"text": i18n.t("myth_logp_axis", lang)},
                                # room under the lower bar for its value, above the category names
                                "range": [1.2 * min(0.0, *(r["logprob"] for r in rows)) - 1, 0]},
                         margin={"t": 120})
    return figure([bar], layout)
