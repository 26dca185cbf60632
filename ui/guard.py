"""What keeps one user from slowing the class: a fair share of the shared queue, and a clear answer to events
that do not exist. Gradio's queue has one size for everybody (128): without this, one session could fill it."""
from __future__ import annotations

import json
import logging
import re

import gradio as gr
from gradio.exceptions import ComponentProcessingError, InvalidPathError

from ui.strings import LANG_INPUT, LANGS, t

log = logging.getLogger("token-by-token")
WAITING_PER_SESSION = 8  # events of one session waiting in the queue at once (a page has 2-3; Play 1)
SLOW_LANES = ("measure", "import", "lesson", "bundle")  # a session may have one of each kind waiting or running


def event_lang(block_fn, inputs) -> str | None:
    """The language an event's inputs name (its page-language input), or None: it has none, or the inputs do not
    line up with the event's (too few or too many), or the value is not a language."""
    if block_fn is None or not isinstance(inputs, list) or len(inputs) != len(block_fn.inputs):
        return None
    lang = next((v for c, v in zip(block_fn.inputs, inputs) if getattr(c, "elem_id", None) == LANG_INPUT), None)
    return lang if lang in LANGS else None


def said(key: str, lang: str | None, **fmt) -> str:
    """A refusal of the guard's (a key of PAGE) in `lang`; with no language known, in each, English first."""
    return t(key, lang, **fmt) if lang in LANGS else " ".join(t(key, each, **fmt) for each in LANGS)


def queued_events(queue):
    """Every event waiting in `queue` or running now."""
    for lane in list(queue.event_queue_per_concurrency_id.values()):
        yield from list(lane.queue)
    for job in list(queue.active_jobs):
        yield from job or ()


def fair_queue(demo: gr.Blocks) -> None:
    """Refuse, before it is queued, an event that does not exist (422, no traceback), one more event from a
    session that already has WAITING_PER_SESSION waiting, and a second slow one of the same kind (503)."""
    queue = demo._queue
    push = queue.push

    async def fair_push(body, request, username):
        fn = demo.fns.get(body.fn_index) if isinstance(body.fn_index, int) else None
        if fn is None:
            return False, said("no_such_event", None), "validator_error"
        lang = event_lang(fn, body.data)
        mine = [e for e in queued_events(queue) if e.session_hash == body.session_hash]
        waiting = sum(1 for lane in queue.event_queue_per_concurrency_id.values() for e in list(lane.queue)
                      if e.session_hash == body.session_hash)
        if waiting >= WAITING_PER_SESSION:
            return False, said("queue_busy", lang, n=waiting), "queue_full"
        if fn.concurrency_id in SLOW_LANES and any(e.fn.concurrency_id == fn.concurrency_id for e in mine):
            return False, said("queue_slow_busy", lang), "queue_full"
        return await push(body, request, username)

    queue.push = fair_push


def plain_input_check(demo: gr.Blocks) -> None:
    """Too few or too many inputs: say how many, not Gradio's list of component objects (their reprs name
    classes and memory addresses)."""
    check = demo.validate_inputs

    def validate_inputs(block_fn, inputs):
        try:
            check(block_fn, inputs)
        except ValueError:
            # inputs that do not line up with the event's say no language: both
            raise gr.Error(said("input_count", None, expected=len(block_fn.inputs), sent=len(inputs)),
                           print_exception=False) from None

    demo.validate_inputs = validate_inputs


CALL = re.compile(r"^/gradio_api/call/(?:v2/)?([^/]+)/?$")
HEARTBEAT = re.compile(r"^/gradio_api/heartbeat/([^/]+)/?$")


class Gate:
    """In front of Gradio's routes: a call to an event name the API does not have gets 404 (Gradio's own
    route answers 500 with a traceback in the log), and a page's heartbeat tells the store it is a real page."""

    def __init__(self, inner, names: set[str], on_heartbeat):
        self.inner, self.names, self.on_heartbeat = inner, names, on_heartbeat

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            path = scope.get("path", "")
            call = CALL.match(path)
            if call and call.group(1) not in self.names and scope.get("method") == "POST":
                body = json.dumps({"detail": said("no_such_event", None)}).encode()
                await send({"type": "http.response.start", "status": 404,
                            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            beat = HEARTBEAT.match(path)
            if beat:
                self.on_heartbeat(beat.group(1))
        await self.inner(scope, receive, send)


def gate(demo: gr.Blocks, on_heartbeat) -> None:
    """Put a Gate in front of the running app's middleware stack (Starlette builds it on the first request and
    takes no new middleware after that; the stack itself can still be wrapped)."""
    app = demo.app
    names = {fn.api_name for fn in demo.fns.values() if isinstance(fn.api_name, str)}
    app.middleware_stack = Gate(app.middleware_stack or app.build_middleware_stack(), names, on_heartbeat)


SERVER_PATH = re.compile(r"(?<![\w.])/(?:[\w.\-]+/)+[\w.\-]*")


def plain_preprocess(demo: gr.Blocks) -> None:
    """An input Gradio cannot read answers with a plain message: a file the user did not upload is refused
    without naming its path on the server, and a value of the wrong type says which input and type it wanted
    (Gradio's own message), with any server path taken out."""
    preprocess = demo.preprocess_data

    async def preprocess_data(block_fn, inputs, *args, **kwargs):
        try:
            return await preprocess(block_fn, inputs, *args, **kwargs)
        except gr.Error:
            raise
        except InvalidPathError:
            raise gr.Error(said("not_uploaded", event_lang(block_fn, inputs)), print_exception=False) from None
        except ComponentProcessingError as err:
            raise gr.Error(SERVER_PATH.sub("…", str(err)), print_exception=False) from None

    demo.preprocess_data = preprocess_data
