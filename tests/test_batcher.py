"""Continuous batching: sessions stepping together get what each would get alone."""
import threading
import time

import numpy as np
import pytest
import torch

from model.decoding.batching import forward_batch, forward_one

from cores import scheduling, sequence
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession

pytestmark = pytest.mark.model

PROMPTS = ["The capital of France is", "def add(a, b):", "Once upon a time, in a small village, there lived",
           "Water boils at"]


def started(lm, ahead=False):
    sessions = [DecodeSession(lm, ahead=ahead) for _ in PROMPTS]
    for s, p in zip(sessions, PROMPTS):
        s.start(p)
    return sessions


def test_a_batched_pass_equals_one_pass_per_session(lm):
    alone, together = started(lm), started(lm)
    tokens = [int(s.next_logits.argmax()) for s in alone]
    expected = [forward_one(lm.model, sequence(s).cache, t) for s, t in zip(alone, tokens)]
    got = forward_batch(lm.model, [sequence(s).cache for s in together], tokens)
    for (l1, r1, _), (l2, r2, _), s in zip(expected, got, together):
        assert torch.allclose(l1, l2, atol=1e-3, rtol=1e-4)
        assert r2.shape == r1.shape == (lm.info.layers, lm.info.heads, s.prompt_len + 1)  # padding cut away
        assert np.allclose(r1.astype(np.float32), r2.astype(np.float32), atol=2e-3)
    for a, b in zip(alone, together):  # each cache got exactly its own new K and V
        for la, lb in zip(sequence(a).cache.layers, sequence(b).cache.layers):
            assert la.keys.shape == lb.keys.shape and torch.allclose(la.keys, lb.keys, atol=1e-4)
            assert torch.allclose(la.values, lb.values, atol=1e-4)


def test_sessions_stepping_at_once_write_what_they_would_alone(lm):
    greedy = SamplingConfig(temperature=0)
    alone = started(lm)
    for s in alone:
        for _ in range(12):
            s.step(greedy)
    together = started(lm)
    barrier = threading.Barrier(len(together))

    def run(s):
        for _ in range(12):
            barrier.wait(30)  # all four ask at once, so the batcher sees them together
            s.step(greedy)

    with scheduling(lm, max_batch=8) as batcher:
        threads = [threading.Thread(target=run, args=(s,)) for s in together]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert max(batcher.batch_sizes) > 1  # really batched
    for a, b in zip(alone, together):
        assert b.ids == a.ids
        assert all(r.kv.measured == r.kv.formula for r in b.steps)
        for ra, rb in zip(a.steps, b.steps):
            assert rb.attention.shape == ra.attention.shape
            assert np.allclose(rb.attention.astype(np.float32).sum(-1), 1, atol=2e-3)


def test_a_failed_batch_leaves_every_session_as_it_was(lm, monkeypatch):
    sessions = started(lm)
    before = [[layer.keys.shape for layer in sequence(s).cache.layers] for s in sessions]
    real = type(lm.model.model.layers[-1]).forward
    monkeypatch.setattr(type(lm.model.model.layers[-1]), "forward", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("injected")))
    with pytest.raises(RuntimeError, match="injected"):
        forward_batch(lm.model, [sequence(s).cache for s in sessions], [1, 2, 3, 4])
    monkeypatch.setattr(type(lm.model.model.layers[-1]), "forward", real)
    assert [[layer.keys.shape for layer in sequence(s).cache.layers] for s in sessions] == before


def test_a_servers_batch_pass_reuses_its_memory_instead_of_faulting_it_in(lm):
    """Once a batcher exists, a batch pass's tens of MB of short-lived tensors come from memory the last pass freed,
    not fresh from the kernel each pass (page faults: counted, not timed, so a loaded machine does not matter)."""
    import resource

    from model.decoding.cache_surgery import crop_to

    from model.decoding.passes import prefill
    from model.decoding.scheduler import scheduler_of

    started(lm)[0].step(SamplingConfig(temperature=0))  # the scheduler's worker runs: it set glibc's malloc up
    assert scheduler_of(lm.model).heap_kept
    ids = (lm.tokenizer("The history of the printing press begins in the fifteenth century")["input_ids"] * 20)[:240]
    caches = [prefill(lm.model, ids[: 240 - i]).cache for i in range(16)]
    lengths = [c.get_seq_length() for c in caches]
    faults = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        forward_batch(lm.model, caches, [5] * 16)
        faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
        for c, n in zip(caches, lengths):
            crop_to(c, n)
    # glibc's default: 27k-66k faults a pass here (100-260 MB faulted in again each time); kept: far fewer
    assert min(faults[1:]) < 10_000, faults


def test_sessions_computing_ahead_in_one_pass_get_their_next_distribution_from_one_sampler(lm, monkeypatch):
    """The pass's rows sampled together (batch_sampling.derive_batch, each with its own settings), each row derive()'s
    record of its own logits to the bit; the session's next step and page take it and derive nothing more."""
    import model.decoding.backend as backend_module
    from model.decoding.sampling import derive

    settings = [SamplingConfig(temperature=0), SamplingConfig(seed=3),
                SamplingConfig(temperature=0.8, top_k=30, top_p=0.9, min_p=0.02, repetition_penalty=1.2, seed=5),
                SamplingConfig(temperature=1.4, top_p=0.8, order="temperature_last", seed=9)]
    sessions = started(lm, ahead=True)
    with scheduling(lm) as batcher:
        with batcher.turn():  # the model is held while all four queue: they go as one batch once it is free
            assert all(s.prefetch(cfg) for s, cfg in zip(sessions, settings))
        for s in sessions:
            assert sequence(s).held().job.done.wait(120)
        assert len(sessions) in batcher.batch_sizes
    derives = []
    real = backend_module.derive
    monkeypatch.setattr(backend_module, "derive", lambda *a, **k: derives.append(a[2]) or real(*a, **k))
    for s, cfg in zip(sessions, settings):
        job, token = sequence(s).held().job, s.prefetched
        assert job.done.wait(120) and job.dist is not None
        ids = [*s.ids, token]
        assert job.dist == derive(job.result[0], torch.tensor([ids]), cfg, len(ids), lm.tokens)
        s.step(cfg)
        assert s.ids == ids and s.preview(cfg) is job.dist
    assert derives == []  # not one session derived its own
    forced = sessions[0].preview(settings[0], force_token=5)  # a forced token: the session's own derive()
    assert derives == [settings[0]] and forced.forced and forced.chosen.id == 5


def test_passes_computed_ahead_gather_into_one_batch_and_a_waited_one_goes_at_once(lm):
    """With gather_s, while a class steps, passes computed ahead nobody waits for yet wait for others to share their
    pass (one batch of four, not four passes); a run's pass may go meanwhile; the moment a step needs its pass, it
    goes, with what is queued. The passes a step starts ahead by itself gather the same way. Each session writes what
    it writes alone."""
    cfg = SamplingConfig(seed=7)
    alone = started(lm)
    for s, steps in zip(alone, (3, 2, 2, 2)):
        for _ in range(steps):
            s.step(cfg)
    with scheduling(lm, gather_s=3600.0, recent_s=3600.0) as lone:  # "lately", on a machine of any speed
        solo, first, second = started(lm, ahead=True)[:3]
        assert solo.prefetch(cfg) and sequence(solo).held().job.done.wait(120)  # no other session lately: it goes
        assert first.prefetch(cfg) and sequence(first).held().job.done.wait(120)  # one other: not yet a class
        assert second.prefetch(cfg)  # two others lately (gather_after=2): a class steps, it gathers
        assert lone.batch_sizes == [1, 1] and not lone.has_pending()
        assert second.preview_ahead(cfg) is not None and lone.batch_sizes == [1, 1, 1]  # waited for: it goes at once

    # longer than any test: only a full batch or a waiter ends it; gather_after=0: as if a class were stepping
    sessions = started(lm, ahead=True)
    with scheduling(lm, gather_s=3600.0, gather_after=0, max_batch=16) as batcher:
        for s in sessions[:3]:
            assert s.prefetch(cfg)
        assert batcher.batch_sizes == [] and not batcher.has_pending()  # gathering: not yet a step a run waits for
        with batcher.turn():  # a whole-text run's pass goes while they gather
            pass
        batcher.max_batch = 4
        assert sessions[3].prefetch(cfg)  # the fourth fills the batch: it goes without anyone waiting
        assert all(sequence(s).held().job.done.wait(120) for s in sessions)
        assert batcher.batch_sizes == [4]

        for s in sessions:
            s.step(cfg)  # takes its pass computed ahead, and the core starts the next one ahead: they gather
        assert all(sequence(s).held().job.done.wait(120) for s in sessions)  # the fourth filled the batch
        assert batcher.batch_sizes == [4, 4]
        batcher.max_batch = 5
        for s in sessions[1:]:
            s.step(cfg)  # the next three ahead, gathering
        sessions[0].step(cfg)  # the fourth: a batch of five is not full, they gather on
        assert batcher.batch_sizes == [4, 4] and not batcher.has_pending()
        sessions[0].step(cfg)  # its step waits for its pass: the four queued go at once
        assert batcher.batch_sizes == [4, 4, 4]
    for s, a in zip(sessions, alone):
        assert s.ids == a.ids
