"""Switch part of the model off: a head, a layer's attention or its MLP, for the user's text only (its passes run
alone at the model's scheduler, the part's hooks installed for each and removed after); the next token before and after,
and the text continued both ways with the page's settings and seed."""
from __future__ import annotations

import gradio as gr

from model.errors import SessionError
from model.experiments.ablation import ABLATION_MAX_STEPS, Part, ablate
from ui.controls import plot
from ui.events import Event
from ui.handlers import named_range, whole
from ui.labels import choices
from ui.state import carrier
from ui.strings import t
from viz.ablation import ablation_chart, ablation_html

DEFAULT_STEPS = 8
# The part switched off by default: one that changes the next token on each language's first text (SmolLM2 on
# "The capital of France is": KL 14 nats; Gemma 3 270M on 今天天气: 5.9), where layer 3's head 0 changed nothing
# (KL 0.000): the first layer's MLP, whose output every later layer reads (tests/test_ablation.py)
DEFAULT_PART = Part("mlp", 0)
PART_CHOICES = [("abl_kind_head", "head"), ("abl_kind_attention", "attention"), ("abl_kind_mlp", "mlp")]
METHOD_CHOICES = [("abl_by_mean", "mean"), ("abl_by_zero", "zero")]  # mean: the default (explain_ablation says why)


def ablation_summary(record) -> dict:
    """The ablation as numbers (what the API and the tests read)."""
    def moved(rows):
        return [{"id": m.token.id, "before": m.before, "after": m.after} for m in rows]
    return {"part": {"kind": record.part.kind, "layer": record.part.layer, "head": record.part.head},
            "method": record.method, "positions": record.positions, "kl_nats": record.kl_nats,
            "max_abs_logit_change": record.max_abs_logit_change, "shown": moved(record.shown),
            "rose": moved(record.rose), "fell": moved(record.fell), "on": [tok.id for tok in record.on],
            "off": [tok.id for tok in record.off], "differ_at": record.differ_at, "passes": record.passes,
            "ms": record.ms}


class AblationView:
    tab, title = "ablation", "tab_ablation"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        info = self.app.models.get().info  # the default model's layers and heads; another model's are checked
        add(gr.Markdown(t("explain_ablation"), elem_classes="tbt-explain"), "explain_ablation", "value")
        with gr.Row(equal_height=True):
            self.kind = add(gr.Radio([(t(k), v) for k, v in PART_CHOICES], value=DEFAULT_PART.kind, label=t("abl_kind"),
                                     elem_id="tbt-abl-kind", scale=2),
                            words=lambda lang: {"label": t("abl_kind", lang), **choices(PART_CHOICES)(lang)})
            self.layer = add(gr.Slider(0, info.layers - 1, DEFAULT_PART.layer, step=1, label=t("abl_layer"), elem_id="tbt-abl-layer",
                                       scale=2), "abl_layer")
            self.head = add(gr.Slider(0, info.heads - 1, 0, step=1, label=t("abl_head"), elem_id="tbt-abl-head",
                                      scale=2), "abl_head")
        with gr.Row(equal_height=True):
            self.method = add(gr.Radio([(t(k), v) for k, v in METHOD_CHOICES], value="mean", label=t("abl_method"),
                                       elem_id="tbt-abl-method", scale=2),
                              words=lambda lang: {"label": t("abl_method", lang), **choices(METHOD_CHOICES)(lang)})
            self.steps = add(gr.Slider(1, ABLATION_MAX_STEPS, DEFAULT_STEPS, step=1, label=t("abl_steps"),
                                       elem_id="tbt-abl-steps", scale=2), "abl_steps")
            self.run_btn = add(gr.Button(t("btn_ablation"), variant="primary", elem_id="tbt-abl-run", scale=1),
                               "btn_ablation", "value")
        self.result = gr.Markdown(elem_id="tbt-abl-result", elem_classes="tbt-explain")
        plot(self.tab)
        self.texts = gr.HTML("", elem_id="tbt-abl-texts")
        add(gr.Markdown(t("explain_ablation_limits"), elem_classes="tbt-explain"), "explain_ablation_limits", "value")
        self.numbers = gr.JSON(label="ablation", elem_id="tbt-abl-numbers", elem_classes="tbt-hidden")
        for knob, key in ((self.layer, "abl_layer"), (self.head, "abl_head"), (self.steps, "abl_steps")):
            named_range(knob, key)

    def run(self, request, kind, layer, head, method, steps, cfg, view):
        """Switch the part off on the user's text: the next token before and after, and both continuations."""
        part = Part(kind, whole(layer, "abl_layer"), whole(head, "abl_head") if kind == "head" else None)
        n = whole(steps, "abl_steps")
        text = self.app.whole_text(request, "ablation_needs_weights")  # hooks on the model's own layers
        if text.ended:
            raise SessionError("text_ended")
        record = text.run(ablate, part, method, cfg, n, text.max_tokens)
        said = t("abl_result", view.lang, kl=f"{record.kl_nats:.3f}", diff=f"{record.max_abs_logit_change:.2f}",
                 passes=record.passes, ms=f"{record.ms:.0f}")
        return [said, carrier(ablation_chart(record, text.lm.name, view.lang), self.tab),
                ablation_html(record, view.lang), ablation_summary(record)]

    def events(self, page):
        knobs = [self.kind, self.layer, self.head, self.method, self.steps]
        names = ("part", "part_layer", "part_head", "method", "steps")
        return [Event(self.run_btn.click, page.handler(self.run, *names), [*knobs, *page.page_in],
                      [self.result, page.figure, self.texts, self.numbers], "runs", "ablation")]
