"""What keeps one user from slowing the class: a fair share of the shared queue, and a clear answer to events
that do not exist. Gradio's queue has one size for everybody (128): without this, one session could fill it."""
from __future__ import annotations

import datetime
import json
import logging
import math
import re
import threading
import time

import gradio as gr
import orjson
import pydantic
from gradio import route_utils
from gradio.exceptions import ComponentProcessingError, InvalidPathError
from starlette.middleware import Middleware
from starlette.requests import Request

from model.runtime import return_freed_memory
from ui.lanes import (QUEUE_SIZE, SLOW_LANES, SLOW_PER_ADDRESS, SLOW_PER_ADDRESS_OF, STEP_LANES, STEP_ROOM,
                      WAITING_PER_ADDRESS, WAITING_PER_SESSION)
from ui.strings import LANG_INPUT, LANGS, Refusal, t

log = logging.getLogger("token-by-token")
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


class SaidRefusal(gr.Error):
    """A refusal already said in the page's words (too many inputs): plain_preprocess_data passes it on as it is."""

    def __init__(self, message: str):
        super().__init__(message, print_exception=False)


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
        miscounted = api_miscount(fn, body)
        if miscounted is not None:
            log.info("refused %s from %s: %s values sent, %s taken", fn.api_name, address(request), *miscounted[::-1])
            return False, said("input_count", lang, expected=miscounted[0], sent=miscounted[1]), "validator_error"
        refused = share_refused(queue, fn, body.session_hash, address(request), lang)
        if refused is not None:
            log.info("refused %s from %s: %s", fn.api_name, address(request), refused)
            return False, refused, "queue_full"
        return await push(body, request, username)

    return fair_push


def api_miscount(fn, body) -> tuple[int, int] | None:
    """(values the API takes, values sent) for a script's call (/call/<api>: Gradio's simple format) that sent
    neither the API's values (which Gradio has lined up with the event's inputs by now: a State input, no parameter
    of the API, given None) nor one value for every input, else None. Gradio would take too many without a word
    (the extra ones dropped) and say too few in its own words, counting inputs the API does not show."""
    data = body.data
    if not getattr(body, "simple_format", False) or not isinstance(data, list) or len(data) == len(fn.inputs):
        return None
    return sum(1 for block in fn.inputs if not getattr(block, "skip_api", False)), len(data)


def share_refused(queue, fn, session_hash, client, lang) -> str | None:
    """Why an event of `fn` from session `session_hash` at address `client` may not join `queue` now, or None."""
    waiting = [e for lane in list(queue.event_queue_per_concurrency_id.values()) for e in list(lane.queue)]
    running = [e for job in list(queue.active_jobs) for e in job or ()]
    if len(waiting) >= QUEUE_SIZE:  # (Gradio's own refusal would say so in English)
        return said("queue_full", lang)
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
            raise SaidRefusal(said("input_count", None, expected=len(block_fn.inputs), sent=len(inputs))) from None

    return validate_inputs


# The routes that name an event: the queued call, and the direct ones (run, api) that Gradio answers only for an
# event outside the queue, which here is one that runs only in the page's script (every server event is queued).
CALL = re.compile(r"^/gradio_api/(?:call/(?:v2/)?|run/|api/)([^/]+)/?$")
HEARTBEAT = re.compile(r"^/gradio_api/heartbeat/([^/]+)/?$")
CALL_BY_NAME = "/gradio_api/call/v2/"


class Gate:
    """In front of Gradio's routes: a request whose headers Gradio cannot read (the origin it builds from Host,
    X-Forwarded-Host or X-Gradio-Server is no URL: route_utils.get_request_origin raises, and a queued event then
    never finishes) gets 400 and one log line before it reaches a route; a call to an event name the API does not
    have gets 404, "No such event." (Gradio's own routes answer 500 with a traceback in the log: a made-up name, or
    /run/predict with a made-up number; and an event that runs only in the page's script is called and fails); a
    call by name (/call/v2/<api>) naming no parameter of the API gets 422 (by_name); and a page's heartbeat tells
    the store it is a real page."""

    def __init__(self, inner, names: set[str], on_heartbeat):
        self.inner, self.names, self.on_heartbeat = inner, names, on_heartbeat

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            path = scope.get("path", "")
            if not readable_origin(scope):
                log.info("refused %s %s from %s: headers that name no address", scope.get("method"), path[:80],
                         (scope.get("client") or ("?",))[0])
                await send_json(send, 400, said("bad_headers", None))
                return
            call = CALL.match(path)
            if call and call.group(1) not in self.names and scope.get("method") == "POST":
                log.info("refused call to %r: no such event", call.group(1)[:80])
                await send_json(send, 404, said("no_such_event", None))
                return
            beat = HEARTBEAT.match(path)
            if beat:
                self.on_heartbeat(beat.group(1))
            if call and path.startswith(CALL_BY_NAME):
                return await self.by_name(scope, receive, send, call.group(1))
        await self.inner(scope, receive, send)

    async def by_name(self, scope, receive, send, name: str) -> None:
        """A call with its values named (/call/v2/<api>): Gradio's route raises, before anything is answered, on a
        name that is no parameter of the API (client_utils.construct_args: a 500 and a traceback in the log); it is
        refused with 422 and one line instead."""
        started = False

        async def sending(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.inner(scope, receive, sending)
        except (TypeError, ValueError) as err:
            if started:
                raise
            log.info("refused call to %r: %s", name[:80], str(err)[:120])
            await send_json(send, 422, said("api_arguments", None))


ORIGIN_HEADERS = (b"x-forwarded-host", b"x-gradio-server")  # what Gradio builds an origin from, before Host
PLAIN_HOST = re.compile(rb"(?:[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


def readable_origin(scope) -> bool:
    """Whether Gradio can build the request's origin from its headers, as every queued event and upload does: a
    request with a plain Host and none of ORIGIN_HEADERS can (no more asked: this runs before every request);
    any other is asked of Gradio's own route_utils.get_request_origin."""
    headers = scope.get("headers") or ()
    if all(name not in ORIGIN_HEADERS and (name != b"host" or PLAIN_HOST.fullmatch(value)) for name, value in headers):
        return True
    try:
        route_utils.get_request_origin(Request(scope), scope.get("path", ""))
        return True
    except Exception:  # noqa: BLE001  (httpx.InvalidURL, a ValueError of the URL's parts: any reason, refused)
        return False


async def send_json(send, status: int, detail: str) -> None:
    """A JSON answer {"detail": ...} with `status`, sent straight from the middleware."""
    body = json.dumps({"detail": valid_utf8(detail)}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def gate(demo: gr.Blocks, on_heartbeat) -> Middleware:
    """A Gate as the app's middleware (given to the app when launch makes it: in place from the first request)."""
    names = {fn.api_name for fn in demo.fns.values()  # a hidden event's generated name (false_12, unload) is not
             if isinstance(fn.api_name, str) and fn.api_visibility != "private" and fn.fn is not None}  # the API's
    return Middleware(Gate, names=names, on_heartbeat=on_heartbeat)


SERVER_PATH = re.compile(r"(?<![\w.])/(?:[\w.\-]+/)+[\w.\-]*")
CHOOSERS = (gr.Radio, gr.Dropdown, gr.CheckboxGroup)  # an input whose value must be one of its choices
NUMBERS = (gr.Slider, gr.Number)  # an input whose value must be a number in its range
REPLAYED = (*CHOOSERS, *NUMBERS, gr.Checkbox, gr.Textbox)  # preprocess only checks the value: safe to run again
SHOWN_CHARS = 40  # of a refused value, in a refusal


def plain_preprocess_data(demo: gr.Blocks, preprocess):
    """Blocks' `preprocess_data`, in front of Gradio's `preprocess` (the plain_preprocess patch of
    ui/gradio_patches.py): the one place an input Gradio cannot read is answered in the page's own words, in the
    event's language, naming the control (its label as the page shows it: `demo.tbt_labels`, ui/labels.py), never
    with Gradio's text: a value of the wrong type, one not among a radio's or dropdown's choices, a number out of
    its slider's range (input_refusal). A file the user did not upload is refused without naming its path on the
    server, a refusal raised in a component's preprocess (UnsaidRefusal: the named_range patch's range check) is
    said in the event's language, and one already said (SaidRefusal: too many or too few inputs) is passed on."""

    async def preprocess_data(block_fn, inputs, *args, **kwargs):
        try:
            return await preprocess(block_fn, inputs, *args, **kwargs)
        except UnsaidRefusal as err:  # (logged once, as every gr.Error, by one_line_process_api)
            raise gr.Error(said_refusal(err.refusal, event_lang(block_fn, inputs))) from None
        except SaidRefusal:
            raise
        except InvalidPathError:
            log.info("refused %s: a file not uploaded here", block_fn.api_name)
            raise gr.Error(said("not_uploaded", event_lang(block_fn, inputs)), print_exception=False) from None
        except (gr.Error, ComponentProcessingError, pydantic.ValidationError) as err:
            state = args[0] if args else kwargs.get("state")
            log.info("refused %s: %s", block_fn.api_name, SERVER_PATH.sub("…", str(err)).splitlines()[0][:200])
            text = input_refusal(block_fn, inputs, state, getattr(demo, "tbt_labels", None),
                                 event_lang(block_fn, inputs))
            raise gr.Error(text, print_exception=False) from None

    return preprocess_data


def input_refusal(block_fn, inputs, state, labels, lang: str | None) -> str:
    """What the page says of the first of an event's inputs its component cannot read (Gradio reads them in order
    and stops at the first): its value checked again by its component (as this session holds it: a slider's range,
    a dropdown's choices may have changed), without Gradio's words. With no language known, in each."""
    at, block, value = unreadable_input(block_fn, inputs, state)
    langs = [lang] if lang in LANGS else list(LANGS)
    if block is None:  # (a check no replay finds: an upload of a file type its button does not take)
        return " ".join(t("input_unreadable_any", each) for each in langs)

    def name(lang):
        named = labels.name(block_fn.inputs[at], lang) if labels is not None else None
        return named or t("input_unnamed", lang, n=at + 1)
    fmt = {"value": shown_value(value)}
    if isinstance(block, CHOOSERS):
        key = "input_not_a_choice"
    elif isinstance(block, NUMBERS) and is_number(value) and block.minimum is not None and value < block.minimum:
        key, fmt["low"] = "range_below", block.minimum
    elif isinstance(block, NUMBERS) and is_number(value) and block.maximum is not None and value > block.maximum:
        key, fmt["high"] = "range_above", block.maximum
    elif isinstance(block, NUMBERS):
        key = "input_not_a_number"
    else:
        key = "input_unreadable"
    return " ".join(t(key, each, name=name(each), **fmt) for each in langs)


def unreadable_input(block_fn, inputs, state):
    """(index, component, value) of the first input whose component refuses it, or (None, None, None): a component
    that only checks its value (REPLAYED) runs its preprocess again, one with a data model (a file) validates it."""
    for at, block in enumerate(block_fn.inputs):
        if block.stateful or at >= len(inputs):
            continue
        held = state[block._id] if state is not None and block._id in state else block
        value = inputs[at]
        try:
            if isinstance(held, REPLAYED):
                held.preprocess(value)
            elif getattr(held, "data_model", None) is not None and value is not None:
                held.data_model.model_validate(value)
        except Exception:  # noqa: BLE001  (whatever it raises, this is the input it cannot read)
            return at, held, value
    return None, None, None


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def shown_value(value) -> str:
    """A refused value as a refusal quotes it: its repr, at most SHOWN_CHARS characters, valid UTF-8."""
    text = SERVER_PATH.sub("…", repr(value))  # (a file's payload names where Gradio keeps it)
    return valid_utf8(text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…")


SURROGATE = re.compile("[\ud800-\udfff]")


def valid_utf8(value):
    """`value` with every lone surrogate in its strings (nested in lists, tuples and dicts) replaced by U+FFFD, so
    it can be sent as UTF-8 (Gradio's stream cannot send one: orjson refuses it); `value` itself when it has none.
    Asked first of orjson itself, as Gradio's stream will (about 10 us for a step's answer; a search of every
    string took 50 times that): only a value it refuses is searched."""
    try:
        orjson.dumps(value, default=lambda _: None)
        return value
    except orjson.JSONEncodeError:  # a surrogate, or something else orjson refuses (left to Gradio)
        return _without_surrogates(value) if _has_surrogate(value) else value


def _has_surrogate(value) -> bool:
    if isinstance(value, str):
        return not value.isascii() and SURROGATE.search(value) is not None
    if isinstance(value, (list, tuple)):
        return any(_has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return False


def _without_surrogates(value):
    if isinstance(value, str):
        return SURROGATE.sub("\ufffd", value)
    if isinstance(value, (list, tuple)):
        return type(value)(_without_surrogates(v) for v in value) if type(value) in (list, tuple) else value
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def one_line_process_api(demo: gr.Blocks, process):
    """Blocks' `process_api`, in front of Gradio's `process` (the one_line_refusals patch of
    ui/gradio_patches.py): every refused input writes one line to the log, not Gradio's traceback: a refusal
    (gr.Error) is logged as one line and sent as it is; anything else that escapes a handler is a bug: its
    traceback is logged once, and the page is told only its kind, in its language (Gradio would send the
    exception's own text, as "unhashable type: 'list'"). Whatever goes on the answer's stream, an answer or a
    refusal, is valid UTF-8 (valid_utf8: a lone surrogate an event was sent, quoted back, would break the stream)."""

    async def process_api(block_fn, inputs, *args, **kwargs):
        fn = demo.fns.get(block_fn) if isinstance(block_fn, int) else block_fn
        name = getattr(fn, "api_name", block_fn)
        try:
            done = await process(block_fn, inputs, *args, **kwargs)
        except gr.Error as err:
            err.message, err.title = valid_utf8(err.message), valid_utf8(err.title)
            if err.print_exception:
                log.info("refused %s: %s", name, str(err.message)[:200])
                err.print_exception = False
            raise
        except Exception as err:
            log.exception("event %s failed", name)
            lang = event_lang(fn, inputs)
            raise gr.Error(said("bug", lang, kind=type(err).__name__), print_exception=False) from None
        if isinstance(done, dict) and "data" in done:
            done["data"] = valid_utf8(done["data"])
        return done

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
