"""Serving the page: the queue sized for a 2-core machine, the page's assets, the routes that are not events."""
from __future__ import annotations

import os
import time

import gradio as gr
import httpx
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from ui import gradio_patches, play
from model.decoding.trace import MAX_TRACE_BYTES
from ui.guard import gate, keep_forgetting
from ui.lanes import QUEUE_SIZE
from ui.protocol import JS_DIR, SCRIPT_ROUTE, page_assets


def launch(demo: gr.Blocks, host: str | None, port: int | None, prevent_thread_lock: bool = False, store=None,
           **kwargs):
    """Queue sized for a 2-core machine (one model step at a time, a bounded wait list), then serve.

    host / port None: Gradio's own choice, which honours GRADIO_SERVER_NAME and GRADIO_SERVER_PORT.
    `store`: the session store, told which sessions have a page connected (their heartbeat).
    """
    # status_update_rate: the queue's place of each waiting event is sent every QUEUE_STATUS_S, not to every
    # waiting event each time any event starts ("auto"): no page shows it (every event's progress is hidden), and
    # at a class's saturation that was about 16 extra messages per step (docs/performance.md, issue 25)
    demo.queue(max_size=QUEUE_SIZE, api_open=False, default_concurrency_limit=1, status_update_rate=QUEUE_STATUS_S)
    # Gradio's own code changed where this app needs it (what each change does and why: ui/gradio_patches.py):
    # work done for every event that this app never uses taken out, the guard (ui/guard.py) in front of the
    # queue and the Blocks, in place from the first request
    gradio_patches.patch_app(demo)
    # the page's script and Play's word are routes of the app from its making, before the server takes a request
    # (added after launch, a page asked for in the first instant could get 404 for its script)
    own = APIRouter()
    play.add_route(own, getattr(demo, "tbt_models", None))  # (app.build leaves the registry there)
    add_script_route(own)
    app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
    app_kwargs["routes"] = [*own.routes, *app_kwargs.get("routes", ())]
    store = store or getattr(demo, "tbt_store", None)  # (app.build leaves it there)
    app_kwargs["middleware"] = [*app_kwargs.get("middleware", ()),
                                gate(demo, store.connected if store is not None else (lambda key: None))]
    try:
        served = demo.launch(app_kwargs=app_kwargs, server_name=host, server_port=port, **page_assets(), show_error=True,
                             theme=gr.themes.Default(), run_history=False,  # run history: rewritten every step
                             max_file_size=MAX_TRACE_BYTES,  # an upload larger than a trace is refused as it arrives
                             prevent_thread_lock=True, **kwargs)
    except ValueError as slow:  # Gradio's own check of the page gave up: wait for the page ourselves
        if not (str(slow).startswith("When localhost is not accessible") and demo.is_running):
            raise
        _wait_for_page(demo)
        served = (demo.server_app, demo.local_url, None)
    reach = getattr(demo, "tbt_reach", None)  # (app.build leaves it there): a room's link needs the port chosen
    if reach is not None:
        reach.listening(demo.server_name, demo.server_port)
    if store is not None:  # Gradio's state of sessions that are gone: forgotten (what it holds is not given back)
        keep_forgetting(demo, store.is_page, store.unconnected_seconds)
    if not prevent_thread_lock:
        demo.block_thread()
    return served


QUEUE_STATUS_S = 5.0  # seconds between the queue's place messages to the events still waiting
PAGE_WAIT_S = 120  # the first page on a loaded 2-core machine: seconds, not the 3 Gradio allows


def _wait_for_page(demo: gr.Blocks, wait_s: float = PAGE_WAIT_S) -> None:
    """Wait until demo's server, already running, answers its page; stop it and raise if it does not in wait_s.

    Gradio's launch (6.31, blocks.py) asks for the page once with a 3 s time-out (networking.url_ok) after the
    server is up, and on a time-out raises "When localhost is not accessible, a shareable link must be created"
    with the server left running and only the share link, which we never make, still to do. On a machine busy
    with other work the first page (its whole config) takes longer than that: the test suite saw every server of
    a module fail so. Here the same question is asked with a time-out that fits such a machine.
    """
    url, deadline, last = demo.local_url, time.monotonic() + wait_s, None
    while time.monotonic() < deadline:
        try:
            answer = httpx.head(url, timeout=max(1.0, deadline - time.monotonic()), trust_env=False)
            if answer.status_code < 400:
                return
            last = f"HTTP {answer.status_code}"
        except httpx.HTTPError as error:
            last = repr(error)
        time.sleep(0.5)
    demo.close()
    raise RuntimeError(f"The server at {url} did not answer its page within {wait_s:.0f} s ({last}).")


def add_script_route(app) -> None:
    """The page's modules, assets/js/<name>.js, at SCRIPT_ROUTE<name>.js (page_assets loads the entry from there).

    Cache-Control no-cache: the browser asks again on each load (an unchanged file is a 304 on its ETag), so it
    never runs a cached module beside a newer one that imports from it. Only the files of JS_DIR, by name.
    """
    modules = {path.name: path for path in JS_DIR.glob("*.js")}

    def script(name: str, request: Request):
        path = modules.get(name)
        if path is None:
            return Response(status_code=404)
        answer = FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "no-cache"},
                              stat_result=os.stat(path))  # (its ETag and Last-Modified set now)
        if request.headers.get("if-none-match") == answer.headers["etag"]:  # (Starlette's FileResponse does not)
            return Response(status_code=304, headers={"ETag": answer.headers["etag"], "Cache-Control": "no-cache"})
        return answer

    app.add_api_route(SCRIPT_ROUTE + "{name}", script, methods=["GET"], include_in_schema=False)
