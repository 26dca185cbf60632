"""Serving the page: the queue sized for a 2-core machine, the page's assets, the routes that are not events."""
from __future__ import annotations

import os

import gradio as gr
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from ui import play
from model.trace import MAX_TRACE_BYTES
from ui.guard import fair_queue, gate, plain_input_check, plain_preprocess
from ui.protocol import JS_DIR, SCRIPT_ROUTE, page_assets


def launch(demo: gr.Blocks, host: str | None, port: int | None, prevent_thread_lock: bool = False, store=None,
           **kwargs):
    """Queue sized for a 2-core machine (one model step at a time, a bounded wait list), then serve.

    host / port None: Gradio's own choice, which honours GRADIO_SERVER_NAME and GRADIO_SERVER_PORT.
    `store`: the session store, told which sessions have a page connected (their heartbeat).
    """
    demo.queue(max_size=128, api_open=False, default_concurrency_limit=1)
    served = demo.launch(server_name=host, server_port=port, **page_assets(), show_error=True,
                         theme=gr.themes.Default(), run_history=False,  # run history: rewritten every step
                         max_file_size=MAX_TRACE_BYTES,  # an upload larger than a trace is refused as it arrives
                         prevent_thread_lock=True, **kwargs)
    play.add_route(demo.app)
    add_script_route(demo.app)
    fair_queue(demo)
    plain_input_check(demo)
    plain_preprocess(demo)
    store = store or getattr(demo, "tbt_store", None)  # (app.build leaves it there)
    gate(demo, store.connected if store is not None else (lambda key: None))
    if not prevent_thread_lock:
        demo.block_thread()
    return served


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
