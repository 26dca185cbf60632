"""Activation patching: two prompts one word apart, and a layer x position grid of how much of the answer one
vector copied from the first run into the second brings back (model/experiments/patching.py). On demand: a button."""
from __future__ import annotations

import gradio as gr

from model.experiments.patching import answer_id, encode_pair, patching_grid
from ui.controls import plot
from ui.events import Event
from ui.handlers import friendly
from ui.state import carrier
from ui.strings import t
from viz.patching import patching_chart


def patching_summary(grid) -> dict:
    """The grid as numbers (what the API and the tests read)."""
    return {"clean": [tok.id for tok in grid.clean], "corrupted": [tok.id for tok in grid.corrupted],
            "answer": grid.answer.id, "clean_prob": grid.clean_prob, "corrupted_prob": grid.corrupted_prob,
            "patched_prob": grid.patched_prob.tolist(), "effect": grid.effect.tolist(), "passes": grid.passes,
            "ms": grid.ms}


class PatchingView:
    tab, title = "patching", "tab_patching"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_patching"), elem_classes="tbt-explain"), "explain_patching", "value")
        with gr.Row(equal_height=True):
            self.clean = add(gr.Textbox(t("patch_clean_example"), label=t("patch_clean"), elem_id="tbt-patch-clean", scale=3),
                             "patch_clean")
            self.corrupted = add(gr.Textbox(t("patch_corrupted_example"), label=t("patch_corrupted"),
                                            elem_id="tbt-patch-corrupted", scale=3), "patch_corrupted")
        with gr.Row(equal_height=True):
            self.answer = add(gr.Textbox("", label=t("patch_answer"), placeholder=t("patch_answer_example"),
                                         elem_id="tbt-patch-answer", scale=3),
                              words=lambda lang: {"label": t("patch_answer", lang),
                                                  "placeholder": t("patch_answer_example", lang)})
            self.run_btn = add(gr.Button(t("btn_patch"), variant="primary", elem_id="tbt-patch-run", scale=1),
                               "btn_patch", "value")
        self.result = gr.Markdown(elem_id="tbt-patch-result", elem_classes="tbt-explain")
        plot(self.tab)
        add(gr.Markdown(t("explain_patching_limits"), elem_classes="tbt-explain"), "explain_patching_limits", "value")
        self.numbers = gr.JSON(label="patching", elem_id="tbt-patch-numbers", elem_classes="tbt-hidden")

    def run(self, request: gr.Request, clean_text, corrupted_text, answer, lang):
        """The grid for the two prompts on the user's model (the default one before any session)."""
        core = self.app.local_core(request)
        lm = core.lm
        clean, corrupted = encode_pair(lm, clean_text, corrupted_text)
        grid = core.compute(patching_grid, clean, corrupted, answer_id(lm, answer))
        layer, position, effect = grid.strongest()
        said = t("patch_result", lang, answer=grid.answer.display, clean=f"{grid.clean_prob:.1%}",
                 corrupted=f"{grid.corrupted_prob:.1%}", top=grid.corrupted_top.display,
                 top_p=f"{grid.corrupted_top_prob:.1%}", layer=layer, pos=position,
                 tok=grid.clean[position].display, effect=f"{effect:.2f}", passes=grid.passes,
                 ms=f"{grid.ms:.0f}")
        return said, carrier(patching_chart(grid, lm.name, lang), self.tab), patching_summary(grid)

    @staticmethod
    def example_prompts(clean, corrupted, lang):
        """The language switched (a Chinese page does as it opens): the example prompts in its language, unless the
        reader has typed prompts of their own (a Chinese page on Gemma 3 270M read English prompts)."""
        examples = {value for key in ("patch_clean_example", "patch_corrupted_example") for value in
                    (t(key, "en"), t(key, "zh"))}
        if clean not in examples or corrupted not in examples:
            return gr.skip(), gr.skip()
        return t("patch_clean_example", lang), t("patch_corrupted_example", lang)

    def events(self, page):
        return [Event(page.lang.change, self.example_prompts, [self.clean, self.corrupted, page.lang],
                      [self.clean, self.corrupted], "page"),
                Event(self.run_btn.click, friendly(self.run), [self.clean, self.corrupted, self.answer, page.lang],
                      [self.result, page.figure, self.numbers], "runs", "patching")]
