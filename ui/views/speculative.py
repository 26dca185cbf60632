"""Speculative decoding: the user's text continued by prompt-lookup drafts, checked by the model one pass per round;
kept as the session's own steps or thrown away; and measured against plain stepwise decoding on this machine.

On an engine's model: one greedy request to the engine over the text, with the engine's own drafted / accepted
counts per verifying step and the tokens its drafts wrote marked, beside this app's rounds on the same model here
when it is loaded (model/vllm/speculative.py). Nothing of it is kept: the text stays as it was."""
from __future__ import annotations

import gradio as gr

from model.vllm.speculative import engine_speculate
from model.speed.speculative import SPEED_TEXTS, kept_choices, speculative_decode, speed_report
from model.errors import SessionError
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import friendly, whole, named_range
from ui.strings import Refusal, t
from viz.speculative import speculative_figure
from viz.speculative_engine import engine_spec_figure, engine_spec_html
from viz.style import format_prob

MAX_NEW_TOKENS = 48  # tokens one request may write: bounds its passes (one per round, at most this many)
DEFAULT_DRAFT = 4
DEFAULT_NEW_TOKENS = 24  # the slider's start, and the tokens a lesson step's run writes
DRAFT_SLIDER_MAX = 8  # the slider; the engine (and the API) takes up to MAX_DRAFT
MEASURE_TOKENS = 32  # tokens per text of the speed measurement (x 2 texts x plain and speculative)
SPEED_TEXT_WORDS = {"repeating": "spec_speed_repeating", "prose": "spec_speed_prose"}  # model.speed.speculative.SPEED_TEXTS


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


def engine_summary(comparison) -> dict:
    """The engine's run (and the app's own beside it) as numbers: what the API and the tests read."""
    run, local = comparison.engine, comparison.local
    out = {"prompt_tokens": len(run.ids), "generated": list(run.generated), "speculating": run.speculating,
           "drafted_per_step": None if run.drafted is None else list(run.drafted),
           "accepted_per_step": None if run.accepted is None else list(run.accepted),
           "num_spec_tokens": run.num_spec_tokens, "tokens_per_pass": run.tokens_per_pass, "steps": run.steps,
           "from_draft": None if run.from_draft is None else list(run.from_draft), "chunks": list(run.chunks),
           "ms": run.ms, "finish": run.finish, "local_model": comparison.local_name}
    if local is not None:
        out.update(local_generated=list(local.generated), local_passes=local.passes,
                   local_tokens_per_pass=local.tokens_per_pass, agree=comparison.agree, compared=comparison.compared)
    return out


def engine_sentence(comparison, lang: str) -> str:
    """What the engine did, then the app's own run beside it (or why not), then where the two must agree."""
    run, local = comparison.engine, comparison.local
    text = comparison.text.replace("\n", "↵ ").replace("`", "'")  # as run_sentence shows a local run's
    if not run.speculating:
        return t("spec_engine_off", lang)
    passes = "" if run.passes is None else t("spec_engine_passes", lang, passes=run.passes)
    parts = [t("spec_engine_summary", lang, tokens=len(run.generated), passes=passes, steps=run.steps,
               tpp=f"{run.tokens_per_pass:.2f}",
               accepted=sum(run.accepted), drafted=sum(run.drafted), rate=format_prob(run.acceptance_rate),
               k=run.num_spec_tokens, ms=f"{run.ms:.0f}", text=text)]
    if local is None:
        parts.append(t("spec_engine_no_local", lang))
    else:
        parts.append(t("spec_engine_local", lang, model=comparison.local_name, k=local.draft_len,
                       tokens=len(local.generated), passes=local.passes, tpp=f"{local.tokens_per_pass:.2f}",
                       agree=comparison.agree, compared=comparison.compared))
    parts.append(t("spec_engine_why", lang))
    return "\n\n".join(parts)


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
        self.engine_text = gr.HTML(elem_id="tbt-spec-engine-text")  # an engine's run: its text, drafts marked
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
        session = self.app.session(request)
        if not session.capabilities.runs_locally:
            return self.run_on_engine(session, k, n, view)
        text = self.app.whole_text(request)
        if text.ended:
            raise SessionError("text_ended")
        if text.room < 1:
            raise SessionError("token_limit", limit=text.max_tokens)
        run = text.run(speculative_decode, cfg, k, max_new_tokens=min(n, text.room))
        self.app.stash.put(request.session_hash, self.tab, (text.ids, run))
        return [run_sentence(run, view.lang), speculative_figure(run, text.lm.info.name, view.lang), "",
                run_summary(run)]

    def run_on_engine(self, session, k, n, view):
        """The engine's greedy speculative continuation of the text (its own counts), and this app's rounds on the
        same model here when it is loaded (at the slider's k); nothing is kept, the session is only read."""
        twin = self.app.models.loaded_twin(session.lm)
        comparison = engine_speculate(session, n, twin, k)
        run, lang = comparison.engine, view.lang
        if not run.speculating:
            return [engine_sentence(comparison, lang), None, "", engine_summary(comparison)]
        figure = engine_spec_figure(run, comparison.engine_name, comparison.local, comparison.local_name, lang)
        return [engine_sentence(comparison, lang), figure, engine_spec_html(comparison.tokens, run.from_draft, lang),
                engine_summary(comparison)]

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
        if not self.app.session(request).capabilities.runs_locally:
            raise Refusal("spec_engine_no_keep")  # the engine's run is only shown
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
        return [*self.app.answer(session, cfg, view), t("spec_kept", view.lang, n=taken), None, "", None]

    def discard(self, request: gr.Request, lang="en"):
        self.app.stash.forget(request.session_hash, self.tab)
        return [t("spec_discarded", lang), None, "", None]

    def measure(self, request: gr.Request, draft_len, lang="en"):
        """Wall time per token, speculative against plain, on a repeating text and on prose (the app's own)."""
        k = whole(draft_len, "spec_draft_len")
        lm = self.app.models.get()
        report = speed_report(lm, MEASURE_TOKENS, k)
        return speed_sentence(report, lang)

    def events(self, page):
        h, page_in = page.handler, page.page_in
        out = [self.summary, self.plot, self.engine_text, self.numbers]

        def example(request, draft_len, new_tokens, model_name, cfg, view):
            """A new text from the repeating example (code), continued at once by speculative decoding."""
            answer = page.start_session(request, SPEED_TEXTS["repeating"], "raw", model_name, cfg, view)
            return [SPEED_TEXTS["repeating"], *answer, *self.run(request, draft_len, new_tokens, cfg, view)]

        return [
            Event(self.example_btn.click, h(example, "draft_len", "new_tokens", "model"),
                  [self.draft_len, self.new_tokens, page.model, *page_in], [page.prompt, *page.step_out, *out],
                  "runs", "speculative_example"),
            Event(self.run_btn.click, h(self.run, "draft_len", "new_tokens"), [self.draft_len, self.new_tokens, *page_in],
                  out, "runs", "speculative"),
            Event(self.keep_btn.click, h(self.keep), page_in, [*page.step_out, *out], "model", "speculative_keep"),
            Event(self.discard_btn.click, friendly(self.discard), [page.lang], out, "views", "speculative_discard"),
            Event(self.measure_btn.click, friendly(self.measure), [self.draft_len, page.lang], [self.speed], "measure",
                  "speculative_measure"),
        ]
