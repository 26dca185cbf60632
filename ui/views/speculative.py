"""Speculative decoding: the user's text continued by prompt-lookup drafts, checked by the model one pass per round;
kept as the session's own steps or thrown away; and measured against plain stepwise decoding on this machine."""
from __future__ import annotations

import gradio as gr

from model.serving.speculative import SPEED_TEXTS, kept_choices, speculative_decode, speed_report
from model.errors import SessionError
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import friendly, whole, named_range
from ui.strings import Refusal, t
from viz.speculative import speculative_figure
from viz.style import format_prob

MAX_NEW_TOKENS = 48  # tokens one request may write: bounds its passes (one per round, at most this many)
DEFAULT_DRAFT = 4
DEFAULT_NEW_TOKENS = 24  # the slider's start, and the tokens a lesson step's run writes
DRAFT_SLIDER_MAX = 8  # the slider; the engine (and the API) takes up to MAX_DRAFT
MEASURE_TOKENS = 32  # tokens per text of the speed measurement (x 2 texts x plain and speculative)
SPEED_TEXT_WORDS = {"repeating": "spec_speed_repeating", "prose": "spec_speed_prose"}  # model.serving.speculative.SPEED_TEXTS


def run_summary(run) -> dict:
    """The run as numbers (the user's own tokens; no one else's): what the API and the tests read."""
    return {"prompt_tokens": len(run.prompt_ids), "generated": list(run.generated), "passes": run.passes,
            "drafted": sum(len(r.drafted) for r in run.rounds), "accepted": sum(r.accepted for r in run.rounds),
            "tokens_per_pass": run.tokens_per_pass, "passes_saved": run.passes_saved, "draft_len": run.draft_len,
            "stopped": run.stopped}


def run_sentence(run, lang: str) -> str:
    s = run_summary(run)
    return t("spec_run_summary", lang, tokens=len(run.generated), passes=run.passes, saved=run.passes_saved,
             accepted=s["accepted"], drafted=s["drafted"], rate=format_prob(run.acceptance_rate),
             text=run.text.replace("\n", "↵ ").replace("`", "'"))


def speed_sentence(report, lang: str) -> str:
    """One sentence per text, then whether it paid on each."""
    parts = []
    for c in report:
        key = "spec_speed_pays" if c.speedup > 1 else "spec_speed_not"
        parts.append(t(key, lang, text=t(SPEED_TEXT_WORDS[c.label], lang), spec=f"{c.spec_ms_per_token:.0f}",
                       plain=f"{c.plain_ms_per_token:.0f}", speedup=f"{c.speedup:.2f}",
                       rate=format_prob(c.acceptance_rate), tpp=f"{c.tokens_per_pass:.2f}", tokens=c.tokens))
    return " ".join(parts) + " " + t("spec_speed_why", lang)


class SpeculativeView:
    tab, title = "speculative", "tab_speculative"
    chart = None

    def __init__(self, app):
        self.app = app  # each user's run not yet kept, (the text it continued, the run): app.stash, under this tab

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_speculative"), elem_classes="tbt-explain"), "explain_speculative", "value")
        with gr.Row():
            self.draft_len = add(gr.Slider(1, DRAFT_SLIDER_MAX, DEFAULT_DRAFT, step=1, label=t("spec_draft_len"),
                                           elem_id="tbt-spec-k"), "spec_draft_len")
            self.new_tokens = add(gr.Slider(1, MAX_NEW_TOKENS, DEFAULT_NEW_TOKENS, step=1, label=t("spec_new_tokens"),
                                            elem_id="tbt-spec-n"), "spec_new_tokens")
        with gr.Row():
            self.run_btn = add(gr.Button(t("btn_spec_run"), variant="primary", elem_id="tbt-spec-run"),
                               "btn_spec_run", "value")
            self.keep_btn = add(gr.Button(t("btn_spec_keep"), elem_id="tbt-spec-keep"), "btn_spec_keep", "value")
            self.discard_btn = add(gr.Button(t("btn_spec_discard"), elem_id="tbt-spec-discard"), "btn_spec_discard",
                                   "value")
        # prompt lookup keeps nothing on fresh prose (right, and it reads as a failure): one click to a text that
        # repeats itself, where the draft pays
        self.example_btn = add(gr.Button(t("btn_spec_example"), elem_id="tbt-spec-example", size="sm"),
                               "btn_spec_example", "value")
        self.summary = gr.Markdown(elem_id="tbt-spec-summary")
        self.plot = gr.Plot(label=t("tab_speculative"), elem_id=GRADIO_PLOTS["speculative"], show_label=False)
        self.numbers = gr.JSON(label="speculative run", elem_id="tbt-spec-numbers", elem_classes="tbt-hidden")
        self.measure_btn = add(gr.Button(t("btn_spec_measure"), elem_id="tbt-spec-measure"), "btn_spec_measure",
                               "value")
        self.speed = gr.Markdown(elem_id="tbt-spec-speed")
        named_range(self.draft_len, "spec_draft_len")  # out of range: said in the page's language
        named_range(self.new_tokens, "spec_new_tokens")

    # ---- handlers ------------------------------------------------------------------------------------
    def run(self, request, draft_len, new_tokens, cfg, view):
        """Continue the user's text by speculative decoding under the page's settings (not yet kept)."""
        k, n = whole(draft_len, "spec_draft_len"), whole(new_tokens, "spec_new_tokens")
        if not 1 <= n <= MAX_NEW_TOKENS:
            raise SessionError("spec_new_tokens_range", value=n, low=1, high=MAX_NEW_TOKENS)
        text = self.app.whole_text(request)
        if text.ended:
            raise SessionError("text_ended")
        if text.room < 1:
            raise SessionError("token_limit", limit=text.max_tokens)
        run = text.run(speculative_decode, cfg, k, max_new_tokens=min(n, text.room))
        self.app.stash.put(request.session_hash, self.tab, (text.ids, run))
        return [run_sentence(run, view.lang), speculative_figure(run, text.lm.info.name, view.lang),
                run_summary(run)]

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about speculative decoding: the tab's run on the step's text, at its default draft length
        and length (None when the text cannot go on, or its model is an engine's: nothing local to run)."""
        if not session.capabilities.runs_locally:
            return None
        text = session.whole_text()
        if text.ended or text.room < 1:
            return None
        run = text.run(speculative_decode, cfg, DEFAULT_DRAFT, max_new_tokens=min(DEFAULT_NEW_TOKENS, text.room))
        return speculative_figure(run, text.lm.info.name, view.lang)

    def keep(self, request, cfg, view):
        """The last run becomes the session's text: each token a step recorded with what chose it in the run (the
        accept test, the residual draw or the bonus draw: a SpecChoice, checked again by the session)."""
        pending = self.app.stash.take(request.session_hash, self.tab)
        if pending is None:
            raise Refusal("spec_nothing_to_keep")
        ids, run = pending
        session = self.app.session(request)
        if session.ids != ids:
            raise Refusal("spec_text_changed")
        taken = 0
        try:
            for token, choice in zip(run.generated, kept_choices(run)):
                session.step(run.config, force_token=token, forced=choice)
                taken += 1
        except BaseException:
            if taken:
                session.back(taken)  # all or nothing
            raise
        return [*self.app.answer(session, cfg, view), t("spec_kept", view.lang, n=taken), None, None]

    def discard(self, request: gr.Request, lang="en"):
        self.app.stash.forget(request.session_hash, self.tab)
        return [t("spec_discarded", lang), None, None]

    def measure(self, request: gr.Request, draft_len, lang="en"):
        """Wall time per token, speculative against plain, on a repeating text and on prose (the app's own)."""
        k = whole(draft_len, "spec_draft_len")
        lm = self.app.models.get()
        report = speed_report(lm, MEASURE_TOKENS, k)
        return speed_sentence(report, lang)

    def events(self, page):
        h, page_in = page.handler, page.page_in
        out = [self.summary, self.plot, self.numbers]

        def example(request, draft_len, new_tokens, model_name, cfg, view):
            """A new text from the repeating example (code), continued at once by speculative decoding."""
            answer = page.start_session(request, SPEED_TEXTS["repeating"], "raw", model_name, cfg, view)
            return [SPEED_TEXTS["repeating"], *answer, *self.run(request, draft_len, new_tokens, cfg, view)]

        return [
            Event(self.example_btn.click, h(example, "draft_len", "new_tokens", "model"),
                  [self.draft_len, self.new_tokens, page.model, *page_in], [page.prompt, *page.step_out, *out],
                  "runs", "speculative_example", {"show_progress": "full"}),
            Event(self.run_btn.click, h(self.run, "draft_len", "new_tokens"), [self.draft_len, self.new_tokens, *page_in],
                  out, "runs", "speculative", {"show_progress": "full"}),
            Event(self.keep_btn.click, h(self.keep), page_in, [*page.step_out, *out], "model", "speculative_keep",
                  {"show_progress": "full"}),
            Event(self.discard_btn.click, friendly(self.discard), [page.lang], out, "views", "speculative_discard"),
            Event(self.measure_btn.click, friendly(self.measure), [self.draft_len, page.lang], [self.speed], "measure",
                  "speculative_measure", {"show_progress": "full"}),
        ]
