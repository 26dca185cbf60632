"""Constrained decoding: the user's text continued under a constraint (allowed words, a regular expression, a JSON
schema), each step's candidates drawn with the tokens the constraint removed as their own fate (✂ grammar).

A tab of its own, so the main Candidates tab and the session's steps are untouched: the run has its own cache."""
from __future__ import annotations

import gradio as gr

from model.strategies.constrain import MAX_NEW_TOKENS, Constraint, constrained_decode
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import friendly, named_range, whole
from ui.labels import choices
from ui.strings import Refusal, t
from viz.candidates import candidate_figure
from viz.style import format_prob

LEGEND_PX = 40  # room for a second legend row under the chart

KINDS = [("constrain_kind_words", "words"), ("constrain_kind_regex", "regex"), ("constrain_kind_json", "json")]
# Each example ends within its token budget, whatever the model draws: its longest text is ASCII (at least one
# character a token) and, with the end-of-text token, shorter than the budget. The JSON one's longest text is
# {"answer":"yes","reason":"<16 letters>"}, 44 characters, the regex's "yes, because <30>." 44 (issue 33, item 8:
# the JSON example with a 60-character reason and 24 tokens stopped unfinished)
EXAMPLES = {
    "words": "yes\nno",
    "regex": r"(yes|no), because [a-z ]{1,30}\.",
    "json": '{"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "reason": {"type": "string", '
            '"pattern": "^[a-z ]{1,16}$"}}, "required": ["answer", "reason"], "additionalProperties": false}',
}
DEFAULT_TOKENS = 24
EXAMPLE_TOKENS = {"words": DEFAULT_TOKENS, "regex": MAX_NEW_TOKENS, "json": MAX_NEW_TOKENS}
ENDED = {"eos": "constrain_ended_eos", "length": "constrain_ended_length"}  # ConstrainedRun.stopped


def run_numbers(run) -> dict:
    """The run as numbers: what the API and the tests read."""
    return {"kind": run.constraint.kind, "generated": list(run.generated), "text": run.text, "stopped": run.stopped,
            "allowed": [s.allowed for s in run.steps], "removed_mass": [s.removed_mass for s in run.steps],
            "seconds": run.seconds}


def run_sentence(run, vocab: int, lang: str) -> str:
    masses = [s.removed_mass for s in run.steps]
    worst = max(range(len(masses)), key=masses.__getitem__)
    allowed = [s.allowed for s in run.steps]
    return t("constrain_summary", lang, text=run.text.replace("\n", "↵ ").replace("`", "'"), tokens=len(run.generated),
             ended=t(ENDED[run.stopped], lang), seconds=f"{run.seconds:.1f}", fewest=f"{min(allowed):,}",
             most=f"{max(allowed):,}", vocab=f"{vocab:,}", mean=format_prob(sum(masses) / len(masses)),
             worst=format_prob(masses[worst]), worst_step=worst + 1)


class ConstraintsView:
    tab, title = "constraints", "tab_constraints"
    chart = None

    def __init__(self, app):
        self.app = app  # each user's last run (its steps' charts are drawn from it): app.stash, under this tab

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_constraints"), elem_classes="tbt-explain"), "explain_constraints", "value")
        with gr.Row():
            self.kind = add(gr.Radio([(t(k), v) for k, v in KINDS], value="words", label=t("constrain_kind"),
                                     elem_id="tbt-constrain-kind", scale=2),
                            words=lambda lang: {"label": t("constrain_kind", lang), **choices(KINDS)(lang)})
            self.tokens = add(gr.Slider(1, MAX_NEW_TOKENS, DEFAULT_TOKENS, step=1, label=t("constrain_tokens"),
                                        elem_id="tbt-constrain-tokens", scale=1), "constrain_tokens")
        self.text = add(gr.Textbox(EXAMPLES["words"], label=t("constrain_text"), lines=3, max_lines=10,
                                   elem_id="tbt-constrain-text"), "constrain_text")
        self.run_btn = add(gr.Button(t("btn_constrain_run"), variant="primary", elem_id="tbt-constrain-run"),
                           "btn_constrain_run", "value")
        self.summary = gr.Markdown(elem_id="tbt-constrain-summary")
        self.step = add(gr.Slider(1, MAX_NEW_TOKENS, 1, step=1, label=t("constrain_step"),
                                  elem_id="tbt-constrain-step"), "constrain_step")
        named_range(self.tokens, "constrain_tokens")
        named_range(self.step, "constrain_step")
        self.plot = gr.Plot(label=t("tab_constraints"), elem_id=GRADIO_PLOTS["constraints"], show_label=False)
        self.numbers = gr.JSON(label="constrained run", elem_id="tbt-constrain-numbers", elem_classes="tbt-hidden")

    # ---- handlers ------------------------------------------------------------------------------------
    def run(self, request, kind, text, tokens, cfg, view):
        """Continue the user's text under the constraint and the page's settings (the session is not changed)."""
        n = whole(tokens, "constrain_tokens")
        whole_text = self.app.whole_text(request)
        run = whole_text.run(constrained_decode, Constraint(kind, text), cfg, n)
        self.app.stash.put(request.session_hash, self.tab, run)
        last = len(run.steps)
        return [run_sentence(run, whole_text.lm.info.vocab, view.lang), gr.update(maximum=max(last, 2), value=1),
                self._figure(run, 1, view.lang), run_numbers(run)]

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about constrained decoding: the tab's default run (its first kind, the allowed words
        EXAMPLES["words"], DEFAULT_TOKENS) on the step's text under its settings, its first step drawn: the
        candidates with what the constraint cut."""
        if not session.capabilities.runs_locally:  # an engine's model: no weights here to mask
            return None
        run = session.whole_text().run(constrained_decode, Constraint("words", EXAMPLES["words"]), cfg,
                                       DEFAULT_TOKENS)
        return self._figure(run, 1, view.lang)

    def show_step(self, request: gr.Request, step, lang="en"):
        """One step of the last run: its candidates with the constraint's cut."""
        run = self.app.stash.get(request.session_hash, self.tab)
        if run is None:
            raise Refusal("constrain_no_run")
        return self._figure(run, whole(step, "constrain_step"), lang)

    @staticmethod
    def _figure(run, step: int, lang: str):
        chosen = run.steps[min(max(step, 1), len(run.steps)) - 1]
        fig = candidate_figure(chosen.distribution, lang, grammar_mass=chosen.removed_mass)
        # Gradio draws this chart with margins that grow for a legend that does not fit them (autoexpand): the
        # legend's second row (the grammar's cut adds an entry) then shrank the plot and sat on the axis titles.
        # LEGEND_PX more below the plot, the plot as tall as before: the legend keeps its distance in px.
        fig.layout.height += LEGEND_PX
        fig.layout.margin.b += LEGEND_PX
        return fig

    def example(self, kind):
        """The example constraint of a kind, when the kind is switched, and a token budget it ends within."""
        return EXAMPLES.get(kind, ""), EXAMPLE_TOKENS.get(kind, DEFAULT_TOKENS)

    def events(self, page):
        h, page_in = page.handler, page.page_in
        return [
            Event(self.run_btn.click, h(self.run, "kind", "text", "tokens"), [self.kind, self.text, self.tokens, *page_in],
                  [self.summary, self.step, self.plot, self.numbers], "runs", "constrain"),
            Event(self.step.release, friendly(self.show_step), [self.step, page.lang], [self.plot], "views",
                  "constrain_step"),
            Event(self.kind.input, self.example, [self.kind], [self.text, self.tokens], "page", False),
        ]
