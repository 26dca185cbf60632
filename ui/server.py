"""Serving the page: the queue sized for a 2-core machine, the page's assets, the routes that are not events."""
from __future__ import annotations

import os
import time

import gradio as gr
import httpx
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from ui import play
from model.decoding.trace import MAX_TRACE_BYTES
from ui.guard import QUEUE_SIZE, fair_queue, gate, keep_forgetting, one_line_refusals, plain_input_check, plain_preprocess
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
    lighter_events(demo)
    # the page's script and Play's word are routes of the app from its making, before the server takes a request
    # (added after launch, a page asked for in the first instant could get 404 for its script)
    own = APIRouter()
    play.add_route(own)
    add_script_route(own)
    app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
    app_kwargs["routes"] = [*own.routes, *app_kwargs.get("routes", ())]
    # and the guard is in place from the first request too
    fair_queue(demo)
    plain_input_check(demo)
    plain_preprocess(demo)
    one_line_refusals(demo)
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
    if store is not None:  # Gradio's state of sessions that are gone: forgotten (what it holds is not given back)
        keep_forgetting(demo, store.is_page, store.unconnected_seconds)
    if not prevent_thread_lock:
        demo.block_thread()
    return served


QUEUE_STATUS_S = 5.0  # seconds between the queue's place messages to the events still waiting
ANALYTICS_EVENTS = 200  # events Gradio's queue keeps for its monitoring summary (its default: 10,000)


class _NoBackendSwitch:
    """gradio.utils.MatplotlibBackendMananger's stand-in where matplotlib is not installed: nothing to switch."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def lighter_events(demo: gr.Blocks) -> None:
    """Work Gradio (6.31) does for every event that this app never uses, taken out of a step (issue 25's profile):

    - the queue's monitoring summary (a pandas DataFrame of up to the last 10,000 events, grouped and percentiled
      after every event; only Gradio's /monitoring page reads it, which this app never opens): computed at most
      once per 10**9 events, over the last ANALYTICS_EVENTS. At 10,000 events it cost milliseconds per event.
    - `import matplotlib` twice per event (around each call, to switch its backend): where it is not installed,
      each is a failed search of the whole import path.
    - a worker thread for each input's preprocess and each output's postprocess (a step: 11 inputs and 3 outputs),
      and for the summary above: about 0.1 ms of CPU each on an idle machine, more under load, for functions that
      check a number or pass a string on. Those of INLINE_COMPONENTS run in the event loop (see `_inline`).
    """
    queue = demo._queue
    queue.ANAYLTICS_CACHE_FREQUENCY = 10**9  # (Gradio's spelling)
    queue.ANALYTICS_MAX_EVENTS = ANALYTICS_EVENTS
    import importlib.util

    from gradio import blocks, queueing, utils

    if importlib.util.find_spec("matplotlib") is None:
        utils.MatplotlibBackendMananger = _NoBackendSwitch
    if not isinstance(blocks.anyio, _InlineAnyio):  # (once per process: a test may launch many servers)
        blocks.anyio = _InlineAnyio(blocks.anyio)
    if not getattr(queueing.run_sync, "tbt_inline", False):
        queueing.run_sync = _inline_or(queueing.run_sync)


# Components whose preprocess / postprocess only check or pass on a small value (a number, a choice, a string):
# run in the event loop instead of a worker thread. Not files, images or data frames.
INLINE_COMPONENTS = (gr.Slider, gr.Number, gr.Radio, gr.Dropdown, gr.Checkbox, gr.Textbox, gr.HTML, gr.Markdown,
                     gr.Button, gr.State)


def _inline(func) -> bool:
    """True for a call Gradio would send to a worker thread that is cheaper run where it is: a component of
    INLINE_COMPONENTS preprocessing or postprocessing its value, or the queue's monitoring summary (now a cached
    answer, lighter_events)."""
    owner, name = getattr(func, "__self__", None), getattr(func, "__name__", "")
    if name in ("preprocess", "postprocess"):
        return isinstance(owner, INLINE_COMPONENTS)
    return name == "compute_analytics_summary"


def _inline_or(run_sync):
    """anyio.to_thread.run_sync, but a call `_inline` names runs at once, in the caller's thread."""
    async def run(func, *args, **kwargs):
        if _inline(func):
            return func(*args)
        return await run_sync(func, *args, **kwargs)

    run.tbt_inline = True
    return run


class _InlineAnyio:
    """gradio.blocks' `anyio`, whose `to_thread.run_sync` is `_inline_or` the real one; everything else anyio's."""

    def __init__(self, real):
        self._real = real
        self.to_thread = _InlineToThread(real.to_thread)

    def __getattr__(self, name):
        return getattr(self._real, name)


class _InlineToThread:
    def __init__(self, real):
        self._real = real
        self.run_sync = _inline_or(real.run_sync)

    def __getattr__(self, name):
        return getattr(self._real, name)


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
