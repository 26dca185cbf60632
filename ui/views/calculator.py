"""KV calculator: the cache formula for any model shape, with presets, and MHA / GQA / MQA side by side.
The arithmetic, presets and checks are model.decoding.kv's; this view only reads the boxes and labels the rows."""
from __future__ import annotations

import gradio as gr

import viz
from model.decoding.kv import DTYPE_BYTES, PRESETS, kv_cache_bytes, kv_calculation
from model.errors import SessionError
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import friendly
from ui.strings import t
from viz.style import model_name


def row_label(row, lang: str) -> str:
    """A comparison row in the page's words: 'GQA (3 KV heads)', or 'Llama-3-8B · 8 KV'."""
    if row.kind == "model":
        return f"{model_name(row.name)} · {row.kv_heads} KV"
    return t(f"calc_{row.kind}", lang, heads=row.kv_heads, kv_heads=row.kv_heads)


def preset_choices(info) -> list[tuple[str, str]]:
    """The preset list: the model of the user's session first, by its name ("Gemma 3 270M"), then PRESETS."""
    return [(model_name(info.name), info.name), *((name, name) for name in PRESETS)]


class CalculatorView:
    tab, title = "calculator", "tab_calculator"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add, info = page.labels.add, self.app.models.get().info
        self.default = info.name
        with gr.Row():
            self.preset = add(gr.Dropdown(preset_choices(info), value=info.name, label=t("calc_preset")), "calc_preset")
            self.dtype = add(gr.Dropdown(list(DTYPE_BYTES), value="float16", label=t("calc_dtype")), "calc_dtype")
            self.tokens = add(gr.Number(2048, label=t("calc_tokens"), minimum=1, maximum=10_000_000, precision=0),
                              "calc_tokens")
            self.batch = add(gr.Number(1, label=t("calc_batch"), minimum=1, maximum=4096, precision=0), "calc_batch")
        with gr.Row():
            shape = dict(zip(("calc_layers", "calc_heads", "calc_kv_heads", "calc_head_dim"),
                             (info.layers, info.heads, info.kv_heads, info.head_dim)))
            limits = {"calc_layers": 1000, "calc_heads": 1024, "calc_kv_heads": 1024, "calc_head_dim": 4096}
            self.shape = [add(gr.Number(value, label=t(key), minimum=1, maximum=limits[key], precision=0), key)
                          for key, value in shape.items()]
        self.result = gr.Markdown(elem_id="tbt-calc-result")
        self.plot = gr.Plot(label=t("tab_calculator"), elem_id=GRADIO_PLOTS["calculator"], show_label=False)
        add(gr.Markdown(t("explain_kv_calculator"), elem_classes="tbt-explain"), "explain_kv_calculator", "value")

    def loaded(self, request: gr.Request | None):
        """The 'loaded model' preset: the model of the user's session (Gemma 3 270M on a Chinese page), else the
        default model (no session yet, or called without a page)."""
        try:
            return self.app.session(request).lm.info
        except (SessionError, AttributeError):
            return self.app.models.get().info

    def calculate(self, preset, dtype, tokens, batch, layers, heads, kv_heads, head_dim, lang,
                  request: gr.Request = None):
        """The cache of the shape in the boxes (a preset's, if one is picked and the boxes are not yet filled)."""
        info = self.loaded(request)
        loaded = preset is not None and preset not in PRESETS  # the first choice: the loaded model, by its name
        # the loaded model's shape when the boxes are empty, or hold another model's (the page was made for the
        # default model, and this user's session runs another: a Chinese page's Gemma 3 270M showed SmolLM2's shape)
        use_preset = preset in PRESETS or (loaded and (layers is None or preset != info.name))
        return self._answer(info, (info.name if loaded else preset) if use_preset else None, dtype, tokens, batch,
                            layers, heads, kv_heads, head_dim, lang, loaded)

    def pick_preset(self, preset, dtype, tokens, batch, layers, heads, kv_heads, head_dim, lang,
                    request: gr.Request = None):
        """A preset picked: its shape in the boxes, and its cache."""
        info = self.loaded(request)
        loaded = preset is not None and preset not in PRESETS
        return self._answer(info, info.name if loaded else preset, dtype, tokens, batch, layers, heads, kv_heads,
                            head_dim, lang, loaded)

    def _answer(self, info, preset, dtype, tokens, batch, layers, heads, kv_heads, head_dim, lang, loaded=False):
        calc = kv_calculation(preset, info, dtype, tokens, batch, layers, heads, kv_heads,
                              head_dim)
        per_token = kv_cache_bytes(calc.layers, calc.kv_heads, calc.head_dim, 1, DTYPE_BYTES[dtype], 1)
        text = ("### " + t("calc_result", lang, bytes=f"{calc.bytes:,}", size=viz.format_bytes(calc.bytes)) + "\n\n" +
                t("calc_per_token", lang, per_token=f"{per_token:,}", layers=calc.layers, kv_heads=calc.kv_heads,
                  head_dim=calc.head_dim, value_bytes=DTYPE_BYTES[dtype], dtype=dtype))
        here = (calc.layers, calc.kv_heads, calc.head_dim) == (info.layers, info.kv_heads, info.head_dim)
        if here and dtype != info.dtype and info.dtype in DTYPE_BYTES:  # the shape this server runs, in another type
            running = kv_cache_bytes(calc.layers, calc.kv_heads, calc.head_dim, 1, DTYPE_BYTES[info.dtype], 1)
            text += " " + t("calc_here", lang, model=model_name(info.name), running=info.dtype,
                            running_bytes=DTYPE_BYTES[info.dtype], running_per_token=f"{running:,}", dtype=dtype)
        rows = [(row_label(row, lang), row.bytes) for row in calc.rows]
        # the preset list names the session's model first (its value too, when that was the one picked)
        picked = gr.update(choices=preset_choices(info), value=info.name) if loaded else \
            gr.update(choices=preset_choices(info))
        return {**dict(zip(self.shape, (calc.layers, calc.heads, calc.kv_heads, calc.head_dim))), self.result: text,
                self.plot: viz.kv_calculator_figure(rows, lang), self.preset: picked}

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about the cache's size: its question's preset (else the model the lesson runs on), dtype
        and length, at batch 1."""
        predict = step["predict"] or {}
        preset = predict.get("model") if predict.get("model") in PRESETS else session.lm.info.name
        calc = kv_calculation(preset, session.lm.info, predict.get("dtype", "float16"), predict.get("tokens", 2048), 1)
        return viz.kv_calculator_figure([(row_label(row, view.lang), row.bytes) for row in calc.rows], view.lang)

    def events(self, page):
        calc = friendly(self.calculate)
        calc_in = [self.preset, self.dtype, self.tokens, self.batch, *self.shape, page.lang]
        calc_out = [*self.shape, self.result, self.plot, self.preset]  # the preset last: /calculate's order kept
        always_last = {"trigger_mode": "always_last"}
        return [
            Event(self.preset.input, friendly(self.pick_preset), calc_in, calc_out, options=always_last),
            *(Event(box.input, calc, calc_in, calc_out, options=always_last)
              for box in (self.dtype, self.tokens, self.batch, *self.shape)),
            Event(self.tab_block.select, calc, calc_in, calc_out, api_name="calculate"),
        ]
