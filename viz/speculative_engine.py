"""Speculative decoding on the engine: its own drafted / accepted counts per verifying step (vLLM's per-request
metrics), beside this app's rounds of prompt lookup on the local model of the same family; and the engine's text
with the tokens its accepted drafts wrote marked.

Records are read by attribute (model/vllm/client.py EngineSpecRun, model/speed/speculative_records.py
SpeculativeRun): viz never calls the engine.
"""
from __future__ import annotations

import html

from viz.i18n import t
from viz.labels import names
from viz.plot_head import head_px
from viz.speculative import CELL_STYLE
from viz.style import MUTED, SMALL_SIZE, as_figure, base_layout, chart, domains, format_prob, panel_title, wrap_text

DRAFTED = "#FFFFFF"  # a step's drafts: an outlined bar; its accepted ones filled over it in the kept colour
DRAFTED_LINE = "#666666"
ACCEPTED = CELL_STYLE["accepted"][0]
OWN = CELL_STYLE["own"][0]
SPACE_MARK = '<span style="color:#999">␣</span>'


def _bars(drafted: list[int], accepted: list[int], axes: tuple[str, str], lang: str, who: str) -> list[dict]:
    """Two overlaid bars per step: drafted (outlined) and accepted (filled), step numbers from 1."""
    steps = list(range(1, len(drafted) + 1))
    hover = [t("spec_engine_hover", lang, who=who, n=n, drafted=d, accepted=a, tokens=a + 1)
             for n, d, a in zip(steps, drafted, accepted)]
    common = {"type": "bar", "x": steps, "xaxis": axes[0], "yaxis": axes[1], "hovertext": hover,
              "hovertemplate": "%{hovertext}<extra></extra>", "width": 0.7}
    return [
        {**common, "y": list(drafted), "name": t("spec_engine_drafted", lang), "legendgroup": "drafted",
         "marker": {"color": DRAFTED, "line": {"color": DRAFTED_LINE, "width": 1.5}}, "meta": {"role": f"{who}_drafted"},
         "showlegend": who == "engine"},
        {**common, "y": list(accepted), "name": t("spec_engine_accepted", lang), "legendgroup": "accepted",
         "marker": {"color": ACCEPTED, "line": {"color": ACCEPTED, "width": 1.5}}, "meta": {"role": f"{who}_accepted"},
         "showlegend": who == "engine"},
    ]


def engine_spec_chart(run, model_name: str, local=None, local_name: str | None = None, lang: str = "en") -> dict:
    """Left: the engine's verifying steps, drafts proposed and accepted in each (a step without drafts is not
    counted by the engine). Right, when the app ran it: this app's rounds on the local model, the same encoding
    (rounds without a draft at 0). The title: tokens written, verifying steps, tokens per verifying pass."""
    drafted, accepted = list(run.drafted or ()), list(run.accepted or ())
    # every pass the engine took (the prompt's, a step without drafts: one token each), when the stream tells them
    passes = "" if run.passes is None else t("spec_engine_title_passes", lang, passes=run.passes)
    title = t("spec_engine_title", lang, tokens=len(run.generated), passes=passes, steps=len(accepted),
              tpp=f"{run.tokens_per_pass:.2f}", k=run.num_spec_tokens)
    subtitle = wrap_text(t("spec_engine_subtitle", lang, model=model_name, rate=format_prob(run.acceptance_rate),
                           ms=f"{run.ms:.0f}"), 110)
    panels = [(t("spec_engine_panel", lang), drafted, accepted, "engine")]
    if local is not None:
        panels.append((t("spec_engine_panel_local", lang, model=local_name or "", k=local.draft_len),
                       [len(r.drafted) for r in local.rounds], [r.accepted for r in local.rounds], "local"))
    head = head_px(title, subtitle)
    top, bottom, plot_px = head + 80, 70, 320
    height = top + bottom + plot_px
    xs = domains([1] * len(panels), 0.1)
    traces, annotations, layout_axes = [], [], {}
    peak = max([1, *drafted, *(panels[1][1] if len(panels) > 1 else [])])
    for i, (name, d, a, who) in enumerate(panels):
        xa, ya = ("x", "y") if i == 0 else (f"x{i + 1}", f"y{i + 1}")
        traces += _bars(d, a, (xa, ya), lang, who)
        annotations.append({**panel_title(name, xs[i], 1.0), "yshift": 10})
        key = "" if i == 0 else str(i + 1)
        layout_axes[f"xaxis{key}"] = {"domain": list(xs[i]), "anchor": ya, "dtick": max(1, len(d) // 10) or 1,
                                      "title": {"text": t("spec_engine_axis_step" if who == "engine" else "spec_axis_round",
                                                          lang)}}
        layout_axes[f"yaxis{key}"] = {"domain": [0, 1], "anchor": xa, "range": [0, peak + 0.6], "dtick": 1,
                                      "title": {"text": t("spec_engine_axis_tokens", lang)}}
    if not accepted:
        annotations.append({"text": t("spec_engine_no_steps", lang), "x": 0.5, "y": 0.5, "xref": "x domain",
                            "yref": "y domain", "showarrow": False, "font": {"size": SMALL_SIZE, "color": MUTED}})
    layout = base_layout(title, lang, subtitle=subtitle, height=height, barmode="overlay", bargap=0.25,
                         annotations=annotations, margin={"t": top, "b": bottom},
                         legend={"orientation": "h", "x": 0, "y": 1 - (head + 8) / height, "yref": "container",
                                 "yanchor": "top", "font": {"size": SMALL_SIZE}}, **layout_axes)
    return chart(traces, layout)


engine_spec_figure = as_figure(engine_spec_chart)


def engine_spec_html(tokens, from_draft, lang: str = "en") -> str:
    """The engine's text, each token a span: filled in the kept colour when an accepted draft wrote it, outlined
    when the model's own pick did; all outlined, and a note, when the stream did not say which (from_draft None)."""
    base = "display:inline-block;margin:1px 0;padding:1px 2px;border-radius:3px;white-space:pre;"
    shown = [html.unescape(n) for n in names(list(tokens))]
    spans = []
    for i, (tok, text) in enumerate(zip(tokens, shown)):
        drafted = bool(from_draft[i]) if from_draft is not None else False
        style = (f"{base}background:{ACCEPTED};color:white" if drafted else f"{base}border:1px solid {OWN}")
        title = t("spec_engine_from_draft" if drafted else "spec_engine_from_model", lang)
        spans.append(f'<span class="tbt-spec-engine-{"draft" if drafted else "own"}" data-position="{i}" '
                     f'style="{style}" title="{html.escape(title, quote=True)}">'
                     f'{html.escape(text, quote=False).replace("␣", SPACE_MARK)}</span>' + "<br>" * tok.display.count("↵"))
    if from_draft is None:
        note = t("spec_engine_marks_unknown", lang)
    else:
        note = t("spec_engine_marks", lang, drafted=sum(from_draft), total=len(from_draft))
    legend = (f'<div class="tbt-spec-engine-legend" style="font-size:15px;color:#444;margin-top:10px">'
              f'<span style="display:inline-block;padding:0 6px;margin-right:6px;border-radius:4px;background:{ACCEPTED};'
              f'color:white">{html.escape(t("spec_engine_from_draft", lang))}</span>'
              f'<span style="display:inline-block;padding:0 6px;margin-right:6px;border-radius:4px;'
              f'border:1px solid {OWN}">{html.escape(t("spec_engine_from_model", lang))}</span> {html.escape(note)}</div>')
    return f'<div class="tbt-spec-engine-text" style="line-height:1.9">{"".join(spans)}</div>{legend}'
