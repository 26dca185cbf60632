"""Medusa heads: the user's text continued greedily by Medusa (heads trained here guess several tokens ahead, a tree
of their guesses verified in one pass with a tree attention mask), pass by pass, and beside it prompt lookup and
plain decoding on the same text. Nothing is kept: the text stays as it was. The run is kept in the stash so that
another pass can be shown without running the model again."""
from __future__ import annotations

import gradio as gr

from model.errors import SessionError
from model.speed.medusa import MAX_NEW_TOKENS, compute
from model.speed.medusa_heads import DEFAULT_TREE, MAX_TREE
from ui.events import Event
from ui.handlers import friendly, named_range, whole
from ui.protocol import GRADIO_PLOTS
from ui.strings import Refusal, t
from viz.medusa import medusa_pass_figure, medusa_run_figure
from viz.style import format_prob

DEFAULT_NEW_TOKENS = 32
LESSON_NEW_TOKENS = 12  # a lesson step's run: it runs when a student opens the step, so a short one


def run_numbers(run) -> dict:
    """The run as numbers: what the API and the tests read."""
    return {"generated": list(run.generated), "passes": run.passes, "tokens_per_pass": run.tokens_per_pass,
            "accepted": run.accepted, "tree_size": run.tree_size, "heads": run.heads, "top1": run.top1,
            "top5": run.top5, "same_as_plain": dict(run.same_as_plain), "stopped": run.stopped,
            "pass_positions": [r.pass_positions for r in run.rounds],
            "accepted_per_pass": [len(r.accepted) for r in run.rounds],
            "lookup": {"generated": list(run.lookup.generated), "passes": run.lookup.passes,
                       "tokens_per_pass": run.lookup.tokens_per_pass},
            "plain": {"generated": list(run.plain.generated), "passes": run.plain.passes}}


def run_sentence(run, lang: str) -> str:
    """What the run did, against the other two ways, and what the heads are (their training, their accuracy)."""
    trained = run.training
    same = t("medusa_same" if all(run.same_as_plain.values()) else "medusa_differs", lang)
    return t("medusa_summary", lang, tokens=len(run.generated), passes=run.passes, tpp=f"{run.tokens_per_pass:.2f}",
             accepted=run.accepted, lookup=f"{run.lookup.tokens_per_pass:.2f}", lookup_passes=run.lookup.passes,
             k=run.lookup_draft, ms=f"{run.ms_per_token:.0f}", lookup_ms=f"{run.lookup.ms_per_token:.0f}",
             plain_ms=f"{run.plain.ms_per_token:.0f}", same=same,
             text=run.text.replace("\n", "↵ ").replace("`", "'")) + "\n\n" + t(
        "medusa_heads_said", lang, heads=run.heads, top1=" · ".join(format_prob(a) for a in run.top1),
        top5=" · ".join(format_prob(a) for a in run.top5), positions=f"{trained['positions']:,}",
        texts=f"{trained['texts']:,}", minutes=f"{trained['minutes']:.0f}")


def shown_pass(run) -> int:
    """The pass a run opens on (from 0): the first that accepted the most guesses, where there is most to see."""
    return max(range(run.passes), key=lambda i: (len(run.rounds[i].accepted), -i))


class MedusaView:
    tab, title = "medusa", "tab_medusa"
    chart = None

    def __init__(self, app):
        self.app = app  # each user's last run (to show another pass of it): app.stash, under this tab

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_medusa"), elem_classes="tbt-explain"), "explain_medusa", "value")
        with gr.Row():
            self.new_tokens = add(gr.Slider(1, MAX_NEW_TOKENS, DEFAULT_NEW_TOKENS, step=1, label=t("medusa_new_tokens"),
                                            elem_id="tbt-medusa-n"), "medusa_new_tokens")
            self.tree_size = add(gr.Slider(1, MAX_TREE, DEFAULT_TREE, step=1, label=t("medusa_tree"),
                                           elem_id="tbt-medusa-tree"), "medusa_tree")
        self.run_btn = add(gr.Button(t("btn_medusa_run"), variant="primary", elem_id="tbt-medusa-run"),
                           "btn_medusa_run", "value")
        self.summary = gr.Markdown(elem_id="tbt-medusa-summary")
        self.pass_n = add(gr.Slider(1, 2, 1, step=1, label=t("medusa_pass"), elem_id="tbt-medusa-pass"),
                          "medusa_pass")
        self.plot = gr.Plot(label=t("tab_medusa"), elem_id=GRADIO_PLOTS["medusa"], show_label=False)
        self.run_plot = gr.Plot(label=t("tab_medusa"), elem_id=GRADIO_PLOTS["medusa_run"], show_label=False)
        self.numbers = gr.JSON(label="medusa run", elem_id="tbt-medusa-numbers", elem_classes="tbt-hidden")
        for slider, key in ((self.new_tokens, "medusa_new_tokens"), (self.tree_size, "medusa_tree"),
                            (self.pass_n, "medusa_pass")):
            named_range(slider, key)  # out of range: said in the page's language

    # ---- handlers ------------------------------------------------------------------------------------
    def run(self, request, new_tokens, tree_size, cfg, view):
        """The user's text continued by greedy Medusa, prompt lookup and plain decoding (the session is not changed)."""
        n, size = whole(new_tokens, "medusa_new_tokens"), whole(tree_size, "medusa_tree")
        if not 1 <= n <= MAX_NEW_TOKENS:
            raise SessionError("medusa_new_tokens_range", value=n, low=1, high=MAX_NEW_TOKENS)
        if not 1 <= size <= MAX_TREE:
            raise SessionError("medusa_tree_range", value=size, low=1, high=MAX_TREE)
        text = self.app.whole_text(request, "medusa_engine")
        if text.ended:
            raise SessionError("text_ended")
        if text.room < 1:
            raise SessionError("token_limit", limit=text.max_tokens)
        run = text.run(compute, min(n, text.room), size)
        self.app.stash.put(request.session_hash, self.tab, run)
        index = shown_pass(run)
        return [run_sentence(run, view.lang), gr.update(maximum=max(run.passes, 2), value=index + 1),
                medusa_pass_figure(run, index, view.lang), medusa_run_figure(run, view.lang), run_numbers(run)]

    def show_pass(self, request: gr.Request, pass_n, lang="en"):
        """Another pass of the user's last run, drawn again from what was kept (no pass of the model)."""
        run = self.app.stash.get(request.session_hash, self.tab)
        if run is None:
            raise Refusal("medusa_nothing")
        n = whole(pass_n, "medusa_pass")
        if not 1 <= n <= run.passes:
            raise Refusal("medusa_pass_range", value=n, passes=run.passes)
        return medusa_pass_figure(run, n - 1, lang)

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about Medusa: a short run on the step's text, its most telling pass (None on a model without
        heads, an engine's, or a text that cannot go on)."""
        if not session.capabilities.runs_locally:
            return None
        text = session.whole_text()
        if text.ended or text.room < 1:
            return None
        try:
            run = text.run(compute, min(LESSON_NEW_TOKENS, text.room), DEFAULT_TREE)
        except SessionError:  # no heads for this model
            return None
        return medusa_pass_figure(run, shown_pass(run), view.lang)

    def events(self, page):
        h, page_in = page.handler, page.page_in
        return [
            Event(self.run_btn.click, h(self.run, "new_tokens", "tree_size"), [self.new_tokens, self.tree_size, *page_in],
                  [self.summary, self.pass_n, self.plot, self.run_plot, self.numbers], "runs", "medusa",
                  {"show_progress": "full"}),
            Event(self.pass_n.release, friendly(self.show_pass), [self.pass_n, page.lang], [self.plot], "views",
                  "medusa_pass"),
        ]
