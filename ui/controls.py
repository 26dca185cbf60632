"""The shared part of the page: the header, the prompt and step buttons, the sampling settings, the text panel,
the hidden carriers and triggers, and the handlers every view's step shares (start, next, back, force, ...)."""
from __future__ import annotations

import json
from dataclasses import replace

import gradio as gr

import viz
from viz.style import model_name
from model.errors import SessionError
from model.parse import MAX_NOTES_CHARS, parse_token_id
from model.decoding.records import SETTING_NAMES
from ui.events import Event
from ui.handlers import named_range, page_handler, whole
from ui.labels import Labels, choices
from ui.nav import nav_html, nav_style
from ui.protocol import CARRIERS, GRADIO_PLOTS, IDS, PROTOCOL, TRIGGERS, box_id, caption_id, chart_id
from ui.state import App
from ui.strings import LANG_INPUT, LANGS, Refusal, t
from ui.summary import summaries_of

EXAMPLES = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
    "今天天气",
    "床前明月光，",
    "从前有一座山，山上有一座庙。",
]
# The prompt a page starts on in each language (when the language chooses the model: ModelRegistry.by_language)
FIRST_PROMPT = {"en": EXAMPLES[0], "zh": "今天天气"}
def model_choices(names: list[str], lang: str) -> list[tuple[str, str]]:
    """(label, name) of each model the picker offers: a packaged model by its name (viz.style.model_name); what
    each shows best is said under the picker."""
    return [(model_name(name), name) for name in names]
GLOBALS = PROTOCOL["globals"]  # what the page's script puts on window, for the listeners' js snippets
MAX_PLAY_STEPS = 200  # the 'Tokens to play' slider's maximum


def plot(tab: str) -> gr.HTML:
    """A view's chart: a plot that stays on the page. Its figures arrive in the page's one hidden carrier (an
    output, which names the plot it is for); the page's script draws each with Plotly.react, in place, and its
    title as HTML in the caption above (plotly.js measures every text it draws: the title cost it 10 ms)."""
    parts = PROTOCOL["parts"]
    html = (f'<div id="{caption_id(tab)}" class="{parts["caption"]}"></div>'
            f'<div class="{parts["stack"]}"><div id="{chart_id(tab)}" class="{parts["plot"]}"></div></div>')
    return gr.HTML(html, elem_id=box_id(tab), js_on_load=None)


def hidden_html(carrier: str) -> gr.HTML:
    return gr.HTML("", elem_id=CARRIERS[carrier], elem_classes="tbt-hidden", js_on_load=None)


def hidden_button(trigger: str, label: str) -> gr.Button:
    return gr.Button(label, elem_classes="tbt-hidden", elem_id=TRIGGERS[trigger])


def attention_controls(page, info, view) -> dict:
    """The attention layer slider and head list for `info`, the session's model (Gemma 3 270M: 18 layers, 4 query
    heads reading 1 KV head; SmolLM2: 30 layers, 9 heads reading 3), in the page's language: the one place that
    makes them (and the diagram of which KV head each query head reads), for a page opened, Start pressed and the
    language switched. The layer and head the user had are
    kept where the model has them (else its last layer, the mean over heads)."""
    layer = min(max(int(view.layer), 0), info.layers - 1)
    head = str(view.head) if view.head is not None and 0 <= view.head < info.heads else "mean"
    return {page.layer: gr.update(maximum=info.layers - 1, value=layer, label=t("layer", view.lang)),
            page.head: gr.update(choices=head_choices(info, view.lang), value=head, label=t("head", view.lang)),
            page.gqa: viz.gqa_figure(info, view.lang)}


def head_choices(info, lang: str) -> list[tuple[str, str]]:
    """'Mean over heads', then each query head with the KV head it reads (grouped-query attention)."""
    return [(t("mean_over_heads", lang), "mean")] + [
        (t("head_choice", lang, head=h, kv_head=info.kv_head_of(h)), str(h)) for h in range(info.heads)
    ]


class Page:
    """The shared controls and the handlers of a step; each view (ui/views) adds its tab to it.

    `tabs`: the tabs of the views that draw every step (the first is the default); `titles`: every view's tab and
    the key of its name, in the page's order. Every component a handler of the page reads or writes is the page's
    own, made here: the views only place some of them in their tabs (build_shared, place), so a page without one of
    its views still builds, and no view reads what another view made.
    """

    def __init__(self, app: App, default_model: str, tabs: tuple[str, ...], titles: dict[str, str] | None = None,
                 parts: list[tuple[str, list[str]]] | None = None):
        self.app, self.default_model, self.tabs = app, default_model, tabs
        self.titles = dict(titles) if titles is not None else {tab: tab for tab in tabs}
        # the parts of the story, each with its tabs (ui/views PARTS): the page's navigation (ui/nav.py)
        self.parts = list(parts) if parts is not None else [("one_step", list(self.titles))]
        self.labels = Labels()
        self.tabs_block: gr.Tabs | None = None  # build_tabs
        self.summaries = summaries_of(app)  # the student's journal, its keep buttons and summary (ui/summary.py)
        self.keeps: list[tuple[str, gr.Button, gr.HTML]] = []  # (tab, its Keep this chart button, what it said)

    # ---- components ----------------------------------------------------------------------------------
    def build_shared(self):
        """The controls a view shows in its tab though every step reads or writes them, made unrendered: the
        force list and its button (Candidates shows them), the attention layer and head (Attention). A view puts
        them in its layout with place(); build_hidden renders any that no view placed."""
        info = self.app.models.get().info
        self.force = gr.Dropdown([], label=t("force_label"), elem_id="tbt-force", scale=3, allow_custom_value=True,
                                 render=False)
        self.force_btn = gr.Button(t("btn_force"), elem_id=IDS["force"], scale=1, min_width=120, render=False)
        self.layer = named_range(gr.Slider(0, info.layers - 1, 0, step=1, label=t("layer"), elem_id="tbt-layer",
                                           scale=3, render=False), "layer")
        self.head = gr.Dropdown(head_choices(info, "en"), value="mean", label=t("head"), elem_id="tbt-head", scale=1,
                                render=False)
        # which KV head each query head reads (Attention shows it): the session's model's, drawn by attention_controls
        self.gqa = gr.Plot(viz.gqa_figure(info), label=t("tab_attention"), elem_id=GRADIO_PLOTS["gqa"], show_label=False,
                           render=False)
        self._shared_words = {self.gqa: dict(words=lambda lang: {"value": viz.gqa_figure(info, lang)}),
                       self.force: dict(key="force_label"), self.force_btn: dict(key="btn_force", attr="value"),
                       self.layer: dict(key="layer"),
                       self.head: dict(words=lambda lang: {"label": t("head", lang), "choices": head_choices(info, lang)})}

    def place(self, *components):
        """Render shared controls (build_shared) here, in the caller's layout; their words join the language
        switch in the order the page shows them."""
        for component in components:
            component.render()
            self.labels.add(component, **self._shared_words[component])

    def build_nav(self):
        """The navigation: the parts of the story (ui/nav.py) in one row across the page, under its header; the open
        part's tabs are the row of tabs over the chart (build_tabs). On a phone, one menu of every tab."""
        parts, titles = self.parts, self.titles
        opened = next((key for key, tabs in parts if self.tabs[0] in tabs), parts[0][0])
        style = nav_style(parts, opened)
        self.labels.add(gr.HTML(style + nav_html(parts, titles, "en"), elem_id="tbt-nav-box", js_on_load=None),
                        words=lambda lang: {"value": style + nav_html(parts, titles, lang)})

    def build_tabs(self) -> gr.Tabs:
        """The views' tabs: Gradio's one row, of which the page shows the open part's (build_nav; a lesson, a
        clicked head, a card opens any tab, and its part with it). The page opens on the first view that draws
        every step."""
        self.tabs_block = gr.Tabs(selected=self.tabs[0], overflow_behavior="wrap", elem_id=IDS["tabs"])
        return self.tabs_block

    def build_header(self):
        L, add = (lambda key: t(key, "en")), self.labels.add  # labels start in English; the switch relabels
        with gr.Row(elem_classes="tbt-header", equal_height=True):
            add(gr.Markdown(f"## Token by Token\n{L('subtitle')}", elem_id="tbt-title"),
                words=lambda lang: {"value": f"## Token by Token\n{t('subtitle', lang)}"})
            self.lang = add(gr.Radio([("English", "en"), ("中文", "zh")], value="en", label=L("language"),
                                     elem_id=LANG_INPUT, scale=0, min_width=220, container=False), "language")
            # presenter mode: the page's script alone reads it (assets/js/presenter.js) and this browser keeps it
            add(gr.Checkbox(False, label=L("presenter_mode"), elem_id=IDS["presenter"], scale=0, min_width=180,
                            container=False, interactive=True), "presenter_mode")
            # predict first: the candidate chart without the token its draw picks until Next (read as presenter mode)
            add(gr.Checkbox(False, label=L("predict_first"), elem_id=IDS["predict"], scale=0, min_width=160,
                            container=False, interactive=True), "predict_first")

    def build_controls(self):
        L, add = (lambda key: t(key, "en")), self.labels.add
        with gr.Column(scale=1, min_width=320, elem_classes="tbt-controls"):
            self.prompt = add(gr.Textbox(EXAMPLES[0], label=L("prompt"), lines=2, max_lines=6, elem_id="tbt-prompt"),
                              "prompt")
            self.example = add(gr.Dropdown(EXAMPLES, value=None, label=L("examples"), elem_id="tbt-examples"),
                               "examples")
            with gr.Row():
                modes = [("mode_raw", "raw"), ("mode_chat", "chat")]
                self.mode = add(gr.Radio([(L(k), v) for k, v in modes], value="raw", label=L("mode"),
                                         elem_id="tbt-mode", scale=3),
                                words=lambda lang: {"label": t("mode", lang), **choices(modes)(lang)})
                names = self.app.models.names()
                self.model = add(gr.Dropdown(model_choices(names, "en"), value=self.default_model, label=L("model"),
                                             info=L("model_notes"), scale=2, min_width=140, elem_id="tbt-model"),
                                 words=lambda lang: {"label": t("model", lang), "info": t("model_notes", lang)})
            self.start = add(gr.Button(L("btn_start"), variant="secondary", elem_id=IDS["start"]), "btn_start", "value")
            with gr.Row(elem_classes="tbt-steps"):
                self.next = add(gr.Button(L("btn_next"), variant="primary", elem_id=IDS["next"], scale=2,
                                          min_width=100), "btn_next", "value")
                self.back = add(gr.Button(L("btn_back"), elem_id=IDS["back"], min_width=60), "btn_back", "value")
                self.reset = add(gr.Button(L("btn_reset"), elem_id=IDS["reset"], min_width=60), "btn_reset", "value")
                self.play = add(gr.Button(L("btn_play"), elem_id=IDS["play"], min_width=60), "btn_play", "value")
            self.build_notes()
            with gr.Accordion(L("sampling"), open=True, elem_classes="tbt-settings") as box:
                add(box, "sampling")
                self.temperature = add(gr.Slider(0, 2, 1.0, step=0.05, label=L("temperature"),
                                                 elem_id=IDS["temperature"]), "temperature")
                self.top_k = add(gr.Slider(0, 200, 0, step=1, label=L("top_k"), elem_id="tbt-top-k"), "top_k")
                self.top_p = add(gr.Slider(0.01, 1, 1.0, step=0.01, label=L("top_p"), elem_id="tbt-top-p"), "top_p")
                self.min_p = add(gr.Slider(0, 1, 0.0, step=0.01, label=L("min_p"), elem_id="tbt-min-p"), "min_p")
                self.repetition_penalty = add(gr.Slider(0.5, 2, 1.0, step=0.05, label=L("repetition_penalty"),
                                                        elem_id="tbt-repetition-penalty"),
                                              "repetition_penalty")
                orders = [("order_transformers", "transformers"), ("order_temperature_last", "temperature_last")]
                self.order = add(gr.Radio([(L(k), v) for k, v in orders], value="transformers", label=L("order"),
                                           elem_id="tbt-order"),
                                 words=lambda lang: {"label": t("order", lang), **choices(orders)(lang)})
                self.seed = add(gr.Number(0, label=L("seed"), minimum=0, precision=0, elem_id="tbt-seed"), "seed")
                self.play_steps = add(gr.Slider(1, MAX_PLAY_STEPS, 20, step=1, label=L("play_steps"),
                                                elem_id="tbt-play-steps"), "play_steps")
            add(gr.Markdown(L("shortcuts"), elem_classes="tbt-small", elem_id=IDS["keys"]), "shortcuts", "value")
        self.settings = [self.temperature, self.top_k, self.top_p, self.min_p, self.repetition_penalty, self.order,
                         self.seed]
        assert len(self.settings) == len(SETTING_NAMES)
        for knob, key in zip((*self.settings, self.play_steps), (*SETTING_NAMES, "play_steps")):
            if knob is not self.order:
                named_range(knob, key)  # (each setting's label is the key of its name)

    def build_notes(self):
        """The student's notes, beside the step buttons: plain text, kept by the page, saved in a trace, a saved
        page and the summary (issue 49)."""
        with gr.Accordion(t("notes", "en"), open=False, elem_id="tbt-notes-box") as box:
            self.labels.add(box, "notes")
            self.notes = self.labels.add(
                gr.Textbox("", label=t("notes_label", "en"), placeholder=t("notes_placeholder", "en"), lines=4,
                           max_lines=12, max_length=MAX_NOTES_CHARS, elem_id="tbt-notes"),
                words=lambda lang: {"label": t("notes_label", lang), "placeholder": t("notes_placeholder", lang)})

    def build_keep(self, view):
        """Under the chart of a view that draws every step: Keep this chart (for the student's summary)."""
        if not view.chart:
            return
        with gr.Row(equal_height=True, elem_classes="tbt-keep-row"):
            button = self.labels.add(gr.Button(t("btn_keep", "en"), size="sm", scale=0, min_width=160,
                                               elem_id=f"tbt-keep-{view.tab}", elem_classes="tbt-keep"),
                                     "btn_keep", "value")
            said = gr.HTML("", elem_id=f"tbt-kept-{view.tab}")
        self.keeps.append((view.tab, button, said))

    def build_text(self):
        self.text = gr.HTML(label="Text", elem_id=CARRIERS["text"])  # the chips, and the status line under them

    def build_hidden(self):
        """The carriers and triggers of the page protocol (ui/protocol.py), the state of the open tab, and the
        shared controls no view showed (their view is not on this page), hidden with their defaults."""
        left = [component for component in self._shared_words if not component.is_rendered]
        if left:
            with gr.Column(visible=False):
                self.place(*left)
        self.goto_step = gr.Number(0, label="go to step", precision=0, elem_id="tbt-goto", elem_classes="tbt-hidden")
        self.goto = hidden_button("goto", "go to step")
        self.tab_state = gr.State(self.tabs[0])
        self.figure = hidden_html("figure")  # any tab's chart
        self.view_in = [self.lang, self.tab_state, self.layer, self.head]
        self.page_in = [*self.settings, *self.view_in]
        self.step_out = [self.text, self.figure, self.force]

    # ---- handlers ------------------------------------------------------------------------------------
    def handler(self, fn, *leading: str):
        return page_handler(fn, *leading, tabs=self.tabs)

    def start_session(self, request, prompt_text, mode_value, model_name, cfg, view):
        session = self.app.open_session(request, model_name,
                                        lambda s: s.start(prompt_text, chat=mode_value == "chat", cfg=cfg))
        return self.app.answer(session, cfg, view)

    def start_pressed(self, request, prompt_text, mode_value, model_name, cfg, view):
        """Start (or Enter in the prompt): a new session, and the attention controls of its model."""
        page = self.start_session(request, prompt_text, mode_value, model_name, cfg, view)
        controls = attention_controls(self, self.app.session(request).lm.info, view)
        return [*page, controls[self.layer], controls[self.head], controls[self.gqa]]

    def start_page(self, request, prompt_text, mode_value, model_name, cfg, view):
        """A page opened: its session, on the model its language starts on (ModelRegistry.for_language) with that
        language's first prompt, when the operator left the choice to the language; else on the page's own."""
        models = self.app.models
        chosen = [gr.skip(), gr.skip()]  # the page's own prompt and model
        if models.by_language:
            model_name, prompt_text = models.for_language(view.lang), FIRST_PROMPT.get(view.lang, prompt_text)
            chosen = [prompt_text, model_name]
        page = self.start_session(request, prompt_text, mode_value, model_name, cfg, view)
        # the attention controls fit that model (Gemma: 18 layers, 4 heads)
        controls = attention_controls(self, self.app.session(request).lm.info, view)
        return [*chosen, controls[self.layer], controls[self.head], controls[self.gqa], *page]

    def next_token(self, request, cfg, view):
        session = self.app.session(request)
        advance(session, cfg)
        return self.app.answer(session, cfg, view)

    def force_token(self, request, token_id, cfg, view):
        if token_id in (None, ""):
            raise Refusal("force_pick_first")
        session = self.app.session(request)
        session.step(cfg, force_token=parse_token_id(token_id))
        return self.app.answer(session, cfg, view)

    def go_back(self, request, steps, cfg, view):
        session = self.app.session(request)
        session.back(whole(steps, "steps"), cfg)
        return self.app.answer(session, cfg, view)

    def go_to(self, request, step, cfg, view):
        session = self.app.session(request)
        session.go_to(whole(step, "step"), cfg)
        return self.app.answer(session, cfg, view)

    def reset_session(self, request, cfg, view):
        session = self.app.session(request)
        session.reset(cfg)
        return self.app.answer(session, cfg, view)

    def open_tab(self, tab: str):
        def open_tab(request, cfg, view):
            try:
                session = self.app.session(request)
            except SessionError:  # nothing started yet: just remember the tab
                return [tab, gr.skip()]
            return [tab, self.app.chart(session, cfg, replace(view, tab=tab))]

        open_tab.__name__ = f"open_{tab}"
        return open_tab

    def set_language(self, request, cfg, view):
        """Every registered component relabelled, and the step drawn again in the new language."""
        updates = self.labels.relabel(view.lang)
        try:
            session = self.app.session(request)
        except SessionError:  # no text yet
            return updates
        text, figure, force = self.app.answer(session, cfg, view)
        # the head list names the session's model's heads, not the default model's
        return {**updates, **attention_controls(self, session.lm.info, view), self.text: text, self.figure: figure,
                self.force: force}

    def unload(self, request: gr.Request):
        """The user's page left: their session, and everything the views kept for them, freed."""
        self.app.store.drop(request.session_hash)
        self.app.stash.leave(request.session_hash)

    # ---- wiring --------------------------------------------------------------------------------------
    def events(self) -> list[Event]:
        # (the step buttons answer within a fraction of a second and are pressed in quick runs: not said busy)
        h, page_in, out = self.handler, self.page_in, self.step_out
        start_in = [self.prompt, self.mode, self.model, *page_in]
        start = h(self.start_pressed, "prompt", "mode", "model")
        start_out = [*out, self.layer, self.head, self.gqa]  # the attention controls follow the new session's model
        relabelled = [c for c in self.labels.components if c not in out]
        return [
            Event(self.start.click, start, start_in, start_out, "model", "start"),
            Event(self.prompt.submit, start, start_in, start_out, "model"),
            Event(self.example.input, lambda e: e or gr.skip(), [self.example], [self.prompt], "page"),
            Event(self.next.click, h(self.next_token), page_in, out, "model", "next_token", busy=False),
            Event(self.back.click, h(self.go_back, "steps"), [gr.Number(1, visible=False), *page_in], out, "model",
                  "back", busy=False),
            Event(self.reset.click, h(self.reset_session), page_in, out, "model", "reset", busy=False),
            Event(self.force_btn.click, h(self.force_token, "token_id"), [self.force, *page_in], out, "model", "force",
                  busy=False),
            Event(self.goto.click, h(self.go_to, "step"), [self.goto_step, *page_in], out, "model", "go_to",
                  {"js": f"(...a) => [window.{GLOBALS['goto_step']} ?? a[0], ...a.slice(1)]"}),
            Event(self.lang.change, h(self.set_language), page_in, [*relabelled, *out], "views", "set_language"),
            *(Event(button.click, h(self.summaries.keeper(tab)), page_in, [said], "views", f"keep_{tab}")
              for tab, button, said in self.keeps),
        ]

    def on_load(self, demo: gr.Blocks, start_in_default: bool = True):
        """On a page load: start a session on the prompt shown, in the address's (?lang=) or the browser's language."""
        start = self.handler(self.start_page, "prompt", "mode", "model")
        inputs = [self.prompt, self.mode, self.model, *self.page_in]
        # the first text is drawn in the browser's language too (the switch below may land before it exists)
        at = inputs.index(self.lang)
        Event(demo.load, start, inputs, [self.prompt, self.model, self.layer, self.head, self.gqa, *self.step_out], "model",
              options={"js": f"(...a) => {{ a[{at}] = {BROWSER_LANG}; return a; }}"}).bind()
        demo.load(None, None, self.lang, js=f"() => {BROWSER_LANG}")
        demo.unload(self.unload)


# The page's first language: ?lang=zh or ?lang=en in its address (a teacher hands out one link per language), else
# the browser's own. Only the page's own languages are taken: any other value of ?lang= is the browser's choice.
BROWSER_LANG = (f"(((l) => {json.dumps(list(LANGS))}.includes(l) ? l : ((navigator.language || 'en').toLowerCase()"
                ".startsWith('zh') ? 'zh' : 'en'))(new URLSearchParams(window.location.search).get('lang')))")


def advance(session, cfg):
    """The next step: a loaded trace's next recorded step, or a new one under cfg."""
    if session.replay_left:
        session.replay_next()
    else:
        session.step(cfg)
