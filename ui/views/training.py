"""Training vs generation: the whole text in one parallel pass (teacher forcing) against the steps that wrote it,
and any pasted text scored the same way, each token shaded by its rank (GLTR). Both on demand: a button.
On an engine's model the one pass is one request to the engine (prompt_logprobs), against its steps' requests."""
from __future__ import annotations

import gradio as gr

from model.inside.teacher_forcing import compare_stepwise, score_text, session_teacher_forcing
from ui.controls import plot
from ui.events import Event
from ui.handlers import friendly
from ui.state import carrier
from ui.strings import Refusal, t
from viz.chain import gltr_html, teacher_chart


def comparison_text(comparison, lang: str) -> str:
    """The comparison in two sentences: the logits are the same up to float error; one pass against every step."""
    largest = max(comparison.max_abs_diff, comparison.next_max_abs_diff)
    if comparison.on_engine:  # one request against the steps' requests, log-probabilities compared
        text = t("compare_result_engine", lang, diff=f"{largest:.1e}", steps=len(comparison.steps_ms),
                 tokens=comparison.tokens, parallel=f"{comparison.parallel_ms:.0f}",
                 serial=f"{comparison.serial_ms:.0f}", speedup=f"{comparison.speedup:.1f}")
        return text + ("" if comparison.conclusive else " " + t("compare_engine_slower", lang))
    text = t("compare_result", lang, diff=f"{largest:.1e}", steps=len(comparison.steps_ms), tokens=comparison.tokens,
             parallel=f"{comparison.parallel_ms:.0f}", serial=f"{comparison.serial_ms:.0f}",
             speedup=f"{comparison.speedup:.1f}", runs=comparison.parallel_runs,
             low=f"{comparison.parallel_range[0]:.0f}", high=f"{comparison.parallel_range[1]:.0f}")
    # Wall times of passes run at different moments: on a loaded machine the one pass can lose. Say so plainly.
    return text + ("" if comparison.conclusive else " " + t("compare_slower", lang))


class TrainingView:
    tab, title = "training", "tab_training"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_training"), elem_classes="tbt-explain"), "explain_training", "value")
        self.compare = add(gr.Button(t("btn_compare"), elem_id="tbt-compare"), "btn_compare", "value")
        self.compare_result = gr.Markdown(elem_id="tbt-compare-result", elem_classes="tbt-explain")
        # what the empty space is for, until the chart is drawn (app.css hides it then)
        add(gr.Markdown(t("training_empty"), elem_classes="tbt-empty", elem_id="tbt-training-empty"), "training_empty",
            "value")
        plot(self.tab)  # drawn by the page's script, its title as HTML above (wrapped, unlike plotly's)
        add(gr.Markdown("### " + t("score_heading"), elem_id="tbt-score-heading"),
            words=lambda lang: {"value": "### " + t("score_heading", lang)})
        add(gr.Markdown(t("explain_score"), elem_classes="tbt-explain"), "explain_score", "value")
        self.text = add(gr.Textbox(label=t("score_label"), lines=4, max_lines=12, elem_id="tbt-score-text"),
                        "score_label")
        self.score = add(gr.Button(t("btn_score"), elem_id="tbt-score"), "btn_score", "value")
        self.scored = gr.HTML(elem_id="tbt-scored")

    def compare_passes(self, request: gr.Request, lang):
        """The user's text in one parallel pass against the steps that generated it (the model lock held for it;
        on an engine's model, one request)."""
        session = self.app.session(request)
        if not session.steps:
            raise Refusal("compare_no_steps")
        record, comparison = compare_stepwise(session)
        # The comparison is in the sentences above the chart, not in its subtitle as well
        return comparison_text(comparison, lang), carrier(teacher_chart(record, lang), self.tab)

    def score_pasted(self, request: gr.Request, text, lang):
        """A pasted text scored in one pass, on the user's model (an engine's: one request; the default local one
        before any session)."""
        return gltr_html(self.app.on_user_model(request, score_text, text if isinstance(text, str) else ""), lang)

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about training: the session's text in one parallel pass (teacher forcing)."""
        return teacher_chart(session_teacher_forcing(session), view.lang)

    def events(self, page):
        return [
            Event(self.compare.click, friendly(self.compare_passes), [page.lang],
                  [self.compare_result, page.figure], "measure", "compare_stepwise"),
            Event(self.score.click, friendly(self.score_pasted), [self.text, page.lang], [self.scored], "measure",
                  "score_text"),
        ]
