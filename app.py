"""Token by Token: the Gradio page. `python app.py` loads the model and serves it; the page is built in ui/,
one module per view, over model/ (the model's core and the sessions) and viz/ (the pictures)."""
from __future__ import annotations

import argparse
import logging
import os

import gradio as gr

from model.classroom.rooms import Rooms
from model.vllm.client import EngineClient
from model.vllm.session import load_engine_model
from model.decoding.loading import DEFAULT_MODEL, available_models
from model.inside.tokenizers import SUBWORD_EXAMPLE, compare
from model.vllm.kv_events import KVEventSubscriber
from model.serving.sessions import ModelRegistry, SessionStore
from ui.controls import Page
from ui.events import Event, wire
from ui.play import Play
from ui.reach import Reach, checked_public_url
from ui.server import launch
from ui.state import App
from ui.strings import t
from ui.views import VIEWS, parts_of

__all__ = ["App", "build", "launch", "main"]


def build(app: App, default_model: str, views=VIEWS) -> gr.Blocks:
    """The page: the shared controls, then each view of `views` (view classes, ui/views) in its own tab, the tabs
    grouped into the story's parts (ui/views PARTS). Every event has an api_name. Any view may be left out: the page
    owns every control its handlers share."""
    views = [View(app) for View in views]
    stepped = [view for view in views if view.chart]  # the views that draw every step
    parts = [(key, [view.tab for view in members]) for key, members in parts_of(views)]  # the story's parts
    views = [view for _, members in parts_of(views) for view in members]  # (in the navigation's order)
    page = Page(app, default_model, tuple(view.tab for view in stepped), {view.tab: view.title for view in views},
                parts)
    player = Play(app)
    with gr.Blocks(title="Token by Token", delete_cache=(900, 1800)) as demo:
        page.build_shared()
        page.build_header()
        page.build_nav()  # the story's parts, across the page
        with gr.Row(equal_height=False, elem_classes="tbt-main"):
            page.build_controls()
            with gr.Column(scale=3, elem_classes="tbt-stage"):  # the text and the open tab (assets/app.css)
                page.build_text()
                with page.build_tabs():
                    for view in views:
                        with gr.Tab(t(view.title), id=view.tab) as view.tab_block:
                            view.build(page)
                            page.build_keep(view)  # under a chart that follows the text: Keep this chart
                        page.labels.add(view.tab_block, view.title)
        page.build_hidden()
        player.build(page)
        app.views = {view.tab: view for view in stepped}
        app.all_views = {view.tab: view for view in views}
        opened = [Event(view.tab_block.select, page.handler(page.open_tab(view.tab)), page.page_in,
                        [page.tab_state, page.figure], "views", f"tab_{view.tab}") for view in stepped]
        wire([*page.events(), *player.events(page), *opened, *(row for view in views for row in view.events(page))])
        page.on_load(demo)
        demo.tbt_store = app.store  # launch() tells it which sessions have a page connected
        demo.tbt_models = app.models  # and, in bench mode, asks the core processes for their counters
        demo.tbt_reach = app.reach  # and where the server listens (a room's join link)
        demo.tbt_labels = page.labels  # and how a refusal names the control it could not read (ui/guard.py)
        for view in views:  # (what a view keeps per user is in app.stash: the page's own unload drops it)
            if hasattr(view, "unload"):
                demo.unload(view.unload)
    return demo


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Token by Token: see a language model write one token at a time.")
    ap.add_argument("--host", default=None,
                    help="address to listen on (default: $GRADIO_SERVER_NAME, else 127.0.0.1: this machine only)")
    ap.add_argument("--port", type=int, default=None, help="port (default: $GRADIO_SERVER_PORT, else 7860)")
    ap.add_argument("--public-url", default=os.environ.get("TBT_PUBLIC_URL"),
                    help="the address students open, e.g. https://tbt.school.example/ behind a proxy: a room's link "
                         "and QR code (default: $TBT_PUBLIC_URL, else this machine's network address with --host "
                         "0.0.0.0; on 127.0.0.1 the room's wall says only this machine can join)")
    ap.add_argument("--model", default=None,
                    help="one model for every page: smollm2, gemma3-270m, or a local model folder (default: both "
                         "packaged models loaded at start, an English page on smollm2, a Chinese one on gemma3-270m)")
    ap.add_argument("--engine-url", default=os.environ.get("TBT_ENGINE_URL"),
                    help="an OpenAI-compatible engine's base URL, e.g. http://gpu-box:8000/v1 (default: $TBT_ENGINE_URL); "
                         "its model appears in the picker as vllm:<name>")
    ap.add_argument("--engine-model", default=os.environ.get("TBT_ENGINE_MODEL"),
                    help="the model name the engine serves (default: $TBT_ENGINE_MODEL)")
    ap.add_argument("--engine-folder", default=os.environ.get("TBT_ENGINE_FOLDER"),
                    help="a local folder with that model's tokenizer and config.json (default: $TBT_ENGINE_FOLDER, "
                         "else the model name when it is a folder on this machine)")
    ap.add_argument("--engine-kv-events", default=os.environ.get("TBT_ENGINE_KV_EVENTS"),
                    help="an address this server binds to receive the engine's KV cache events, e.g. "
                         "tcp://127.0.0.1:5557 (default: $TBT_ENGINE_KV_EVENTS); start vLLM with "
                         "--enable-prefix-caching --kv-events-config '{\"enable_kv_cache_events\": true, "
                         "\"publisher\": \"zmq\", \"endpoint\": \"<the same address>\", \"topic\": \"kv\"}'; "
                         "the Paged KV blocks view then draws the engine's own blocks")
    ap.add_argument("--engine-processed-url", default=os.environ.get("TBT_ENGINE_PROCESSED_URL"),
                    help="the base URL of an engine serving the same model started with --logprobs-mode "
                         "processed_logprobs (default: $TBT_ENGINE_PROCESSED_URL); it may be --engine-url itself, "
                         "whose steps ask T = 0 with no penalty, where processed and raw are the same numbers; the "
                         "candidates chart then shows the engine's own post-sampler distribution beside the app's")
    ap.add_argument("--model-process", choices=["auto", "on", "off"],
                    default={"1": "on", "0": "off"}.get(os.environ.get("TBT_MODEL_PROCESS", ""), "auto"),
                    help="each local model's core in a process of its own (its weights, caches, scheduler and "
                         "sampler), the page in this one, so a class uses both cores; auto (default): on when listening beyond "
                         "this machine (a class's server), off on 127.0.0.1; $TBT_MODEL_PROCESS=1 / 0 for on / off")
    args = ap.parse_args(argv)
    if args.engine_kv_events and not args.engine_url:
        raise SystemExit("--engine-kv-events needs --engine-url (the engine whose events they are)")
    if args.engine_processed_url and not args.engine_url:
        raise SystemExit("--engine-processed-url needs --engine-url (the engine model it samples for)")
    reach = Reach(checked_public_url(args.public_url))  # (refused before the model loads)
    logging.basicConfig(level=logging.INFO)
    models = registry(args.model, cores_of_their_own(args.model_process, args.host))
    models.preload()  # load once, at start-up, before the first user arrives
    compare(SUBWORD_EXAMPLE)  # the tokenizers view's tokenizers, read now too
    if args.engine_url:
        add_engine(models, args.engine_url, args.engine_model, args.engine_folder, args.engine_kv_events,
                   args.engine_processed_url)
    # the server's registries, made here and handed to the page: the models, every user's session, the rooms
    launch(build(App(models, SessionStore(), Rooms(), reach), models.default), args.host, args.port)


def cores_of_their_own(choice: str, host: str | None) -> bool:
    """Whether the models' cores run in processes of their own: `choice` on / off, or auto: on for a class's server
    (one that listens beyond this machine), off for one person's (the page on 127.0.0.1: one process, less memory)."""
    if choice != "auto":
        return choice == "on"
    return (host or os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1") not in ("127.0.0.1", "localhost", "::1")


def registry(model: str | None, processes: bool = False) -> ModelRegistry:
    """The operator's one model for everyone (--model), else the page's language chooses: Chinese pages start on
    Gemma 3 270M (one token per character; it writes Chinese) when it is installed, the others on SmolLM2.
    With `processes`, each local model's core runs in a process of its own (--model-process)."""
    if model:
        return ModelRegistry(model, processes=processes)
    return ModelRegistry(DEFAULT_MODEL, by_language={"zh": "gemma3-270m"} if "gemma3-270m" in available_models() else {},
                         processes=processes)


def add_engine(models: ModelRegistry, url: str, name: str | None, folder: str | None,
               kv_events: str | None = None, processed_url: str | None = None) -> None:
    """Offer an engine's model beside the local ones; the operator's command line is the only source of the URL,
    of the address its KV cache events come to (bound here before the engine's first event is wanted) and of the
    engine whose processed log-probabilities the candidates chart shows (the same client when it is the same URL)."""
    if not name:
        raise SystemExit("--engine-url needs --engine-model (the name the engine serves the model under)")
    folder = folder or name
    if not os.path.isdir(folder):
        raise SystemExit(f"--engine-folder: {folder} is not a folder; give the model's tokenizer and config.json folder")
    lm = load_engine_model(EngineClient(url, name), folder)
    if kv_events:
        try:
            lm.kv_events = KVEventSubscriber(kv_events)
        except ValueError as err:  # an address in use, not this machine's, not tcp://host:port
            raise SystemExit(f"--engine-kv-events: {err}") from None
        logging.info("Engine KV cache events: listening on %s", kv_events)
    if processed_url:
        same = processed_url.rstrip("/") == lm.client.url
        lm.processed = lm.client if same else EngineClient(processed_url, name)
        logging.info("Engine processed log-probabilities from %s", processed_url)
    models.add_engine(lm)
    logging.info("Engine model %s at %s (shape from %s)", lm.name, url, lm.config_source)


if __name__ == "__main__":
    main()
