"""Attention: query position by key position for one layer and head (or the mean), the future masked."""
from __future__ import annotations

import gradio as gr

import viz
from model.decoding.records import attention_matrix
from model.decoding.tokens import token_labels
from ui.controls import plot
from ui.events import Event
from ui.state import carrier
from ui.strings import t
from viz.unavailable import unavailable_chart

ATTENTION_WINDOW = 48  # the heatmap shows the last 48 tokens: readable on a projector, fast for long texts


class AttentionView:
    tab, title = "attention", "tab_attention"

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        with gr.Row():  # the page's layer and head (Page.build_shared): every step's chart reads them
            page.place(page.layer, page.head)
        plot(self.tab)
        add(gr.Markdown(self._explain("en"), elem_classes="tbt-explain"), words=lambda lang: {"value": self._explain(lang)})
        # Which KV head each query head reads: the session's model's (Page.build_shared), drawn again when it changes
        page.place(page.gqa)

    @staticmethod
    def _explain(lang):
        return t("explain_attention", lang) + "\n\n" + t("explain_gqa", lang)

    def chart(self, session, cfg, view, dist=None) -> str:
        return carrier(self.figure(session, cfg, view, dist), self.tab)

    def figure(self, session, cfg, view, dist=None) -> dict:
        """The heatmap of the last ATTENTION_WINDOW tokens, for the view's layer and head."""
        if not session.capabilities.attention:  # a model on an engine: no weights come back
            return unavailable_chart("engine_attention_title", "engine_attention_reason", view.lang,
                                     model=session.lm.name)
        info = session.lm.info
        layer = min(max(int(view.layer), 0), info.layers - 1)
        full = attention_matrix(session.prefill, session.steps, layer, view.head)
        start = max(0, full.shape[0] - ATTENTION_WINDOW)
        labels = [label.short for label in token_labels([*session.prefill.tokens, *(s.token for s in session.steps)])]
        window = info.sliding_window[layer] if info.sliding_window else None
        return viz.attention_chart(full[start:, start:], labels[start:], layer, view.head, info, start, window,
                                   view.lang)

    def show(self, request, cfg, view):
        """The layer or head moved: the heatmap again."""
        session = self.app.session(request)
        return self.app.chart(session, cfg, view)

    def events(self, page):
        show = page.handler(self.show)
        return [Event(knob.input, show, page.page_in, [page.figure], options={"trigger_mode": "always_last"})
                for knob in (page.layer, page.head)]
