"""Prefill against decode: measured on demand on the user's local model and this machine (tokens per second of each,
where each is bound, what a long prefill does to a class's decode steps unchunked, chunked and split off), and an
engine's own chunked-prefill numbers from its /metrics. Each kept per model for a few minutes, so a class pressing
the button together sees one sitting's figures and the model is measured once (model/speed/prefill_decode.py,
model/vllm/prefill.py)."""
from __future__ import annotations

import time
from dataclasses import asdict

import gradio as gr

from model.classroom.probes import pair_record
from model.errors import SessionError
from model.vllm.prefill import probe
from model.speed.prefill_decode import KEEP_S, LINK_BYTES_PER_S, LONG_PREFILL, Kept, compute
from ui.controls import plot
from ui.events import Event
from ui.handlers import friendly
from ui.state import carrier
from ui.strings import t
from viz.lesson import pd_figure
from viz.prefill_decode import (engine_probe_figure, engine_probe_summary, figures_table, prefill_decode_summary,
                                roofline_figure, speed_chart, timeline_figure)


def measurement_summary(m) -> dict:
    """The measurement as numbers (what the API and the tests read)."""
    passes = lambda ps: [{"size": p.size, "ms": p.ms, "runs": list(p.runs), "tokens_per_s": p.tokens_per_s,  # noqa: E731
                          "ms_per_token": p.ms_per_token, "flops": p.flops, "bytes": p.bytes,
                          "intensity": p.intensity, "bound": p.bound(m.peak)} for p in ps]
    return {"model": m.model, "flops_per_s": m.peak.flops_per_s, "bytes_per_s": m.peak.bytes_per_s,
            "balance": m.peak.balance, "threads": m.threads, "prefill": passes(m.prefill), "decode": passes(m.decode),
            "chunk_ms": m.chunk_ms, "chunk": m.chunk, "context_tokens": m.context_tokens, "class_batch": m.class_batch,
            "long_prefill": m.long_prefill, "link_bytes_per_s": m.link_bytes_per_s, "weight_bytes": m.weight_bytes,
            "kv_bytes_per_token": m.kv_bytes_per_token, "at": m.at, "ms": m.ms, "passes": m.passes,
            "timelines": [{"name": line.name, "gaps": list(line.gaps), "worst_gap": line.worst_gap,
                           "first_token_ms": line.first_token_ms,
                           "segments": [asdict(s) for s in line.segments]} for line in m.timelines]}


def probe_summary(p) -> dict:
    """The engine's probe as numbers."""
    h = p.delta.histograms
    return {"model": p.model, "long_tokens": p.long_tokens, "decode_tokens": p.decode_tokens, "gaps_ms": p.gaps_ms,
            "sent_at": p.sent_at, "long_ms": p.long_ms, "steps": p.steps, "largest_step": p.largest_step,
            "chunked": p.chunked, "others": p.others, "step_tokens": h["step_tokens"].per_bucket(),
            "prefill_s": h["prefill_s"].mean, "ttft_s": h["ttft_s"].mean, "itl_s": h["itl_s"].mean,
            "prompt_tokens": p.delta.counters["prompt_tokens"], "generation_tokens": p.delta.counters["generation_tokens"],
            "at": p.at}


LESSON_TOKENS = 128  # a lesson step's prefill beside its decode step: one chunk's pass


def limits(lang: str) -> str:
    return t("explain_pd_limits", lang, n=LONG_PREFILL, link=f"{LINK_BYTES_PER_S / 1e9:g}")


class PrefillDecodeView:
    tab, title = "prefill_decode", "tab_prefill_decode"
    chart = None

    def __init__(self, app):
        self.app = app
        self.kept = Kept()  # per model, not per user: the same figures for everyone for KEEP_S
        self.probes = Kept()

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_prefill_decode"), elem_classes="tbt-explain"), "explain_prefill_decode", "value")
        self.measure_btn = add(gr.Button(t("btn_pd_measure"), variant="primary", elem_id="tbt-pd-measure"),
                               "btn_pd_measure", "value")
        self.sentence = gr.Markdown(elem_id="tbt-pd-sentence", elem_classes="tbt-explain")
        plot(self.tab)
        self.roofline = gr.Plot(label=t("pd_roofline_label"), elem_id="tbt-pd-roofline", show_label=False)
        self.timeline = gr.Plot(label=t("pd_timeline_label"), elem_id="tbt-pd-timeline", show_label=False)
        self.table = gr.Markdown(elem_id="tbt-pd-table")
        add(gr.Markdown(t("explain_pd_engine"), elem_classes="tbt-explain"), "explain_pd_engine", "value")
        self.engine_btn = add(gr.Button(t("btn_pd_engine"), elem_id="tbt-pd-engine"), "btn_pd_engine", "value")
        self.engine_sentence = gr.Markdown(elem_id="tbt-pd-engine-sentence", elem_classes="tbt-explain")
        self.engine_plot = gr.Plot(label=t("btn_pd_engine"), elem_id="tbt-pd-engine-plot", show_label=False)
        add(gr.Markdown(limits("en"), elem_classes="tbt-explain"), words=lambda lang: {"value": limits(lang)})
        self.numbers = gr.JSON(label="prefill and decode", elem_id="tbt-pd-numbers", elem_classes="tbt-hidden")
        self.engine_numbers = gr.JSON(label="engine prefill", elem_id="tbt-pd-engine-numbers", elem_classes="tbt-hidden")

    def measure(self, request: gr.Request, lang="en"):
        """The user's local model measured (or its measurement of the last KEEP_S shown again)."""
        text = self.app.whole_text(request, "pd_needs_weights")
        m, fresh = self.kept.get(text.lm.name, lambda: text.run(compute))
        said = prefill_decode_summary(m, lang)
        if not fresh:
            said += " " + t("pd_kept", lang, ago=f"{time.time() - m.at:.0f}", minutes=f"{KEEP_S / 60:.0f}")
        return {self.sentence: said, self.figure: carrier(speed_chart(m, lang), self.tab),
                self.roofline: roofline_figure(m, lang), self.timeline: timeline_figure(m, lang),
                self.table: figures_table(m, lang), self.numbers: measurement_summary(m)}

    def probe_engine(self, request: gr.Request, lang="en"):
        """The engine of the page's model probed (or its probe of the last KEEP_S shown again)."""
        session = self.app.session(request)
        if session.capabilities.runs_locally:
            raise SessionError("pd_engine_only", model=session.lm.name)
        lm = session.lm
        p, fresh = self.probes.get(lm.name, lambda: probe(lm, lm.info.context))
        said = engine_probe_summary(p, lang)
        if not fresh:
            said += " " + t("pd_kept", lang, ago=f"{time.time() - p.at:.0f}", minutes=f"{KEEP_S / 60:.0f}")
        return said, engine_probe_figure(p, lang), probe_summary(p)

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about prefill and decode: a prefill of LESSON_TOKENS tokens against one decode step, measured
        on the step's text (a few passes; the tab's Measure has the rest)."""
        if not session.capabilities.runs_locally:
            return None
        return pd_figure(pair_record(session, LESSON_TOKENS), view.lang)

    def events(self, page):
        self.figure = page.figure  # the page's one chart carrier (plot(): this tab's plot), made after the views
        return [
            Event(self.measure_btn.click, friendly(self.measure), [page.lang],
                  [self.sentence, self.figure, self.roofline, self.timeline, self.table, self.numbers], "measure",
                  "prefill_decode", {"show_progress": "full"}),
            Event(self.engine_btn.click, friendly(self.probe_engine), [page.lang],
                  [self.engine_sentence, self.engine_plot, self.engine_numbers], "measure", "prefill_decode_engine",
                  {"show_progress": "full"}),
        ]
