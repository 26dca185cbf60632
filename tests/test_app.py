"""The app through gradio_client: one Client per simulated user, the real model behind it."""
import json
import re
import threading
import time

import httpx
import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

import app as app_module
from ui import play as ui_play
from model.classroom.rooms import Rooms
from model.serving.sessions import ModelRegistry, SessionStore
from ui.protocol import carried_figure
from served import DEFAULTS, served



@pytest.fixture(scope="module")
def server(lm):
    with served(lm, SessionStore(max_sessions=6)) as (page, url, _):
        yield page, url


@pytest.fixture
def client(server):
    c = Client(server[1], verbose=False)
    yield c
    server[0].store.drop(c.session_hash)  # as when the tab closes


def start(client, prompt="The capital of France is", **settings):
    return client.predict(prompt, "raw", "smollm2", **{**DEFAULTS, **settings}, api_name="/start")


def call(client, api, *leading, **settings):
    return client.predict(*leading, **{**DEFAULTS, **settings}, api_name=api)


def step_of(result) -> int:
    return int(re.search(r'id="tbt-marker"[^>]*data-step="(\d+)"', result[0]).group(1))


def chip_texts(result) -> list[str]:
    flat = re.sub(r"<span style=[^>]*>(.*?)</span>", r"\1", result[0])  # the faint ␣ inside a chip
    return re.findall(r'class="tbt-chip tbt-gen[^"]*"[^>]*>(.*?)</span>', flat)


def figure(result, index=1) -> dict:
    return carried_figure(result[index])


@pytest.mark.server
def test_steps_grow_the_text_then_back_and_reset(client, server):
    page, _ = server
    first = start(client)
    assert step_of(first) == 0 and chip_texts(first) == []
    results = [call(client, "/next_token") for _ in range(3)]
    assert [step_of(r) for r in results] == [1, 2, 3]
    assert [len(chip_texts(r)) for r in results] == [1, 2, 3]
    session = page.store.get(client.session_hash)
    assert len(session.ids) == session.prompt_len + 3
    back = call(client, "/back", 2)
    assert step_of(back) == 1 and chip_texts(back) == chip_texts(results[0])
    assert step_of(call(client, "/reset")) == 0


@pytest.mark.server
def test_force_a_candidate_branches(client, server, lm):
    page, _ = server
    start(client)
    greedy = call(client, "/next_token", temperature=0)
    assert "Paris" in chip_texts(greedy)[0]
    call(client, "/back", 1)
    london = lm.tokenizer(" London", add_special_tokens=False)["input_ids"][0]
    forced = call(client, "/force", london, temperature=0)
    assert "London" in chip_texts(forced)[0] and "tbt-forced" in forced[0]
    assert page.store.get(client.session_hash).steps[-1].distribution.forced


@pytest.mark.server
def test_rederive_redraws_without_a_forward_pass(client, server, lm, monkeypatch):
    start(client, "Once upon a time")
    call(client, "/next_token")
    calls = []
    real = lm.model.forward
    monkeypatch.setattr(lm.model, "forward",
                        lambda *a, **k: calls.append(threading.current_thread().name) or real(*a, **k))
    hot = call(client, "/rederive", temperature=1.8)
    cold = call(client, "/rederive", temperature=0.2)
    # The only passes are the next step's, computed ahead in the scheduler's worker: none on the request's path.
    assert set(calls) <= {"scheduler-smollm2"}
    bars = lambda fig: [t for t in fig["data"] if t.get("type") == "bar" and t.get("orientation") == "h"]  # noqa: E731
    assert figure(hot, 0) != figure(cold, 0)
    assert bars(figure(cold, 0)) and bars(figure(hot, 0))


@pytest.mark.server
def test_two_clients_see_only_their_own_sessions(server):
    page, url = server
    alice, bob = Client(url, verbose=False), Client(url, verbose=False)
    start(alice, "Alice likes apples and")
    start(bob, "Bob builds boats and")
    a = call(alice, "/next_token")
    b = call(bob, "/next_token")
    call(bob, "/next_token")
    assert "Alice" in a[0] and "Bob" not in a[0]
    assert "Bob" in b[0] and "Alice" not in b[0]
    assert len(page.store.get(alice.session_hash).steps) == 1
    assert len(page.store.get(bob.session_hash).steps) == 2
    page.store.drop(alice.session_hash)
    page.store.drop(bob.session_hash)


@pytest.mark.server
@pytest.mark.parametrize(
    "api, leading, settings, message",
    [
        ("/start", (), dict(prompt=""), "empty"),
        ("/next_token", (), dict(top_k=2.5), "top_k"),
        ("/next_token", (), dict(temperature=-1), "temperature|minimum|less"),
        ("/back", (99,), {}, "only"),
        ("/force", (10**9,), {}, "forced token"),
        ("/force", ("abc",), {}, "token id"),
        ("/next_token", (), dict(head="42"), "head|choices|42"),
    ],
)
def test_bad_input_returns_a_message_and_leaves_the_session(client, server, api, leading, settings, message):
    page, _ = server
    start(client, "Keep this session")
    call(client, "/next_token")
    session = page.store.get(client.session_hash)
    before = (list(session.ids), len(session.steps))
    with pytest.raises(AppError, match=message):
        if api == "/start":
            start(client, **settings)
        else:
            call(client, api, *leading, **settings)
    after = page.store.get(client.session_hash)
    assert after is session and (list(after.ids), len(after.steps)) == before


@pytest.mark.server
def test_no_session_and_expired_session_say_so(server):
    page, url = server
    fresh = Client(url, verbose=False)
    with pytest.raises(AppError, match="No text yet"):
        call(fresh, "/next_token")
    start(fresh)
    now = page.store.clock()
    page.store.clock = lambda: now + page.store.idle_seconds + 1
    try:
        with pytest.raises(AppError, match="idle"):
            call(fresh, "/next_token")
    finally:
        page.store.clock = time.monotonic


@pytest.mark.server
def test_export_then_import_replays(client, server, tmp_path):
    page, _ = server
    start(client, "A tiny story:")
    for _ in range(3):
        call(client, "/next_token", temperature=0.8, seed=5)
    path = client.predict(api_name="/export")
    trace = json.loads(open(path, encoding="utf-8").read())
    assert trace["format"] == "token-by-token/trace" and len(trace["steps"]) == 3
    ids = list(page.store.get(client.session_hash).ids)
    other = Client(server[1], verbose=False)
    loaded = call(other, "/import_trace", handle_file(path))
    assert step_of(loaded) == 0 and "3 recorded steps left" in loaded[0]  # wound back to the prompt
    replayed = [call(other, "/next_token", temperature=0.1, seed=99) for _ in range(3)]  # the page's knobs don't matter
    assert [step_of(r) for r in replayed] == [1, 2, 3] and "recorded steps left" not in replayed[-1][0]
    assert page.store.get(other.session_hash).ids == ids
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "something else"}')
    with pytest.raises(AppError, match="not a Token by Token trace"):
        call(other, "/import_trace", handle_file(str(broken)))
    assert page.store.get(other.session_hash).ids == ids
    page.store.drop(other.session_hash)


@pytest.mark.server
def test_language_switch_relabels(client):
    start(client)
    out = call(client, "/set_language", lang="zh")
    assert "看语言模型" in out[0]["value"]
    labels = [o.get("label") for o in out if isinstance(o, dict)]
    assert "温度（0 = 贪心）" in labels and "Temperature (0 = greedy)" not in labels  # a slider relabelled
    assert "下一个词元" in carried_figure(out[-2])["layout"]["title"]["text"]  # the candidate chart, redrawn in Chinese


@pytest.mark.server
def test_kv_calculator_reference_numbers(client):
    out = client.predict("Llama-2-7B", "float16", 2048, 1, 1, 1, 1, 1, "en", api_name="/calculate")
    assert out[:4] == (32, 32, 32, 128)
    assert "1,073,741,824 B" in out[4] and "1.00 GiB" in out[4]
    assert "524,288 B per token" in out[4]  # 2 x 32 x 32 x 128 x 2 B (issue 22: an interview asks for it)
    out = client.predict("Llama-3-8B", "float16", 8192, 1, 1, 1, 1, 1, "en", api_name="/calculate")
    assert "1,073,741,824 B" in out[4] and "131,072 B per token" in out[4]  # 4x less per token: GQA


@pytest.mark.server
def test_session_cap(server, monkeypatch):
    page, url = server
    monkeypatch.setattr(page.store, "max_sessions", len(page.store) + 2)
    clients = [Client(url, verbose=False) for _ in range(3)]
    start(clients[0], "Hello")
    start(clients[1], "Hello")
    with pytest.raises(AppError, match="full"):
        start(clients[2], "Hello")
    assert len(page.store) == page.store.max_sessions
    page.store.drop(clients[0].session_hash)
    start(clients[2], "Hello")  # a freed place can be taken
    for c in clients:
        page.store.drop(c.session_hash)


@pytest.mark.server
def test_temperature_charts_are_the_moves_own_charts_for_this_text_and_settings(client):
    start(client, "Once upon a time")
    stepped = call(client, "/next_token", temperature=0.7)
    bundle = call(client, "/temperature_charts", temperature=0.7)
    figs = carried_figure(bundle)
    assert list(figs) == [f"{0.05 * i:.2f}" for i in range(41)]  # every value of the slider
    key = re.search(r'data-key="(\w+)"', bundle).group(1)
    assert f'data-key="{key}"' in stepped[1] and 'data-t="0.70"' in stepped[1]  # the chart it was asked from
    for temperature in (0.0, 0.3, 1.5):  # what the page draws from the bundle is exactly the server's answer
        moved = call(client, "/rederive", temperature=temperature)
        assert f'data-key="{key}"' in moved[0] and f'data-t="{temperature:.2f}"' in moved[0]
        assert figs[f"{temperature:.2f}"] == carried_figure(moved[0])
    assert f'data-key="{key}"' not in call(client, "/rederive", temperature=0.7, top_p=0.5)[0]  # another setting
    assert f'data-key="{key}"' not in call(client, "/next_token", temperature=0.7)[1]  # another step


@pytest.mark.model
def test_a_closed_or_expired_session_gives_its_memory_back(monkeypatch, lm):
    import model.serving.sessions as sessions

    trims = []
    monkeypatch.setattr(sessions, "return_freed_memory", lambda: trims.append(1))
    now = [0.0]
    store = SessionStore(idle_seconds=60, clock=lambda: now[0])
    a, b = Closing(), Closing()
    store.put("a", a), store.put("b", b)
    store.drop("a")
    assert trims == [1] and len(store) == 1 and (a.closed, b.closed) == (1, 0)  # its core's share freed at once
    store.drop("a")  # nothing left to free
    assert trims == [1] and a.closed == 1
    now[0] = 61
    with pytest.raises(sessions.SessionExpired):
        store.get("b")
    assert trims == [1, 1] and len(store) == 0 and b.closed == 1


class Closing:
    """A stored session as the store sees it: closed when it goes (DecodeSession.close)."""

    def __init__(self):
        self.closed = 0

    def close(self):
        self.closed += 1


@pytest.mark.server
def test_the_chart_drawn_ahead_is_the_next_steps_own_chart(client):
    start(client, "Once upon a time")
    for temperature in (0.0, 0.8):
        call(client, "/next_token", temperature=temperature)  # its answer computes the next step ahead
        ahead = call(client, "/next_chart", temperature=temperature)
        assert 'class="tbt-figahead"' in ahead
        stepped = call(client, "/next_token", temperature=temperature)
        key = re.search(r'data-key="(\w+)"', stepped[1]).group(1)  # what the step's chart shows
        assert f'data-key="{key}"' in ahead and f'data-t="{temperature:.2f}"' in ahead
        assert carried_figure(ahead) == figure(stepped)


# ---- Play: one streaming request, paced by the page ----------------------------------------------------------
def play_token(result) -> str:
    return re.search(r'id="tbt-playing" data-token="([^"]+)"', result[3]).group(1)


def tell_play(url, token, what):
    return httpx.post(f"{url.rstrip('/')}/tbt/play/{token}/{what}", timeout=10)


def wait_outputs(job, n, timeout=60):
    """The job's outputs once there are n of them (or it ended)."""
    deadline = time.monotonic() + timeout
    while len(job.outputs()) < n and not job.done() and time.monotonic() < deadline:
        time.sleep(0.02)
    return job.outputs()


@pytest.mark.server
def test_play_sends_each_step_once_the_page_took_the_one_before(client, server):
    page, url = server
    start(client)
    job = client.submit(4, **{**DEFAULTS, "temperature": 0}, api_name="/play")
    steps = []
    for k in range(1, 5):
        outputs = wait_outputs(job, k)
        assert len(outputs) == k, "a step did not arrive after the page took the one before"
        steps.append(outputs[-1])
        assert step_of(steps[-1]) == k
        if k == 1:  # not taken yet: no second step is sent, but its forward pass is computed meanwhile
            time.sleep(1.0)
            session = page.store.get(client.session_hash)
            assert len(job.outputs()) == 1 and len(session.steps) == 1 and session.prefetched is not None
        assert tell_play(url, play_token(steps[-1]), "shown").status_code == 200
    job.result(timeout=60)
    final = job.outputs()[-1]
    assert final[3] == ""  # the page's Play marker is cleared
    assert tell_play(url, play_token(steps[-1]), "shown").status_code == 404  # that Play is over

    other = Client(url, verbose=False)  # the same four steps, one Next token at a time
    try:
        start(other)
        by_next = [call(other, "/next_token", temperature=0) for _ in range(4)]
        assert [chip_texts(r) for r in by_next] == [chip_texts(r) for r in steps]
        assert [figure(r)["layout"]["title"]["text"] for r in by_next] == [figure(r)["layout"]["title"]["text"]
                                                                           for r in steps]
        assert final[2] == by_next[-1][2] and final[2]  # the force list, sent once where Play stopped
    finally:
        server[0].store.drop(other.session_hash)


@pytest.mark.server
def test_play_stops_when_asked_or_when_the_page_is_gone(client, server, monkeypatch):
    page, url = server
    start(client)
    job = client.submit(50, **DEFAULTS, api_name="/play")
    first = wait_outputs(job, 1)[0]
    assert tell_play(url, play_token(first), "stop").status_code == 200
    job.result(timeout=60)
    assert len(page.store.get(client.session_hash).steps) == 1 and job.outputs()[-1][3] == ""

    monkeypatch.setattr(ui_play, "PLAY_WAIT_S", 0.5)  # the page never says it took a step: its tab closed
    job = client.submit(50, **DEFAULTS, api_name="/play")
    job.result(timeout=60)
    assert len(page.store.get(client.session_hash).steps) == 2


@pytest.mark.server
def test_the_play_route_knows_only_plays_that_run(server):
    _, url = server
    assert tell_play(url, "no-such-play", "shown").status_code == 404
    assert tell_play(url, "no-such-play", "pause").status_code == 404
    assert httpx.get(f"{url.rstrip('/')}/tbt/play/x/shown", timeout=10).status_code in (404, 405)


@pytest.mark.server
def test_play_ends_when_its_page_starts_another_text(client, server):
    page, url = server
    start(client)
    job = client.submit(50, **DEFAULTS, api_name="/play")
    first = wait_outputs(job, 1)[0]
    start(client, "Another text")  # Start pressed meanwhile (the page also stops Play; this one did not)
    assert tell_play(url, play_token(first), "shown").status_code == 200
    job.result(timeout=60)
    session = page.store.get(client.session_hash)
    assert session.prefill.prompt == "Another text" and len(session.steps) == 0
    assert [step_of(o) for o in job.outputs() if o[3]] == [1]  # no step of the old text was sent after Start


@pytest.mark.model
def test_no_two_components_share_an_elem_id(lm):
    """The page's script and its tests find components by id: two with one id would make one of them unreachable."""
    demo = app_module.build(app_module.App(ModelRegistry("smollm2", {"smollm2": lm}), SessionStore(), Rooms()), "smollm2")
    ids = [block.elem_id for block in demo.blocks.values() if getattr(block, "elem_id", None)]
    assert len(ids) > 50
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
