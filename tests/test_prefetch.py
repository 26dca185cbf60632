"""Computing ahead: a prefetched step records exactly what a plain step does, and nothing else notices it."""
import threading
import time

import numpy as np
import pytest
import torch

import model.decoding.scheduler as scheduler_module
from cores import computed_ahead, scheduling, sequence, settle_ahead
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from model.serving.sessions import SessionStore
from model.decoding.trace import replay, to_trace

pytestmark = pytest.mark.model

GREEDY = SamplingConfig(temperature=0)
SAMPLED = SamplingConfig(temperature=0.9, top_k=40, top_p=0.95, min_p=0.02, repetition_penalty=1.1, seed=7)
PROMPT = "Once upon a time, in a small village,"


def started(lm, prompt=PROMPT, **kw):
    """A session on `prompt` (ahead=True: one that computes ahead, as a server's)."""
    s = DecodeSession(lm, **kw)
    s.start(prompt)
    return s


def assert_same_step(expected, got):
    """Everything a view draws from a step, compared exactly (the attention row bitwise)."""
    assert got.step == expected.step and got.position == expected.position and got.text == expected.text
    assert got.distribution == expected.distribution  # token, u, every candidate's probabilities, every stage
    assert got.attention.dtype == expected.attention.dtype and np.array_equal(got.attention, expected.attention)
    assert got.kv == expected.kv


def assert_cache_holds_ids(s):
    assert s.prefetched is None
    assert all(layer.keys.shape[-2] == layer.values.shape[-2] == len(s.ids) for layer in sequence(s).cache.layers)


def another_token_config(s, token):
    """A sampled config whose draw at the next position is not `token`."""
    for seed in range(100):
        cfg = SamplingConfig(temperature=1.5, seed=seed)
        if s.preview(cfg).chosen.id != token:
            return cfg
    raise AssertionError("every seed drew the same token")


@pytest.mark.parametrize("cfg", [GREEDY, SAMPLED], ids=["greedy", "sampled"])
def test_a_prefetched_step_records_what_a_plain_step_does(lm, cfg, monkeypatch):
    plain, ahead = started(lm), started(lm, ahead=True)
    passes, step_forwards = [], []
    real_forward_one = scheduler_module.forward_one
    scheduler = scheduler_module.scheduler_of(lm.model)
    ours = sequence(ahead).cache  # (the plain session's passes go through the same scheduler: not counted)
    real_run = scheduler.run
    real_forward_batch = scheduler_module.forward_batch
    monkeypatch.setattr(scheduler_module, "forward_one",
                        lambda m, c, t: (c is ours and passes.append(t)) or real_forward_one(m, c, t))
    def counted_batch(m, caches, tokens):  # (on a loaded machine the pass ahead may share a batched pass with the
        passes.extend(t for c, t in zip(caches, tokens) if c is ours)  # plain session's step: counted too)
        return real_forward_batch(m, caches, tokens)

    monkeypatch.setattr(scheduler_module, "forward_batch", counted_batch)
    monkeypatch.setattr(scheduler, "run",  # a step's own pass
                        lambda c, *a, **k: (c is ours and step_forwards.append(a)) or real_run(c, *a, **k))
    for i in range(10):
        # the first pass ahead is asked for (a start without the page's settings); every later one the core ran
        # ahead by itself with the step before: asked again, it says so and starts nothing
        assert ahead.prefetch(cfg) == (i == 0)
        assert ahead.prefetched == plain.preview(cfg).chosen.id
        job = sequence(ahead)._ahead.job
        expected, got = plain.step(cfg), ahead.step(cfg)
        assert_same_step(expected, got)
        assert got.timings.forward_ms == job.result[2]  # the time of the pass that made it: the prefetch
        assert torch.equal(ahead.next_logits, plain.next_logits)
        assert ahead.prefetched == ahead.preview(cfg).chosen.id  # the next one, started with the step
    settle_ahead(ahead)
    assert_cache_holds_ids(ahead)
    assert ahead.ids == plain.ids
    assert (sequence(ahead).prefetch_hits, sequence(ahead).prefetch_misses) == (10, 1)  # the last one thrown away
    assert step_forwards == []  # no step ran a second pass
    # one pass per token, the prefetched one (and the last one ahead, if it ran before it was taken back)
    assert passes[:10] == ahead.ids[ahead.prompt_len :] and len(passes) in (10, 11), (passes, ahead.ids[ahead.prompt_len - 1 :])


def test_a_step_choosing_another_token_throws_the_prefetch_away(lm):
    s, fresh = started(lm, ahead=True), started(lm)
    greedy = s.preview(GREEDY)
    other = greedy.candidates[1].token.id
    assert s.prefetch(GREEDY) and s.prefetched == greedy.chosen.id
    assert_same_step(fresh.step(GREEDY, force_token=other), s.step(GREEDY, force_token=other))
    assert (sequence(s).prefetch_hits, sequence(s).prefetch_misses) == (0, 1)
    assert s.prefetched == s.preview(GREEDY).chosen.id  # the next one, started with the step

    hot = another_token_config(s, s.prefetched)  # the user moved the sliders after the prefetch
    assert_same_step(fresh.step(hot), s.step(hot))
    assert (sequence(s).prefetch_hits, sequence(s).prefetch_misses) == (0, 2)
    assert s.prefetched == s.preview(hot).chosen.id  # under the settings of that step

    s.back(1)  # (no settings given: nothing is computed ahead)
    fresh.back(1)
    assert_cache_holds_ids(s)
    assert s.prefetch(GREEDY)  # and the next prefetch is used again
    assert_same_step(fresh.step(GREEDY), s.step(GREEDY))
    assert torch.equal(s.next_logits, fresh.next_logits)
    assert (sequence(s).prefetch_hits, sequence(s).prefetch_misses) == (1, 3)


def test_new_settings_retarget_a_finished_prefetch(lm):
    s, fresh = started(lm, ahead=True), started(lm)
    assert s.prefetch(GREEDY)
    assert not s.prefetch(GREEDY)  # already held
    scheduler_module.scheduler_of(lm.model).wait(sequence(s)._ahead.job)
    hot = another_token_config(s, s.prefetched)
    assert s.prefetch(hot) and s.prefetched == s.preview(hot).chosen.id
    assert sequence(s).prefetch_misses == 1
    assert_same_step(fresh.step(hot), s.step(hot))
    assert sequence(s).prefetch_hits == 1
    settle_ahead(s)
    assert_cache_holds_ids(s)


def test_back_reset_go_to_and_start_settle_the_prefetch(lm):
    s = started(lm, "The capital of France is", ahead=True)
    for _ in range(4):
        assert computed_ahead(s, GREEDY)
        s.step(GREEDY)
    assert computed_ahead(s, GREEDY)
    scheduler_module.scheduler_of(lm.model).wait(sequence(s)._ahead.job)
    assert sequence(s).cache.get_seq_length() == len(s.ids) + 1  # the prefetched token is in the cache...
    s.back(1)
    assert len(s.steps) == 3 and len(s.ids) == s.prompt_len + 3
    assert_cache_holds_ids(s)  # ...and gone again

    assert s.prefetch(GREEDY)
    s.reset()
    assert s.steps == [] and len(s.ids) == s.prompt_len
    assert_cache_holds_ids(s)
    assert torch.equal(s.next_logits, s._prefill_logits)

    for _ in range(3):
        assert computed_ahead(s, GREEDY)
        s.step(GREEDY)
    assert computed_ahead(s, GREEDY)
    s.go_to(1)
    assert len(s.steps) == 1
    assert_cache_holds_ids(s)

    assert s.prefetch(GREEDY)
    s.start("Water boils at")
    assert s.prefill.prompt == "Water boils at" and s.steps == []
    assert_cache_holds_ids(s)
    assert sequence(s).prefetch_misses == 4

    for _ in range(8):
        assert computed_ahead(s, GREEDY)
        s.step(GREEDY)
    prompt_ids = torch.tensor([s.ids[: s.prompt_len]])
    expected = lm.model.generate(prompt_ids, attention_mask=torch.ones_like(prompt_ids), do_sample=False, max_new_tokens=8)
    assert s.ids == expected[0].tolist()
    assert sequence(s).prefetch_hits == 4 + 3 + 8


def test_a_page_with_its_settings_makes_one_call_per_change(lm, monkeypatch):
    """A server's session told the page's settings with each change (start, step, back, reset, go to) gets the next
    distribution with the answer and the pass ahead started by the core: one call into the core per click; the
    page's render and its own prefetch() derive nothing and ask nothing more."""
    import model.decoding.backend as backend_module

    s, plain = DecodeSession(lm, ahead=True), DecodeSession(lm)
    calls, derives = [], []
    core = s.backend.core
    for name in ("start", "advance", "back", "prefetch", "ahead", "held", "resume"):
        real = getattr(core, name)  # (the plain session's calls go to the same core: not counted)
        monkeypatch.setattr(core, name, lambda key, *a, _real=real, _name=name, **k: (
            key == s.backend.key and calls.append(_name)) or _real(key, *a, **k))
    real_derive = backend_module.derive
    monkeypatch.setattr(backend_module, "derive", lambda *a, **k: derives.append(a[2]) or real_derive(*a, **k))
    s.start("The capital of France is", cfg=SAMPLED)
    plain.start("The capital of France is", cfg=SAMPLED)  # (its distributions derived in the core too: none here)
    for change in (lambda x, c: x.step(c), lambda x, c: x.step(c), lambda x, c: x.back(1, c),
                   lambda x, c: x.step(c), lambda x, c: x.go_to(1, c), lambda x, c: x.reset(c)):
        change(s, SAMPLED)
        change(plain, SAMPLED)
        shown, reference = s.preview(SAMPLED), plain.preview(SAMPLED)
        # (the same numbers to float rounding: a pass ahead may share a batch with the other session's step)
        assert shown.chosen == reference.chosen and shown.position == reference.position
        assert [c.token.id for c in shown.candidates] == [c.token.id for c in reference.candidates]
        assert [c.final_prob for c in shown.candidates] == pytest.approx(
            [c.final_prob for c in reference.candidates], abs=1e-5)
        assert not s.prefetch(SAMPLED)
    assert calls == ["start", "advance", "advance", "back", "advance", "back", "back"] and derives == []
    assert s.ids == plain.ids and s.prefetched == s.preview(SAMPLED).chosen.id


def test_an_unwanted_prefetch_still_queued_is_taken_back_without_waiting(lm):
    s = started(lm, ahead=True)
    s.step(GREEDY)
    assert sequence(s).held().job.done.wait(120)  # the pass the step started ahead, done
    hot = another_token_config(s, s.prefetched)
    with scheduling(lm) as batcher:
        with batcher.turn():  # the model is held: the new prefetch stays queued
            assert s.prefetch(hot)  # (the finished pass of another token thrown away: no wait)
            going_back = threading.Thread(target=s.back, args=(1,))  # to the prompt: no pass of its own to run
            going_back.start()
            going_back.join(2.0)
            assert not going_back.is_alive()  # it did not wait for the queued pass
            assert sequence(s).prefetch_misses == 2
            assert_cache_holds_ids(s)
        s.prefetch(GREEDY)
        s.step(GREEDY)
        settle_ahead(s)  # (the pass the step started ahead: taken back, or waited for if it runs)
        # the last prefetch, and perhaps the step's own pass ahead: never the taken back one
        assert batcher.batch_sizes in ([1], [1, 1])


def test_a_played_back_trace_prefetches_the_recorded_token(lm):
    made = started(lm, "A short story:")
    made.step(SAMPLED)
    made.step(SAMPLED, force_token=made.preview(SAMPLED).candidates[3].token.id)
    made.step(SAMPLED)
    s = DecodeSession(lm, ahead=True)
    replay(s, to_trace(made), rewind=True)
    while s.replay_left:
        # the page's settings, not the recorded ones: the recorded token is next (after the first, the core runs
        # it ahead with the step before)
        assert s.prefetch(GREEDY) == (s.replay_left == 3)
        assert s.prefetched == s._replay[0][1]
        s.replay_next()
    assert s.ids == made.ids and sequence(s).prefetch_hits == 3
    for expected, got in zip(made.steps, s.steps):
        assert_same_step(expected, got)


def test_renders_do_not_wait_for_a_prefetch(lm):
    s = started(lm, ahead=True)
    with scheduling(lm) as batcher, batcher.turn():  # the worker cannot run the pass until the test lets go
        started_ahead, rendered = [], []

        def render():  # in a thread, so that one which waits for the pass fails the test instead of hanging it
            started_ahead.append(s.prefetch(GREEDY))
            s.preview(SAMPLED)
            s.sweep(SAMPLED, [0.5, 1.0, 1.5])
            with s.reading(timeout=0.5):
                rendered.append(True)

        page = threading.Thread(target=render)
        page.start()
        page.join(1.0)
        assert started_ahead == [True] and rendered == [True]
        assert not sequence(s)._ahead.job.done.is_set()  # the pass really was still pending

        records = []
        stepping = threading.Thread(target=lambda: records.append(s.step(GREEDY)))
        stepping.start()  # a click now waits for the pass it will use
        time.sleep(0.3)
        assert stepping.is_alive() and records == []
    stepping.join(30)
    assert len(records) == 1 and sequence(s).prefetch_hits == 1
    assert_same_step(started(lm).step(GREEDY), records[0])


def test_a_failed_prefetch_changes_nothing(lm, monkeypatch):
    s = started(lm, "Fault injection test:", ahead=True)
    batcher = scheduler_module.scheduler_of(lm.model)
    s.step(SAMPLED)
    before = (list(s.ids), len(s.steps), s.next_logits)
    last = lm.model.model.layers[-1]

    def broken(*a, **k):  # the last layer fails after the earlier ones appended to the cache
        raise RuntimeError("injected fault")

    monkeypatch.setattr(last, "forward", broken)  # this layer only
    assert computed_ahead(s, SAMPLED)  # no error here: it happens in the worker
    assert batcher.wait(sequence(s)._ahead.job) and isinstance(sequence(s)._ahead.job.error, RuntimeError)
    monkeypatch.undo()
    assert sequence(s).cache.layers[0].keys.shape[-2] == len(s.ids) + 1  # a half-written cache, until settled
    assert sequence(s).cache.layers[-1].keys.shape[-2] == len(s.ids)
    assert (list(s.ids), len(s.steps)) == before[:2] and torch.equal(s.next_logits, before[2])

    fresh = started(lm, "Fault injection test:")
    fresh.step(SAMPLED)
    assert_same_step(fresh.step(SAMPLED), s.step(SAMPLED))  # the step runs its own pass
    assert (sequence(s).prefetch_hits, sequence(s).prefetch_misses) == (0, 1)
    settle_ahead(s)  # (the pass the step started ahead)
    assert_cache_holds_ids(s)

    monkeypatch.setattr(last, "forward", broken)
    assert s.prefetch(SAMPLED)
    batcher.wait(sequence(s)._ahead.job)
    monkeypatch.undo()
    s.back(1)  # going back after a failed prefetch
    assert len(s.steps) == 1
    assert_cache_holds_ids(s)
    assert torch.equal(s.next_logits, before[2])


def test_prefetch_does_nothing_when_it_cannot_help(lm, held_elsewhere):
    assert not started(lm).prefetch(GREEDY)  # a session not made to compute ahead (not a server's) does not
    s = DecodeSession(lm, ahead=True)
    assert not s.prefetch(GREEDY)  # not started
    s.start("Hello")
    assert not s.prefetch(SamplingConfig(temperature=-1)) and not s.prefetch(None)  # invalid settings

    with held_elsewhere(s):
        assert not s.prefetch(GREEDY)  # busy: refused at once, no SessionBusy

    s.step(GREEDY, force_token=lm.tokenizer.eos_token_id)
    assert s.finished and not s.prefetch(GREEDY)

    full = DecodeSession(lm, max_tokens=s.prompt_len + 1, ahead=True)
    full.start("Hello")
    with scheduling(lm) as batcher:
        full.step(GREEDY)
        assert len(full.ids) == full.max_tokens and not full.prefetch(GREEDY)
        assert s.prefetched is None and full.prefetched is None
        assert batcher.batch_sizes == [1]  # the step above, and no pass ahead: the text is full


def test_two_sessions_prefetching_at_once_write_what_they_would_alone(lm):
    prompts = ["def add(a, b):", "Water boils at"]
    alone = [started(lm, p) for p in prompts]
    for s in alone:
        for _ in range(12):
            s.step(GREEDY)
    together = [started(lm, p, ahead=True) for p in prompts]
    with scheduling(lm) as batcher:
        with batcher.turn():  # the model is held while both prefetches queue: they run as one batch
            assert all(s.prefetch(GREEDY) for s in together)
        for s in together:
            s.step(GREEDY)
        assert 2 in batcher.batch_sizes

    barrier = threading.Barrier(len(together))

    def run(s):
        for _ in range(11):
            barrier.wait(30)
            s.prefetch(GREEDY)  # (the core runs it ahead already, with the step before: nothing more)
            s.step(GREEDY)

    threads = [threading.Thread(target=run, args=(s,)) for s in together]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    for a, b in zip(alone, together):
        assert b.ids == a.ids
        assert (sequence(b).prefetch_hits, sequence(b).prefetch_misses) == (12, 0)
        assert all(r.kv.measured == r.kv.formula for r in b.steps)
        settle_ahead(b)
        assert_cache_holds_ids(b)


def test_a_session_dropped_with_a_prefetch_pending_breaks_nothing(lm):
    store = SessionStore()
    store.put("tab", started(lm, ahead=True))
    other = started(lm, "Water boils at", ahead=True)
    core = other.backend.core
    held = core.sequences()
    closing = []
    with scheduling(lm) as batcher, batcher.turn():
        assert store.get("tab").prefetch(GREEDY)
        # the tab closed: its sequence is closed in the core (its pass ahead taken back), in another thread here,
        # since the model is held by this test
        closing.append(threading.Thread(target=store.drop, args=("tab",)))
        closing[0].start()
        time.sleep(0.1)
    closing[0].join(30)
    assert core.sequences() == held - 1  # its sequence freed at once, no garbage collection needed
    other.prefetch(GREEDY)
    assert_same_step(started(lm, "Water boils at").step(GREEDY), other.step(GREEDY))
    assert len(store) == 0


def test_a_forward_that_times_out_in_the_queue_never_runs_later(lm, monkeypatch):
    """Before submit/wait, a step that timed out cut its cache back, and the worker then appended to it."""
    first, late, third = started(lm), started(lm, "Late"), started(lm, "Third")
    gate = threading.Event()
    real_forward = scheduler_module.forward_one
    monkeypatch.setattr(scheduler_module, "forward_one", lambda m, c, t: gate.wait(30) and real_forward(m, c, t))
    with scheduling(lm) as batcher:
        running = batcher.submit(sequence(first).cache, 1)
        while batcher._pending:  # the worker has taken it: its pass waits at the gate
            time.sleep(0.005)
        with pytest.raises(TimeoutError):
            batcher.run(sequence(late).cache, 2, timeout=0.2)
        waited = []
        waiter = threading.Thread(target=lambda: waited.append(batcher.wait(running, timeout=0.1)))
        waiter.start()
        time.sleep(0.3)
        assert waiter.is_alive()  # a job already running is waited for past the timeout
        gate.set()
        waiter.join(30)
        assert waited == [True] and running.result is not None
        batcher.run(sequence(third).cache, 3)  # first in, first out: the late job would have run by now
        assert sequence(late).cache.get_seq_length() == len(late.ids)
        assert batcher.batch_sizes == [1, 1]


def test_a_step_page_prefetch_and_next_step_derive_the_distribution_once(lm, monkeypatch):
    import model.decoding.backend as session_module

    s = started(lm, ahead=True)
    derives = []
    real = session_module.derive
    monkeypatch.setattr(session_module, "derive", lambda *a, **k: derives.append(a[2]) or real(*a, **k))
    page = s.preview(SAMPLED)  # what the page shows
    assert s.prefetch(SAMPLED)  # the same settings: the same distribution, not derived again
    record = s.step(SAMPLED)  # and the step draws from it
    assert derives == [SAMPLED] and record.distribution == page
    # a new position: its distribution came with the pass computed ahead, from the batch's sampler (derive() not
    # called here), and it is derive()'s record, to the bit
    after = s.preview(SAMPLED)
    assert after is not page and len(derives) == 1 and after.position == len(s.ids)
    assert after == real(s.next_logits, torch.tensor([s.ids]), SAMPLED, len(s.ids), lm.tokens)
    assert s.preview(GREEDY) and len(derives) == 2  # other settings: derived here
    s.back(1)  # back to the prompt: the same logits as before, so the first answer again, equal to a fresh derive
    assert s.preview(SAMPLED) == page == real(s.next_logits, torch.tensor([s.ids]), SAMPLED, len(s.ids), lm.tokens)


@pytest.mark.parametrize("cfg", [GREEDY, SAMPLED], ids=["greedy", "sampled"])
def test_the_next_distribution_seen_ahead_is_what_the_next_step_shows(lm, cfg, monkeypatch):
    import model.decoding.backend as session_module

    s, plain = started(lm, ahead=True), started(lm)
    derives = []
    real = session_module.derive
    monkeypatch.setattr(session_module, "derive", lambda *a, **k: derives.append(a[3]) or real(*a, **k))
    assert s.preview_ahead(cfg) is None  # nothing computed ahead yet
    for _ in range(4):
        assert computed_ahead(s, cfg)
        ids, dist = s.preview_ahead(cfg)
        plain.step(cfg)
        assert ids == plain.ids and dist == plain.preview(cfg)  # a session that computed nothing ahead agrees
        n = len(derives)
        s.step(cfg)
        assert s.ids == ids and s.preview(cfg) is dist  # the step and its page derive nothing new ...
        assert len(derives) == n  # ... and neither did the step itself (the previous position was remembered)
    # Other settings, whose draw is another token than the one computed ahead: nothing to show ahead
    assert computed_ahead(s, cfg)
    assert s.preview_ahead(another_token_config(s, s.prefetched)) is None
    # A step taken meanwhile: the pass is the step's now, and the core started the next one ahead of it
    ahead = sequence(s)._ahead
    s.step(cfg)
    assert sequence(s)._ahead is not ahead and ahead.job.done.is_set()
    assert s.preview_ahead(cfg)[0] == [*s.ids, s.preview(cfg).chosen.id]


def test_waiting_for_the_pass_ahead_does_not_hold_the_session(lm, monkeypatch):
    s = started(lm, ahead=True)
    gate = threading.Event()
    real_forward = scheduler_module.forward_one
    monkeypatch.setattr(scheduler_module, "forward_one", lambda m, c, t: gate.wait(30) and real_forward(m, c, t))
    assert s.prefetch(SAMPLED)  # its pass waits at the gate
    seen = []
    waiter = threading.Thread(target=lambda: seen.append(s.preview_ahead(SAMPLED, timeout=30)))
    waiter.start()
    time.sleep(0.2)  # the waiter is waiting for the pass now
    assert s.preview(GREEDY) is not None  # a render is not held up
    threading.Timer(0.2, gate.set).start()
    record = s.step(SAMPLED)  # nor is a Next token (not refused as busy): it waits for the pass and takes it
    waiter.join(30)
    assert (sequence(s).prefetch_hits, sequence(s).prefetch_misses) == (1, 0) and record.step == 1
    # The waiter saw the pass before the step took it, or found it taken: never anything else
    assert seen == [None] or (seen[0][0] == s.ids and seen[0][1] == s.preview(SAMPLED))
