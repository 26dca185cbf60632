"""Two models on one text: the text scored by SmolLM2 and by Gemma 3 270M, surprisal per character side by side,
where they disagree most and each one's bits per character; and the same text continued by both with the page's
settings and seed. Both on demand (a button each), in the runs lane; the computation is
model.experiments.two_models', the pictures viz.two_models'."""
from __future__ import annotations

import gradio as gr

from model.errors import SessionError
from model.experiments.two_models import (MAX_CHARS, MAX_STEPS, check_continuation, continue_text, installed_pair,
                                         read_by_each)
from ui.controls import plot
from ui.events import Event
from ui.handlers import friendly, named_range, whole
from ui.state import carrier
from ui.strings import t
from viz.two_models import continuations_html, readings_html, two_models_chart

DEFAULT_TEXT = "北京是中国的首都。The capital of France is"
DEFAULT_STEPS = 16


def readings_summary(readings) -> dict:
    """The readings as numbers (what the API and the tests read): per model its tokens, each one's log P (None: not
    scored), each character's bits and scored share, and the totals; the stretches where the two disagree."""
    return {"text": readings.text, "models": [
        {"model": r.model, "start": [tok.id for tok in r.start], "tokens": [tok.id for tok in r.tokens],
         "logprobs": r.logprobs, "spans": r.spans, "char_bits": r.char_bits.tolist(),
         "char_scored": r.char_scored.tolist(), "logprob": r.logprob, "bits": r.bits, "perplexity": r.perplexity,
         "bits_per_char": r.bits_per_char, "ms": r.ms} for r in readings.readings],
        "disagreements": [{"start": d.start, "end": d.end, "text": d.text, "bits": list(d.bits)}
                          for d in readings.disagreements]}


class TwoModelsView:
    tab, title = "two_models", "tab_two_models"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_two_models"), elem_classes="tbt-explain"), "explain_two_models", "value")
        with gr.Row(equal_height=True):
            self.text = add(gr.Textbox(DEFAULT_TEXT, label=t("two_text"), lines=2, max_lines=4, max_length=MAX_CHARS,
                                       scale=4, elem_id="tbt-two-text"), "two_text")
            self.score_btn = add(gr.Button(t("btn_two_score"), variant="primary", scale=1, elem_id="tbt-two-score"),
                                 "btn_two_score", "value")
        self.result = gr.HTML(elem_id="tbt-two-result")
        plot(self.tab)
        with gr.Row(equal_height=True):
            self.steps = add(gr.Slider(1, MAX_STEPS, DEFAULT_STEPS, step=1, label=t("two_steps"),
                                       elem_id="tbt-two-steps", scale=3), "two_steps")
            self.continue_btn = add(gr.Button(t("btn_two_continue"), scale=1, elem_id="tbt-two-continue"),
                                    "btn_two_continue", "value")
        self.continued = gr.HTML(elem_id="tbt-two-continued")
        add(gr.Markdown(t("explain_two_models_limits"), elem_classes="tbt-explain"), "explain_two_models_limits",
            "value")
        self.numbers = gr.JSON(label="two models", elem_id="tbt-two-numbers", elem_classes="tbt-hidden")
        named_range(self.steps, "two_steps")

    def score(self, text, lang):
        """The text read by each installed packaged model; a model not installed is named, the other shown."""
        names, missing = installed_pair()
        if not names:
            raise SessionError("default_model_missing")
        readings = read_by_each([self.app.models.core(name) for name in names], text)
        return (readings_html(readings, missing, lang), carrier(two_models_chart(readings, lang), self.tab),
                readings_summary(readings))

    def continue_both(self, request, text, steps, cfg, view):
        """The text continued by each installed packaged model in a fresh session of its own, the page's settings."""
        n = whole(steps, "two_steps")
        names, missing = installed_pair()
        if not names:
            raise SessionError("default_model_missing")
        for name in names:  # every bound checked on both models before the first pass
            check_continuation(self.app.models.get(name), text, cfg, n)
        done = [continue_text(self.app.models.new_session(name), text, cfg, n) for name in names]
        return continuations_html(done, cfg, missing, view.lang)

    def events(self, page):
        return [
            Event(self.score_btn.click, friendly(self.score), [self.text, page.lang],
                  [self.result, page.figure, self.numbers], "runs", "two_models_score"),
            Event(self.continue_btn.click, page.handler(self.continue_both, "text", "steps"),
                  [self.text, self.steps, *page.page_in], [self.continued], "runs", "two_models_continue"),
        ]
