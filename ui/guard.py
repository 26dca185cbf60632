"""What keeps one user from slowing the class: a fair share of the shared queue, and a clear answer to events
that do not exist. Gradio's queue has one size for everybody (128): without this, one session could fill it."""
from __future__ import annotations

import datetime
import json
import logging
import re
import threading
import time

import gradio as gr
from starlette.middleware import Middleware
from gradio.exceptions import ComponentProcessingError, InvalidPathError

from model.runtime import return_freed_memory
from ui.strings import LANG_INPUT, LANGS, Refusal, t

log = logging.getLogger("token-by-token")
# The queue's places, and who may take them. One address may be a whole class behind a school's NAT (80 students,
# README "Limits"), so its budgets are a class's; a session hash is invented at will by a script, so the share per
# hash only keeps one page from queueing clicks it has not seen answered, and every budget that protects the class
# counts per address (the connecting address; behind a proxy the one uvicorn's ProxyHeadersMiddleware takes from
# X-Forwarded-For, which it trusts only from FORWARDED_ALLOW_IPS: 127.0.0.1 and ::1 unless the operator says more).
QUEUE_SIZE = 400  # events waiting, for everybody (Gradio's max_size)
STEP_ROOM = 120  # of those, places only steps may take (Start, Next token, ...): a flood of anything else leaves them
WAITING_PER_SESSION = 8  # events of one session waiting in the queue at once (a page has 2-3; Play 1)
WAITING_PER_ADDRESS = 240  # events of one address waiting at once: a class of 80, three each
SLOW_PER_ADDRESS = 16  # slow events of one kind from one address, waiting or running (a fifth of a class at once)
# A whole-text run (lane `runs`: the lens, beams, the race, self-consistency, ...) holds one of the lane's two places
# for seconds: one address's runs are bounded tighter, so another address's run waits behind at most six of them.
# An import of the largest valid trace holds one of the import lane's two places for about 30 s: two per address,
# so another address's import waits behind about one pair of them, not eight (bench.import_wait --served).
SLOW_PER_ADDRESS_OF = {"runs": 6, "import": 2}
STEP_LANES = ("model", "play", "ahead")  # a step and what the page asks with it (ui/events.py LANES)
SLOW_LANES = ("runs", "measure", "import", "lesson", "bundle")  # a session may have one of each kind waiting or running


def address(request) -> str | None:
    """The address a request came from (a Starlette request or Gradio's gr.Request): a school's NAT, the class."""
    client = getattr(request, "client", None)
    return getattr(client, "host", None)


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


def said_refusal(refusal: Refusal, lang: str | None) -> str:
    """`refusal` in `lang`; with no language known, in each, English first."""
    return refusal.text(lang) if lang in LANGS else " ".join(refusal.text(each) for each in LANGS)


class UnsaidRefusal(gr.Error):
    """A refusal raised where the page's language is not known (a component's preprocess, as the named_range
    patch's range check): plain_preprocess_data says it in the language of the event's inputs."""

    def __init__(self, refusal: Refusal):
        self.refusal = refusal
        super().__init__(said_refusal(refusal, None))


def fair_push(demo: gr.Blocks, push):
    """The queue's `push`, in front of Gradio's (the fair_queue patch of ui/gradio_patches.py puts it in place):
    refuse, before it is queued, an event that does not exist or runs only in the browser (422, one log line),
    and (503, with the reason, one log line) an event beyond its session's, its address's or its kind's share:
    WAITING_PER_SESSION per session, WAITING_PER_ADDRESS per address, one slow event of a kind per session and
    SLOW_PER_ADDRESS per address, and anything but a step once only STEP_ROOM places are left."""
    queue = demo._queue

    async def fair_push(body, request, username):
        fn = demo.fns.get(body.fn_index) if isinstance(body.fn_index, int) else None
        if fn is None or fn.fn is None:  # a made-up number, or an event that is the page's script only
            log.info("refused event %r from %s: no such event", body.fn_index, address(request))
            return False, said("no_such_event", None), "validator_error"
        lang = event_lang(fn, body.data)
        refused = share_refused(queue, fn, body.session_hash, address(request), lang)
        if refused is not None:
            log.info("refused %s from %s: %s", fn.api_name, address(request), refused)
            return False, refused, "queue_full"
        return await push(body, request, username)

    return fair_push


def share_refused(queue, fn, session_hash, client, lang) -> str | None:
    """Why an event of `fn` from session `session_hash` at address `client` may not join `queue` now, or None."""
    waiting = [e for lane in list(queue.event_queue_per_concurrency_id.values()) for e in list(lane.queue)]
    running = [e for job in list(queue.active_jobs) for e in job or ()]
    mine = sum(1 for e in waiting if e.session_hash == session_hash)
    if mine >= WAITING_PER_SESSION:
        return said("queue_busy", lang, n=mine)
    ours = sum(1 for e in waiting if address(e.request) == client)
    if ours >= WAITING_PER_ADDRESS:
        return said("queue_network_busy", lang, n=ours)
    if fn.concurrency_id not in STEP_LANES and len(waiting) >= QUEUE_SIZE - STEP_ROOM:
        return said("queue_steps_only", lang)
    if fn.concurrency_id in SLOW_LANES:
        kind = [e for e in waiting + running if e.fn.concurrency_id == fn.concurrency_id]
        if any(e.session_hash == session_hash for e in kind):
            return said("queue_slow_busy", lang)
        ours_of_kind = sum(1 for e in kind if address(e.request) == client)
        if ours_of_kind >= SLOW_PER_ADDRESS_OF.get(fn.concurrency_id, SLOW_PER_ADDRESS):
            return said("queue_network_slow_busy", lang, n=ours_of_kind)
    return None


def plain_validate_inputs(check):
    """Blocks' `validate_inputs`, in front of Gradio's `check` (the plain_input_check patch of
    ui/gradio_patches.py): too few or too many inputs say how many, not Gradio's list of component objects (their
    reprs name classes and memory addresses)."""

    def validate_inputs(block_fn, inputs):
        try:
            check(block_fn, inputs)
        except ValueError:
            # inputs that do not line up with the event's say no language: both
            log.info("refused %s: %s inputs sent, %s taken", block_fn.api_name, len(inputs), len(block_fn.inputs))
            raise gr.Error(said("input_count", None, expected=len(block_fn.inputs), sent=len(inputs)),
                           print_exception=False) from None

    return validate_inputs


# The routes that name an event: the queued call, and the direct ones (run, api) that Gradio answers only for an
# event outside the queue, which here is one that runs only in the page's script (every server event is queued).
CALL = re.compile(r"^/gradio_api/(?:call/(?:v2/)?|run/|api/)([^/]+)/?$")
HEARTBEAT = re.compile(r"^/gradio_api/heartbeat/([^/]+)/?$")


class Gate:
    """In front of Gradio's routes: a call to an event name the API does not have gets 404, "No such event."
    (Gradio's own routes answer 500 with a traceback in the log: a made-up name, or /run/predict with a made-up
    number; and an event that runs only in the page's script is called and fails), and a page's heartbeat tells
    the store it is a real page."""

    def __init__(self, inner, names: set[str], on_heartbeat):
        self.inner, self.names, self.on_heartbeat = inner, names, on_heartbeat

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            path = scope.get("path", "")
            call = CALL.match(path)
            if call and call.group(1) not in self.names and scope.get("method") == "POST":
                log.info("refused call to %r: no such event", call.group(1)[:80])
                body = json.dumps({"detail": said("no_such_event", None)}).encode()
                await send({"type": "http.response.start", "status": 404,
                            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            beat = HEARTBEAT.match(path)
            if beat:
                self.on_heartbeat(beat.group(1))
        await self.inner(scope, receive, send)


def gate(demo: gr.Blocks, on_heartbeat) -> Middleware:
    """A Gate as the app's middleware (given to the app when launch makes it: in place from the first request)."""
    names = {fn.api_name for fn in demo.fns.values()  # a hidden event's generated name (false_12, unload) is not
             if isinstance(fn.api_name, str) and fn.api_visibility != "private" and fn.fn is not None}  # the API's
    return Middleware(Gate, names=names, on_heartbeat=on_heartbeat)


SERVER_PATH = re.compile(r"(?<![\w.])/(?:[\w.\-]+/)+[\w.\-]*")


def plain_preprocess_data(preprocess):
    """Blocks' `preprocess_data`, in front of Gradio's `preprocess` (the plain_preprocess patch of
    ui/gradio_patches.py): an input Gradio cannot read answers with a plain message: a file the user did not
    upload is refused without naming its path on the server, a value of the wrong type says which input and
    type it wanted (Gradio's own message), with any server path taken out, and a refusal raised in a component's
    preprocess (UnsaidRefusal: a value out of its slider's range) is said in the event's language."""

    async def preprocess_data(block_fn, inputs, *args, **kwargs):
        try:
            return await preprocess(block_fn, inputs, *args, **kwargs)
        except UnsaidRefusal as err:  # (logged once, as every gr.Error, by one_line_process_api)
            raise gr.Error(said_refusal(err.refusal, event_lang(block_fn, inputs))) from None
        except gr.Error:
            raise
        except InvalidPathError:
            log.info("refused %s: a file not uploaded here", block_fn.api_name)
            raise gr.Error(said("not_uploaded", event_lang(block_fn, inputs)), print_exception=False) from None
        except ComponentProcessingError as err:
            log.info("refused %s: %s", block_fn.api_name, SERVER_PATH.sub("…", str(err))[:200])
            raise gr.Error(SERVER_PATH.sub("…", str(err)), print_exception=False) from None

    return preprocess_data


def one_line_process_api(demo: gr.Blocks, process):
    """Blocks' `process_api`, in front of Gradio's `process` (the one_line_refusals patch of
    ui/gradio_patches.py): every refused input writes one line to the log, not Gradio's traceback: a refusal
    (gr.Error, Gradio's own too, as a dropdown's value not among its choices) is logged as one line and sent as it
    is; anything else that escapes a handler is a bug: its traceback is logged once, and the page is told only its
    kind, in its language (Gradio would send the exception's own text, as "unhashable type: 'list'")."""

    async def process_api(block_fn, inputs, *args, **kwargs):
        fn = demo.fns.get(block_fn) if isinstance(block_fn, int) else block_fn
        name = getattr(fn, "api_name", block_fn)
        try:
            return await process(block_fn, inputs, *args, **kwargs)
        except gr.Error as err:
            if err.print_exception:
                log.info("refused %s: %s", name, str(err.message)[:200])
                err.print_exception = False
            raise
        except Exception as err:
            log.exception("event %s failed", name)
            lang = event_lang(fn, inputs)
            raise gr.Error(said("bug", lang, kind=type(err).__name__), print_exception=False) from None

    return process_api


PAGE_GONE_S = 60  # a closed page's Gradio state is forgotten this long after its last event (its unload runs first)
FORGET_EVERY_S = 30


def forget_gone_sessions(demo: gr.Blocks, is_page, idle_s: float, closed_s: float = PAGE_GONE_S) -> int:
    """Forget Gradio's state of sessions that are gone; how many were forgotten.

    Gradio (6.31, state_holder.py) keeps a SessionState per session hash it has seen (a copy of every block's
    config: the most memory a fresh hash costs) until 10,000 others have come after it, and marks a closed page's
    "to be deleted in an hour" without deleting it; the queue keeps each hash's undelivered messages (up to 2,000
    hashes). Forgotten here: a page's whose heartbeat has ended (closed_s after its last event), and a hash's that
    never had a page (`is_page` false: a script) idle_s after its last event; never one with an event waiting or
    running. The freed heap is handed back to the system.
    """
    app, queue = demo.server_app, demo._queue
    holder = app.state_holder
    busy = {e.session_hash for lane in list(queue.event_queue_per_concurrency_id.values()) for e in list(lane.queue)}
    busy |= {e.session_hash for job in list(queue.active_jobs) for e in job or ()}
    now, gone = datetime.datetime.now(), []
    for key, used in list(holder.time_last_used.items()):
        state = holder.session_data.get(key)
        idle = (now - used).total_seconds()
        if key in busy or (state is not None and not (state.is_closed and idle > closed_s)
                           and (is_page(key) or idle <= idle_s)):
            continue
        gone.append(key)
    for key in gone:
        holder.delete_state(key)  # (a State's delete callback runs)
        with holder.lock:
            holder.session_data.pop(key, None)
            holder.time_last_used.pop(key, None)
        queue.pending_messages_per_session.pop(key, None)
        if not queue.pending_event_ids_session.get(key):
            queue.pending_event_ids_session.pop(key, None)
    if gone:
        return_freed_memory()
    return len(gone)


def keep_forgetting(demo: gr.Blocks, is_page, idle_s: float, every_s: float = FORGET_EVERY_S) -> threading.Thread:
    """forget_gone_sessions every `every_s` seconds while the server runs (a daemon thread)."""
    def run():
        while demo.is_running:
            time.sleep(every_s)
            try:
                if demo.is_running:
                    n = forget_gone_sessions(demo, is_page, idle_s)
                    if n:
                        log.info("forgot the Gradio state of %d sessions that are gone", n)
            except Exception:  # noqa: BLE001  (never stop forgetting for one bad pass)
                log.exception("forgetting gone sessions failed")

    thread = threading.Thread(target=run, name="tbt-forget-gone", daemon=True)
    thread.start()
    return thread
