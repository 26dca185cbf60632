"""The model in a process of its own (--model-process): a session there records what a session here records, and a
model process killed while sessions step is started again, their texts kept.

The reference is the same session on a LocalBackend in this process (no batcher: one pass per token, derive() per
step); the session apart runs its passes in the model process's batcher and takes the next position's
Distribution from its batched sampler.
"""
import os
import signal
import threading

import pytest
import torch

from model.decoding.backend import LocalBackend
from model.decoding.records import SamplingConfig
from model.decoding.remote import RemoteBackend, serve_apart
from model.decoding.session import DecodeSession
from model.errors import SessionError
from model.serving import model_process
from model.serving.model_process import ModelProcess

pytestmark = pytest.mark.model

PROMPT = "The capital of France is"
CONFIGS = [SamplingConfig(), SamplingConfig(temperature=0.7, top_k=20, seed=3),
           SamplingConfig(top_p=0.9, min_p=0.05, repetition_penalty=1.3, order="temperature_last", seed=5),
           SamplingConfig(temperature=0), SamplingConfig(temperature=1.4, top_p=0.8, seed=11)]


@pytest.fixture(scope="module")
def apart(lm):
    process = ModelProcess(lm.name).start()
    serve_apart(lm, process)
    yield process
    process.stop()


def here(lm) -> DecodeSession:
    session = DecodeSession(lm)
    session.backend = LocalBackend(lm)  # the reference: this process's weights, whatever serves lm
    return session


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
    remote = DecodeSession(lm)
    assert isinstance(remote.backend, RemoteBackend)
    assert_same_records(walk(remote), walk(here(lm)))
    before = apart.stats()["batch_sizes"][lm.name]
    assert sum(before.values()) >= 14  # the steps' passes ran in the model process's batcher


def test_the_pass_ahead_apart(lm, apart):
    """The page's look ahead (the candidates view's preview of the next step) reads the pass the model process ran
    ahead, and the step then takes it."""
    remote, local = DecodeSession(lm), here(lm)
    for session in (remote, local):
        session.start(PROMPT)
        session.step(CONFIGS[1])
    assert remote.prefetch(CONFIGS[2]) and remote.prefetched == local.preview(CONFIGS[2]).chosen.id
    ids, dist = remote.preview_ahead(CONFIGS[2])
    local.step(CONFIGS[2])
    assert ids == local.ids and dist.chosen.id == local.preview(CONFIGS[2]).chosen.id
    assert [c.final_prob for c in dist.candidates] == pytest.approx(
        [c.final_prob for c in local.preview(CONFIGS[2]).candidates], abs=1e-6)
    hits = apart.stats()["batch_sizes"][lm.name]
    remote.step(CONFIGS[2])
    assert apart.stats()["batch_sizes"][lm.name] == hits  # the step ran no pass: it took the one ahead
    assert_same_records(remote, local)


def test_branches_and_a_trace_apart(lm, apart):
    """adopt() (a branch chosen again) and follow() (a trace played back in chunks) cross the link too."""
    remote, local = walk(DecodeSession(lm)), walk(here(lm))
    for session in (remote, local):
        session.back(2)
        session.step(CONFIGS[3])
        session.switch_branch(min(session.branches.kept))  # the text before the last step back, rebuilt
    assert_same_records(remote, local)
    steps = [(s.distribution.config, s.token.id, s.distribution.forced) for s in local.steps]
    replayed, reference = DecodeSession(lm), here(lm)
    for session in (replayed, reference):
        session.start(PROMPT)
        session.follow(steps)
    assert_same_records(replayed, reference)


def test_a_killed_model_process_is_started_again_and_the_texts_kept(lm, apart, monkeypatch):
    # A session that met the death waits for the process to be gone (it closes its sockets before it can be
    # reaped), never for one started since: made long, a wait for the wrong process would hang the test.
    monkeypatch.setattr(model_process, "DYING_S", 600.0)
    greedy = SamplingConfig(temperature=0)
    reference = here(lm)
    reference.start(PROMPT)
    for _ in range(12):
        reference.step(greedy)
    a, b = DecodeSession(lm), DecodeSession(lm)
    a.start(PROMPT)
    a.step(greedy)
    b.start(PROMPT)
    killed = threading.Event()
    told = []

    def class_steps():  # another session steps on while the process dies under it
        while len(b.steps) < 12:
            try:
                b.step(greedy)
            except SessionError as err:
                told.append(err)
            if len(b.steps) == 3:
                killed.wait(30)

    stepping = threading.Thread(target=class_steps)
    stepping.start()
    pid, generation = apart.process.pid, apart.generation
    os.kill(pid, signal.SIGKILL)
    apart.process.join(10)
    killed.set()
    with pytest.raises(SessionError) as err:
        a.step(greedy)
    assert err.value.key == "model_restarted"
    assert "重新启动" in err.value.text("zh") and "click again" in err.value.text("en")
    assert a.ids == reference.ids[: reference.prompt_len + 1]  # the click that met the death changed nothing
    while len(a.steps) < 12:
        a.step(greedy)
    stepping.join(120)
    assert not stepping.is_alive()
    assert apart.process.pid != pid and apart.process.is_alive() and apart.restarts == 1
    late = threading.Thread(target=apart.ensure, args=(generation,))  # one more session that met that death
    late.start()
    late.join(60)
    assert not late.is_alive() and apart.generation == generation + 1 and apart.restarts == 1
    assert [e.key for e in told] == ["model_restarted"]  # told once, in its language's key
    for session in (a, b):
        assert session.ids == reference.ids
        assert session.steps[-1].kv == reference.steps[-1].kv
        assert [s.distribution.chosen_final_prob for s in session.steps] == pytest.approx(
            [s.distribution.chosen_final_prob for s in reference.steps], abs=1e-6)


def test_a_death_met_by_a_new_session_or_a_pass_ahead_is_not_the_users_trouble(lm, apart):
    """A session that had nothing there yet starts the process again and goes on; a pass ahead (the page asks for
    one after every answer) that meets the death gives up quietly, and the next step rebuilds the cache."""
    greedy = SamplingConfig(temperature=0)
    reference = here(lm)
    reference.start(PROMPT)
    for _ in range(3):
        reference.step(greedy)
    stepped = DecodeSession(lm)
    stepped.start(PROMPT)
    stepped.step(greedy)
    restarts = apart.restarts
    for _ in range(2):
        os.kill(apart.process.pid, signal.SIGKILL)
        apart.process.join(10)
        if apart.restarts == restarts:
            fresh = DecodeSession(lm)
            fresh.start(PROMPT)  # its first call: no error, the process started again for it
            for _ in range(3):
                fresh.step(greedy)
            assert fresh.ids == reference.ids and apart.restarts == restarts + 1
        else:
            assert stepped.prefetch(greedy) is False  # met the death: nothing ahead, nothing said
            stepped.step(greedy)
            stepped.step(greedy)
            assert stepped.ids == reference.ids and apart.restarts == restarts + 2
            assert stepped.steps[-1].kv == reference.steps[-1].kv
