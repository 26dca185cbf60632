"""Candidates: the next token's candidates, their fates and the draw; force another one; the temperature
slider's charts at every value, and the next step's chart, for the page to draw ahead.

On an engine model whose operator named an engine with processed log-probabilities (app.py --engine-processed-url),
the chart of the step shown (not the slider's ahead-of-time charts nor the next step's, which would ask the engine
41 times or for a step not taken) also carries the engine's own post-sampler distribution and one sentence on how
far it agrees with the app's, or why it cannot (model/vllm/processed.py)."""
from __future__ import annotations

from dataclasses import replace

import gradio as gr

import viz
from model.vllm.processed import ProcessedComparison, processed_beside
from model.errors import SessionError
from ui.controls import hidden_button, hidden_html, plot
from ui.events import Event
from ui.protocol import figure_bundle
from ui.render import force_choices
from ui.state import carrier, chart_key, state_key
from ui.strings import t

# engine_processed.why_different()'s keys -> their sentence
WHY_DIFFERENT = {"greedy": "processed_why_greedy", "order": "processed_why_order",
                 "approximate": "processed_why_approximate"}
TEMPERATURE_GRID = [round(0.05 * i, 2) for i in range(41)]  # every value of the temperature slider


class CandidatesView:
    tab, title = "candidates", "tab_candidates"

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        plot(self.tab)
        with gr.Row(equal_height=True):  # the page's force list and button (Page.build_shared), shown here
            page.place(page.force, page.force_btn)
        add(gr.Markdown(t("explain_candidates"), elem_classes="tbt-explain"), "explain_candidates", "value")
        self.bundle = hidden_html("bundle")
        self.ahead = hidden_html("ahead")  # the next step's chart
        self.bundle_btn = hidden_button("bundle", "temperature charts")
        self.ahead_btn = hidden_button("ahead", "next chart")
        self.rederive_btn = gr.Button("rederive", elem_classes="tbt-hidden", elem_id="tbt-rederive")

    def figure(self, session, cfg, view, dist=None) -> dict:
        dist = dist or session.preview(cfg)
        return viz.candidate_chart(dist, view.lang, context=session.lm.tokens.tail(session.ids),
                                   engine_sampler=engine_sampler(session, dist, view.lang))

    def chart(self, session, cfg, view, dist=None) -> str:
        return carrier(self.figure(session, cfg, view, dist), self.tab,
                       key=chart_key(session, cfg, view), temperature=cfg.temperature)

    # ---- handlers ------------------------------------------------------------------------------------
    def rederive(self, request, cfg, view):
        """A setting moved: this step's chart and force list again, without running the model."""
        session = self.app.session(request)
        dist = session.preview(cfg)  # the stored logits, the new settings
        page = [self.app.chart(session, cfg, view, dist), gr.update(choices=force_choices(dist, view.lang, session.lm.tokens.tail(session.ids)))]
        session.prefetch(cfg)  # the token these settings draw may differ from the one computed ahead
        return page

    def temperature_charts(self, request, cfg, view):
        """The candidate chart at every temperature of the slider, the other settings held (no model run)."""
        session = self.app.session(request)
        with session.reading():
            key = chart_key(session, cfg, view)
            if key is None:
                return ""
            context = session.lm.tokens.tail(session.ids)
            figs = {x: viz.candidate_chart(session.preview(replace(cfg, temperature=x)), view.lang, context=context)
                    for x in TEMPERATURE_GRID}
            return figure_bundle(figs, key)

    def next_chart(self, request, cfg, view):
        """The candidate chart the next Next token will show, from the pass computed ahead ('' if there is none):
        the page draws it while the presenter reads this step, and shows it when the step's answer names it."""
        session = self.app.session(request)
        if view.tab != self.tab:
            return ""
        ahead = session.preview_ahead(cfg)
        if ahead is None:
            return ""
        ids, dist = ahead
        return carrier(viz.candidate_chart(dist, view.lang, context=session.lm.tokens.tail(ids)), self.tab,
                       key=state_key(ids, cfg, view.lang),
                       temperature=cfg.temperature, kind="ahead")

    def events(self, page) -> list[Event]:
        h, page_in = page.handler, page.page_in
        rederive = h(self.rederive)
        out = [page.figure, page.force]
        # The page asks for every temperature's chart when the slider is first touched at a step, then draws
        # the slider's moves from them at once; each move is still answered by rederive.
        # After a step is drawn, the page asks for the chart the next one will show and draws it ahead.
        return [
            *(Event(knob.input, rederive, page_in, out, options={"trigger_mode": "always_last"})
              for knob in page.settings),
            Event(self.rederive_btn.click, rederive, page_in, out, api_name="rederive"),
            Event(self.bundle_btn.click, h(self.temperature_charts), page_in, [self.bundle], "bundle",
                  "temperature_charts"),
            Event(self.ahead_btn.click, h(self.next_chart), page_in, [self.ahead], "ahead", "next_chart"),
        ]


def engine_sampler(session, dist, lang: str) -> dict | None:
    """The engine's own post-sampler distribution for the chart (viz.candidate_chart's engine_sampler), with its
    sentence; None, asking nothing, unless the model has a processed-logprob engine. A fault is one keyed sentence
    under the chart; the session is not touched (only its ids are read)."""
    try:
        beside = processed_beside(session.lm, session.ids, dist)
    except SessionError as err:
        return {"note": t("processed_fault", lang, why=err.text(lang))}
    if beside is None:
        return None
    return {"probs": beside.engine_probs(), "note": processed_sentence(beside, lang)}


def processed_sentence(beside: ProcessedComparison, lang: str) -> str:
    """One sentence: the engine's sampler agrees (the largest difference), differs (by how much, which tokens one
    side kept), or cannot mean the same for these settings (the reason's own sentence)."""
    numbers = {"diff": f"{beside.max_diff:.1e}", "n": len(beside.tokens),
               "only": len(beside.only_app) + len(beside.only_engine)}
    if beside.reason is not None:
        return t(WHY_DIFFERENT[beside.reason], lang, **numbers)
    return t("processed_agree" if beside.agree else "processed_differ", lang, **numbers)
