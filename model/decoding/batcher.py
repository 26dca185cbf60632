"""Continuous batching: the decode steps of many sessions share one forward pass.

A decode step reads every weight once and is bound by memory bandwidth, so a batch of sessions costs
little more than one (docs/what-it-teaches.md: Batching). Each session keeps its own DynamicCache; for a batched step
their caches are left-padded to one length, the padding masked out, each session's new token placed at
its own position, and afterwards each cache gets its own new keys and values back. A batch of one runs
exactly the unbatched computation.
"""
from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections import Counter, deque
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from model.decoding.batch_sampling import SampleRow, derive_batch
from model.decoding.door import door_of
from model.decoding.records import Distribution


RECENT_SUBMITS = 512  # submissions remembered to tell whether a class is stepping (StepBatcher.gather_after)
RECENT_S = 1.0  # ... within this long before the first queued job


@dataclass(eq=False)  # a job is itself: compared by identity, so cancel() removes this one and no other
class _Job:
    """One token for one cache, queued for the worker; `done` is set once `result` or `error` is in (and `dist`, if
    the job asked for its next token's distribution)."""

    cache: DynamicCache
    token_id: int
    sample: SampleRow | None = None  # the next position's settings: derive its distribution with the batch's
    done: threading.Event = field(default_factory=threading.Event)
    result: tuple | None = None
    error: BaseException | None = None
    dist: Distribution | None = None  # derive() of the result's logits under `sample`, from the batch's sampler
    queued: float = field(default_factory=time.perf_counter)  # when submitted
    urgent: bool = False  # somebody waits for it (a step); a pass computed ahead nobody waits for yet is not


def forward_one(model, cache: DynamicCache, token_id: int):
    """One token through the model on one cache: (next logits (V,), attention row (layers, heads, t) fp16, ms)."""
    t0 = time.perf_counter()
    out = model(input_ids=torch.tensor([[token_id]]), past_key_values=cache, use_cache=True, output_attentions=True)
    ms = (time.perf_counter() - t0) * 1000
    t = cache.get_seq_length()
    # A sliding-window layer past its window attends to its last `window` keys only: the positions before
    # them are masked, weight 0, so the row is padded with zeros on the left to all t positions.
    rows = [a[0, :, -1, :] if a.shape[-1] == t else torch.nn.functional.pad(a[0, :, -1, :], (t - a.shape[-1], 0))
            for a in out.attentions]
    row = torch.stack(rows).to(torch.float16).numpy()  # (layers, heads, t)
    return out.logits[0, -1].clone(), row, ms


class _SlotLayer(DynamicLayer):
    """One layer of a batch's cache: the sessions' keys and values left-padded into one buffer that has one free
    position at the end, which the pass's new token fills in place. (A DynamicLayer's update concatenates: the
    whole batch's cache would be copied once more in every layer of every pass, 4-9 % of a batch-16 pass.)"""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        super().__init__()
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
        self._full = (keys, values)
        self.keys, self.values = keys[..., :-1, :], values[..., :-1, :]  # what the pass sees as the past

    def update(self, key_states, value_states, *args, **kwargs):
        keys, values = self._full
        keys[..., -1:, :] = key_states
        values[..., -1:, :] = value_states
        self.keys, self.values = keys, values
        return keys, values


def batch_cache(caches: list[DynamicCache]) -> tuple[DynamicCache, list[int], int]:
    """The sessions' caches left-padded into one batch cache with a free position for the new token: (the batch
    cache, each session's length, the longest). The sessions' caches are only read."""
    lengths = [c.get_seq_length() for c in caches]
    longest = max(lengths)
    batch = DynamicCache()
    layers = []
    for layer_idx in range(len(caches[0].layers)):
        first = caches[0].layers[layer_idx].keys  # (1, kv_heads, t, head_dim)
        shape = (len(caches), first.shape[1], longest + 1, first.shape[3])
        keys, values = first.new_zeros(shape), first.new_zeros(shape)
        for i, c in enumerate(caches):  # left padding: every new token sits at the end
            # n tokens, or a sliding-window layer's last window - 1; the zeros before those are outside its window
            held = c.layers[layer_idx].keys.shape[-2]
            keys[i, :, longest - held : longest] = c.layers[layer_idx].keys[0]
            values[i, :, longest - held : longest] = c.layers[layer_idx].values[0]
        layers.append(_SlotLayer(keys, values))
    batch.layers = layers
    return batch, lengths, longest


@torch.no_grad()
def forward_batch(model, caches: list[DynamicCache], token_ids: list[int]):
    """One token for each of several sessions in one forward pass; each cache gets its own new K and V.

    The caches are only appended to after the pass succeeded, so a failure leaves every session as it was.
    """
    batch, lengths, longest = batch_cache(caches)
    mask = torch.zeros(len(caches), longest + 1, dtype=torch.long)  # the padding mask (1 = a real token)
    for i, n in enumerate(lengths):
        mask[i, longest - n :] = 1
    t0 = time.perf_counter()
    out = model(input_ids=torch.tensor(token_ids).reshape(-1, 1), attention_mask=mask,
                position_ids=torch.tensor(lengths).reshape(-1, 1), past_key_values=batch, use_cache=True,
                output_attentions=True)
    ms = (time.perf_counter() - t0) * 1000
    results = []
    for i, (c, n) in enumerate(zip(caches, lengths)):
        row = torch.stack([a[i, :, -1, longest - n :] for a in out.attentions]).to(torch.float16).numpy()
        results.append((out.logits[i, -1].clone(), row, ms))
    for layer_idx, layer in enumerate(batch.layers):  # the new token's K and V, back into each session's cache
        for i, c in enumerate(caches):
            c.layers[layer_idx].update(layer.keys[i : i + 1, :, -1:].clone(), layer.values[i : i + 1, :, -1:].clone())
    return results


DECODE_THREADS = 1
HEAP_KEEP_MB = (64, 512)  # glibc malloc: allocations up to 64 MB from the heap, freed heap kept up to 512 MB


def keep_freed_memory(mmap_mb: int = HEAP_KEEP_MB[0], trim_mb: int = HEAP_KEEP_MB[1]) -> bool:
    """Let glibc's malloc keep the memory a pass frees for the next pass (True if it could be set).

    A batch-16 pass allocates tens of MB of short-lived tensors (the padded cache, eager attention's repeated keys
    and values, the logits); by default glibc maps each such block fresh from the kernel and gives the heap's top
    back after the pass, so every pass page-faults all of it in again. Measured here (bench.precision --heap,
    256 cached tokens, others taking half the machine): a batch-16 pass 1.3 s of CPU with the default, 0.63 s with
    this; at 64 tokens and at batch 1 no difference. The price: up to trim_mb of freed memory stays with the
    process (a pass's peak, once reached). Process-wide; set once a batcher exists (a server).
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
        return bool(libc.mallopt(m_mmap_threshold, mmap_mb << 20)) and bool(libc.mallopt(m_trim_threshold, trim_mb << 20))
    except (OSError, AttributeError):  # not glibc: nothing to set
        return False
PASS_LOG = 240  # passes the batcher remembers for the batching view


class CpuSplit:
    """Where a server's CPU goes, by part (the model's passes, the figures, a step's bookkeeping): for each part the
    calls, the CPU seconds of the thread that ran them (time.thread_time) and their wall seconds. Cheap (two clock
    reads per call); read by the classroom benchmark through its stats route (ui/play.py, bench mode only)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.parts: dict[str, list[float]] = {}  # part: [calls, cpu_s, wall_s]

    @contextlib.contextmanager
    def part(self, name: str):
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            yield
        finally:
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            with self._lock:
                row = self.parts.setdefault(name, [0, 0.0, 0.0])
                row[0] += 1
                row[1] += cpu
                row[2] += wall

    def snapshot(self) -> dict[str, dict[str, float]]:
        with self._lock:
            return {k: {"calls": n, "cpu_s": c, "wall_s": w} for k, (n, c, w) in self.parts.items()}


CPU = CpuSplit()  # one per server process
BATCHERS: "weakref.WeakSet[StepBatcher]" = weakref.WeakSet()  # every batcher of this process, for bench_stats


def bench_stats() -> dict:
    """What the classroom benchmark reads from a server in bench mode: the process's CPU seconds so far, the CPU
    split by part, and each model's batcher's batch sizes (how many passes ran at each size)."""
    import os

    t = os.times()
    return {"process_cpu_s": t.user + t.system, "parts": CPU.snapshot(),
            "batch_sizes": {b.name: {str(k): v for k, v in sorted(b.batch_histogram.items())} for b in list(BATCHERS)}}


@dataclass(frozen=True)
class PassRecord:
    """One forward pass the worker ran: only counts and times, never whose steps or what text."""

    sessions: int  # steps it carried (one per session)
    ms: float  # wall time of the pass, batching and copying back included
    at: float  # when it ended, time.time() (seconds since the epoch)


def sample_batch(jobs: list[_Job]) -> None:
    """The next position's Distribution of every job that asked, in one pipeline over the batch, outside the model's
    door (the next pass need not wait for it). If it fails, no job gets one: each session derives its own."""
    if not jobs:
        return
    try:
        with CPU.part("derive"):  # the same part as a session's own derive(): the benchmark compares the two
            dists = derive_batch(torch.stack([job.result[0] for job in jobs]), [job.sample for job in jobs])
    except Exception:  # noqa: BLE001 (settings a session checks when it derives: it refuses them there, in its words)
        return
    for job, dist in zip(jobs, dists):
        job.dist = dist


class StepBatcher:
    """Collects the decode steps that arrive together from different sessions and runs them as one batch.

    Request threads call forward() and wait (or submit() and collect the job later, to compute ahead); one
    worker thread runs the model, so the model is never run twice at once and the 2 cores are not oversubscribed.
    Its passes go through the model's door (door.py) ahead of any whole-text run's.

    With `gather_s` > 0, while a class is stepping (at least `gather_after` other sessions submitted in the last
    second), passes computed ahead that nobody waits for yet (prefetches) wait up to gather_s for others to share
    their pass, unless the batch is full; a job somebody waits for (wait(), hurry()) goes at once, with whatever is
    queued. A model process that never waits for an interpreter shared with the web otherwise runs a pass for every
    prefetch as soon as it comes: near its core's limit, small and dear batches (docs/performance.md). Alone, a
    presenter's prefetch goes at once: its head start is what makes a quick next click quick.
    """

    def __init__(self, model, max_batch: int = 16, name: str = "", gather_s: float = 0.0, gather_after: int = 2):
        self.model = model
        self.name = name or type(model).__name__
        self.max_batch = max_batch
        self.gather_s = gather_s
        self.gather_after = gather_after
        self.recent_s = RECENT_S
        self._submitted: deque[tuple[float, int]] = deque(maxlen=RECENT_SUBMITS)  # (when, id of its cache)
        self._pending: list[_Job] = []
        self._cond = threading.Condition()
        self.batch_sizes: list[int] = []  # every batch run, in order, for the tests
        self.batch_histogram: Counter[int] = Counter()  # passes run at each batch size, for the benchmarks
        self.passes: deque[PassRecord] = deque(maxlen=PASS_LOG)  # the last passes, for the batching view
        self.door = door_of(model)  # every pass on the model goes through it; decode steps first
        self.door.serve(self)
        self.heap_kept = keep_freed_memory()
        self._worker = threading.Thread(target=self._run, name="step-batcher", daemon=True)
        self._worker.start()
        BATCHERS.add(self)

    def submit(self, cache: DynamicCache, token_id: int, sample: SampleRow | None = None) -> _Job:
        """Queue one token for the next batch and return at once; the worker appends its K and V to `cache`.

        The job's `done` is set when its `result` (logits (V,), attention row, ms) or `error` is in. Until then
        the cache belongs to the worker: the caller must not read or change it (see wait()). With `sample` (the
        settings of the position after the token), its `dist` is that position's Distribution, derived with the
        batch's other rows in one pipeline (batch_sampling.derive_batch), or None if that failed.
        """
        job = _Job(cache, token_id, sample)
        with self._cond:
            if self.gather_s:
                self._submitted.append((job.queued, id(cache)))
            self._pending.append(job)
            self._cond.notify()
        return job

    def wait(self, job: _Job, timeout: float = 120.0) -> bool:
        """Wait for a submitted job: True once it has run (result or error in), False if it was still queued
        after `timeout` seconds and has been taken back (it never runs). A job the worker has already taken is
        waited for to the end, so that nothing writes into its cache after this returns."""
        self.hurry(job)
        if job.done.wait(timeout):
            return True
        if self.cancel(job):
            return False
        job.done.wait()  # running: one forward pass from the end
        return True

    def hurry(self, job: _Job) -> None:
        """Somebody waits for `job`: its pass goes at once, with whatever is queued (see gather_s)."""
        if self.gather_s and not job.urgent:
            with self._cond:
                job.urgent = True
                self._cond.notify()

    def has_pending(self) -> bool:
        """True while steps are queued for the next pass and not gathering others (the door lets them go before
        a run's pass; a run's pass may go while prefetches gather). Called from the door's threads: with gathering,
        under the batcher's lock (its record of submissions must not change while it is read)."""
        if not self.gather_s:
            return bool(self._pending)
        with self._cond:
            return bool(self._pending) and self._gather_left() <= 0

    def _gather_left(self) -> float:
        """(The batcher's lock held.) Seconds the queued jobs may still wait for others to share their pass: 0 once
        the batch is full, one of them is waited for, the first has waited gather_s, or no class is stepping (fewer
        than gather_after other sessions submitted in the last second: nobody to share with)."""
        pending = self._pending
        if not self.gather_s or not pending or len(pending) >= self.max_batch:
            return 0.0
        if any(job.urgent for job in pending):
            return 0.0
        left = pending[0].queued + self.gather_s - time.perf_counter()
        if left <= 0:
            return 0.0
        since = pending[0].queued - self.recent_s
        others = {cache for at, cache in self._submitted if at >= since} - {id(job.cache) for job in pending}
        return left if len(others) >= self.gather_after else 0.0

    def cancel(self, job: _Job) -> bool:
        """Take back a job the worker has not started: True if it was still queued (it will never run)."""
        with self._cond:
            if job in self._pending:
                self._pending.remove(job)
                return True
            return False

    def forward(self, cache: DynamicCache, token_id: int, timeout: float = 120.0):
        """Same result as forward_one(model, cache, token_id), computed in a batch with whatever else is waiting."""
        return self.forward_job(cache, token_id, timeout).result

    def forward_job(self, cache: DynamicCache, token_id: int, timeout: float = 120.0,
                    sample: SampleRow | None = None) -> _Job:
        """forward()'s job, run: its `result` in, and its `dist` if `sample` asked for one (see submit())."""
        job = self.submit(cache, token_id, sample)
        if not self.wait(job, timeout):
            raise TimeoutError("The model did not answer in time; the server is overloaded.")
        if job.error is not None:
            raise job.error
        return job

    def _run(self):
        # One thread for decode passes: a one-token pass is bound by memory and Python, and a second OpenMP
        # thread only spins (measured here: 79-98 ms on one thread, 91 ms on two, at twice the CPU; batches
        # of 4-16 alike). The second core stays free for the web server, renders and the browser.
        torch.set_num_threads(DECODE_THREADS)  # this thread's setting: a prefill elsewhere sets its own
        while True:
            with self._cond:
                while not self._pending or (left := self._gather_left()) > 0:
                    self._cond.wait(left if self._pending else None)
                jobs, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            self.batch_sizes.append(len(jobs))
            self.batch_histogram[len(jobs)] += 1
            t0 = time.perf_counter()
            try:
                with self.door.step(), torch.no_grad(), CPU.part("model pass"):
                    if len(jobs) == 1:
                        results = [forward_one(self.model, jobs[0].cache, jobs[0].token_id)]
                    else:
                        results = forward_batch(self.model, [j.cache for j in jobs], [j.token_id for j in jobs])
                for job, result in zip(jobs, results):
                    job.result = result
            except BaseException as err:  # every session of the batch is told; none of their caches changed
                for job in jobs:
                    job.error = err
            self.passes.append(PassRecord(len(jobs), (time.perf_counter() - t0) * 1000, time.time()))
            sample_batch([job for job in jobs if job.sample is not None and job.error is None])
            for job in jobs:
                job.done.set()

    def recent_passes(self, seconds: float | None = None) -> list[PassRecord]:
        """The remembered passes, oldest first (only those of the last `seconds` if given)."""
        passes = list(self.passes)  # a copy: the worker appends while we read
        if seconds is None:
            return passes
        since = time.time() - seconds
        return [p for p in passes if p.at >= since]
