"""Self-consistency: the user's text (a question) answered N times by sampling and once greedily, in one batched
pass per step; the vote, each sample's log P, each sample's text beside its answer, and how the vote moves with N
(and, on demand, with temperature)."""
from __future__ import annotations

import html

import gradio as gr

from model.strategies.consistency import (ANSWER_CHARS, MAX_NEW_TOKENS, MAX_SAMPLES, SWEEP_TEMPERATURES,
                                          self_consistency, temperature_sweep)
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import named_range, whole
from ui.strings import t
from viz.consistency import consistency_figure
from viz.style import format_prob

DEFAULT_SAMPLES, DEFAULT_TOKENS = 8, 16
LESSON_SAMPLES, LESSON_TOKENS = 5, 12  # a lesson step's vote: it runs when a student opens the step, so a small one


def run_numbers(run) -> dict:
    """The run as numbers: what the API and the tests read."""
    return {"greedy": {"text": run.greedy.text, "answer": run.greedy.answer, "logprob": run.greedy.logprob},
            "samples": [{"seed": s.seed, "text": s.text, "answer": s.answer, "logprob": s.logprob, "tokens": s.tokens}
                        for s in run.samples],
            "votes": run.votes(), "majority": run.majority, "passes": run.passes, "seconds": run.seconds}


def run_sentence(run, lang: str) -> str:
    majority, votes = run.votes()[0]
    agree = t("sc_agrees" if majority == run.greedy.answer else "sc_disagrees", lang)
    quote = lambda a: f"`{a.replace('`', chr(39))}`" if a else "∅"
    return t("sc_summary", lang, n=len(run.samples), passes=run.passes, seconds=f"{run.seconds:.1f}",
             majority=quote(majority), votes=votes, greedy=quote(run.greedy.answer), agree=agree)


def explanation(lang: str) -> str:
    """The tab's explanation, with the answer rule extract_answer applies (its length limit from the code)."""
    return t("explain_consistency", lang, rule=t("sc_answer_rule", lang, chars=ANSWER_CHARS))


def sample_texts(run, lang: str) -> str:
    """Every row's text beside the answer it votes for, the greedy row first: a list under the chart, so a student
    sees why each sample voted as it did without hovering (a phone has no hover, a projector's class none at all)."""
    rows = [(t("sc_text_greedy", lang), run.greedy)]
    rows += [(t("sc_text_sample", lang, k=k, seed=s.seed), s) for k, s in enumerate(run.samples, start=1)]
    items = []
    for name, s in rows:
        text = html.escape(s.text.strip().replace("\n", " ↵ ")) or "∅"
        cut = "" if s.ended else " " + html.escape(t("sc_text_cut", lang))
        items.append(f'<li data-seed="{"" if s.seed is None else s.seed}">{html.escape(name)}: '
                     f'<b class="tbt-sc-answer">{html.escape(s.answer) or "∅"}</b> ← '
                     f'<span class="tbt-sc-text">{text}</span>{cut}</li>')
    return (f'<div id="tbt-sc-texts-list"><p><b>{html.escape(t("sc_texts_head", lang))}</b></p>'
            f'<ol>{"".join(items)}</ol></div>')


def sweep_lines(runs, lang: str) -> str:
    lines = []
    for run in runs:
        majority, votes = run.votes()[0]
        share = sum(s.answer == run.greedy.answer for s in run.samples) / len(run.samples)
        lines.append("- " + t("sc_sweep_line", lang, temperature=f"{run.config.temperature:g}", majority=f"`{majority}`",
                              votes=votes, n=len(run.samples), share=format_prob(share), greedy=f"`{run.greedy.answer}`"))
    return "\n".join(lines)


class ConsistencyView:
    tab, title = "consistency", "tab_consistency"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(explanation("en"), elem_classes="tbt-explain"),
            words=lambda lang: {"value": explanation(lang)})
        with gr.Row():
            self.samples = add(gr.Slider(1, MAX_SAMPLES, DEFAULT_SAMPLES, step=1, label=t("sc_samples"),
                                         elem_id="tbt-sc-n"), "sc_samples")
            self.tokens = add(gr.Slider(1, MAX_NEW_TOKENS, DEFAULT_TOKENS, step=1, label=t("sc_tokens"),
                                        elem_id="tbt-sc-tokens"), "sc_tokens")
        named_range(self.samples, "sc_samples")
        named_range(self.tokens, "sc_tokens")
        # a vote needs a question with one short answer: the page's first text is a sentence to continue
        with gr.Row(equal_height=True):
            add(gr.Markdown(t("sc_needs_question"), elem_classes="tbt-small"), "sc_needs_question", "value")
            self.question_btn = add(gr.Button(t("sc_use_question"), size="sm", elem_id="tbt-sc-question", scale=0,
                                              min_width=220), "sc_use_question", "value")
        with gr.Row():
            self.run_btn = add(gr.Button(t("btn_sc_run"), variant="primary", elem_id="tbt-sc-run"), "btn_sc_run", "value")
            self.sweep_btn = add(gr.Button(t("btn_sc_sweep"), elem_id="tbt-sc-sweep"), "btn_sc_sweep", "value")
        self.summary = gr.Markdown(elem_id="tbt-sc-summary")
        self.plot = gr.Plot(label=t("tab_consistency"), elem_id=GRADIO_PLOTS["consistency"], show_label=False)
        self.texts = gr.HTML("", elem_id="tbt-sc-texts", elem_classes="tbt-explain")
        self.numbers = gr.JSON(label="self-consistency run", elem_id="tbt-sc-numbers", elem_classes="tbt-hidden")
        self.sweep = gr.Markdown(elem_id="tbt-sc-sweep-result")
        self.page = page  # (its Start, for the question: the page's own controls)

    def use_question(self, request, model_name, cfg, view):
        """The question the Self-consistency lesson asks (lesson 12), in the page's language, started as the user's
        text as Start does (raw continuation, on the model picked): then Vote has a question to answer."""
        question = t("sc_question", view.lang)
        return [question, "raw", *self.page.start_pressed(request, question, "raw", model_name, cfg, view)]

    def run(self, request, samples, tokens, cfg, view):
        """N samples and the greedy answer to the user's text, voted (the session is not changed)."""
        n, m = whole(samples, "sc_samples"), whole(tokens, "sc_tokens")
        run = self.app.whole_text(request).run(self_consistency, cfg, n, m)
        return self._shown(run, view.lang)

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about self-consistency: the tab's vote on the step's text under its settings, a small one
        (LESSON_SAMPLES samples of at most LESSON_TOKENS tokens)."""
        if not session.capabilities.runs_locally:  # an engine's model: no weights here to sample with
            return None
        run = session.whole_text().run(self_consistency, cfg, LESSON_SAMPLES, LESSON_TOKENS)
        return self._shown(run, view.lang)[1]

    @staticmethod
    def _shown(run, lang: str) -> list:
        """The run as the tab shows it: its sentence, its chart, each sample's text, its numbers."""
        return [run_sentence(run, lang), consistency_figure(run, lang), sample_texts(run, lang), run_numbers(run)]

    def sweep_temperature(self, request, samples, tokens, cfg, view):
        """The same vote at each of SWEEP_TEMPERATURES, the other settings held."""
        n, m = whole(samples, "sc_samples"), whole(tokens, "sc_tokens")
        runs = self.app.whole_text(request).run(temperature_sweep, cfg, n, m, temperatures=SWEEP_TEMPERATURES)
        return sweep_lines(runs, view.lang)

    def events(self, page):
        h, page_in = page.handler, page.page_in
        inputs = [self.samples, self.tokens, *page_in]
        started = [page.prompt, page.mode, *page.step_out, page.layer, page.head, page.gqa]  # as Start's, and the text
        return [
            Event(self.question_btn.click, h(self.use_question, "model"), [page.model, *page_in], started, "model",
                  "consistency_question"),
            Event(self.run_btn.click, h(self.run, "samples", "tokens"), inputs,
                  [self.summary, self.plot, self.texts, self.numbers], "runs", "consistency"),
            Event(self.sweep_btn.click, h(self.sweep_temperature, "samples", "tokens"), inputs, [self.sweep], "measure",
                  "consistency_sweep"),
        ]
