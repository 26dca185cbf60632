"""Chain rule: log P of every generated token, their running sum = log P(text | prompt), perplexity, the entropy
of each step with its forks; a click on a point goes back to that step (assets/js/clicks.js)."""
from __future__ import annotations

import gradio as gr

from model.inside.chain import chain_rule
from ui.controls import plot
from ui.state import carrier
from ui.strings import t
from viz.chain import chain_chart


class ChainView:
    tab, title = "chain", "tab_chain"

    def __init__(self, app):
        self.app = app

    def build(self, page):
        plot(self.tab)
        page.labels.add(gr.Markdown(t("explain_chain"), elem_classes="tbt-explain"), "explain_chain", "value")

    def figure(self, session, cfg, view, dist=None) -> dict:
        """The chain rule over the text so far, read off the session's step records (no model run)."""
        return chain_chart(chain_rule(session.steps, session.prompt_len), view.lang)

    def chart(self, session, cfg, view, dist=None) -> str:
        return carrier(self.figure(session, cfg, view, dist), self.tab)

    def events(self, page):
        return []  # a click on a point is the page's go-to-step event (ui/protocol.py "step_on_click")
