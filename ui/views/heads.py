"""Heads by what they do: previous-token, induction and sink scores of every head, measured on a repeated random
token sequence the page makes (model/experiments/heads.py); a click on a head opens it in the Attention view."""
from __future__ import annotations

from dataclasses import replace

import gradio as gr

from model.experiments.heads import head_scores
from model.errors import SessionError
from model.parse import whole_number
from ui.controls import GLOBALS, hidden_button, plot
from ui.events import Event
from ui.handlers import friendly
from ui.state import carrier
from ui.strings import Refusal, t
from viz.heads import KIND_KEYS, KINDS, heads_chart

ATTENTION_TAB = "attention"  # the tab a clicked head opens in (ui/views/attention.py)


def heads_summary(scores) -> dict:
    """The scores as numbers (what the API and the tests read), and the heads the page names."""
    return {"tokens": [tok.id for tok in scores.tokens], "prefix": scores.prefix, "length": scores.length,
            **{kind: scores.kinds[kind].tolist() for kind in KINDS},
            "control_induction": scores.control_induction.tolist(),
            "named": {kind: [[layer, head] for layer, head, _ in scores.top(kind)] for kind in KINDS}, "ms": scores.ms}


def named_heads(scores, lang: str) -> str:
    """The heads the page names, each kind on a line; the induction heads with their score on the control text."""
    lines = []
    for kind in KINDS:
        heads = ", ".join(
            t("heads_named_induction", lang, layer=layer, head=head, score=f"{score:.2f}",
              control=f"{scores.control_induction[layer, head]:.2f}") if kind == "induction"
            else t("heads_named", lang, layer=layer, head=head, score=f"{score:.2f}")
            for layer, head, score in scores.top(kind))
        lines.append(f"- **{t(KIND_KEYS[kind], lang)}**: {heads}")
    return "\n".join([t("heads_result", lang, n=scores.length, ms=f"{scores.ms:.0f}"), *lines])


def picked_head(picked) -> tuple[int, int]:
    """'layer,head' as the page's click sends it, as two whole numbers, or a refusal."""
    parts = str(picked).split(",") if isinstance(picked, str) else []
    numbers = [whole_number(part.strip(), text=True) for part in parts]
    if len(numbers) != 2 or any(n is None or n < 0 for n in numbers):
        raise Refusal("heads_pick_bad", value=repr(str(picked)[:40]))
    return numbers[0], numbers[1]


class HeadsView:
    tab, title = "heads", "tab_heads"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        self.page = page  # the page's shared controls a clicked head sets (its layer and head, the open tab)
        add = page.labels.add
        add(gr.Markdown(t("explain_heads"), elem_classes="tbt-explain"), "explain_heads", "value")
        self.run_btn = add(gr.Button(t("btn_heads"), variant="primary", elem_id="tbt-heads-run"), "btn_heads", "value")
        self.result = gr.Markdown(elem_id="tbt-heads-result", elem_classes="tbt-explain")
        plot(self.tab)
        add(gr.Markdown(t("explain_heads_limits"), elem_classes="tbt-explain"), "explain_heads_limits", "value")
        self.numbers = gr.JSON(label="heads", elem_id="tbt-heads-numbers", elem_classes="tbt-hidden")
        # a click on a head (assets/js/clicks.js) puts 'layer,head' here and presses the hidden button
        self.picked = gr.Textbox("", label="open head", elem_id="tbt-open-head", elem_classes="tbt-hidden")
        self.open_btn = hidden_button("open_head", "open head")

    def score(self, request: gr.Request, lang):
        """Every head's scores on the user's model (the default one before any session)."""
        core = self.app.local_core(request)
        scores = core.compute(head_scores)
        return named_heads(scores, lang), carrier(heads_chart(scores, core.lm.name, lang), self.tab), heads_summary(scores)

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about heads: every head's scores on the lesson's model, as Score does (the scores are
        measured on the page's own repeated sequence, not on the step's text)."""
        if not session.capabilities.runs_locally:  # an engine's model: no attention weights come back
            return None
        return heads_chart(session.whole_text().compute(head_scores), session.lm.name, view.lang)

    def open_head(self, request, picked, cfg, view):
        """The clicked head in the Attention view: the page's layer and head set, its tab opened, its chart drawn
        for the user's text (nothing but the tab when no text is started yet)."""
        layer, head = picked_head(picked)
        info = self.app.local_core(request).lm.info
        if layer >= info.layers or head >= info.heads:
            raise Refusal("heads_pick_range", layer=layer, head=head, layers=info.layers, heads=info.heads)
        page = self.page
        shown = {page.layer: layer, page.head: str(head), page.tabs_block: gr.Tabs(selected=ATTENTION_TAB)}
        if ATTENTION_TAB in self.app.views:
            shown[page.tab_state] = ATTENTION_TAB
            try:
                session = self.app.session(request)
            except SessionError:  # nothing started yet: the tab alone
                return shown
            shown[page.figure] = self.app.chart(session, cfg, replace(view, tab=ATTENTION_TAB, layer=layer, head=head))
        return shown

    def events(self, page):
        opened = [page.layer, page.head, page.tabs_block, page.tab_state, page.figure]
        return [
            Event(self.run_btn.click, friendly(self.score), [page.lang], [self.result, page.figure, self.numbers],
                  "runs", "heads"),
            Event(self.open_btn.click, page.handler(self.open_head, "picked"), [self.picked, *page.page_in], opened,
                  "views", "open_head", {"js": f"(...a) => [window.{GLOBALS['open_head']} ?? a[0], ...a.slice(1)]"}),
        ]
