"""The logit lens: every layer's residual stream read through the final norm and the LM head, for the current
text, on demand (a prefill with every hidden state, its passes through the model's scheduler)."""
from __future__ import annotations

import gradio as gr

from model.inside.lens import LENS_WINDOW, lens_column, logit_lens, own_candidates, pin_ids, pinned_probs
from ui.controls import plot
from ui.events import Event
from ui.handlers import friendly, named_range, whole
from ui.state import carrier
from ui.protocol import GRADIO_PLOTS
from ui.strings import Refusal, t
from viz.lens import TEXT_COLUMNS, commitment_figure, lens_chart, pinned_figure

DEFAULT_WINDOW = TEXT_COLUMNS  # the most positions whose cells still name their top token


class _Then(Event):
    """An event, and `after` once it has succeeded (its inputs read from the page as the first left it)."""

    def __init__(self, *args, after: Event, **kwargs):
        super().__init__(*args, **kwargs)
        self.after = after

    def bind(self):
        listener = super().bind()
        self.after.trigger = listener.success
        self.after.bind()
        return listener


def lens_summary(lens, lang: str) -> dict:
    """The lens as numbers (what the API and the tests read): per layer and position, the top token and the
    probability of the token compared; the last layer's agreement with the model's logits; the time."""
    return {"start": lens.start, "positions": len(lens.tokens), "layers": lens.layers,
            "tokens": [tok.id for tok in lens.tokens], "targets": [tok.id for tok in lens.targets],
            "top_ids": lens.top_ids.tolist(), "top_prob": lens.top_prob.tolist(),
            "target_prob": lens.target_prob.tolist(), "final_max_abs_diff": lens.final_max_abs_diff, "ms": lens.ms,
            "asked": lens.asked, "committed": lens.committed.tolist(), "drawn_at_commit": lens.drawn_at_commit}


def read_lens(text, window: int):
    """The lens of a text's last `window` positions, every layer (what Read does, and a lesson step)."""
    return text.run(logit_lens, window, text.settings)


class LensView:
    tab, title = "lens", "tab_lens"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_lens"), elem_classes="tbt-explain"), "explain_lens", "value")
        with gr.Row(equal_height=True):
            self.window = add(gr.Slider(1, LENS_WINDOW, DEFAULT_WINDOW, step=1, label=t("lens_window"),
                                        elem_id="tbt-lens-window", scale=3), "lens_window")
            self.run_btn = add(gr.Button(t("btn_lens"), variant="primary", elem_id="tbt-lens-run", scale=1),
                               "btn_lens", "value")
        self.result = gr.Markdown(elem_id="tbt-lens-result", elem_classes="tbt-explain")
        # what the empty space is for, until the chart is drawn (app.css hides it then)
        add(gr.Markdown(t("lens_empty"), elem_classes="tbt-empty", elem_id="tbt-lens-empty"), "lens_empty", "value")
        plot(self.tab)
        add(gr.Markdown(t("explain_lens_commit"), elem_classes="tbt-explain"), "explain_lens_commit", "value")
        self.commit_plot = gr.Plot(label=t("lens_commit_label"), elem_id=GRADIO_PLOTS["lens_commit"], show_label=False)
        add(gr.Markdown(t("explain_lens_pins"), elem_classes="tbt-explain"), "explain_lens_pins", "value")
        with gr.Row(equal_height=True):
            # empty until a lens is read: then the model's own candidates at the last position (own_candidates)
            self.pins = add(gr.Textbox("", label=t("lens_pins"), placeholder=t("lens_pins_placeholder"),
                                       elem_id="tbt-lens-pins", scale=3, max_lines=1),
                            words=lambda lang: {"label": t("lens_pins", lang),
                                                "placeholder": t("lens_pins_placeholder", lang)})
            self.position = add(gr.Dropdown([], label=t("lens_position"), elem_id="tbt-lens-position", scale=2),
                                "lens_position")
            self.pin_btn = add(gr.Button(t("btn_lens_pin"), elem_id="tbt-lens-pin", scale=1), "btn_lens_pin", "value")
        self.pin_plot = gr.Plot(label=t("lens_pin_label"), elem_id=GRADIO_PLOTS["lens_pins"], show_label=False)
        add(gr.Markdown(t("explain_lens_limits"), elem_classes="tbt-explain"), "explain_lens_limits", "value")
        self.numbers = gr.JSON(label="logit lens", elem_id="tbt-lens-numbers", elem_classes="tbt-hidden")
        self.filled = gr.State("")  # the pins the last read wrote (the reader's own are kept: see read)
        self.pin_numbers = gr.JSON(label="pinned tokens", elem_id="tbt-lens-pin-numbers", elem_classes="tbt-hidden")
        named_range(self.window, "lens_window")

    def read(self, request: gr.Request, window, lang):
        """The lens of the user's text: its last `window` positions, every layer."""
        n = whole(window, "lens_window")
        text = self.app.whole_text(request, "lens_needs_weights")  # the lens needs every layer's hidden state
        lens = read_lens(text, n)
        self.app.stash.put(request.session_hash, self.tab, (text, lens))  # its pinned tokens are read from it
        said = t("lens_result", lang, layers=lens.layers, n=len(lens.tokens), diff=f"{lens.final_max_abs_diff:.1e}",
                 ms=f"{lens.ms:.0f}")
        if lens.asked and len(lens.tokens) < min(lens.asked, lens.start + len(lens.tokens)):  # the bound on the readings' work
            said += " " + t("lens_bounded", lang, n=len(lens.tokens), asked=lens.asked,
                            vocab=f"{text.lm.info.vocab:,}")
        positions = [(f"{lens.start + c} · {tok.display}", lens.start + c) for c, tok in enumerate(lens.tokens)]
        return (said, carrier(lens_chart(lens, text.lm.name, lang), self.tab),
                commitment_figure(lens, text.lm.name, lang), lens_summary(lens, lang),
                gr.update(choices=positions, value=positions[-1][1]))

    def own_pins(self, request: gr.Request, pins, filled):
        """After a read: unless the reader typed pins of their own, the pins set to the model's own candidates at the
        text's last position (pins the model does not consider drew flat lines at 0 on most texts)."""
        kept = self.app.stash.get(request.session_hash, self.tab)
        typed = isinstance(pins, str) and pins.strip() not in ("", (filled or "").strip())
        if kept is None or typed:
            return gr.skip(), gr.skip()
        text, lens = kept
        own = text.compute(own_candidates, lens)  # in the model's core: its LM head
        return own, own

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about the logit lens: the tab's lens of the step's text at its default window."""
        if not session.capabilities.runs_locally:  # an engine's model: no hidden states come back
            return None
        text = session.whole_text("lens_needs_weights")
        return lens_chart(read_lens(text, DEFAULT_WINDOW), text.lm.name, view.lang)

    def pin(self, request: gr.Request, pins, position, lang):
        """The pinned tokens' lens probabilities through the layers at one position the last lens read, from its
        kept hidden states (no second pass); the token compared there beside them."""
        kept = self.app.stash.get(request.session_hash, self.tab)
        if kept is None:
            raise Refusal("lens_no_run")
        text, lens = kept
        lm = text.lm
        ids = pin_ids(lm, pins)
        column = lens_column(lens, whole(position, "lens_position"))
        probs = text.compute(pinned_probs, lens, ids, column)  # in the model's core: its final norm and LM head
        figure = pinned_figure(lens, column, [lm.tokens.info(i) for i in ids], probs, lm.name, lang)
        return figure, {"position": lens.start + column, "pins": ids, "probs": probs.T.tolist(),
                        "compared": lens.targets[column].id, "compared_probs": lens.target_prob[:, column].tolist()}

    def events(self, page):
        pin = friendly(self.pin)
        pin_io = [self.pins, self.position, page.lang], [self.pin_plot, self.pin_numbers]
        pinned = Event(None, pin, *pin_io, "runs")
        own = _Then(None, friendly(self.own_pins), [self.pins, self.filled], [self.pins, self.filled], "runs",
                    after=pinned)  # the model's own candidates pinned, then charted
        return [_Then(self.run_btn.click, friendly(self.read), [self.window, page.lang],
                      [self.result, page.figure, self.commit_plot, self.numbers, self.position], "runs", "logit_lens",
                      after=own),
                Event(self.pin_btn.click, pin, *pin_io, "runs", "lens_pins"),
                Event(self.pins.submit, pin, *pin_io, "runs"),
                Event(self.position.input, pin, *pin_io, "runs")]
