"""The model's core in a process of its own (--model-process): a session there records what a session here records,
and a core process killed while sessions step is started again, their texts kept.

The reference is the same session on the core in this process (one pass per token, derive() per step, nothing
computed ahead); the session on the core process runs its passes in that process's scheduler, computes ahead, and
takes the next position's Distribution from its batched sampler.
"""
import os
import signal
import threading
import time

import pytest
import torch

from cores import computed_ahead
from model.decoding.backend import CoreBackend
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from model.errors import SessionError
from model.serving import core_process
from model.serving.core_process import ProcessCore

pytestmark = pytest.mark.model

PROMPT = "The capital of France is"
CONFIGS = [SamplingConfig(), SamplingConfig(temperature=0.7, top_k=20, seed=3),
           SamplingConfig(top_p=0.9, min_p=0.05, repetition_penalty=1.3, order="temperature_last", seed=5),
           SamplingConfig(temperature=0), SamplingConfig(temperature=1.4, top_p=0.8, seed=11)]


@pytest.fixture(scope="module")
def apart(lm):
    core = ProcessCore(lm).launch()  # (lm here: the model's name and tokenizer; the weights load there)
    yield core
    core.stop()


def there(lm, core, **limits) -> DecodeSession:
    """A server's session on the core process: it computes ahead."""
    return DecodeSession(lm, backend=CoreBackend(core), ahead=True, **limits)


def here(lm) -> DecodeSession:
    return DecodeSession(lm)  # the reference: the core in this process, nothing computed ahead


def walk(session: DecodeSession) -> DecodeSession:
    """Steps under every setting (each pass run ahead where the backend can, as the page asks after every render,
    a step in three under other settings than the prefetch's), a forced token, three steps back, and on again."""
    session.start(PROMPT)
    for i in range(10):
        session.prefetch(CONFIGS[(i + (i % 3 == 0)) % len(CONFIGS)])
        session.step(CONFIGS[i % len(CONFIGS)])
    session.step(CONFIGS[1], force_token=session.preview(CONFIGS[1]).candidates[4].token.id)
    session.back(3)
    for i in range(4):
        session.step(CONFIGS[(i + 2) % len(CONFIGS)])
    return session


def assert_same_records(a: DecodeSession, b: DecodeSession) -> None:
    assert a.ids == b.ids
    assert len(a.steps) == len(b.steps)
    for x, y in zip(a.steps, b.steps):
        dx, dy = x.distribution, y.distribution
        assert (dx.chosen.id, dx.forced, dx.chosen_rank) == (dy.chosen.id, dy.forced, dy.chosen_rank)
        assert [c.token.id for c in dx.candidates] == [c.token.id for c in dy.candidates]
        for cx, cy in zip(dx.candidates, dy.candidates):
            assert cx.fate == cy.fate
            assert cx.final_prob == pytest.approx(cy.final_prob, abs=1e-6)
            assert cx.stage_probs == pytest.approx(cy.stage_probs, abs=1e-6)
        assert [(s.name, s.kept, s.removed) for s in dx.stages] == [(s.name, s.kept, s.removed) for s in dy.stages]
        assert dx.tail_mass_final == pytest.approx(dy.tail_mass_final, abs=1e-6)
        assert dx.entropy_final_bits == pytest.approx(dy.entropy_final_bits, abs=1e-5)
        assert dx.u == dy.u
        assert x.kv == y.kv  # measured on the cache's tensors, there and here
        assert x.attention.shape == y.attention.shape
        assert abs(x.attention.astype("float32") - y.attention.astype("float32")).max() < 2e-3  # float16 rows
    assert torch.allclose(a.next_logits, b.next_logits, atol=1e-4)


def test_a_session_apart_records_what_a_session_here_records(lm, apart):
    remote = there(lm, apart)
    assert remote.backend.core is apart and remote.lm is lm
    assert_same_records(walk(remote), walk(here(lm)))
    before = apart.stats()["batch_sizes"][lm.name]
    assert sum(before.values()) >= 14  # the steps' passes ran in the core process's scheduler


def test_the_pass_ahead_apart(lm, apart):
    """The page's look ahead (the candidates view's preview of the next step) reads the pass the model process ran
    ahead, and the step then takes it."""
    prompt_len = len(here(lm).encode_prompt(PROMPT, chat=False))
    # room for two steps: the second fills the text, so nothing is computed ahead after it
    remote, local = there(lm, apart, max_tokens=prompt_len + 2), here(lm)
    for session in (remote, local):
        session.start(PROMPT)
        session.step(CONFIGS[1])
    assert computed_ahead(remote, CONFIGS[2]) and remote.prefetched == local.preview(CONFIGS[2]).chosen.id
    ids, dist = remote.preview_ahead(CONFIGS[2])
    local.step(CONFIGS[2])
    assert ids == local.ids and dist.chosen.id == local.preview(CONFIGS[2]).chosen.id
    assert [c.final_prob for c in dist.candidates] == pytest.approx(
        [c.final_prob for c in local.preview(CONFIGS[2]).candidates], abs=1e-6)
    hits = apart.stats()["batch_sizes"][lm.name]
    remote.step(CONFIGS[2])
    assert apart.stats()["batch_sizes"][lm.name] == hits  # the step ran no pass: it took the one ahead
    assert remote.prefetched is None  # and the text is full: nothing ahead of it
    assert_same_records(remote, local)


def test_branches_and_a_trace_apart(lm, apart):
    """adopt() (a branch chosen again) and follow() (a trace played back in chunks) cross the link too."""
    remote, local = walk(there(lm, apart)), walk(here(lm))
    for session in (remote, local):
        session.back(2)
        session.step(CONFIGS[3])
        session.switch_branch(min(session.branches.kept))  # the text before the last step back, rebuilt
    assert_same_records(remote, local)
    steps = [(s.distribution.config, s.token.id, s.distribution.forced) for s in local.steps]
    replayed, reference = there(lm, apart), here(lm)
    for session in (replayed, reference):
        session.start(PROMPT)
        session.follow(steps)
    assert_same_records(replayed, reference)


def test_a_killed_core_process_is_started_again_and_the_texts_kept(lm, apart, monkeypatch):
    """A call running in the core process when it dies is told so, once (model_restarted); every other call of every
    session (one stepping in a loop through the death, one that only steps after it) holds its text again and goes
    on, its user seeing only the wait; the texts are what they would have been."""
    from model.decoding.timing import measure_cache_timing

    # A call that met the death waits for the process to be gone (it closes its sockets before it can be reaped),
    # never for one started since: made long, a wait for the wrong process would hang the test.
    monkeypatch.setattr(core_process, "DYING_S", 600.0)
    greedy = SamplingConfig(temperature=0)
    reference = here(lm)
    reference.start(PROMPT)
    for _ in range(12):
        reference.step(greedy)
    a, b, measuring = there(lm, apart), there(lm, apart), there(lm, apart)
    a.start(PROMPT)
    a.step(greedy)
    b.start(PROMPT)
    measuring.start(PROMPT * 40)
    stop, told, running = threading.Event(), [], []

    def class_steps():  # another session steps on while the process dies under it
        while len(b.steps) < 12 and not stop.is_set():
            try:
                b.step(greedy)
            except SessionError as err:
                told.append(err)

    def measure():  # a long computation (seconds of passes) that is running when the process dies
        text = measuring.whole_text()
        try:
            running.append(text.run(measure_cache_timing, [2, len(text.ids) - 1], 5, 30.0))
        except SessionError as err:
            running.append(err)

    stepping, measured = threading.Thread(target=class_steps), threading.Thread(target=measure)
    measured.start()
    stepping.start()
    time.sleep(1.0)  # the measurement's passes are under way
    pid, generation = apart.process.pid, apart.generation
    os.kill(pid, signal.SIGKILL)
    apart.process.join(10)
    measured.join(120)
    assert len(running) == 1 and isinstance(running[0], SessionError) and running[0].key == "model_restarted"
    assert "重新启动" in running[0].text("zh") and "click again" in running[0].text("en")
    a.step(greedy)  # a session that only steps after the death: its text held again, the step taken
    while len(a.steps) < 12:
        a.step(greedy)
    stepping.join(120)
    stop.set()
    assert not stepping.is_alive()
    assert apart.process.pid != pid and apart.process.is_alive() and apart.restarts == 1
    late = threading.Thread(target=apart.ensure, args=(generation,))  # one more call that met that death
    late.start()
    late.join(60)
    assert not late.is_alive() and apart.generation == generation + 1 and apart.restarts == 1
    assert [e.key for e in told] in ([], ["model_restarted"])  # told at most once: only a step running there
    for session in (a, b):
        assert session.ids == reference.ids
        assert session.steps[-1].kv == reference.steps[-1].kv
        assert [s.distribution.chosen_final_prob for s in session.steps] == pytest.approx(
            [s.distribution.chosen_final_prob for s in reference.steps], abs=1e-6)


def test_a_death_met_by_a_new_session_or_a_pass_ahead_is_not_the_users_trouble(lm, apart):
    """A session that had nothing there yet starts the process again and goes on; a pass ahead (asked after a
    change) that meets the death gives up quietly, and the next step holds the text again."""
    greedy = SamplingConfig(temperature=0)
    reference = here(lm)
    reference.start(PROMPT)
    for _ in range(3):
        reference.step(greedy)
    stepped = there(lm, apart)
    stepped.start(PROMPT)
    stepped.step(greedy)  # and its next pass computed ahead
    restarts = apart.restarts
    for _ in range(2):
        os.kill(apart.process.pid, signal.SIGKILL)
        apart.process.join(10)
        if apart.restarts == restarts:
            fresh = there(lm, apart)
            fresh.start(PROMPT)  # its first call: no error, the process started again for it
            for _ in range(3):
                fresh.step(greedy)
            assert fresh.ids == reference.ids and apart.restarts == restarts + 1
        else:
            assert stepped.prefetched is None  # what it ran ahead died with the process
            assert stepped.prefetch(SamplingConfig(temperature=0.5, seed=1)) is False  # nothing there: nothing said
            stepped.step(greedy)
            stepped.step(greedy)
            assert stepped.ids == reference.ids and apart.restarts == restarts + 2
            assert stepped.steps[-1].kv == reference.steps[-1].kv


def test_closed_sessions_free_their_share_of_the_core_process(lm, apart):
    """Sessions opened, stepped and closed (a class's tabs): the core process's sequences, threads and memory come
    back to where they were; nothing waits for the web process's garbage collector."""
    import gc

    import psutil

    from model.serving.sessions import SessionStore

    greedy = SamplingConfig(temperature=0)
    warm = [there(lm, apart) for _ in range(4)]  # the links and the memory a pass needs, made once
    for s in warm:
        s.start(PROMPT)
        s.step(greedy)
    for s in warm:
        s.close()
    gc.disable()  # no cycle collection may be what frees them
    try:
        deadline = time.monotonic() + 30
        while apart.sequences() and time.monotonic() < deadline:
            time.sleep(0.1)
        process = psutil.Process(apart.process.pid)
        before = (apart.sequences(), process.num_threads(), len(process.net_connections("unix")), process.memory_info().rss)
        store = SessionStore(max_sessions=60)
        for round_ in range(50):
            s = there(lm, apart)
            s.start(f"{PROMPT} {round_}")
            s.step(greedy)
            s.step(greedy)
            store.put(f"tab-{round_}", s)
            store.drop(f"tab-{round_}")  # the tab closed
            del s
        deadline = time.monotonic() + 30
        while apart.sequences() and time.monotonic() < deadline:
            time.sleep(0.1)
        after = (apart.sequences(), process.num_threads(), len(process.net_connections("unix")), process.memory_info().rss)
    finally:
        gc.enable()
    print(f"core process before / after 50 closed sessions: sequences {before[0]} / {after[0]}, threads {before[1]} / "
          f"{after[1]}, unix sockets {before[2]} / {after[2]}, RSS {before[3] / 2**20:.0f} / {after[3] / 2**20:.0f} MB")
    assert after[0] == 0
    assert after[1] <= before[1] + 2 and after[2] <= before[2] + 2  # a link or two more at most: the pool's
    assert after[3] <= before[3] * 1.05
