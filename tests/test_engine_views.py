"""The speculative, batching and paged views through gradio_client: one Client per simulated user, the real model."""
import json
import math
import time

import pytest
import torch
from gradio_client import Client
from gradio_client.utils import Status

from model.decoding.scheduler import scheduler_of
from model.serving.sessions import SessionStore
from served import DEFAULTS, served

pytestmark = pytest.mark.server

REPEATING = "red, green, blue, red, green, blue, red, green, blue, red, green,"
SHARED_PROMPT = ("Once upon a time, in a small village by the sea, there lived an old fisherman who every morning "
                 "walked down to the harbour before sunrise and")  # > 2 full blocks of 16 tokens


@pytest.fixture(scope="module")
def server(lm):
    with served(lm, SessionStore(max_sessions=10)) as (page, url, _):
        yield page, url


@pytest.fixture
def clients(server):
    made = []

    def make():
        c = Client(server[1], verbose=False)
        made.append(c)
        return c

    yield make
    for c in made:
        server[0].store.drop(c.session_hash)


def start(client, prompt, **settings):
    return client.predict(prompt, "raw", "smollm2", **{**DEFAULTS, **settings}, api_name="/start")


def call(client, api, *leading, **settings):
    return client.predict(*leading, **{**DEFAULTS, **settings}, api_name=api)


def plot_figure(value) -> dict:
    return json.loads(value["plot"]) if isinstance(value, dict) else json.loads(value)


def greedy_ids(lm, ids, n):
    """The target's own greedy continuation by transformers' generate (independent of this app's decoders)."""
    with torch.no_grad():
        out = lm.model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                max_new_tokens=n, do_sample=False, pad_token_id=lm.tokenizer.eos_token_id)
    return out[0, len(ids):].tolist()


# ---- speculative decoding ----------------------------------------------------------------------------------------
def test_speculative_equals_plain_greedy_and_counts_match_the_records(server, clients, lm):
    a = clients()
    start(a, REPEATING, temperature=0.0)
    ids = list(server[0].store.get(a.session_hash).ids)
    summary, plot, engine_text, numbers = call(a, "/speculative", 4, 20, temperature=0.0)
    assert engine_text == ""  # a local model: no engine's text to mark
    assert numbers["generated"] == greedy_ids(lm, ids, 20)
    assert numbers["prompt_tokens"] == len(ids)
    fig = plot_figure(plot)
    roles = {tr.get("meta", {}).get("role"): tr for tr in fig["data"] if tr.get("meta")}
    # every check of the run is a point (p, u): kept ones are the accepted drafts, rejected ones one per round
    assert len(roles["check_accepted"]["x"]) == numbers["accepted"] > 0  # the repeating text pays
    assert all(u < p for p, u in zip(roles["check_accepted"]["x"], roles["check_accepted"]["y"]))
    rounds = next(tr for tr in fig["data"] if tr.get("type") == "bar" and tr.get("xaxis") == "x3")
    assert len(rounds["x"]) == numbers["passes"] and sum(rounds["y"]) == len(numbers["generated"])
    assert numbers["passes"] + numbers["passes_saved"] == len(numbers["generated"])
    assert numbers["passes"] < len(numbers["generated"])
    assert f"{len(numbers['generated'])} tokens in {numbers['passes']} forward passes" in summary
    assert server[0].store.get(a.session_hash).ids == ids  # not kept yet: the session is as it was


def test_keeping_a_continuation_makes_it_the_sessions_text_and_throwing_away_does_not(server, clients):
    a = clients()
    start(a, REPEATING, temperature=0.0)
    session = server[0].store.get(a.session_hash)
    before = list(session.ids)
    call(a, "/speculative", 3, 12, temperature=0.0)
    assert a.predict("en", api_name="/speculative_discard")[0].startswith("Thrown away")
    assert session.ids == before
    with pytest.raises(Exception, match="Nothing to keep"):
        call(a, "/speculative_keep", temperature=0.0)
    *_, numbers = call(a, "/speculative", 3, 12, temperature=0.0)
    kept = call(a, "/speculative_keep", temperature=0.0)
    assert session.ids == before + numbers["generated"]
    assert [s.token.id for s in session.steps] == numbers["generated"]  # real step records, one per token
    assert not any(s.distribution.forced for s in session.steps)
    assert 'data-step="12"' in kept[0]


def test_speculative_measure_says_when_it_pays(server, clients):
    a = clients()
    start(a, "Hello")
    text = a.predict(4, "en", api_name="/speculative_measure")
    assert "On a text that repeats itself" in text and "On free prose" in text and "ms per token" in text
    print("\n" + text)


# ---- Medusa -------------------------------------------------------------------------------------------------------
def test_medusa_writes_plain_greedy_and_shows_any_pass_again_without_the_model(server, clients, lm):
    a = clients()
    start(a, REPEATING)
    session = server[0].store.get(a.session_hash)
    ids = list(session.ids)
    summary, pass_n, plot, run_plot, numbers = call(a, "/medusa", 16, 12)
    assert numbers["generated"] == numbers["plain"]["generated"] == greedy_ids(lm, ids, 16)
    assert numbers["same_as_plain"] == {"medusa": True, "lookup": True}
    assert sum(numbers["accepted_per_pass"]) + numbers["passes"] == len(numbers["generated"])
    assert f"{len(numbers['generated'])} tokens in {numbers['passes']} verifying passes" in summary
    shown = plot_figure(plot)
    mask = next(tr for tr in shown["data"] if tr.get("meta", {}).get("role") == "mask")
    shown_n = pass_n["value"] if isinstance(pass_n, dict) else pass_n  # (the slider's update: its value and range)
    assert len(mask["z"]) == numbers["pass_positions"][shown_n - 1]  # a row per token of that pass
    scheduler = scheduler_of(server[0].models.get().model)
    before = scheduler.turns
    again = plot_figure(a.predict(numbers["passes"], "zh", api_name="/medusa_pass"))
    assert scheduler.turns == before and again["layout"]["meta"]["lang"] == "zh"  # drawn again: no pass of the model
    with pytest.raises(Exception, match=r"Pass to show|no pass"):  # (above the slider's maximum: the slider says so)
        a.predict(max(numbers["passes"], 2) + 1, "en", api_name="/medusa_pass")
    assert session.ids == ids  # nothing kept: the text is as it was


# ---- paged blocks ------------------------------------------------------------------------------------------------
def test_block_table_bytes_equal_a_hand_computation(server, clients, lm):
    a, b, c = clients(), clients(), clients()
    start(a, SHARED_PROMPT)
    start(b, SHARED_PROMPT)
    start(c, "The capital of France is")
    for _ in range(3):
        call(b, "/next_token")
    prompt = len(lm.tokenizer(SHARED_PROMPT)["input_ids"])
    lengths = {"a": prompt, "b": prompt + 3, "c": len(lm.tokenizer("The capital of France is")["input_ids"])}
    per_token = 2 * 30 * 3 * 64 * 4  # K and V x layers x KV heads x head_dim x fp32 bytes
    blocks = {k: math.ceil(n / 16) for k, n in lengths.items()}
    shared = prompt // 16  # a and b share their prompt's full blocks; c shares none
    summary, plot, numbers, engine_line, engine_plot = a.predict("en", api_name="/paged")
    assert (engine_line, numbers["engine"]) == ("", None)  # a local model: no engine's blocks, their plot hidden
    assert engine_plot["visible"] is False and engine_plot["value"] is None
    assert numbers["sessions"] == 3 and numbers["bytes_per_token"] == per_token
    assert numbers["used_bytes"] == sum(lengths.values()) * per_token
    assert numbers["unshared_bytes"] == sum(blocks.values()) * 16 * per_token
    assert numbers["allocated_bytes"] == (sum(blocks.values()) - shared) * 16 * per_token
    assert numbers["shared_saving_bytes"] == shared * 16 * per_token
    assert numbers["reserved_bytes"] == 3 * 512 * per_token
    assert numbers["waste_bytes"] == sum(blocks[k] * 16 - n for k, n in lengths.items()) * per_token
    rows = numbers["rows"]
    assert rows[0]["you"] and rows[0]["tokens"] == lengths["a"] and sum(r["you"] for r in rows) == 1
    assert sorted(r["shared_blocks"] for r in rows) == [0, shared, shared]
    fig = plot_figure(plot)
    assert "you" in fig["layout"]["yaxis"]["ticktext"]


# ---- no one else's text ------------------------------------------------------------------------------------------
def test_no_other_users_text_reaches_a_page(server, clients, lm):
    a, b = clients(), clients()
    secret = "Marmalade zeppelins quarrel with xylophones over Ljubljana"
    start(a, secret)
    call(a, "/next_token")
    start(b, "The capital of France is", temperature=0.0)
    a_ids = set(server[0].store.get(a.session_hash).ids)
    b_ids = set(server[0].store.get(b.session_hash).ids)
    answers = [b.predict("en", api_name="/paged"), b.predict("en", api_name="/batching"),
               call(b, "/speculative", 4, 8, temperature=0.0), b.predict("zh", api_name="/paged")]
    text = json.dumps(answers, ensure_ascii=False)
    for word in ("Marmalade", "zeppelin", "xylophone", "Ljubljana", "quarrel"):
        assert word.lower() not in text.lower()
    own = set(answers[2][3]["generated"]) | b_ids
    foreign = {i for i in a_ids - own if i > 600}  # A's distinctive ids (small numbers are counts and lengths too)
    listed = {v for part in (answers[0][2], answers[1][1], answers[2][3]) for v in ints(part)}
    assert foreign and not foreign & listed


def ints(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from ints(v)
    elif isinstance(value, list):
        for v in value:
            yield from ints(v)
    elif isinstance(value, int) and not isinstance(value, bool):
        yield value


# ---- batching --------------------------------------------------------------------------------------------------
def test_batching_view_counts_the_servers_real_passes(server, clients):
    a, b = clients(), clients()
    start(a, "The capital of France is")
    start(b, "Once upon a time")
    before = len(server[0].models.core().recent_passes())
    for _ in range(2):
        call(a, "/next_token")
    numbers = a.predict("en", api_name="/batching")[1]
    assert numbers["live_sessions"] == len(server[0].store) >= 2
    assert len(server[0].models.core().recent_passes()) >= before + 2 or len(numbers["passes"]) == 240
    assert all(set(p) == {"sessions", "ms", "ago_s"} and 1 <= p["sessions"] <= 16 for p in numbers["passes"])
    assert numbers["passes"][-1]["ago_s"] < 60


def test_batch_measurement_releases_the_model_lock_between_passes(server, clients):
    a, b = clients(), clients()
    start(b, "The capital of France is")
    job = a.submit("en", api_name="/batching_measure")
    while job.status().code != Status.PROCESSING:  # the measurement is under way
        time.sleep(0.05)
    time.sleep(1.0)
    t0 = time.perf_counter()
    call(b, "/next_token")  # another client's step, during the measurement
    step_s = time.perf_counter() - t0
    assert not job.done(), "the measurement ended before the step: too short to tell"
    sentence, plot, numbers = job.result(timeout=300)
    print(f"\nanother client's step took {step_s:.2f} s during the measurement; {sentence}")
    assert [p["batch"] for p in numbers["passes"]] == [1, 2, 4, 8, 16]
    assert numbers["weight_bytes"] == sum(p.numel() for p in {id(p): p for p in server[0].models.get().model.parameters()}.values()) * 4
    assert numbers["bandwidth_bytes_per_s"] == pytest.approx(numbers["weight_bytes"] / numbers["decode_ms"] * 1000)
    assert numbers["prefill_tokens_per_s"] > numbers["decode_tokens_per_s"]
