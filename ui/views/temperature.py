"""Temperature: the same step at several temperatures, and how entropy and the kept set change with T."""
from __future__ import annotations

from dataclasses import replace

import gradio as gr

import viz
from ui.controls import plot
from ui.state import carrier
from ui.strings import t

EXPLORER_TEMPERATURES = (0.3, 0.7, 1.0, 1.5)
SWEEP_TEMPERATURES = [round(0.1 * i, 1) for i in range(1, 21)]


class TemperatureView:
    tab, title = "temperature", "tab_temperature"

    def __init__(self, app):
        self.app = app

    def build(self, page):
        plot(self.tab)
        page.labels.add(gr.Markdown(t("explain_temperature"), elem_classes="tbt-explain"), "explain_temperature",
                        "value")

    def figure(self, session, cfg, view, dist=None) -> dict:
        dists = [session.preview(replace(cfg, temperature=x)) for x in EXPLORER_TEMPERATURES]
        sweep = session.sweep(cfg, SWEEP_TEMPERATURES)
        return viz.temperature_chart(dists, sweep, cfg.temperature, view.lang,
                                     context=session.lm.tokens.tail(session.ids))

    def chart(self, session, cfg, view, dist=None) -> str:
        return carrier(self.figure(session, cfg, view, dist), self.tab)

    def events(self, page):
        return []
