"""A part of the model switched off, drawn: the next token's candidates before and after side by side, the tokens that
rose and fell most, the KL divergence; and the two continuations, the one written with the part off marked.

Pure functions of a plain record (model.experiments.ablation.Ablation: Moved rows and TokenInfo lists); no torch, no
gradio.
"""
from __future__ import annotations

import html

from viz.branches import SIDE_COLORS
from viz.i18n import t
from viz.labels import names
from viz.style import (MODEL_NAMES, FONT_SIZE, KEY_COLOR, SMALL_SIZE, as_figure, base_layout, chart, format_prob, narrow_layout,
                       panel_title, token_label)

ON, OFF = SIDE_COLORS  # part on: blue; part off: vermilion
FELL = "#CC79A7"  # reddish purple: told apart from the green of a rise in grey too, by side of the zero line


def part_text(part, lang: str = "en") -> str:
    """The part in words: 'head 2 of layer 3', 'the attention of layer 5', 'the MLP of layer 7'."""
    key = {"head": "abl_part_head", "attention": "abl_part_attention", "mlp": "abl_part_mlp"}[part.kind]
    return t(key, lang, layer=part.layer, head=part.head)


def ablation_chart(record, model_name: str = "", lang: str = "en") -> dict:
    """Left: each token shown (the most probable with the part on, then those of the part off not among them) with its
    probability before (blue) and after (vermilion, hatched), most probable before at the top. Right: the tokens
    whose probability rose most (green, to the right) and fell most (purple, to the left), in percentage points.
    The title names the part, how it was switched off and KL(before || after)."""
    shown = list(reversed(record.shown))  # plotly draws the first category at the bottom
    labels = [f"{token_label(m.token.display)} #{m.token.id}" for m in shown]
    common = {"type": "bar", "orientation": "h", "y": labels, "textposition": "outside", "cliponaxis": False,
              "textfont": {"size": SMALL_SIZE}}
    data = [
        {**common, "x": [m.before for m in shown], "name": t("abl_before", lang), "marker": {"color": ON},
         "text": [format_prob(m.before) for m in shown], "hovertemplate": "%{y}: %{text}<extra></extra>"},
        {**common, "x": [m.after for m in shown], "name": t("abl_after", lang),
         "marker": {"color": OFF, "pattern": {"shape": "/", "fgcolor": "white", "fillmode": "overlay", "fgopacity": 0.6}},
         "text": [format_prob(m.after) for m in shown], "hovertemplate": "%{y}: %{text}<extra></extra>"},
    ]
    movers = list(reversed(record.fell)) + list(reversed(record.rose))  # the biggest rise at the top, fall at the bottom
    mover_labels = [f"{token_label(m.token.display)} #{m.token.id}" for m in movers]
    changes = [100.0 * (m.after - m.before) for m in movers]
    data.append({"type": "bar", "orientation": "h", "y": mover_labels, "x": changes, "xaxis": "x2", "yaxis": "y2",
                 "name": t("abl_moved", lang), "showlegend": False,
                 "marker": {"color": [KEY_COLOR if c >= 0 else FELL for c in changes]},
                 "customdata": [[format_prob(m.before), format_prob(m.after)] for m in movers],
                 "hovertemplate": "%{y}: %{customdata[0]} → %{customdata[1]}<extra></extra>"})
    left, right = (0.0, 0.52), (0.72, 1.0)
    how = t("abl_method_mean" if record.method == "mean" else "abl_method_zero", lang)
    layout = base_layout(
        t("abl_title", lang, part=part_text(record.part, lang), model=MODEL_NAMES.get(model_name, model_name), how=how),
        lang, subtitle=t("abl_subtitle", lang, kl=f"{record.kl_nats:.3f}", n=record.positions),
        height=max(520, 200 + 30 * len(shown)), barmode="group",
        xaxis={"domain": list(left), "title": {"text": t("abl_axis_prob", lang)}, "tickformat": ".0%",
               "rangemode": "tozero"},
        yaxis={"tickfont": {"size": SMALL_SIZE}, "automargin": True},
        xaxis2={"domain": list(right), "anchor": "y2", "title": {"text": t("abl_axis_change", lang)},
                "zeroline": True, "zerolinecolor": "#222222"},
        yaxis2={"anchor": "x2", "tickfont": {"size": SMALL_SIZE}, "automargin": True},
        legend={"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"},
        annotations=[panel_title(t("abl_panel_candidates", lang), left, 1.07),
                     panel_title(t("abl_panel_moved", lang), right, 1.07)],
        margin={"t": 170},
    )
    # on a phone the two panels stack: candidates above, the movers below
    narrow_layout(layout, height=max(900, 360 + 48 * len(shown)),
                  xaxis={"domain": [0, 1]}, yaxis={"domain": [0.5, 1]},
                  xaxis2={"domain": [0, 1]}, yaxis2={"domain": [0, 0.3]},
                  annotations=[{**panel_title(t("abl_panel_moved", lang), (0, 1), 0.34), "font": {"size": FONT_SIZE}}])
    return chart(data, layout)


ablation_figure = as_figure(ablation_chart)


def _text_html(tokens, ended: bool, split: int | None, color: str, marked: bool) -> str:
    shown = names(tokens)
    spans = []
    for i, text in enumerate(shown, start=1):
        style = ""
        if split is not None and i >= split:
            style = f"color:{color};font-weight:bold"
        if split is not None and i == split:
            style += f";outline:3px solid {color};outline-offset:1px"
        spans.append(f'<span class="tbt-abl-token" data-step="{i}" style="{style}">{text}</span>')
    body = "<wbr>".join(spans) + (" ■" if ended else "")
    cls = "tbt-abl-text tbt-abl-off" if marked else "tbt-abl-text"
    return f'<span class="{cls}">{body}</span>'


def ablation_html(record, lang: str = "en") -> str:
    """The two continuations under the page's settings and seed: with the part on, and with it off (marked: a
    vermilion band; from the first token that differs, coloured, that token framed)."""
    split = record.differ_at
    note = (t("abl_split", lang, step=split) if split is not None else t("abl_same", lang, n=len(record.on)))
    part = part_text(record.part, lang)
    rows = [(t("abl_on_label", lang), record.on, record.on_ended, ON, False),
            (t("abl_off_label", lang, part=part), record.off, record.off_ended, OFF, True)]
    body = "".join(
        f'<div class="tbt-abl-side" data-side="{"off" if marked else "on"}" style="border-left:6px solid {color}">'
        f'<p class="tbt-abl-label">{html.escape(label)}</p>'
        f'<p>{_text_html(tokens, ended, split, color, marked)}</p></div>'
        for label, tokens, ended, color, marked in rows)
    return (f'<div class="tbt-abl" lang="{lang}" data-split="{split or 0}">'
            f'<p class="tbt-abl-note"><b>{html.escape(note)}</b> {html.escape(t("abl_legend", lang))}</p>'
            f'{body}</div><style>{ABLATION_CSS}</style>')


# Only this on-demand block uses these rules; sent with it.
ABLATION_CSS = """
.tbt-abl{font-size:16px;color:#222}
.tbt-abl-note{margin:4px 0 8px}
.tbt-abl-side{padding:4px 10px;margin:8px 0;background:#fafafa}
.tbt-abl-label{font-size:15px;color:#333;margin:2px 0}
.tbt-abl-text{font-family:monospace;font-size:17px;line-height:1.7;overflow-wrap:anywhere}
.tbt-abl-off{background:repeating-linear-gradient(135deg,#fde9dc 0 6px,#fff6f0 6px 12px);padding:2px 0}
.tbt-abl-token{padding:0 1px}
"""
