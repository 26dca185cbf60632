"""KV cache: bytes after every step, measured on the cache tensors and by the formula; Measure now times a step
with the cache against recomputing the whole prefix."""
from __future__ import annotations

import gradio as gr

import viz
from model.decoding.timing import default_lengths, measure_cache_timing
from ui.controls import plot
from ui.events import Event
from ui.handlers import friendly
from ui.state import carrier
from ui.strings import t
from viz.style import format_bytes
from viz.unavailable import unavailable_chart


class KVCacheView:
    tab, title = "kv", "tab_kv"

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        plot(self.tab)
        add(gr.Markdown(t("explain_kv_cache"), elem_classes="tbt-explain"), "explain_kv_cache", "value")
        add(gr.Markdown(t("names_kv_cache"), elem_classes="tbt-explain tbt-names"), "names_kv_cache", "value")  # the words an interview uses
        self.measure = add(gr.Button(t("btn_measure"), elem_id="tbt-measure"), "btn_measure", "value")
        self.timing_plot = gr.Plot(label=t("btn_measure"), elem_id="tbt-plot-timing", show_label=False)
        add(gr.Markdown(self._explain("en"), elem_classes="tbt-explain"), words=lambda lang: {"value": self._explain(lang)})

    @staticmethod
    def _explain(lang):
        return t("explain_cache_timing", lang) + " " + t("timing_empty", lang)

    def chart(self, session, cfg, view, dist=None) -> str:
        return carrier(self.figure(session, cfg, view, dist), self.tab)

    def figure(self, session, cfg, view, dist=None) -> dict:
        points = [session.prefill.kv] + [s.kv for s in session.steps]
        if not session.capabilities.cache_tensors:  # a model on an engine: only the formula is known
            return unavailable_chart("engine_kv_title", "engine_kv_reason", view.lang, model=session.lm.name,
                                     formula=format_bytes(points[-1].formula), tokens=points[-1].tokens,
                                     source=session.lm.config_source)
        return viz.kv_growth_chart(points, session.prompt_len, session.lm.info, view.lang)

    def measure_cache(self, request: gr.Request, lang):
        """Time a step with and without the cache at several lengths of the user's text. Each pass is a turn at
        the model's scheduler, so the class's steps go on between them."""
        text = self.app.whole_text(request, "engine_no_timing")
        timing = text.run(measure_cache_timing, default_lengths(len(text.ids)))
        return viz.cache_timing_figure(timing, lang)

    def events(self, page):
        return [Event(self.measure.click, friendly(self.measure_cache), [page.lang], [self.timing_plot], "measure",
                      "measure")]
