"""What keeps one user from slowing the class: a fair share of the shared queue, and a clear answer to events
that do not exist. Gradio's queue has one size for everybody (128): without this, one session could fill it."""
from __future__ import annotations

import json
import logging
import re

import gradio as gr
from gradio.exceptions import ComponentProcessingError, InvalidPathError

log = logging.getLogger("token-by-token")
WAITING_PER_SESSION = 8  # events of one session waiting in the queue at once (a page has 2-3; Play 1)
SLOW_LANES = ("measure", "import", "bundle")  # a session may have one of each kind waiting or running
BUSY = ("You already have {n} requests waiting; wait for them to finish. 你已有 {n} 个请求在等待，请等它们完成。")
SLOW_BUSY = ("Your previous request of this kind is still running; wait for it to finish. "
             "你上一个同类请求还在进行，请等它完成。")
NO_SUCH_EVENT = "No such event. 没有这个事件。"


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
            return False, NO_SUCH_EVENT, "validator_error"
        mine = [e for e in queued_events(queue) if e.session_hash == body.session_hash]
        waiting = sum(1 for lane in queue.event_queue_per_concurrency_id.values() for e in list(lane.queue)
                      if e.session_hash == body.session_hash)
        if waiting >= WAITING_PER_SESSION:
            return False, BUSY.format(n=waiting), "queue_full"
        if fn.concurrency_id in SLOW_LANES and any(e.fn.concurrency_id == fn.concurrency_id for e in mine):
            return False, SLOW_BUSY, "queue_full"
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
            raise gr.Error(f"This event takes {len(block_fn.inputs)} inputs; {len(inputs)} were sent. "
                           f"这个事件需要 {len(block_fn.inputs)} 个输入，收到 {len(inputs)} 个。",
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
                body = json.dumps({"detail": NO_SUCH_EVENT}).encode()
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


NOT_UPLOADED = ("That file was not uploaded here: choose it with the Import button. "
                "这个文件不是上传到这里的：请用“导入”按钮选择它。")
SERVER_PATH = re.compile(r"(?<![\w.])/(?:[\w.\-]+/)+[\w.\-]*")


def plain_preprocess(demo: gr.Blocks) -> None:
    """An input Gradio cannot read answers with a plain message: a file the user did not upload is refused
    without naming its path on the server, and a value of the wrong type says which input and type it wanted
    (Gradio's own message), with any server path taken out."""
    preprocess = demo.preprocess_data

    async def preprocess_data(*args, **kwargs):
        try:
            return await preprocess(*args, **kwargs)
        except gr.Error:
            raise
        except InvalidPathError:
            raise gr.Error(NOT_UPLOADED, print_exception=False) from None
        except ComponentProcessingError as err:
            raise gr.Error(SERVER_PATH.sub("…", str(err)), print_exception=False) from None

    demo.preprocess_data = preprocess_data
