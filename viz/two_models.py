"""Two models on one text: each model's surprisal per character as bars side by side, where they disagree most, and
each one's continuation of the same prompt. Pure functions of plain records (model.experiments.two_models:
CharReading's numpy arrays, Continuation's TokenInfo lists); no torch, no gradio."""
from __future__ import annotations

import html
import math

from viz.branches import SIDE_COLORS
from viz.i18n import t
from viz.race import settings_text
from viz.style import SMALL_SIZE, as_figure, base_layout, chart, narrow_layout, token_label
from viz.tokenizers import MODEL_NAMES

MARK = "#F0E442"  # the stretches where the models disagree most: a pale yellow band behind the bars
VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥"}


def model_name(name: str) -> str:
    return MODEL_NAMES.get(name, name)


def _char(ch: str) -> str:
    return token_label(VISIBLE.get(ch, ch))


def two_models_chart(readings, lang: str = "en") -> dict:
    """Per character of the text (x), each model's surprisal in bits (bars side by side, one colour per model); a
    character not wholly scored (SmolLM2's first token) is drawn faint; the stretches where the two disagree most
    are banded in yellow."""
    text, n = readings.text, len(readings.text)
    ticks = [_char(ch) for ch in text]
    data = []
    for reading, color in zip(readings.readings, SIDE_COLORS):
        name = model_name(reading.model)
        hover = [t("two_hover", lang, char=ticks[i], i=i, model=name, bits=f"{reading.char_bits[i]:.2f}")
                 + ("" if reading.char_scored[i] >= 1 else " · " + t("two_not_scored", lang)) for i in range(n)]
        data.append({"type": "bar", "x": list(range(n)), "y": reading.char_bits.tolist(), "name": name,
                     "marker": {"color": color, "opacity": [1 if s >= 1 else 0.35 for s in reading.char_scored]},
                     "customdata": hover, "hovertemplate": "%{customdata}<extra></extra>"})
    shapes = [{"type": "rect", "xref": "x", "yref": "y domain", "x0": d.start - 0.5, "x1": d.end - 0.5, "y0": 0,
               "y1": 1, "fillcolor": MARK, "opacity": 0.35, "line": {"width": 0}, "layer": "below",
               "name": "disagreement"} for d in readings.disagreements]
    subtitle = " · ".join(t("two_bpc", lang, model=model_name(r.model), bpc=f"{r.bits_per_char:.2f}")
                          for r in readings.readings)
    step = max(1, math.ceil(n / 60))
    layout = base_layout(
        t("two_chart_title", lang), lang, subtitle=subtitle, height=460, barmode="group", bargap=0.15,
        shapes=shapes, xaxis={"title": {"text": t("two_axis_char", lang)}, "tickvals": list(range(0, n, step)),
                              "ticktext": ticks[::step], "tickangle": 0, "range": [-0.5, n - 0.5],
                              "tickfont": {"size": SMALL_SIZE}},
        yaxis={"title": {"text": t("two_axis_bits", lang)}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
    )
    # on a phone a column is a few pixels wide: the first character's label starts a column further right, clear of
    # the y axis's "0"
    narrow_layout(layout, xaxis={"tickvals": list(range(0, n, max(step, math.ceil(n / 20)))),
                                 "ticktext": ticks[::max(step, math.ceil(n / 20))], "range": [-1.5, n - 0.5]})
    return chart(data, layout)


two_models_figure = as_figure(two_models_chart)


def chars_of(text: str, b0: int, b1: int) -> str:
    """The characters of `text` whose UTF-8 bytes overlap bytes [b0, b1)."""
    out, at = [], 0
    for ch in text:
        n = len(ch.encode("utf-8"))
        if at < b1 and at + n > b0:
            out.append(ch)
        at += n
    return "".join(out)


def _scored_note(reading, text: str, lang: str) -> str:
    """What of the text this model scores: everything after its start token, or all but its first token."""
    name = model_name(reading.model)
    if reading.start:
        return t("two_scored_all", lang, model=name, start=reading.start[0].display)
    return t("two_scored_first", lang, model=name, first=reading.tokens[0].display,
             chars=chars_of(text, *reading.spans[0]))


def readings_html(readings, missing: list[str], lang: str = "en") -> str:
    """The numbers per model (bits per character first, the one that compares them; then perplexity per token, log P
    and tokens scored), what each model scores, and the stretches where the two disagree most."""
    rows = "".join(
        f'<tr data-model="{html.escape(r.model)}"><td><b style="color:{color}">{html.escape(model_name(r.model))}</b>'
        f"</td><td><b>{r.bits_per_char:.2f}</b></td><td>{r.perplexity:.1f}</td><td>{r.logprob:.2f}</td>"
        f"<td>{r.scored} / {len(r.tokens)}</td></tr>"
        for r, color in zip(readings.readings, SIDE_COLORS))
    head = "".join(f"<th>{html.escape(t(k, lang))}</th>"
                   for k in ("two_col_model", "two_col_bpc", "two_col_ppl", "two_col_logp", "two_col_tokens"))
    notes = [_scored_note(r, readings.text, lang) for r in readings.readings] + [t("two_comparable", lang)]
    notes += [t("two_missing", lang, model=model_name(m), other=model_name(readings.readings[0].model))
              for m in missing]
    out = [f'<div class="tbt-two" lang="{lang}"><div class="tbt-two-wrap"><table class="tbt-two-table"><tr>{head}</tr>'
           f"{rows}</table></div>",
           "".join(f"<p>{html.escape(note)}</p>" for note in notes)]
    if readings.disagreements:
        a, b = (model_name(r.model) for r in readings.readings[:2])
        items = "".join(
            f'<li data-start="{d.start}" data-end="{d.end}"><b>“{html.escape(d.text)}”</b> '
            f'{html.escape(t("two_gap_item", lang, a=a, b=b, bits_a=f"{d.bits[0]:.1f}", bits_b=f"{d.bits[1]:.1f}"))}'
            "</li>" for d in readings.disagreements)
        out.append(f'<p><b>{html.escape(t("two_gaps", lang))}</b></p><ol class="tbt-two-gaps">{items}</ol>')
    return "".join(out) + f"</div><style>{TWO_CSS}</style>"


def continuations_html(continuations, cfg, missing: list[str], lang: str = "en") -> str:
    """Each model's continuation of the same prompt side by side, with the settings and seed they shared."""
    sides = []
    for c, color in zip(continuations, SIDE_COLORS):
        summary = t("two_cont_summary", lang, n=len(c.tokens), prompt=c.prompt_tokens, logp=f"{c.logprob_t1:.2f}")
        sides.append(f'<div class="tbt-two-side" data-model="{html.escape(c.model)}" style="border-top:6px solid {color}">'
                     f"<p><b>{html.escape(model_name(c.model))}</b> · {html.escape(summary)}</p>"
                     f'<p class="tbt-two-text">{html.escape(c.text)}{" ■" if c.ended else ""}</p></div>')
    notes = [t("two_cont_settings", lang, settings=settings_text(cfg, lang)), t("two_seed_note", lang)]
    notes += [t("two_missing", lang, model=model_name(m), other=model_name(continuations[0].model)) for m in missing]
    return (f'<div class="tbt-two" lang="{lang}"><div class="tbt-two-sides">{"".join(sides)}</div>'
            + "".join(f"<p>{html.escape(note)}</p>" for note in notes) + f"</div><style>{TWO_CSS}</style>")


# Only this on-demand block uses these rules; sent with it.
TWO_CSS = """
.tbt-two{font-size:16px;color:#222}
.tbt-two p{margin:4px 0}
.tbt-two-table{border-collapse:collapse;margin:4px 0 8px}
.tbt-two-table th,.tbt-two-table td{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}
.tbt-two-table th:first-child,.tbt-two-table td:first-child{text-align:left}
.tbt-two-table td{white-space:nowrap}
.tbt-two-wrap{overflow-x:auto}
@media (max-width:600px){.tbt-two-table th,.tbt-two-table td{padding:2px 4px;font-size:14px}}
.tbt-two-gaps{margin:2px 0 6px 1.2em;padding:0}
.tbt-two-sides{display:flex;flex-wrap:wrap;gap:12px}
.tbt-two-side{flex:1 1 300px;min-width:0;padding:4px 10px;background:#fafafa}
.tbt-two-text{font-family:monospace;font-size:17px;line-height:1.6;overflow-wrap:anywhere;white-space:pre-wrap}
"""
