"""The engine's own KV blocks, from the KV cache events a real vLLM publishes (model/vllm/kv_events.py), and the
Paged KV blocks view drawing them beside this app's block model.

The first tests need no engine: they feed the record messages packed as vLLM packs them (plain msgpack of the wire
form, not this app's Structs). The rest start their own vLLM with prefix caching and KV events (the shared `engine`
has neither), after binding the subscriber: events sent before it is bound are lost. TBT_TEST_KV_ENGINE=
"url|folder|pid|endpoint" uses one started elsewhere with tests/engine_server.py kv_events_flags(endpoint).
"""
import os
import time
from dataclasses import replace

import msgspec
import pytest

from engine_server import REQUEST_S, free_port, kv_events_flags, running_engine, started_for_the_tests
from model.vllm.client import EngineClient
from model.vllm.session import load_engine_model
from model.vllm.kv_events import SHORT_HEX, EngineBlocks, KVEventSubscriber, engine_blocks_view
from model.speed.paged import block_hashes

BLOCK = 128  # the CPU build's block size (checked against the events)
PACK = msgspec.msgpack.Encoder()


# ---- no engine: the wire form ------------------------------------------------------------------------------------
def stored(hashes, parent, token_ids, size):
    """A BlockStored as vLLM's msgspec Struct (tag=True, omit_defaults) packs it: a map with its tag under "type"."""
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent, "token_ids": token_ids,
            "block_size": size, "lora_id": None, "medium": "GPU", "lora_name": None}


def batch(ts, *events):
    return PACK.encode([ts, list(events), None])  # KVEventBatch is array_like: [ts, events, data_parallel_rank]


@pytest.mark.unit
def test_a_stored_event_of_several_blocks_is_split_and_chained():
    blocks = EngineBlocks()
    a, b, c = b"\x01" * 8, b"\x02" * 8, b"\x03" * 8
    blocks.feed(0, batch(1.0, stored([a, b], None, [1, 2, 3, 4, 5, 6, 7, 8], 4)))
    blocks.feed(1, batch(2.0, stored([c], b, [9, 9, 9, 9], 4), {"type": "BlockRemoved", "block_hashes": [a],
                                                                "medium": "GPU"}))
    snap = blocks.snapshot()
    assert snap.heard and snap.block_size == 4
    assert [(e.kind, e.hash, e.parent, e.token_ids) for e in snap.events] == [
        ("stored", a.hex(), None, (1, 2, 3, 4)), ("stored", b.hex(), a.hex(), (5, 6, 7, 8)),
        ("stored", c.hex(), b.hex(), (9, 9, 9, 9)), ("removed", a.hex(), None, ())]
    assert snap.children == {a.hex(): [b.hex()], b.hex(): [c.hex()]}  # a was removed: no longer a live root
    chain = snap.chain([1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 0])
    assert chain.hashes == [a.hex(), b.hex(), c.hex()] and chain.removed == [True, False, False]
    assert chain.full_blocks == 3
    assert snap.chain([1, 2, 3, 5, 5, 6, 7, 8]).hashes == []  # block 1 differs: nothing after it either
    assert snap.counts == {"batches": 2, "stored": 3, "removed": 1, "cleared": 0, "skipped": 0, "lost": 0}


@pytest.mark.unit
def test_int_hashes_a_cleared_cache_a_lost_batch_and_a_foreign_message():
    blocks = EngineBlocks(record_size=3)
    blocks.feed(5, batch(1.0, stored([7, 2**64 - 1], None, [1, 1, 2, 2], 2)))
    blocks.feed(8, batch(2.0, {"type": "AllBlocksCleared"}))
    blocks.feed(9, b"\x93not a batch")
    blocks.feed(10, PACK.encode({"something": "else"}))
    snap = blocks.snapshot()
    assert [e.hash for e in snap.events] == ["0000000000000007", "ffffffffffffffff", None]  # bounded: 3 kept
    assert not any(b.live for b in snap.blocks.values()) and snap.children == {}
    assert snap.counts["lost"] == 2 and snap.counts["skipped"] == 2 and snap.counts["cleared"] == 1


@pytest.mark.unit
def test_the_engine_and_the_apps_model_count_shared_blocks_the_same_way():
    blocks = EngineBlocks()
    x, y, z = b"x" * 8, b"y" * 8, b"z" * 8
    blocks.feed(0, batch(1.0, stored([x, y], None, [1, 2, 3, 4], 2), stored([z], x, [5, 5], 2)))
    one, two = [1, 2, 3, 4, 9], [1, 2, 5, 5]
    view = engine_blocks_view(blocks.snapshot(), [("you", one), ("", two)])
    short = lambda h: h.hex()[:SHORT_HEX]  # noqa: E731  (the page gets the hash's first digits)
    assert [r.hashes for r in view.rows] == [[short(x), short(y)], [short(x), short(z)]]
    assert [r.shared for r in view.rows] == [[True, False], [True, False]]
    assert view.engine_shared == 1 and view.model_shared == 1 and view.agree
    # the app's model shares a block of [1, 2, 3, 4] with a third text the engine never saw: they differ
    view = engine_blocks_view(blocks.snapshot(), [("", one), ("", [1, 2, 3, 4])])
    assert view.engine_shared == 2 and view.model_shared == 2  # both chains are known to the engine
    view = engine_blocks_view(blocks.snapshot(), [("", [7, 7, 1]), ("", [7, 7])])
    assert view.engine_shared == 0 and view.model_shared == 1 and not view.agree
    assert engine_blocks_view(EngineBlocks().snapshot(), [("", one)]) is None  # nothing heard: nothing to compare


# ---- the real engine ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kv_engine():
    """(a vLLM publishing its KV events, the subscriber bound to its endpoint): bound first, then the engine."""
    spec = os.environ.get("TBT_TEST_KV_ENGINE")
    if spec:
        url, folder, pid, endpoint = spec.split("|")
        subscriber = KVEventSubscriber(endpoint)
        yield running_engine(f"{url}|{folder}|{pid}"), subscriber
        subscriber.close()
        return
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    subscriber = KVEventSubscriber(endpoint)
    server = started_for_the_tests(kv_events_flags(endpoint), log="vllm-kv-events")
    try:
        yield server, subscriber
    finally:
        server.stop()
        subscriber.close()


@pytest.fixture(scope="module")
def kv_lm(kv_engine):
    server, subscriber = kv_engine
    lm = load_engine_model(EngineClient(server.url, server.model, timeout=REQUEST_S), server.folder)
    return replace(lm, kv_events=subscriber)


RUN = f"Run {time.time_ns()}:"  # this run's own texts: an engine kept from an earlier run has their blocks cached


def text_ids(lm, words: str, n: int) -> list[int]:
    """n token ids of `words` repeated, after this run's mark (a prompt of a known length, its own per test and per
    run: no block of another test, nor of an earlier run on the same engine, whose cache would answer it silently)."""
    ids = lm.tokenizer(RUN + " " + " ".join([words] * n))["input_ids"]
    assert len(ids) >= n
    return ids[:n]


def wait_for(subscriber, stored: int, timeout: float = 60.0):
    """The snapshot once `stored` blocks were stored in all (the engine publishes after each step)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        snap = subscriber.snapshot()
        if snap.counts["stored"] >= stored:
            return snap
        time.sleep(0.2)
    return subscriber.snapshot()


@pytest.mark.engine
def test_two_texts_with_a_common_first_block_share_the_engines_block(kv_engine, kv_lm):
    _, subscriber = kv_engine
    before = subscriber.snapshot().counts["stored"]
    prefix = text_ids(kv_lm, "Rivers carry sand from the mountains down to the sea every spring.", 200)
    one = prefix + text_ids(kv_lm, "Apples grow on trees in the orchard behind the old farmhouse.", 60)
    two = prefix + text_ids(kv_lm, "Trains leave the northern station at seven every evening.", 60)
    kv_lm.client.next_token(one)
    kv_lm.client.next_token(two)
    snap = wait_for(subscriber, before + 3)
    new = [e for e in snap.events if e.kind == "stored"][-(snap.counts["stored"] - before):]
    print(f"\nKV events: {snap.counts}; this test's stored blocks: {len(new)}, block size {snap.block_size}")
    assert snap.block_size == BLOCK and all(e.block_size == BLOCK for e in new)
    chain_one, chain_two = snap.chain(one), snap.chain(two)
    assert chain_one.full_blocks == chain_two.full_blocks == 260 // BLOCK == 2
    assert len(chain_one.hashes) == len(chain_two.hashes) == 2
    first = chain_one.hashes[0]
    assert chain_two.hashes[0] == first  # one block for the common first 128 tokens
    assert chain_one.hashes[1] != chain_two.hashes[1]  # the second blocks differ from token 200 on
    assert [e.hash for e in new].count(first) == 1  # stored once: the second text found it in the cache
    block = snap.blocks[first]
    assert block.parent is None and block.token_ids == tuple(one[:BLOCK]) == tuple(two[:BLOCK])
    for chain, ids in ((chain_one, one), (chain_two, two)):
        second = snap.blocks[chain.hashes[1]]
        assert second.parent == first and second.token_ids == tuple(ids[BLOCK:2 * BLOCK])
    assert {e.hash for e in new} == {first, chain_one.hashes[1], chain_two.hashes[1]}
    assert set(snap.children[first]) >= {chain_one.hashes[1], chain_two.hashes[1]}


def common_full_blocks(one: list[int], two: list[int], size: int) -> int:
    """Full blocks two texts share by hand: block i is shared when they agree on every token up to its end."""
    n = 0
    while (n + 1) * size <= min(len(one), len(two)) and one[: (n + 1) * size] == two[: (n + 1) * size]:
        n += 1
    return n


@pytest.mark.engine
def test_the_paged_view_draws_the_engines_blocks_beside_the_apps_model(kv_engine, kv_lm, lm):
    from gradio_client import Client

    from model.serving.sessions import ModelRegistry, SessionStore
    from served import DEFAULTS, served

    _, subscriber = kv_engine
    models = ModelRegistry("smollm2", {"smollm2": lm})
    models.add_engine(kv_lm)
    prefix = kv_lm.tokenizer.decode(text_ids(kv_lm, "A lighthouse keeper counts the ships that pass the rocky cape.", 270))
    settings = {**DEFAULTS, "temperature": 0.0}
    with served(models, SessionStore(max_sessions=4)) as (page, url, demo):
        a, b = Client(demo.local_url, verbose=False), Client(demo.local_url, verbose=False)
        before = subscriber.snapshot().counts["stored"]
        a.predict(prefix + " The first keeper", "raw", kv_lm.name, **settings, api_name="/start")
        b.predict(prefix + " Her brother sailed", "raw", kv_lm.name, **settings, api_name="/start")
        one, two = (list(page.store.get(c.session_hash).ids) for c in (a, b))
        wait_for(subscriber, before + 2)  # a's two prompt blocks; b finds both in the cache
        summary, plot, numbers, line, engine_plot = a.predict("en", api_name="/paged")
        engine = numbers["engine"]
        print(f"\nKV events: { {k: engine[k] for k in ('batches', 'stored', 'removed', 'live')} }; "
              f"shared full blocks: engine {engine['engine_shared']}, model {engine['model_shared']}")
        shared = common_full_blocks(one, two, BLOCK)
        assert shared == 2  # 270 common tokens: two full blocks of 128
        model_count = len(set(block_hashes(one, BLOCK)) & set(block_hashes(two, BLOCK)))
        assert engine["block_size"] == BLOCK and engine["model_shared"] == model_count == shared
        assert engine["engine_shared"] == shared and engine["agree"]
        you, other = engine["rows"]
        assert you["you"] and not other["you"] and you["tokens"] == len(one)
        assert you["hashes"][:shared] == other["hashes"][:shared] and you["shared"][:shared] == [True] * shared
        assert you["full_blocks"] == len(one) // BLOCK
        assert "The engine's own blocks" in line
        import json

        assert engine_plot["visible"] is True  # shown (hidden on a local model, and while the engine is silent)
        shown = engine_plot["value"]
        figure = json.loads(shown["plot"]) if isinstance(shown, dict) else json.loads(shown)
        roles = {tr["meta"]["role"]: tr for tr in figure["data"]}
        assert len(roles["paged_engine_shared"]["x"]) == 2 * shared  # a shared cell in each of the two rows
        assert roles["paged_engine_shared"]["meta"]["hashes"][0] == you["hashes"][0]
        subtitle = " ".join(figure["layout"]["title"]["subtitle"]["text"].replace("<br>", " ").split())
        assert f"the engine {shared}, this app's block model {shared} at {BLOCK} tokens per block: they agree" in subtitle
        assert numbers["sessions"] == 2  # this app's own model of the same sessions, drawn above as before


@pytest.mark.engine
def test_a_silent_endpoint_says_so_and_changes_nothing(kv_engine, kv_lm, lm):
    from gradio_client import Client

    from model.serving.sessions import ModelRegistry, SessionStore
    from served import DEFAULTS, served

    silent = KVEventSubscriber(f"tcp://127.0.0.1:{free_port()}")  # bound where the engine does not publish
    try:
        quiet_lm = replace(kv_lm, kv_events=silent)
        models = ModelRegistry("smollm2", {"smollm2": lm})
        models.add_engine(quiet_lm)
        with served(models, SessionStore(max_sessions=4)) as (page, url, demo):
            a = Client(demo.local_url, verbose=False)
            a.predict("The harbour at dawn", "raw", quiet_lm.name, **{**DEFAULTS, "temperature": 0.0},
                      api_name="/start")
            a.predict(**{**DEFAULTS, "temperature": 0.0}, api_name="/next_token")
            session = page.store.get(a.session_hash)
            ids, steps = list(session.ids), len(session.steps)
            time.sleep(1.0)
            for lang, words in (("en", "The engine has sent no KV cache events"), ("zh", "引擎没有发来任何 KV 缓存事件")):
                summary, plot, numbers, line, engine_plot = a.predict(lang, api_name="/paged")
                assert line.startswith(words) and engine_plot["visible"] is False and engine_plot["value"] is None
                assert numbers["engine"]["heard"] is False and numbers["engine"]["batches"] == 0
                assert numbers["sessions"] == 1 and numbers["rows"][0]["tokens"] == len(ids)  # the model's part as ever
            print(f"\nsilent endpoint: {silent.snapshot().counts}")
            assert session.ids == ids and len(session.steps) == steps
    finally:
        silent.close()


@pytest.mark.unit
def test_an_address_that_cannot_be_bound_is_one_plain_error():
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    first = KVEventSubscriber(endpoint)
    try:
        with pytest.raises(ValueError, match="cannot bind"):
            KVEventSubscriber(endpoint)  # in use
        with pytest.raises(ValueError, match="cannot bind"):
            KVEventSubscriber("not an address")
    finally:
        first.close()


@pytest.mark.unit
def test_the_events_address_comes_with_an_engine_only(monkeypatch):
    import app

    monkeypatch.delenv("TBT_ENGINE_URL", raising=False)
    with pytest.raises(SystemExit, match="needs --engine-url"):
        app.main(["--engine-kv-events", f"tcp://127.0.0.1:{free_port()}"])


@pytest.mark.unit
def test_the_chart_marks_shared_removed_and_missing_blocks():
    from viz.paged_engine import engine_blocks_chart

    blocks = EngineBlocks()
    x, y, z = b"x" * 8, b"y" * 8, b"z" * 8
    blocks.feed(0, batch(1.0, stored([x, y], None, [1, 2, 3, 4], 2), stored([z], x, [5, 5], 2)))
    blocks.feed(1, batch(2.0, {"type": "BlockRemoved", "block_hashes": [y], "medium": "GPU"}))
    view = engine_blocks_view(blocks.snapshot(), [("you", [1, 2, 3, 4, 6, 6]), ("", [1, 2, 5, 5])])
    assert view.live == 2 and view.removed_seen == 1 and view.engine_shared == 1 and view.model_shared == 1
    for lang in ("en", "zh"):
        chart = engine_blocks_chart(view, lang)
        roles = {tr["meta"]["role"]: tr for tr in chart["data"]}
        short = lambda h: h.hex()[:SHORT_HEX]  # noqa: E731
        assert roles["paged_engine_shared"]["meta"]["hashes"] == [short(x), short(x)]  # block 1 of both rows
        assert list(roles["paged_engine_shared"]["y"]) == [0, 1]
        assert roles["paged_engine_removed"]["meta"]["hashes"] == [short(y)]  # your block 2, removed since
        assert roles["paged_engine_own"]["meta"]["hashes"] == [short(z)]  # the other's block 2
        assert (list(roles["paged_engine_missing"]["y"]), list(roles["paged_engine_missing"]["base"])) == ([0], [2.05])
        assert chart["layout"]["yaxis"]["ticktext"] == ["you", "会话 2" if lang == "zh" else "session 2"]


@pytest.mark.engine
def test_a_full_cache_removes_the_oldest_blocks_and_the_record_marks_them(kv_engine, kv_lm):
    """(last: it fills the engine's cache) The engine's KV space (tests/engine_server.py: VLLM_CPU_KVCACHE_SPACE=1 GiB)
    holds 2**30 / (128 x bytes per token) blocks by the KV formula; texts of fresh blocks past that make it evict the
    least recently used, the first text's, and publish BlockRemoved for them."""
    import random

    from model.speed.paged import bytes_per_token

    _, subscriber = kv_engine
    capacity = 2**30 // (BLOCK * bytes_per_token(kv_lm.info))
    rng = random.Random(time.time_ns())
    first = [rng.randrange(100, 40000) for _ in range(3 * BLOCK)]
    kv_lm.client.next_token(first)
    texts, t0 = 1, time.monotonic()
    while texts < 2 * capacity // 3 + 4:  # at most twice the cache's worth of fresh blocks
        kv_lm.client.next_token([rng.randrange(100, 40000) for _ in range(3 * BLOCK)])
        texts += 1
        chain = subscriber.snapshot().chain(first)
        if chain.hashes and all(chain.removed):
            break
    time.sleep(1.0)
    snap = subscriber.snapshot()
    chain = snap.chain(first)
    print(f"\ncapacity by the formula: {capacity} blocks; {texts} texts of 3 blocks in {time.monotonic() - t0:.0f} s; "
          f"KV events: {snap.counts}; live {snap.live_count()}")
    assert len(chain.hashes) == 3 and all(chain.removed)  # the oldest text's blocks went first
    removed = [e.hash for e in snap.events if e.kind == "removed"]
    assert set(chain.hashes) <= set(removed)
    # the first text's blocks went once about a cache's worth of fresh blocks came after them, not before (the few
    # blocks of the tests above, older still, go first; vLLM keeps one block of its own)
    assert capacity - 3 <= 3 * (texts - 1) <= capacity + 12
    assert snap.live_count() <= capacity
