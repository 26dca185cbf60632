"""A sampler race: the user's text continued under the page's settings (A) and under a second set (B), the same u
at every step, so the only difference is the settings; shown side by side, where they split marked."""
from __future__ import annotations

from dataclasses import replace

import gradio as gr

from model.errors import SessionError
from model.strategies.race import RACE_MAX_STEPS, race
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import named_range, whole
from ui.labels import choices
from ui.strings import t
from viz.race import race_figure, race_html

DEFAULT_STEPS = 32
LESSON_STEPS = 12  # a lesson step's race: it runs when a student opens the step, so a short one
DEFAULT_B = {"temperature": 0.7, "top_k": 0, "top_p": 0.9, "min_p": 0.0, "order": "transformers"}  # the B knobs' start
ORDERS = [("order_transformers", "transformers"), ("order_temperature_last", "temperature_last")]


def race_summary(result, decode) -> dict:
    """The race as numbers (what the API and the tests read); decode(ids) -> text."""
    def side(s):
        return {"ids": s.ids, "text": decode(s.ids), "ended": s.ended,
                "logprob_t1": s.logprob_t1, "logprob_sampled": s.logprob_sampled,
                "logprobs_t1": [step.logprob_t1 for step in s.steps],
                "entropy_bits": [step.entropy_sampled_bits for step in s.steps]}
    return {"prefix_len": result.prefix_len, "diverged_at": result.diverged_at, "passes": result.passes,
            "ms": result.ms, "a": side(result.a), "b": side(result.b)}


def raced(text, cfg_a, cfg_b, steps: int):
    """The race from a text (what Race does, and a lesson step): refused when the text has ended."""
    if text.ended:
        raise SessionError("text_ended")
    return text.run(race, cfg_a, cfg_b, steps, text.max_tokens)


class RaceView:
    tab, title = "race", "tab_race"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_race"), elem_classes="tbt-explain"), "explain_race", "value")
        add(gr.Markdown("#### " + t("race_b_heading")), words=lambda lang: {"value": "#### " + t("race_b_heading", lang)})
        with gr.Row():
            self.temperature = add(gr.Slider(0, 2, DEFAULT_B["temperature"], step=0.05, label=t("temperature"),
                                             elem_id="tbt-race-t"),
                                   "temperature")
            self.top_k = add(gr.Slider(0, 200, DEFAULT_B["top_k"], step=1, label=t("top_k"),
                                       elem_id="tbt-race-top-k"), "top_k")
            self.top_p = add(gr.Slider(0.01, 1, DEFAULT_B["top_p"], step=0.01, label=t("top_p"),
                                       elem_id="tbt-race-top-p"), "top_p")
            self.min_p = add(gr.Slider(0, 1, DEFAULT_B["min_p"], step=0.01, label=t("min_p"),
                                       elem_id="tbt-race-min-p"), "min_p")
        with gr.Row(equal_height=True):
            self.order = add(gr.Radio([(t(k), v) for k, v in ORDERS], value=DEFAULT_B["order"], label=t("order"),
                                      elem_id="tbt-race-order", scale=2),
                             words=lambda lang: {"label": t("order", lang), **choices(ORDERS)(lang)})
            self.steps = add(gr.Slider(1, RACE_MAX_STEPS, DEFAULT_STEPS, step=1, label=t("race_steps"),
                                       elem_id="tbt-race-steps", scale=2), "race_steps")
            self.run_btn = add(gr.Button(t("btn_race"), variant="primary", elem_id="tbt-race-run", scale=1),
                               "btn_race", "value")
        self.texts = gr.HTML("", elem_id="tbt-race-texts")
        self.plot = gr.Plot(label=t("tab_race"), elem_id=GRADIO_PLOTS["race"], show_label=False)
        self.numbers = gr.JSON(label="sampler race", elem_id="tbt-race-numbers", elem_classes="tbt-hidden")
        for knob, key in ((self.temperature, "temperature"), (self.top_k, "top_k"), (self.top_p, "top_p"),
                          (self.min_p, "min_p"), (self.steps, "race_steps")):
            named_range(knob, key)

    def run(self, request, temperature, top_k, top_p, min_p, order, steps, cfg, view):
        """Race the page's settings (A) against these (B) from the user's text: same seed, same u at each step."""
        n = whole(steps, "race_steps")
        top_k = whole(top_k, "top_k")
        cfg_b = replace(cfg, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p, order=order).validate()
        text = self.app.whole_text(request, "race_needs_weights")  # each step's whole distribution, run here twice
        result = raced(text, cfg, cfg_b, n)
        return [race_html(result, view.lang), race_figure(result, view.lang), race_summary(result, text.lm.tokens.text)]

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about the race: the step's settings (A) against the tab's default B, LESSON_STEPS
        tokens from the step's text (None when it has ended: nothing to race)."""
        if not session.capabilities.runs_locally:  # an engine's model: no whole distributions here
            return None
        text = session.whole_text("race_needs_weights")
        if text.ended:
            return None
        return race_figure(raced(text, cfg, replace(cfg, **DEFAULT_B).validate(), LESSON_STEPS), view.lang)

    def events(self, page):
        knobs = [self.temperature, self.top_k, self.top_p, self.min_p, self.order, self.steps]
        names = ("b_temperature", "b_top_k", "b_top_p", "b_min_p", "b_order", "steps")
        return [Event(self.run_btn.click, page.handler(self.run, *names), [*knobs, *page.page_in],
                      [self.texts, self.plot, self.numbers], "runs", "sampler_race")]
