"""The class, batched: the server's real decode passes (how many sessions each carried, its time) and how many
sessions are live, only counts and times; and, on demand, one decode pass at batch 1..16 on the loaded model,
its weights read against its time (memory bandwidth), and prefill against decode tokens/s.

On an engine's model the engine batches its own requests and the app has no passes of it: the chart is then the
engine's own numbers from its /metrics (model/vllm/metrics.py), instead of the app's passes, read every
POLL_S while the tab is open (a timer, for at most WATCH_S after the tab was opened or refreshed)."""
from __future__ import annotations

import time
from dataclasses import asdict

import gradio as gr

from model.errors import SessionError
from model.vllm.metrics import POLL_S
from model.speed.throughput import measure_throughput
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import friendly
from ui.strings import t
from viz.batching import batching_figure, throughput_figure, throughput_sentence
from viz.batching_engine import engine_metrics_figure

RECENT_SECONDS = 300  # the passes shown: those of the last five minutes (the scheduler remembers at most 240)
WATCH_S = 300  # an engine's numbers follow themselves this long after the tab's opening or Refresh, then stop


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
        self.engine_note = gr.Markdown("", elem_id="tbt-batch-engine-note")  # an engine's model: whose numbers
        self.timer = gr.Timer(POLL_S, active=False)  # an engine's model: its /metrics read while the tab is open
        self.watch_until = gr.State(0.0)  # time.time() after which the timer stops (the page may have left the tab)
        add(gr.Markdown(t("explain_batch_measure"), elem_classes="tbt-explain"), "explain_batch_measure", "value")
        self.measure_btn = add(gr.Button(t("btn_batch_measure"), elem_id="tbt-batch-measure"), "btn_batch_measure",
                               "value")
        self.sentence = gr.Markdown(elem_id="tbt-batch-sentence")
        self.measure_plot = gr.Plot(label=t("btn_batch_measure"), elem_id=GRADIO_PLOTS["throughput"], show_label=False)
        self.measure_numbers = gr.JSON(label="throughput", elem_id="tbt-throughput-numbers", elem_classes="tbt-hidden")

    def _core(self):
        return self.app.models.core()  # the default model's: its scheduler's passes

    def show(self, request: gr.Request, lang="en"):
        """The passes of the last minutes and the live sessions: counts and times, nobody's text. On an engine's
        model, the engine's own numbers instead, followed for WATCH_S."""
        history = self._engine_history(request)
        if history is None:
            return {**self._passes(lang), self.engine_note: "", self.timer: gr.Timer(active=False)}
        return {**self._engine(history, lang), self.timer: gr.Timer(active=True),
                self.watch_until: time.time() + WATCH_S}

    def tick(self, request: gr.Request, watch_until: float, lang="en"):
        """The timer: the engine's numbers again, until WATCH_S after the tab was opened (then it says so and stops),
        or until the page's session is no longer on an engine's model."""
        history = self._engine_history(request)
        if history is None:
            return {self.timer: gr.Timer(active=False)}
        if time.time() > watch_until:
            return {self.engine_note: t("batch_engine_paused", lang, minutes=WATCH_S // 60),
                    self.timer: gr.Timer(active=False)}
        return self._engine(history, lang)

    def _engine_history(self, request: gr.Request):
        """The engine's history of the page's model when the page's session is on an engine, else None."""
        try:
            session = self.app.session(request)
        except SessionError:  # no text yet: the server's passes
            return None
        return self.app.models.engine_metrics(session.lm.name)

    def _passes(self, lang: str) -> dict:
        passes = self._core().recent_passes(RECENT_SECONDS)
        live, now = len(self.app.store), time.time()
        numbers = {"live_sessions": live,
                   "passes": [{"sessions": p.sessions, "ms": round(p.ms, 2), "ago_s": round(now - p.at, 2)}
                              for p in passes]}
        return {self.live_plot: batching_figure(passes, live, now, lang), self.live_numbers: numbers}

    def _engine(self, history, lang: str) -> dict:
        """A reading now (shared with every page that asked within half a poll), and the chart of the history. A
        fault is its one sentence in the note; the history and the chart's readings stay as they were."""
        try:
            history.sample()
            note = t("batch_engine_caption", lang, poll=f"{history.poll_s:.0f}")
        except SessionError as err:
            note = err.text(lang)
        samples, spans = history.samples(), history.intervals()
        numbers = {"engine": [asdict(s) for s in samples], "intervals": [asdict(i) for i in spans]}
        return {self.live_plot: engine_metrics_figure(samples, spans, time.time(), history.poll_s, lang),
                self.live_numbers: numbers, self.engine_note: note}

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about batching: the passes of the last minutes on the lesson's model (the class's steps)."""
        history = self.app.models.engine_metrics(session.lm.name)
        if history is not None:  # an engine's model: the engine's own numbers (as of now, if it answers)
            return self._engine(history, view.lang)[self.live_plot]
        passes = self.app.models.core(session.lm.name).recent_passes(RECENT_SECONDS)
        return batching_figure(passes, len(self.app.store), time.time(), view.lang)

    def measure(self, request: gr.Request, lang="en"):
        """One decode pass at batch 1, 2, 4, 8, 16 and a long prefill, each pass a turn at the model's scheduler."""
        core = self.app.models.core()
        lm = core.lm
        m = core.compute(measure_throughput)
        # the engine's passes are its own (none of ours to time): on its page, say whose were measured
        whose = (t("batch_measure_local", lang, model=lm.info.name) + " "
                 if self._engine_history(request) is not None else "")
        numbers = {"passes": [{"batch": p.batch, "ms": p.ms, "ms_per_token": p.ms_per_token, "runs": p.runs}
                              for p in m.passes],
                   "parameters": m.parameters, "weight_bytes": m.weight_bytes, "decode_ms": m.decode_ms,
                   "bandwidth_bytes_per_s": m.bandwidth_bytes_per_s, "prefill_tokens": m.prefill_tokens,
                   "prefill_ms": m.prefill_ms, "prefill_tokens_per_s": m.prefill_tokens_per_s,
                   "decode_tokens_per_s": m.decode_tokens_per_s, "threads": m.threads,
                   "context_tokens": m.context_tokens}
        return whose + throughput_sentence(m, lang), throughput_figure(m, lm.info.name, lang), numbers

    def events(self, page):
        show = friendly(self.show)
        out = [self.live_plot, self.live_numbers, self.engine_note, self.timer, self.watch_until]
        return [
            Event(self.refresh.click, show, [page.lang], out, "views", "batching"),
            Event(self.tab_block.select, show, [page.lang], out, "views", "batching_open"),
            # cheap (one shared read of the engine per poll, a small figure): out of the views' queue, as the rooms' ticks
            Event(self.timer.tick, friendly(self.tick), [self.watch_until, page.lang], out[:-1], "page",
                  "batching_engine_tick"),
            Event(self.measure_btn.click, friendly(self.measure), [page.lang],
                  [self.sentence, self.measure_plot, self.measure_numbers], "measure", "batching_measure"),
        ]
