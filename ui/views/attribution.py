"""Why this token: for a token of the user's text (or any candidate at its position), each earlier token's
attribution by integrated gradients and gradient x input (Captum, on the input embeddings), shaded on the chips
beside the same step's attention (model/inside/attribution.py). On demand: a button; its passes through the model's scheduler."""
from __future__ import annotations

import gradio as gr

from model.errors import SessionError
from model.inside.attribution import POINTS, STEPS, TOLERANCE, compute
from ui.controls import plot
from ui.events import Event
from ui.handlers import friendly, whole
from ui.state import carrier
from ui.strings import t
from viz.attribution import attribution_chart, attribution_chips_html
from viz.style import model_name

CHOSEN = -1  # the candidate list's first entry: the token the text has at the position (the top one for the next)


def attribution_summary(a) -> dict:
    """The record as numbers (what the API and the tests read)."""
    return {"position": a.position, "tokens": [tok.id for tok in a.tokens], "target": a.target.id,
            "chosen": None if a.chosen is None else a.chosen.id, "logit": a.logit, "baseline_logit": a.baseline_logit,
            "change": a.change, "delta": a.delta, "prob": a.prob, "rank": a.rank,
            "integrated": a.integrated.tolist(), "grad_input": a.grad_input.tolist(), "attention": a.attention.tolist(),
            "attention_last": a.attention_last.tolist(), "steps": a.steps, "passes": a.passes,
            "rows_per_pass": a.rows_per_pass, "ms": a.ms,
            "candidates": [[tok.id, p] for tok, p in a.candidates]}


def position_choices(text, lang: str) -> list[tuple[str, int]]:
    """Every position that can be explained (from 2: the first token is kept on the path), each with its token; the
    last, the next token, not written yet."""
    info = text.lm.tokens.info
    choices = [(f"{p} · {info(text.ids[p]).display}" + (" · " + t("attr_prompt_token", lang) if p < text.prompt_len
                                                         else ""), p) for p in range(2, len(text.ids))]
    return choices + [(t("attr_next_token", lang, pos=len(text.ids)), len(text.ids))]


def explained(text, position, candidate, points):
    """The attribution of the user's text at `position` (None: the last generated token, else the next) for
    `candidate` (CHOSEN: the text's own token there)."""
    target = None if candidate in (None, "", CHOSEN) else whole(candidate, "attr_candidate")
    return text.run(compute, None if position in (None, "") else whole(position, "attr_position"), target,
                    text.prompt_len, whole(points, "attr_points"))


def own_token(lang="en"):
    """Another position picked: the candidate list back to its own token (a last run's candidates were another's)."""
    return gr.update(choices=[(t("attr_chosen", lang), CHOSEN)], value=CHOSEN)


class AttributionView:
    tab, title = "attribution", "tab_attribution"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_attribution"), elem_classes="tbt-explain"), "explain_attribution", "value")
        with gr.Row(equal_height=True):
            self.position = add(gr.Dropdown([], label=t("attr_position"), elem_id="tbt-attr-position", scale=3),
                                "attr_position")
            self.candidate = add(gr.Dropdown([(t("attr_chosen"), CHOSEN)], value=CHOSEN, label=t("attr_candidate"),
                                             elem_id="tbt-attr-candidate", scale=2), "attr_candidate")
            self.points = add(gr.Dropdown(list(POINTS), value=STEPS, label=t("attr_points"), elem_id="tbt-attr-points",
                                          scale=1), "attr_points")
            self.run_btn = add(gr.Button(t("btn_attr"), variant="primary", elem_id="tbt-attr-run", scale=1),
                               "btn_attr", "value")
        self.result = gr.Markdown(elem_id="tbt-attr-result", elem_classes="tbt-explain")
        self.chips = gr.HTML("", elem_id="tbt-attr-chips")
        plot(self.tab)
        add(gr.Markdown(t("explain_attribution_limits"), elem_classes="tbt-explain"), "explain_attribution_limits",
            "value")
        self.numbers = gr.JSON(label="attribution", elem_id="tbt-attr-numbers", elem_classes="tbt-hidden")

    def positions(self, request: gr.Request, lang="en"):
        """The tab opened: the positions of the user's text, the last generated token's chosen (none yet: nothing)."""
        try:
            text = self.app.whole_text(request, "attr_needs_weights")
        except SessionError:  # no text yet, or an engine's model: Explain says why
            return gr.update(choices=[], value=None)
        choices = position_choices(text, lang)
        default = len(text.ids) - 1 if len(text.ids) > text.prompt_len else len(text.ids)
        return gr.update(choices=choices, value=default if default >= 2 else None)

    def explain(self, request: gr.Request, position, candidate, points, lang):
        """The attribution of the user's text at the position, for the candidate, with the points asked for."""
        text = self.app.whole_text(request, "attr_needs_weights")
        a = explained(text, position, candidate, points)
        key = "attr_complete" if abs(a.delta) <= TOLERANCE else "attr_incomplete"
        said = t("attr_result", lang, target=a.target.display, pos=a.position, prob=f"{a.prob:.1%}", rank=a.rank,
                 logit=f"{a.logit:.3f}", base=f"{a.baseline_logit:.3f}", change=f"{a.change:.3f}",
                 total=f"{a.integrated.sum():.3f}", gap=f"{a.delta:.1e}", points=a.steps, passes=a.passes,
                 ms=f"{a.ms:.0f}") + " " + t(key, lang, tolerance=f"{TOLERANCE:g}")
        candidates = [(t("attr_chosen", lang), CHOSEN)] + [(f"{tok.display} · {p:.1%}", tok.id) for tok, p in a.candidates]
        if a.target.id not in [c for _, c in candidates]:
            candidates.append((f"{a.target.display} · {a.prob:.1%}", a.target.id))
        picked = CHOSEN if candidate in (None, "", CHOSEN) else a.target.id
        return {self.result: said, self.chips: attribution_chips_html(a, lang),
                self.figure: carrier(attribution_chart(a, model_name(text.lm.name), lang), self.tab),
                self.numbers: attribution_summary(a),
                self.position: gr.update(choices=position_choices(text, lang), value=a.position),
                self.candidate: gr.update(choices=candidates, value=picked)}

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about attribution: the last token of the step's text explained, at the default points."""
        if not session.capabilities.runs_locally:  # an engine's model: no gradients come back
            return None
        text = session.whole_text("attr_needs_weights")
        return attribution_chart(explained(text, None, CHOSEN, STEPS), model_name(text.lm.name), view.lang)

    def events(self, page):
        self.figure = page.figure  # the page's one chart carrier (plot(): this tab's plot), made after the views
        return [
            Event(self.run_btn.click, friendly(self.explain), [self.position, self.candidate, self.points, page.lang],
                  [self.result, self.chips, page.figure, self.numbers, self.position, self.candidate], "runs",
                  "attribution", {"show_progress": "full"}),
            Event(self.tab_block.select, friendly(self.positions), [page.lang], [self.position], "views",
                  "attribution_open"),
            # another position: its own token again (a candidate of the last run belongs to its position)
            Event(self.position.input, own_token, [page.lang], [self.candidate], "page"),
        ]
