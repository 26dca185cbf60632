"""Tokenizers side by side: the same text through each packaged model's tokenizer, what each token costs.
The reading and the arithmetic are model.inside.tokenizers'; this view reads the box and shows the HTML."""
from __future__ import annotations

import gradio as gr

from model.inside.tokenizers import MAX_CHARS, SUBWORD_EXAMPLE, compare
from ui.events import Event
from ui.handlers import friendly
from ui.strings import t
from viz.tokenizers import tokenizers_html

DEFAULT_TEXT = "今天天气真好。The weather is unbelievable today."


class TokenizersView:
    tab, title = "tokenizers", "tab_tokenizers"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        with gr.Row():
            self.text = add(gr.Textbox(DEFAULT_TEXT, label=t("tok_text"), lines=2, max_lines=4, max_length=MAX_CHARS,
                                       scale=4, elem_id="tbt-tok-text"), "tok_text")
            self.go = add(gr.Button(t("tok_go"), scale=1, elem_id="tbt-tok-go"), "tok_go", "value")
        self.result = gr.HTML(elem_id="tbt-tok-result")
        add(gr.Markdown(t("explain_tokenizers"), elem_classes="tbt-explain"), "explain_tokenizers", "value")

    def compare(self, text, lang):
        """The text, and the interview's subword example, through every installed tokenizer."""
        return tokenizers_html(compare(text), compare(SUBWORD_EXAMPLE), lang)

    def events(self, page):
        run = friendly(self.compare)
        inputs = [self.text, page.lang]
        return [
            Event(self.go.click, run, inputs, [self.result], api_name="compare_tokenizers"),
            Event(self.text.submit, run, inputs, [self.result]),
            Event(self.tab_block.select, run, inputs, [self.result]),
        ]
