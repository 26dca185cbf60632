"""Beams: beam search from the user's prompt, step by step (the tree grows with Next step), and its finished beams
set beside the greedy and the sampled text. The search runs on demand (a button), its steps are then only drawn."""
from __future__ import annotations

import time
from dataclasses import dataclass

import gradio as gr

from model.strategies.beams import (MAX_LENGTH_PENALTY, MAX_NEW_TOKENS, MAX_WIDTH, BeamRun, beam_search, compare_texts,
                         sampled_continuation)
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import named_range, whole
from ui.strings import Refusal, t
from viz.beams import beam_texts_html, beam_tree_figure

DEFAULT_WIDTH, DEFAULT_TOKENS = 4, 16
LESSON_WIDTH, LESSON_TOKENS = 3, 8  # a lesson step's search: it runs when a student opens the step, so a small one


@dataclass
class Shown:
    """One user's search and how far along it the page is."""

    prompt_ids: list[int]
    run: BeamRun
    texts: list  # model.strategies.beams.TextSummary rows: the finished beams, greedy, sampled
    shown: int  # steps drawn (1..len(run.steps))
    seconds: float  # wall time of the search, the greedy and the sampled text

    @property
    def at_end(self) -> bool:
        return self.shown >= len(self.run.steps)


def run_numbers(st: Shown) -> dict:
    """The search as numbers, for the API and the tests."""
    run = st.run

    def text(r):
        return {"kind": r.kind, "tokens": r.tokens, "logprob": r.logprob, "score": r.score, "length": r.length,
                "repeated_tokens": r.repeated_tokens}

    return {"width": run.width, "length_penalty": run.length_penalty, "max_new_tokens": run.max_new_tokens,
            "steps": len(run.steps), "shown": st.shown, "stopped": run.stopped, "seconds": round(st.seconds, 3),
            "prompt_tokens": len(st.prompt_ids),
            "finished": [{"tokens": h.tokens, "logprob": h.logprob, "score": h.score, "length": h.length}
                         for h in run.finished],
            "texts": [text(r) for r in st.texts]}


def summary_text(st: Shown, lang: str) -> str:
    """What this step did, how long the search took, and at the end how it stopped and the three texts' log P."""
    run, step = st.run, st.run.steps[st.shown - 1]
    fates = [c.fate for c in step.candidates]
    lines = [t("beams_step_line", lang, step=step.step, steps=len(run.steps), live=len(step.live),
               k=len(step.candidates), kept=fates.count("kept"), finished=fates.count("finished"),
               pruned=fates.count("pruned")),
             t("beams_timing", lang, seconds=f"{st.seconds:.1f}", passes=len(run.steps), width=run.width)]
    if st.at_end:
        best, greedy, sampled = st.texts[0], st.texts[-2], st.texts[-1]
        why = t("beams_stopped_limit" if run.stopped == "limit" else "beams_stopped_no_better", lang)
        lines.insert(1, t("beams_end_line", lang, steps=len(run.steps), why=why, logp=f"{best.logprob:.2f}",
                          n=best.length, glogp=f"{greedy.logprob:.2f}", gn=greedy.length,
                          slogp=f"{sampled.logprob:.2f}", sn=sampled.length))
    return "\n\n".join(lines)


def searched(text, b: int, penalty: float, n: int, cfg) -> Shown:
    """The tab's search (what Search does, and a lesson step): beam search from the text's prompt with B beams,
    the greedy text (B = 1) and the text `cfg` would sample, each pass a turn at the model's scheduler; its first step
    shown."""
    lm, prompt = text.lm, text.ids[: text.prompt_len]
    t0 = time.perf_counter()
    run = text.compute(beam_search, prompt, b, penalty, n)  # refuses bad knobs before any pass
    greedy = run if b == 1 else text.compute(beam_search, prompt, 1, penalty, n)
    sampled = text.compute(sampled_continuation, prompt, cfg, n)
    return Shown(prompt, run, compare_texts(lm, run, greedy, sampled), 1, time.perf_counter() - t0)


class BeamsView:
    tab, title = "beams", "tab_beams"
    chart = None

    def __init__(self, app):
        self.app = app  # each user's search: app.stash, under this view's tab

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_beams"), elem_classes="tbt-explain"), "explain_beams", "value")
        with gr.Row():
            self.width = add(gr.Slider(1, MAX_WIDTH, DEFAULT_WIDTH, step=1, label=t("beams_width"),
                                       elem_id="tbt-beams-width"), "beams_width")
            self.penalty = add(gr.Slider(-MAX_LENGTH_PENALTY, MAX_LENGTH_PENALTY, 1.0, step=0.1,
                                         label=t("beams_penalty"), elem_id="tbt-beams-penalty"), "beams_penalty")
            self.tokens = add(gr.Slider(1, MAX_NEW_TOKENS, DEFAULT_TOKENS, step=1, label=t("beams_tokens"),
                                        elem_id="tbt-beams-tokens"), "beams_tokens")
        for knob, key in ((self.width, "beams_width"), (self.penalty, "beams_penalty"), (self.tokens, "beams_tokens")):
            named_range(knob, key)
        with gr.Row():
            self.search_btn = add(gr.Button(t("btn_beams_search"), variant="primary", elem_id="tbt-beams-search"),
                                  "btn_beams_search", "value")
            self.next_btn = add(gr.Button(t("btn_beams_next"), elem_id="tbt-beams-next"), "btn_beams_next", "value")
            self.end_btn = add(gr.Button(t("btn_beams_all"), elem_id="tbt-beams-end"), "btn_beams_all", "value")
        self.summary = gr.Markdown(elem_id="tbt-beams-summary")
        self.plot = gr.Plot(label=t("tab_beams"), elem_id=GRADIO_PLOTS["beams"], show_label=False)
        self.texts = gr.HTML("", elem_id="tbt-beams-texts")
        self.numbers = gr.JSON(label="beam search", elem_id="tbt-beams-numbers", elem_classes="tbt-hidden")

    # ---- handlers ------------------------------------------------------------------------------------
    def search(self, request, width, penalty, new_tokens, cfg, view):
        """Beam search from the user's prompt (B beams), the greedy text (B = 1) and the text the page's settings
        would sample, all on the user's local model, each pass a turn at its scheduler; shows the first step."""
        b, n = whole(width, "beams_width"), whole(new_tokens, "beams_tokens")
        st = searched(self.app.whole_text(request), b, penalty, n, cfg)
        self.app.stash.put(request.session_hash, self.tab, st)
        return self._draw(st, view.lang)

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about beam search: the tab's search from the step's prompt, a small one (LESSON_WIDTH
        beams, LESSON_TOKENS tokens, the default length penalty), drawn to its end with the best beam marked."""
        if not session.capabilities.runs_locally:  # an engine's model: no weights here to search with
            return None
        st = searched(session.whole_text(), LESSON_WIDTH, 1.0, LESSON_TOKENS, cfg)
        st.shown = len(st.run.steps)
        return self._draw(st, view.lang)[1]

    def next_step(self, request, cfg, view):
        """One more step of the search drawn (no model run)."""
        st = self._current(request)
        st.shown = min(st.shown + 1, len(st.run.steps))
        return self._draw(st, view.lang)

    def to_end(self, request, cfg, view):
        """The whole search drawn, and its finished beams beside the greedy and the sampled text."""
        st = self._current(request)
        st.shown = len(st.run.steps)
        return self._draw(st, view.lang)

    def relabel(self, request, cfg, view):
        """The search drawn again in the page's language (nothing before there is one)."""
        st = self.app.stash.get(request.session_hash, self.tab)
        return [gr.skip()] * 4 if st is None else self._draw(st, view.lang)

    def _current(self, request) -> Shown:
        st = self.app.stash.get(request.session_hash, self.tab)
        if st is None:
            raise Refusal("beams_search_first")
        session = self.app.session(request)
        with session.reading():
            if list(session.ids[: session.prompt_len]) != st.prompt_ids:
                raise Refusal("beams_prompt_changed")
        return st

    def _draw(self, st: Shown, lang: str) -> list:
        run = st.run
        best = (run.finished[0].step, run.finished[0].rank) if st.at_end else None
        figure = beam_tree_figure(run.steps, st.shown, run.width, run.length_penalty, lang, best=best)
        texts = beam_texts_html(st.texts, lang) if st.at_end else f"<p>{t('beams_texts_waiting', lang)}</p>"
        return [summary_text(st, lang), figure, texts, run_numbers(st)]

    def events(self, page):
        h, page_in = page.handler, page.page_in
        out = [self.summary, self.plot, self.texts, self.numbers]
        return [
            Event(self.search_btn.click, h(self.search, "width", "penalty", "new_tokens"),
                  [self.width, self.penalty, self.tokens, *page_in], out, "runs", "beams_search"),
            Event(self.next_btn.click, h(self.next_step), page_in, out, "views", "beams_next"),
            Event(self.end_btn.click, h(self.to_end), page_in, out, "views", "beams_to_end"),
            Event(page.lang.change, h(self.relabel), page_in, out, "views"),
        ]
