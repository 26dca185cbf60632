"""Token by Token: the Gradio page. Components, thin handlers, launch; the work is in model/ and viz/."""
from __future__ import annotations

import argparse
import functools
import hashlib
import inspect
import json
import logging
import math
import secrets
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import gradio as gr
from fastapi import HTTPException

import viz
from model.kv import kv_cache_bytes
from model.records import SamplingConfig, attention_matrix
from model.session import DecodeSession, SessionError, all_cores
from model.sessions import ModelRegistry, SessionStore
from model.timing import default_lengths, measure_cache_timing
from model.trace import MAX_TRACE_BYTES, replay, to_trace
from ui.protocol import page_assets
from viz.i18n import t
from viz.page import figure_bundle, figure_carrier, force_choices, status_html, text_panel

log = logging.getLogger("token-by-token")
ASSETS = Path(__file__).parent / "assets"
EXAMPLES = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
    "从前有一座山，山上有一座庙。",
]
EXPLORER_TEMPERATURES = (0.3, 0.7, 1.0, 1.5)
SWEEP_TEMPERATURES = [round(0.1 * i, 1) for i in range(1, 21)]
TEMPERATURE_GRID = [round(0.05 * i, 2) for i in range(41)]  # every value of the temperature slider
ATTENTION_WINDOW = 48  # the heatmap shows the last 48 tokens: readable on a projector, fast for long texts
TABS = ("candidates", "temperature", "attention", "kv")
MODEL_CONCURRENCY = 16  # requests that may wait for the step batcher together (its batch size)
MAX_PLAY_STEPS = 200  # the 'Tokens to play' slider's maximum
PLAY_WAIT_S = 10.0  # a Play whose page has not taken its last step after this ends (the page closed or hung)
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1}
# name: (layers, query heads, KV heads, head size)
PRESETS = {"Llama-2-7B": (32, 32, 32, 128), "Llama-3-8B": (32, 32, 8, 128), "Llama-2-70B": (80, 64, 8, 128)}


@dataclass
class View:
    """What the user is looking at: language, open tab, attention layer and head (None = mean)."""

    lang: str = "en"
    tab: str = "candidates"
    layer: int = 0
    head: int | None = None


@dataclass
class _Play:
    taken: threading.Event = field(default_factory=threading.Event)
    stopped: bool = False


class PlayPacer:
    """Paces each Play by its page. A Play is one streaming request (build: play_tokens); the server sends a step,
    then the next only once the page says it has taken that one (POST /tbt/play/<token>/shown; see launch),
    and computes it meanwhile. So Play runs as fast as the page draws, never ahead of it, and a page that
    stops answering ends it. The token is random, one per Play: it can only pace or stop that Play."""

    def __init__(self):
        self._plays: dict[str, _Play] = {}
        self._lock = threading.Lock()

    def open(self) -> str:
        token = secrets.token_urlsafe(16)
        with self._lock:
            self._plays[token] = _Play()
        return token

    def expect(self, token: str) -> None:
        """A step is about to be sent: wait() waits for the page to take it."""
        self._plays[token].taken.clear()

    def wait(self, token: str) -> bool:
        """True once the page took the step; False if it stopped the Play or did not answer in PLAY_WAIT_S."""
        play = self._plays[token]
        return play.taken.wait(PLAY_WAIT_S) and not play.stopped

    def signal(self, token: str, what: str) -> bool:
        """The page's word on its Play ('shown' or 'stop'); False if there is no such Play (any more)."""
        with self._lock:
            play = self._plays.get(token)
        if play is None:
            return False
        play.stopped |= what == "stop"
        play.taken.set()
        return True

    def close(self, token: str) -> None:
        with self._lock:
            self._plays.pop(token, None)


PLAYS = PlayPacer()  # one per server process: tokens are random, so several pages (and test servers) share it


def play_marker(token: str, step: int, of: int) -> str:
    """The hidden element that tells the page its Play is running, and under which token it answers."""
    return f'<div id="tbt-playing" data-token="{token}" data-step="{step}" data-of="{of}"></div>'


class App:
    """The page's handlers over a model registry and the per-user session store."""

    def __init__(self, models: ModelRegistry, store: SessionStore):
        self.models = models
        self.store = store
        self.revision = 0  # bumps on every render, so the page can tell a new step from an old one

    # ---- rendering -----------------------------------------------------------------------------------
    def answer(self, session: DecodeSession, cfg: SamplingConfig, view: View) -> list:
        """The page after a change, and the next step's forward pass started while the browser draws it."""
        page = self.views(session, cfg, view)
        session.prefetch(cfg)  # the next Next token then only commits it (in a play-back: the recorded token)
        return page

    def views(self, session: DecodeSession, cfg: SamplingConfig, view: View) -> list:
        """Everything a step changes: the text with its status line, the open tab's chart, the force list.

        Three outputs, not one per piece: the page spends time on every output of every answer (its loading
        status, a copy of its value), and the server builds a component for each.
        """
        with session.reading():  # one consistent state, even if another request of this user is under way
            return self._views(session, cfg, view)

    def _views(self, session: DecodeSession, cfg: SamplingConfig, view: View) -> list:
        cfg = session.replay_config() or cfg  # playing back a trace: show the step as it was recorded
        dist = session.preview(cfg)
        last_kv = session.steps[-1].kv if session.steps else session.prefill.kv
        self.revision += 1
        return [
            text_panel(viz.token_chips_html(session.prefill.tokens, session.steps, view.lang),
                       status_html(len(session.steps), len(session.ids), session.max_tokens, last_kv,
                                   session.logprob_t1(), session.finished, self.revision, view.lang,
                                   replay_left=session.replay_left)),
            self._tab_figure(session, cfg, view, dist),
            gr.update(choices=force_choices(dist, view.lang), value=None),
        ]

    def tab_figure(self, session: DecodeSession, cfg: SamplingConfig, view: View, dist=None) -> str:
        """The chart of the open tab, in a carrier naming the tab's plot (only what the page shows is sent)."""
        with session.reading():
            return self._tab_figure(session, cfg, view, dist)

    def _tab_figure(self, session: DecodeSession, cfg: SamplingConfig, view: View, dist=None) -> str:
        cfg = session.replay_config() or cfg
        if view.tab == "candidates":
            return figure_carrier(viz.candidate_chart(dist or session.preview(cfg), view.lang), chart_id(view.tab),
                                  chart_key(session, cfg, view), cfg.temperature)
        if view.tab == "temperature":
            dists = [session.preview(replace(cfg, temperature=x)) for x in EXPLORER_TEMPERATURES]
            sweep = session.sweep(cfg, SWEEP_TEMPERATURES)
            return figure_carrier(viz.temperature_chart(dists, sweep, cfg.temperature, view.lang), chart_id(view.tab))
        if view.tab == "attention":
            return self._attention(session, view)
        points = [session.prefill.kv] + [s.kv for s in session.steps]
        return figure_carrier(viz.kv_growth_chart(points, session.prompt_len, session.lm.info, view.lang),
                              chart_id(view.tab))

    def next_chart(self, session: DecodeSession, cfg: SamplingConfig, view: View) -> str:
        """The candidate chart the next Next token will show, from the pass computed ahead ('' if there is none):
        the page draws it while the presenter reads this step, and shows it when the step's answer names it."""
        if view.tab != "candidates":
            return ""
        ahead = session.preview_ahead(cfg)
        if ahead is None:
            return ""
        ids, dist = ahead
        return figure_carrier(viz.candidate_chart(dist, view.lang), chart_id(view.tab),
                              state_key(ids, cfg, view.lang), cfg.temperature, kind="tbt-figahead")

    def temperature_bundle(self, session: DecodeSession, cfg: SamplingConfig, view: View) -> str:
        """The candidate chart at every temperature of the slider, the other settings held (no model run)."""
        with session.reading():
            key = chart_key(session, cfg, view)
            if key is None:
                return ""
            figs = {x: viz.candidate_chart(session.preview(replace(cfg, temperature=x)), view.lang)
                    for x in TEMPERATURE_GRID}
            return figure_bundle(figs, key)

    def attention(self, session: DecodeSession, view: View):
        """The attention heatmap of the last ATTENTION_WINDOW tokens, for the view's layer and head."""
        with session.reading():
            return self._attention(session, view)

    def _attention(self, session: DecodeSession, view: View):
        info = session.lm.info
        layer = min(max(int(view.layer), 0), info.layers - 1)
        full = attention_matrix(session.prefill, session.steps, layer, view.head)
        start = max(0, full.shape[0] - ATTENTION_WINDOW)
        labels = [tok.display for tok in session.prefill.tokens] + [s.token.display for s in session.steps]
        window = info.sliding_window[layer] if info.sliding_window else None
        return figure_carrier(viz.attention_chart(full[start:, start:], labels[start:], layer, view.head, info, start,
                                                   window, view.lang), chart_id("attention"))


SETTING_PARAMS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "order", "seed")
VIEW_PARAMS = ("lang", "tab", "layer", "head")


def named_range(component):
    """Make a slider's or number box's range check name the setting; Gradio's own says only 'Value 5 is
    greater than maximum value 2.'. (A subclass would do it too, but Gradio writes a .pyi file beside the
    module of every component class.)"""
    check = component.preprocess

    @functools.wraps(check)  # Gradio checks the value's type by this signature
    def preprocess(payload):
        try:
            return check(payload)
        except gr.Error as err:
            raise gr.Error(f"{component.label}: {err.message}", print_exception=False) from None

    component.preprocess = preprocess
    return component


def parse_view(lang, tab, layer, head) -> View:
    """The view options from the page; SessionError if one is not understood."""
    try:
        head = None if head in (None, "", "mean") else int(head)
        layer = int(layer or 0)
    except (TypeError, ValueError):
        raise SessionError(f"Layer must be a whole number and head a number or 'mean', got {layer!r} and {head!r}.") from None
    return View(lang if lang in viz.STRINGS else "en", tab if tab in TABS else "candidates", layer, head)


def page_handler(*leading: str):
    """Make fn(request, *leading, cfg, view) an event handler taking the leading inputs, the settings, the view.

    The handler's signature names every input (so the API documents them) and gets the gr.Request.
    """

    def decorate(fn):
        n = len(leading)

        def arguments(request, values):
            cfg = config(*values[n : n + len(SETTING_PARAMS)])
            view = parse_view(*values[n + len(SETTING_PARAMS) :])
            return (request, *values[:n], cfg, view)

        if inspect.isgeneratorfunction(fn):  # a streaming handler (Gradio tells them apart by this)
            def handler(request: gr.Request, *values):
                yield from fn(*arguments(request, values))
        else:
            def handler(request: gr.Request, *values):
                return fn(*arguments(request, values))

        names = ("request", *leading, *SETTING_PARAMS, *VIEW_PARAMS)
        handler.__signature__ = inspect.Signature(
            [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names]
        )
        handler.__annotations__ = {"request": gr.Request}
        handler.__name__ = fn.__name__
        return friendly(handler)

    return decorate


def friendly(fn):
    """Turn a refused request into a message on the page (gr.Error); anything else is logged, not leaked."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args, **kwargs):
            with _plainly(fn.__name__):
                yield from fn(*args, **kwargs)

        return stream

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _plainly(fn.__name__):
            return fn(*args, **kwargs)

    return wrapper


@contextmanager
def _plainly(name: str):
    try:
        yield
    except SessionError as err:
        raise gr.Error(str(err), print_exception=False) from None
    except gr.Error:
        raise
    except Exception as err:  # a bug: the session is unchanged (steps are atomic), say so plainly
        log.exception("handler %s failed", name)
        raise gr.Error(f"Something went wrong ({type(err).__name__}); your session is unchanged.") from None


def config(temperature, top_k, top_p, min_p, repetition_penalty, order, seed) -> SamplingConfig:
    """The sampling settings from the page, validated (SessionError names the setting that is out of range)."""
    try:
        return SamplingConfig(temperature, top_k, top_p, min_p, repetition_penalty, order, seed).validate()
    except ValueError as err:
        raise SessionError(f"Setting out of range: {err}") from None


def chart_key(session: DecodeSession, cfg: SamplingConfig, view: View) -> str | None:
    """What a candidate chart shows besides the temperature: the text so far, the other settings, the language.

    None while a trace plays back (its steps show their recorded settings, not the page's).
    """
    return None if session.replay_left else state_key(session.ids, cfg, view.lang)


def state_key(ids: list[int], cfg: SamplingConfig, lang: str) -> str:
    """chart_key of a text `ids` (the text a step will write, too)."""
    return hashlib.sha1(repr((ids, replace(cfg, temperature=0.0), lang)).encode()).hexdigest()[:16]


def chart_id(tab: str) -> str:
    """The id of the element a tab's chart is drawn into."""
    return f"tbt-fig-{tab}"


def chart(tab: str) -> gr.HTML:
    """A tab's chart: a plot that stays on the page. Its figures arrive in the page's one hidden carrier (an
    output, which names the plot it is for); assets/app.js draws each with Plotly.react, in place, and its
    title as HTML in the caption above (plotly.js measures every text it draws: the title cost it 10 ms)."""
    plot = (f'<div id="tbt-cap-{tab}" class="tbt-caption"></div>'
            f'<div class="tbt-stack"><div id="{chart_id(tab)}" class="tbt-fig"></div></div>')
    return gr.HTML(plot, elem_id=f"tbt-plot-{tab}", js_on_load=None)


def head_choices(app: App, L) -> list[tuple[str, str]]:
    """'Mean over heads', then each query head with the KV head it reads (grouped-query attention)."""
    info = app.models.get().info
    return [(L("mean_over_heads"), "mean")] + [
        (L("head_choice", head=h, kv_head=info.kv_head_of(h)), str(h)) for h in range(info.heads)
    ]


def build(app: App, default_model: str) -> gr.Blocks:
    """The page. Every component has a label and every event an api_name."""
    L = functools.partial(t, lang="en")  # labels start in English; the language switch relabels
    with gr.Blocks(title="Token by Token", delete_cache=(900, 1800)) as demo:
        with gr.Row(elem_classes="tbt-header", equal_height=True):
            title = gr.Markdown(f"## Token by Token\n{L('subtitle')}", elem_id="tbt-title")
            lang = gr.Radio([("English", "en"), ("中文", "zh")], value="en", label=L("language"), elem_id="tbt-lang",
                            scale=0, min_width=220, container=False)
        with gr.Row(equal_height=False):
            with gr.Column(scale=1, min_width=320, elem_classes="tbt-controls"):
                prompt = gr.Textbox(EXAMPLES[0], label=L("prompt"), lines=2, max_lines=6, elem_id="tbt-prompt")
                example = gr.Dropdown(EXAMPLES, value=None, label=L("examples"), elem_id="tbt-examples")
                with gr.Row():
                    mode = gr.Radio([(L("mode_raw"), "raw"), (L("mode_chat"), "chat")], value="raw", label=L("mode"),
                                    elem_id="tbt-mode", scale=3)
                    model = gr.Dropdown(app.models.names(), value=default_model, label=L("model"), scale=2,
                                        min_width=140)
                start = gr.Button(L("btn_start"), variant="secondary", elem_id="tbt-start")
                with gr.Row():
                    next_btn = gr.Button(L("btn_next"), variant="primary", elem_id="tbt-next", scale=2, min_width=100)
                    back = gr.Button(L("btn_back"), elem_id="tbt-back", min_width=60)
                    reset = gr.Button(L("btn_reset"), elem_id="tbt-reset", min_width=60)
                    play = gr.Button(L("btn_play"), elem_id="tbt-play", min_width=60)
                with gr.Accordion(L("sampling"), open=True) as sampling_box:
                    temperature = gr.Slider(0, 2, 1.0, step=0.05, label=L("temperature"), elem_id="tbt-temperature")
                    top_k = gr.Slider(0, 200, 0, step=1, label=L("top_k"), elem_id="tbt-top-k")
                    top_p = gr.Slider(0.01, 1, 1.0, step=0.01, label=L("top_p"), elem_id="tbt-top-p")
                    min_p = gr.Slider(0, 1, 0.0, step=0.01, label=L("min_p"), elem_id="tbt-min-p")
                    repetition_penalty = gr.Slider(0.5, 2, 1.0, step=0.05, label=L("repetition_penalty"))
                    order = gr.Radio([(L("order_transformers"), "transformers"),
                                      (L("order_temperature_last"), "temperature_last")],
                                     value="transformers", label=L("order"))
                    seed = gr.Number(0, label=L("seed"), minimum=0, precision=0)
                    play_steps = gr.Slider(1, MAX_PLAY_STEPS, 20, step=1, label=L("play_steps"), elem_id="tbt-play-steps")
                shortcuts = gr.Markdown(L("shortcuts"), elem_classes="tbt-small")
            with gr.Column(scale=3):
                text = gr.HTML(label="Text", elem_id="tbt-text")  # the chips, and the status line under them
                with gr.Tabs():
                    with gr.Tab(L("tab_candidates"), id="candidates") as tab_cand:
                        chart("candidates")
                        with gr.Row(equal_height=True):
                            force = gr.Dropdown([], label=L("force_label"), elem_id="tbt-force", scale=3,
                                                allow_custom_value=True)
                            force_btn = gr.Button(L("btn_force"), elem_id="tbt-force-btn", scale=1, min_width=120)
                        cand_text = gr.Markdown(L("explain_candidates"), elem_classes="tbt-explain")
                    with gr.Tab(L("tab_temperature"), id="temperature") as tab_temp:
                        chart("temperature")
                        temp_text = gr.Markdown(L("explain_temperature"), elem_classes="tbt-explain")
                    with gr.Tab(L("tab_attention"), id="attention") as tab_attn:
                        with gr.Row():
                            layer = gr.Slider(0, app.models.get().info.layers - 1, 0, step=1, label=L("layer"),
                                              elem_id="tbt-layer", scale=3)
                            head = gr.Dropdown(head_choices(app, L), value="mean", label=L("head"), elem_id="tbt-head",
                                               scale=1)
                        chart("attention")
                        attn_text = gr.Markdown(L("explain_attention") + "\n\n" + L("explain_gqa"),
                                                elem_classes="tbt-explain")
                    with gr.Tab(L("tab_kv"), id="kv") as tab_kv:
                        chart("kv")
                        kv_text = gr.Markdown(L("explain_kv_cache"), elem_classes="tbt-explain")
                        measure = gr.Button(L("btn_measure"), elem_id="tbt-measure")
                        timing_plot = gr.Plot(label=L("btn_measure"), elem_id="tbt-plot-timing", show_label=False)
                        timing_text = gr.Markdown(L("explain_cache_timing") + " " + L("timing_empty"),
                                                  elem_classes="tbt-explain")
                    with gr.Tab(L("tab_calculator"), id="calculator") as tab_calc:
                        with gr.Row():
                            preset = gr.Dropdown([default_model, *PRESETS], value=default_model, label=L("calc_preset"))
                            dtype = gr.Dropdown(list(DTYPE_BYTES), value="float16", label=L("calc_dtype"))
                            tokens = gr.Number(2048, label=L("calc_tokens"), minimum=1, maximum=10_000_000, precision=0)
                            batch = gr.Number(1, label=L("calc_batch"), minimum=1, maximum=4096, precision=0)
                        with gr.Row():
                            layers_in = gr.Number(30, label=L("calc_layers"), minimum=1, maximum=1000, precision=0)
                            heads_in = gr.Number(9, label=L("calc_heads"), minimum=1, maximum=1024, precision=0)
                            kv_heads_in = gr.Number(3, label=L("calc_kv_heads"), minimum=1, maximum=1024, precision=0)
                            head_dim_in = gr.Number(64, label=L("calc_head_dim"), minimum=1, maximum=4096, precision=0)
                        calc_result = gr.Markdown(elem_id="tbt-calc-result")
                        calc_plot = gr.Plot(label=L("tab_calculator"), elem_id="tbt-plot-calc", show_label=False)
                        calc_text = gr.Markdown(L("explain_kv_calculator"), elem_classes="tbt-explain")
                    with gr.Tab(L("tab_session"), id="session") as tab_io:
                        export_btn = gr.Button(L("btn_export"), elem_id="tbt-export")
                        export_file = gr.File(label=L("trace_file"), elem_id="tbt-export-file", interactive=False)
                        import_btn = gr.UploadButton(L("btn_import"), file_types=[".json"], elem_id="tbt-import")
        goto_step = gr.Number(0, label="go to step", precision=0, elem_id="tbt-goto", elem_classes="tbt-hidden")
        goto_btn = gr.Button("go to step", elem_id="tbt-goto-btn", elem_classes="tbt-hidden")
        tab_state = gr.State("candidates")
        bundle = gr.HTML("", elem_id="tbt-bundle", elem_classes="tbt-hidden", js_on_load=None)
        figure = gr.HTML("", elem_id="tbt-figdata", elem_classes="tbt-hidden", js_on_load=None)  # any tab's chart
        ahead = gr.HTML("", elem_id="tbt-ahead", elem_classes="tbt-hidden", js_on_load=None)  # the next step's chart
        play_box = gr.HTML("", elem_id="tbt-playbox", elem_classes="tbt-hidden", js_on_load=None)  # a Play's token

        settings = [temperature, top_k, top_p, min_p, repetition_penalty, order, seed]
        for knob in (temperature, top_k, top_p, min_p, repetition_penalty, seed, layer, play_steps):
            named_range(knob)
        view_in = [lang, tab_state, layer, head]
        step_out = [text, figure, force]

        # ---- handlers: each reads like a sentence --------------------------------------------------
        @page_handler("prompt", "mode", "model")
        def start_session(request, prompt_text, mode_value, model_name, cfg, view):
            session = app.models.new_session(model_name)
            session.start(prompt_text, chat=mode_value == "chat")
            app.store.put(request.session_hash, session)
            return app.answer(session, cfg, view)

        def advance(session, cfg):
            if session.replay_left:  # a loaded trace: the next recorded step
                session.replay_next()
            else:
                session.step(cfg)

        @page_handler()
        def next_token(request, cfg, view):
            session = app.store.get(request.session_hash)
            advance(session, cfg)
            return app.answer(session, cfg, view)

        @page_handler("steps")
        def play_tokens(request, steps, cfg, view):
            """Up to `steps` Next tokens, each sent once the page took the one before (PlayPacer). The force
            list is left alone while playing and sent once, where Play stops."""
            n = _whole(steps, "Tokens to play")  # (its slider has already refused one out of range)
            session = app.store.get(request.session_hash)

            def still_shown():  # the page's session is still this one (not a new text, nor an expired one)
                try:
                    return app.store.get(request.session_hash) is session
                except SessionError:
                    return False

            token = PLAYS.open()
            try:
                for done in range(1, n + 1):
                    if done > 1 and not still_shown():
                        break
                    advance(session, cfg)
                    text_and_status, tab_chart, _ = app.answer(session, cfg, view)
                    PLAYS.expect(token)
                    yield text_and_status, tab_chart, gr.skip(), play_marker(token, done, n)
                    if not PLAYS.wait(token) or session.finished or len(session.ids) >= session.max_tokens:
                        break  # stopped, or the page is gone; the text ended, or is full
            finally:
                PLAYS.close(token)
            yield gr.skip(), gr.skip(), app.views(session, cfg, view)[2] if still_shown() else gr.skip(), ""

        @page_handler("token_id")
        def force_token(request, token_id, cfg, view):
            if token_id in (None, ""):
                raise SessionError("Pick a candidate in the list first, then press Force.")
            session = app.store.get(request.session_hash)
            session.step(cfg, force_token=_token_id(token_id))
            return app.answer(session, cfg, view)

        @page_handler("steps")
        def go_back(request, steps, cfg, view):
            session = app.store.get(request.session_hash)
            session.back(_whole(steps, "steps"))
            return app.answer(session, cfg, view)

        @page_handler("step")
        def go_to(request, step, cfg, view):
            session = app.store.get(request.session_hash)
            session.go_to(_whole(step, "step"))
            return app.answer(session, cfg, view)

        @page_handler()
        def reset_session(request, cfg, view):
            session = app.store.get(request.session_hash)
            session.reset()
            return app.answer(session, cfg, view)

        @page_handler()
        def rederive(request, cfg, view):
            session = app.store.get(request.session_hash)
            dist = session.preview(cfg)  # no model run: the stored logits, the new settings
            page = [app.tab_figure(session, cfg, view, dist), gr.update(choices=force_choices(dist, view.lang))]
            session.prefetch(cfg)  # the token these settings draw may differ from the one computed ahead
            return page

        def tab_handler(tab_id):
            @page_handler()
            def open_tab(request, cfg, view):
                try:
                    session = app.store.get(request.session_hash)
                except SessionError:  # nothing started yet: just remember the tab
                    return [tab_id, gr.skip()]
                return [tab_id, app.tab_figure(session, cfg, replace(view, tab=tab_id))]

            return open_tab

        @page_handler()
        def temperature_charts(request, cfg, view):
            return app.temperature_bundle(app.store.get(request.session_hash), cfg, view)

        @page_handler()
        def next_chart(request, cfg, view):
            return app.next_chart(app.store.get(request.session_hash), cfg, view)

        @page_handler()
        def show_attention(request, cfg, view):
            return app.attention(app.store.get(request.session_hash), view)

        @friendly
        def measure_cache(request: gr.Request, lang_value):
            session = app.store.get(request.session_hash)
            with session.batcher.model_lock, all_cores():  # the class waits a few seconds; timings undisturbed
                timing = measure_cache_timing(session.lm, session.ids, default_lengths(len(session.ids)))
            return viz.cache_timing_figure(timing, lang_value)

        @friendly
        def export_trace(request: gr.Request):
            trace = to_trace(app.store.get(request.session_hash))
            path = Path(tempfile.mkdtemp(prefix="tbt-")) / "token-by-token-trace.json"
            path.write_text(json.dumps(trace, ensure_ascii=False, indent=1), encoding="utf-8")
            return str(path)

        @page_handler("file")
        def import_trace(request, file, cfg, view):
            path = Path(file if isinstance(file, str) else getattr(file, "name", "") or "")
            if not path.is_file() or path.stat().st_size > MAX_TRACE_BYTES:
                raise SessionError(f"Could not import that file: it must be a trace of at most {MAX_TRACE_BYTES:,} bytes.")
            try:
                trace = json.loads(path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                raise SessionError(f"Could not import that file: it is not JSON ({err}).") from None
            session = app.models.new_session(trace.get("model") if isinstance(trace, dict) else None)
            replay(session, trace, rewind=True)  # checked whole, then played back one step per Next token
            app.store.put(request.session_hash, session)
            return app.answer(session, cfg, view)

        @page_handler()
        def set_language(request, cfg, view):
            L2 = functools.partial(t, lang=view.lang)
            relabel = [
                gr.update(value=f"## Token by Token\n{L2('subtitle')}"),
                gr.update(label=L2("prompt")), gr.update(label=L2("examples")),
                gr.update(label=L2("mode"), choices=[(L2("mode_raw"), "raw"), (L2("mode_chat"), "chat")]),
                gr.update(label=L2("model")), gr.update(value=L2("btn_start")), gr.update(value=L2("btn_next")),
                gr.update(value=L2("btn_back")), gr.update(value=L2("btn_reset")), gr.update(value=L2("btn_play")),
                gr.update(label=L2("play_steps")), gr.update(label=L2("sampling")),
                gr.update(label=L2("temperature")), gr.update(label=L2("top_k")), gr.update(label=L2("top_p")),
                gr.update(label=L2("min_p")), gr.update(label=L2("repetition_penalty")),
                gr.update(label=L2("order"), choices=[(L2("order_transformers"), "transformers"),
                                                      (L2("order_temperature_last"), "temperature_last")]),
                gr.update(label=L2("seed")), gr.update(value=L2("shortcuts")), gr.update(label=L2("force_label")),
                gr.update(value=L2("btn_force")),
                gr.update(label=L2("tab_candidates")), gr.update(label=L2("tab_temperature")),
                gr.update(label=L2("tab_attention")), gr.update(label=L2("tab_kv")),
                gr.update(label=L2("tab_calculator")), gr.update(label=L2("tab_session")),
                gr.update(value=L2("explain_candidates")), gr.update(value=L2("explain_temperature")),
                gr.update(value=L2("explain_attention") + "\n\n" + L2("explain_gqa")),
                gr.update(value=L2("explain_kv_cache")), gr.update(value=L2("btn_measure")),
                gr.update(value=L2("explain_cache_timing") + " " + L2("timing_empty")),
                gr.update(value=L2("explain_kv_calculator")), gr.update(label=L2("layer")),
                gr.update(label=L2("head"), choices=head_choices(app, L2)),
                gr.update(value=L2("btn_export")), gr.update(label=L2("btn_import")),
            ]
            try:
                page = app.answer(app.store.get(request.session_hash), cfg, view)
            except SessionError:
                page = [gr.skip()] * len(step_out)
            return relabel + page

        @friendly
        def on_calculate(preset_name, dtype_name, n_tokens, n_batch, n_layers, n_heads, n_kv_heads, n_head_dim,
                         lang_value):
            if preset_name in PRESETS:
                n_layers, n_heads, n_kv_heads, n_head_dim = PRESETS[preset_name]
            elif preset_name == default_model and preset_name is not None and n_layers is None:
                info = app.models.get().info
                n_layers, n_heads, n_kv_heads, n_head_dim = info.layers, info.heads, info.kv_heads, info.head_dim
            values = dict(layers=n_layers, heads=n_heads, kv_heads=n_kv_heads, head_dim=n_head_dim, tokens=n_tokens,
                          batch=n_batch)
            for name, v in values.items():
                if v is None or int(v) < 1:
                    raise SessionError(f"{name} must be a whole number >= 1, got {v!r}")
            if dtype_name not in DTYPE_BYTES:
                raise SessionError(f"data type must be one of {list(DTYPE_BYTES)}, got {dtype_name!r}")
            if int(n_kv_heads) > int(n_heads) or int(n_heads) % int(n_kv_heads):
                raise SessionError("query heads must be a multiple of KV heads (each KV head serves a whole group)")
            size = functools.partial(kv_cache_bytes, layers=int(n_layers), head_dim=int(n_head_dim),
                                     tokens=int(n_tokens), bytes_per_value=DTYPE_BYTES[dtype_name], batch=int(n_batch))
            total = size(kv_heads=int(n_kv_heads))
            rows = [(t("calc_mha", lang_value, heads=n_heads), size(kv_heads=int(n_heads))),
                    (t("calc_gqa", lang_value, kv_heads=n_kv_heads), total),
                    (t("calc_mqa", lang_value), size(kv_heads=1))]
            info = app.models.get().info  # and every preset at the same tokens, type and batch, for comparison
            for name, (p_layers, _, p_kv_heads, p_head_dim) in {
                    info.name: (info.layers, info.heads, info.kv_heads, info.head_dim), **PRESETS}.items():
                rows.append((f"{name} · {p_kv_heads} KV", kv_cache_bytes(p_layers, p_kv_heads, p_head_dim, int(n_tokens),
                                                                        DTYPE_BYTES[dtype_name], int(n_batch))))
            text = "### " + t("calc_result", lang_value, bytes=f"{total:,}", size=viz.format_bytes(total))
            return (int(n_layers), int(n_heads), int(n_kv_heads), int(n_head_dim), text,
                    viz.kv_calculator_figure(rows, lang_value))

        def on_preset(preset_name):
            if preset_name in PRESETS:
                return list(PRESETS[preset_name])
            info = app.models.get(preset_name if preset_name in app.models.names() else None).info
            return [info.layers, info.heads, info.kv_heads, info.head_dim]

        # ---- wiring --------------------------------------------------------------------------------
        # Many steps may wait at once: the batcher runs them as one forward pass (one pass at a time).
        # No loading overlay on the outputs: a step answers within a fraction of a second, and animating
        # the overlay on every output takes the browser's time from drawing the answer.
        model_events = dict(concurrency_id="model", concurrency_limit=MODEL_CONCURRENCY, show_progress="hidden")
        view_events = dict(concurrency_id="views", concurrency_limit=1, show_progress="hidden")
        page_in = [*settings, *view_in]
        start.click(start_session, [prompt, mode, model, *page_in], step_out, api_name="start", **model_events)
        prompt.submit(start_session, [prompt, mode, model, *page_in], step_out, api_name=False, **model_events)
        demo.load(start_session, [prompt, mode, model, *page_in], step_out, api_name=False, **model_events)
        example.input(lambda e: e or gr.skip(), example, prompt, api_name=False)
        next_btn.click(next_token, page_in, step_out, api_name="next_token", **model_events)
        back.click(go_back, [gr.Number(1, visible=False), *page_in], step_out, api_name="back", **model_events)
        reset.click(reset_session, page_in, step_out, api_name="reset", **model_events)
        force_btn.click(force_token, [force, *page_in], step_out, api_name="force", **model_events)
        goto_btn.click(go_to, [goto_step, *page_in], step_out, api_name="go_to", **model_events,
                       js="(...a) => [window.tbtGotoStep ?? a[0], ...a.slice(1)]")
        for knob in settings:
            knob.input(rederive, page_in, [figure, force], api_name=False, trigger_mode="always_last", **view_events)
        rederive_btn = gr.Button("rederive", elem_classes="tbt-hidden", elem_id="tbt-rederive")
        rederive_btn.click(rederive, page_in, [figure, force], api_name="rederive", **view_events)
        # The page asks for every temperature's chart when the slider is first touched at a step, then draws
        # the slider's moves from them at once (assets/app.js); each move is still answered as above.
        bundle_btn = gr.Button("temperature charts", elem_classes="tbt-hidden", elem_id="tbt-bundle-btn")
        bundle_btn.click(temperature_charts, page_in, bundle, api_name="temperature_charts", concurrency_id="bundle",
                         concurrency_limit=1, show_progress="hidden")  # ~0.4 s: not in the way of the views
        # After a step is drawn, the page asks for the chart the next one will show and draws it ahead, hidden;
        # the next step's answer then only shows it (assets/app.js). It waits for the pass computed ahead.
        ahead_btn = gr.Button("next chart", elem_classes="tbt-hidden", elem_id="tbt-ahead-btn")
        ahead_btn.click(next_chart, page_in, ahead, api_name="next_chart", concurrency_id="ahead",
                        concurrency_limit=2, show_progress="hidden")
        for tab, tab_id in zip((tab_cand, tab_temp, tab_attn, tab_kv), TABS):
            tab.select(tab_handler(tab_id), page_in, [tab_state, figure], api_name=f"tab_{tab_id}", **view_events)
        for knob in (layer, head):
            knob.input(show_attention, page_in, figure, api_name=False, trigger_mode="always_last", **view_events)
        measure.click(measure_cache, lang, timing_plot, api_name="measure", concurrency_id="measure",
                      concurrency_limit=1)
        calc_in = [preset, dtype, tokens, batch, layers_in, heads_in, kv_heads_in, head_dim_in, lang]
        calc_out = [layers_in, heads_in, kv_heads_in, head_dim_in, calc_result, calc_plot]
        preset.input(on_preset, preset, [layers_in, heads_in, kv_heads_in, head_dim_in], api_name=False).then(
            on_calculate, calc_in, calc_out, api_name=False, **view_events)
        for box in (dtype, tokens, batch, layers_in, heads_in, kv_heads_in, head_dim_in):
            box.input(on_calculate, calc_in, calc_out, api_name=False, trigger_mode="always_last", **view_events)
        tab_calc.select(on_calculate, calc_in, calc_out, api_name="calculate", **view_events)
        export_btn.click(export_trace, None, export_file, api_name="export", **view_events)
        import_btn.upload(import_trace, [import_btn, *page_in], step_out, api_name="import_trace", **model_events)
        relabelled = [title, prompt, example, mode, model, start, next_btn, back, reset, play, play_steps,
                      sampling_box, temperature, top_k, top_p, min_p, repetition_penalty, order, seed, shortcuts,
                      force, force_btn, tab_cand, tab_temp, tab_attn, tab_kv, tab_calc, tab_io, cand_text, temp_text,
                      attn_text, kv_text, measure, timing_text, calc_text, layer, head, export_btn, import_btn]
        lang.change(set_language, page_in, relabelled + step_out, api_name="set_language", **view_events)
        demo.load(None, None, lang, js="() => (navigator.language || 'en').toLowerCase().startsWith('zh') ? 'zh' : 'en'")
        # Play: the page's button toggles it (assets/app.js), a hidden one starts the streaming request.
        play.click(None, None, None, js="() => window.tbtPlay()")
        play_run = gr.Button("play", elem_classes="tbt-hidden", elem_id="tbt-play-run")
        play_run.click(play_tokens, [play_steps, *page_in], [*step_out, play_box], api_name="play",
                       concurrency_id="play", concurrency_limit=MODEL_CONCURRENCY, show_progress="hidden").then(
            None, None, None, js="() => window.tbtPlayEnded()")
        def on_unload(request: gr.Request):
            app.store.drop(request.session_hash)

        demo.unload(on_unload)
    return demo


def _whole(value, name: str) -> int:
    """A whole number from the page or the API, or SessionError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
        raise SessionError(f"{name} must be a whole number, got {value!r}.")
    return int(value)


def _token_id(value) -> int:
    """A token id from the force list or the API ('123' accepted), or SessionError."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
        raise SessionError(f"The forced token must be a token id, got {value!r}: a whole number from the candidate list.")
    return int(value)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Token by Token: see a language model write one token at a time.")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default: this machine only)")
    ap.add_argument("--port", type=int, default=7860)
    ap.add_argument("--model", default="smollm2", help="smollm2 (default), gemma3-270m, or a local model folder")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    models = ModelRegistry(args.model)
    models.get()  # load once, at start-up, before the first user arrives
    demo = build(App(models, SessionStore()), args.model)
    launch(demo, args.host, args.port)


def launch(demo: gr.Blocks, host: str, port: int | None, prevent_thread_lock: bool = False, **kwargs):
    """Queue sized for a 2-core machine (one model step at a time, a bounded wait list), then serve."""
    demo.queue(max_size=128, api_open=False, default_concurrency_limit=1)
    served = demo.launch(server_name=host, server_port=port, **page_assets(), show_error=True, theme=gr.themes.Default(),
                         run_history=False, prevent_thread_lock=True, **kwargs)  # run history: rewritten every step
    # The page's word on its Play: not a queued event (an event costs the page about 45 ms of work, a step's
    # budget), and it runs nothing: it only lets the Play's streaming request, which is queued, go on or stop.
    demo.app.add_api_route("/tbt/play/{token}/{what}", pace_play, methods=["POST"])
    if not prevent_thread_lock:
        demo.block_thread()
    return served


async def pace_play(token: str, what: str):
    """POST /tbt/play/<token>/shown (the page took the last step) or /stop."""
    if what not in ("shown", "stop"):
        raise HTTPException(404, "Say 'shown' or 'stop'.")
    if not PLAYS.signal(token, what):
        raise HTTPException(404, "No such Play: it has ended.")
    return {"ok": True}


if __name__ == "__main__":
    main()
