"""The outside probe's twelve cases, through the API and raw HTTP as the probe sent them (one test or more each).

Each case failed before its fix: a crash message, a stalled class, a leak or unbounded work. The model-side
halves (the stable draw, the trace checks, the special tokens, the lock per pass) are also pinned on the engine
in test_hardening_model.py.
"""
import glob
import json
import os
import re
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from gradio_client.utils import QueueError

from model.admission import OpeningLimit
from model.sessions import SessionStore
from ui.views.session_io import EXPORT_KEEP_S
from served import DEFAULTS, served

SETTINGS = [1.0, 0, 1.0, 0.0, 1.0, "transformers", 0, "en", "candidates", 0, "mean"]  # the raw inputs after them
BUG = re.compile(r"Something went wrong|Traceback|object at 0x|/work/|site-packages")


@pytest.fixture(scope="module")
def server(lm):
    with served(lm, SessionStore(max_sessions=40)) as (page, url, demo):
        yield page, url, demo


@pytest.fixture
def client(server):
    c = Client(server[1], verbose=False, analytics_enabled=False)
    yield c
    server[0].store.drop(c.session_hash)


def start(client, prompt="The capital of France is", mode="raw", **settings):
    return client.predict(prompt, mode, "smollm2", **{**DEFAULTS, **settings}, api_name="/start")


def call(client, api, *leading, **settings):
    return client.predict(*leading, **{**DEFAULTS, **settings}, api_name=api)


def step_of(result) -> int:
    return int(re.search(r'id="tbt-marker"[^>]*data-step="(\d+)"', result[0]).group(1))


def refusal(fn) -> str:
    with pytest.raises(AppError) as err:
        fn()
    text = str(err.value)
    assert not BUG.search(text), f"not a plain message: {text!r}"
    return text


def raw_call(url: str, api: str, data: list) -> str:
    """POST /gradio_api/call/<api> as a script would, and the text of its event stream."""
    answer = httpx.post(f"{url}gradio_api/call/{api}", json={"data": data}, timeout=30)
    assert answer.status_code == 200, answer.text
    event = answer.json()["event_id"]
    return httpx.get(f"{url}gradio_api/call/{api}/{event}", timeout=120).text


@pytest.fixture
def counted_passes(lm):
    n, forward = [0], lm.model.forward

    def counting(*args, **kwargs):
        n[0] += 1
        return forward(*args, **kwargs)

    lm.model.forward = counting
    yield n
    del lm.model.forward


# ---- 1. a tiny temperature --------------------------------------------------------------------------------
@pytest.mark.server
@pytest.mark.parametrize("temperature", [1e-300, 5e-324])
def test_a_tiny_temperature_steps_greedily(client, temperature):
    start(client)
    greedy = call(client, "/next_token", temperature=0)
    call(client, "/back", 1)
    tiny = call(client, "/next_token", temperature=temperature)
    assert step_of(tiny) == 1 and tiny[0].split('id="tbt-marker"')[0] == greedy[0].split('id="tbt-marker"')[0]


@pytest.mark.server
def test_a_trace_with_a_tiny_repetition_penalty_is_refused_plainly(server, client, tmp_path):
    trace = exported_trace(client)
    trace["steps"][0]["distribution"]["config"]["repetition_penalty"] = 1e-300
    text = refusal(lambda: call(client, "/import_trace", upload(tmp_path, trace)))
    assert "repetition" in text


def exported_trace(client, steps=2) -> dict:
    start(client, "A short trace:")
    for _ in range(steps):
        call(client, "/next_token", temperature=0)
    return json.loads(Path(client.predict(api_name="/export")).read_text(encoding="utf-8"))


def upload(tmp_path, content) -> dict:
    path = tmp_path / "trace.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return handle_file(str(path))


# ---- 2. malformed trace files -----------------------------------------------------------------------------
@pytest.mark.server
@pytest.mark.parametrize("content", [b"[" * 200_000 + b"]" * 200_000, b'{"format": ' + b"7" * 5000 + b"}"],
                         ids=["nested-200000-deep", "5000-digit-int"])
def test_a_malformed_trace_is_not_a_valid_trace(client, tmp_path, content):
    start(client)
    assert "not a valid trace" in refusal(lambda: call(client, "/import_trace", upload(tmp_path, content)))


# ---- 3. forcing a digit that int() refuses ----------------------------------------------------------------
@pytest.mark.server
@pytest.mark.parametrize("typed", ["²", "①", "٣"])
def test_forcing_a_unicode_digit_is_refused_plainly(client, typed):
    start(client)
    assert "must be a token id" in refusal(lambda: call(client, "/force", typed))


# ---- 4. special tokens typed into a prompt ----------------------------------------------------------------
@pytest.mark.server
@pytest.mark.parametrize("mode", ["raw", "chat"])
@pytest.mark.parametrize("special", ["<file_sep>", "<repo_name>", "<jupyter_code>", "<empty_output>"])
def test_an_added_special_token_cannot_be_typed(client, special, mode):
    assert "special token" in refusal(lambda: start(client, f"look: {special} here", mode=mode))


# ---- 5. a trace that claims too much ----------------------------------------------------------------------
@pytest.mark.server
def test_a_trace_claiming_98002_steps_runs_no_forward_pass(client, tmp_path, counted_passes):
    trace = exported_trace(client, steps=1)
    trace["steps"] = trace["steps"] * 98_002
    raw = json.dumps(trace).encode()
    if len(raw) > 4_900_000:  # the probe's file was 5 MB: keep the claim, trim each step to what parsing reads
        step = {"distribution": {"config": {}, "chosen": {"id": trace["steps"][0]["distribution"]["chosen"]["id"]}}}
        trace["steps"] = [step] * 98_002
        raw = json.dumps(trace, separators=(",", ":")).encode()
    assert len(raw) < 5_000_000
    time.sleep(1.5)  # the last step's pass computed ahead has finished
    passes, t0 = counted_passes[0], time.perf_counter()
    text = refusal(lambda: call(client, "/import_trace", upload(tmp_path, raw)))
    assert "too long to replay" in text and "98002 steps" in text.replace(",", "")
    assert counted_passes[0] == passes, "the trace was replayed before it was refused"
    assert time.perf_counter() - t0 < 10


# ---- 6. one session cannot lock the class out ---------------------------------------------------------------
@pytest.mark.server
def test_a_burst_of_measurements_from_one_session_leaves_the_class_served(server, client):
    page, url, _ = server
    start(client, "A text to measure, long enough to take a few passes of the model.")
    other = Client(url, verbose=False, analytics_enabled=False)
    try:
        jobs = [client.submit("en", api_name="/measure") for _ in range(20)]
        t0 = time.perf_counter()
        assert step_of(start(other, "Someone else")) == 0  # not "Queue is full"
        during = call(other, "/next_token")
        others_done = time.perf_counter() - t0
        outcomes = []
        for job in jobs:
            try:
                job.result(timeout=120)
                outcomes.append("measured")
            except QueueError:  # refused before it was queued (503: gradio_client says only "Queue is full")
                outcomes.append("refused")
        assert outcomes.count("measured") >= 1 and outcomes.count("refused") >= 15, outcomes
        assert step_of(during) == 1 and others_done < 10, others_done
    finally:
        page.store.drop(other.session_hash)
        other.close()


@pytest.mark.server
@pytest.mark.parametrize("lang, reason, other", [("en", "still running", "还在进行"), ("zh", "还在进行", "still running")])
def test_a_second_slow_request_of_a_session_is_refused_with_a_reason(server, client, lang, reason, other):
    """What the refusal says, as a script posting to the queue sees it: in the language the event was sent in."""
    _, url, demo = server
    start(client, "A text to measure, long enough to take a few passes of the model.")
    measure = next(i for i, fn in demo.fns.items() if fn.api_name == "measure")
    first = client.submit(lang, api_name="/measure")
    time.sleep(0.5)
    answer = httpx.post(f"{url}gradio_api/queue/join", timeout=30,
                        json={"data": [lang], "fn_index": measure, "session_hash": client.session_hash})
    first.result(timeout=120)
    assert answer.status_code == 503 and reason in answer.json()["detail"], answer.text
    assert other not in answer.json()["detail"], answer.text


@pytest.mark.server
def test_a_step_goes_through_while_a_measurement_runs(server, client):
    """The measurement takes the model lock per pass: another user's step finishes before it does."""
    page, url, _ = server
    start(client, " ".join(["A longer text to measure with the cache and without it."] * 8))
    other = Client(url, verbose=False, analytics_enabled=False)
    try:
        start(other, "Someone else")
        measure = client.submit("en", api_name="/measure")
        time.sleep(1.0)  # the measurement is under way
        call(other, "/next_token")
        assert not measure.done(), "the measurement ended first: the step did not get in between its passes"
        measure.result(timeout=120)
    finally:
        page.store.drop(other.session_hash)
        other.close()


# ---- 7. exports leave nothing behind --------------------------------------------------------------------
@pytest.mark.server
def test_an_export_leaves_no_folder_in_the_temp_directory(client):
    start(client)
    call(client, "/next_token")
    ours = lambda: set(glob.glob(os.path.join(tempfile.gettempdir(), "tbt-export-*")))  # noqa: E731
    before = ours()
    downloaded = Path(client.predict(api_name="/export"))
    assert json.loads(downloaded.read_text(encoding="utf-8"))["steps"]  # the download itself still works
    assert ours() - before  # written (and served from Gradio's copy) ...
    deadline = time.time() + EXPORT_KEEP_S + 5
    while ours() - before and time.time() < deadline:  # ... and removed soon after
        time.sleep(0.2)
    assert not ours() - before, f"left behind: {ours() - before}"


# ---- 8. uploads have a size limit (and see test_bad_input.test_import_a_huge_file) ------------------------
@pytest.mark.server
def test_the_upload_limit_is_the_trace_limit(server):
    from model.trace import MAX_TRACE_BYTES

    assert server[2].max_file_size == MAX_TRACE_BYTES


# ---- 9. unknown events ------------------------------------------------------------------------------------
@pytest.mark.server
@pytest.mark.parametrize("fn_index", [999, -1, 2**64])
def test_an_unknown_event_number_gets_422_without_a_traceback(server, fn_index, capfd):
    answer = httpx.post(f"{server[1]}gradio_api/queue/join", timeout=30,
                        json={"data": [], "fn_index": fn_index, "session_hash": "probe"})
    assert answer.status_code == 422, (answer.status_code, answer.text)
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.server
@pytest.mark.parametrize("name", ["open_candidates", "no_such_event"])
@pytest.mark.parametrize("route", ["call", "call/v2"])
def test_an_unknown_event_name_gets_404_without_a_traceback(server, name, route, capfd):
    answer = httpx.post(f"{server[1]}gradio_api/{route}/{name}", json={"data": []}, timeout=30)
    assert answer.status_code == 404, (answer.status_code, answer.text)
    assert "Traceback" not in capfd.readouterr().err


# ---- 10. internals do not reach the client --------------------------------------------------------------
@pytest.mark.server
def test_too_few_inputs_get_a_count_not_component_objects(server):
    stream = raw_call(server[1], "next_token", [1.0])
    assert "event: error" in stream and "inputs" in stream
    assert "object at 0x" not in stream and "gradio.components" not in stream, stream


# ---- 11. no server path in a message ----------------------------------------------------------------------
@pytest.mark.server
@pytest.mark.parametrize("path", ["app.py", "../../etc/passwd", "/etc/hostname"])
def test_importing_a_server_path_names_no_path(server, path):
    stream = raw_call(server[1], "import_trace", [{"path": path, "meta": {"_type": "gradio.FileData"}}, *SETTINGS])
    assert "event: error" in stream and "not uploaded here" in stream, stream
    assert not re.search(r"/work|/etc|/root|app\.py|passwd", stream.split("data:", 1)[1]), stream


# ---- 12. how fast sessions can be opened, and sessions without a page ----------------------------------------
@pytest.mark.model
def test_one_address_cannot_take_every_session_but_a_class_gets_in(lm):
    now = [0.0]
    store = SessionStore(max_sessions=120, clock=lambda: now[0], opening=OpeningLimit(burst=45, refill_s=4.0,
                                                                                     clock=lambda: now[0]))
    session = object()
    for i in range(45):  # a class behind one NAT, all pressing Start in the same minute
        store.put(f"student-{i}", session, client="10.1.2.3")
    store.put("student-0", session, client="10.1.2.3")  # starting again in one's own session is not opening one
    with pytest.raises(Exception, match="Too many new sessions"):
        store.put("script-46", session, client="10.1.2.3")
    store.put("elsewhere", session, client="10.9.9.9")  # another address is not held back
    now[0] += 8.0  # two openings earned back
    store.put("later-1", session, client="10.1.2.3")
    store.put("later-2", session, client="10.1.2.3")
    with pytest.raises(Exception, match="Too many new sessions"):
        store.put("later-3", session, client="10.1.2.3")
    assert len(store) == 48


@pytest.mark.server
def test_the_api_opening_limit_answers_plainly(server, lm):
    page, url, _ = server
    limit, page.store.opening = page.store.opening, OpeningLimit(burst=2, refill_s=600)
    clients = [Client(url, verbose=False, analytics_enabled=False) for _ in range(3)]
    try:
        start(clients[0], "One")
        start(clients[1], "Two")
        assert "Too many new sessions" in refusal(lambda: start(clients[2], "Three"))
        assert step_of(start(clients[0], "One again")) == 0
    finally:
        page.store.opening = limit
        for c in clients:
            page.store.drop(c.session_hash)
            c.close()


@pytest.mark.server
def test_a_session_whose_page_never_connected_is_freed_soon(server, client):
    page, url, _ = server
    start(client)  # gradio_client keeps a heartbeat, as a page does
    deadline = time.time() + 10
    while client.session_hash not in page.store._connected and time.time() < deadline:
        time.sleep(0.2)
    assert client.session_hash in page.store._connected
    raw = raw_call(url, "start", ["No page here", "raw", "smollm2", *SETTINGS])  # a script: no heartbeat
    assert "event: complete" in raw, raw[:300]
    ids = set(page.store._live) - {client.session_hash}
    assert ids, "the script's session was not stored"
    real_clock = page.store.clock
    page.store.clock = lambda: real_clock() + page.store.unconnected_seconds + 1
    try:
        page.store.get(client.session_hash)  # a look at the store frees what has expired
        assert not ids & set(page.store._live), "the session without a page kept its place"
        assert client.session_hash in page.store._live, "the page's session was freed too"
    finally:
        page.store.clock = real_clock
