"""The class, batched: the server's real decode passes (how many sessions each carried, its time) and how many
sessions are live, only counts and times; and, on demand, one decode pass at batch 1..16 on the loaded model,
its weights read against its time (memory bandwidth), and prefill against decode tokens/s."""
from __future__ import annotations

import time

import gradio as gr

from model.serving.throughput import measure_throughput
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import friendly
from ui.strings import t
from viz.batching import batching_figure, throughput_figure, throughput_sentence

RECENT_SECONDS = 300  # the passes shown: those of the last five minutes (the batcher remembers at most 240)


class BatchingView:
    tab, title = "batching", "tab_batching"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_batching"), elem_classes="tbt-explain"), "explain_batching", "value")
        add(gr.Markdown(t("names_batching"), elem_classes="tbt-explain tbt-names"), "names_batching", "value")  # the words an interview uses
        self.refresh = add(gr.Button(t("btn_batch_refresh"), elem_id="tbt-batch-refresh"), "btn_batch_refresh",
                           "value")
        self.live_plot = gr.Plot(label=t("tab_batching"), elem_id=GRADIO_PLOTS["batching"], show_label=False)
        self.live_numbers = gr.JSON(label="passes", elem_id="tbt-batch-numbers", elem_classes="tbt-hidden")
        add(gr.Markdown(t("explain_batch_measure"), elem_classes="tbt-explain"), "explain_batch_measure", "value")
        self.measure_btn = add(gr.Button(t("btn_batch_measure"), elem_id="tbt-batch-measure"), "btn_batch_measure",
                               "value")
        self.sentence = gr.Markdown(elem_id="tbt-batch-sentence")
        self.measure_plot = gr.Plot(label=t("btn_batch_measure"), elem_id=GRADIO_PLOTS["throughput"], show_label=False)
        self.measure_numbers = gr.JSON(label="throughput", elem_id="tbt-throughput-numbers", elem_classes="tbt-hidden")

    def _batcher(self):
        return self.app.models.batcher()  # None: no session has started on the model yet

    def show(self, request: gr.Request, lang="en"):
        """The passes of the last minutes and the live sessions: counts and times, nobody's text."""
        batcher = self._batcher()
        passes = batcher.recent_passes(RECENT_SECONDS) if batcher else []
        live, now = len(self.app.store), time.time()
        numbers = {"live_sessions": live,
                   "passes": [{"sessions": p.sessions, "ms": round(p.ms, 2), "ago_s": round(now - p.at, 2)}
                              for p in passes]}
        return batching_figure(passes, live, now, lang), numbers

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about batching: the passes of the last minutes on the lesson's model (the class's steps)."""
        batcher = self.app.models.batcher(session.lm.name)
        passes = batcher.recent_passes(RECENT_SECONDS) if batcher else []
        return batching_figure(passes, len(self.app.store), time.time(), view.lang)

    def measure(self, request: gr.Request, lang="en"):
        """One decode pass at batch 1, 2, 4, 8, 16 and a long prefill, each pass a turn at the model's door."""
        lm = self.app.models.get()
        m = measure_throughput(lm)
        numbers = {"passes": [{"batch": p.batch, "ms": p.ms, "ms_per_token": p.ms_per_token, "runs": p.runs}
                              for p in m.passes],
                   "parameters": m.parameters, "weight_bytes": m.weight_bytes, "decode_ms": m.decode_ms,
                   "bandwidth_bytes_per_s": m.bandwidth_bytes_per_s, "prefill_tokens": m.prefill_tokens,
                   "prefill_ms": m.prefill_ms, "prefill_tokens_per_s": m.prefill_tokens_per_s,
                   "decode_tokens_per_s": m.decode_tokens_per_s, "threads": m.threads,
                   "context_tokens": m.context_tokens}
        return throughput_sentence(m, lang), throughput_figure(m, lm.info.name, lang), numbers

    def events(self, page):
        show = friendly(self.show)
        out = [self.live_plot, self.live_numbers]
        return [
            Event(self.refresh.click, show, [page.lang], out, "views", "batching"),
            Event(self.tab_block.select, show, [page.lang], out, "views", "batching_open"),
            Event(self.measure_btn.click, friendly(self.measure), [page.lang],
                  [self.sentence, self.measure_plot, self.measure_numbers], "measure", "batching_measure",
                  {"show_progress": "full"}),
        ]
