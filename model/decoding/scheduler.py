"""The one scheduler of a model: it decides which forward pass runs next, and every pass on the model goes through it.

A class shares one model. A decode step (one token for each waiting session) is short; a whole-text run (a prefill,
the logit lens, a beam search, self-consistency, a measurement) is many passes or one long one. vLLM's scheduler
(vllm/v1/core/sched/scheduler.py) answers with rules this one keeps too:

- decode steps first, batched: the steps waiting when the model comes free run as ONE forward pass (passes.py:
  forward_batch), in the scheduler's worker thread;
- a whole-text run takes a turn per pass (turn(): model_pass, passes.prefill, passes.chunk_passes), after the decode
  steps that wait; after STEPS_BEFORE_TURN decode passes it goes all the same, so a busy class never starves a run,
  and runs take turns first come, first served;
- a long prefill goes in chunks of PREFILL_CHUNK tokens, one turn each (passes.py), so a step goes between them;
- a pass computed ahead that nobody waits for yet (a student's next token, while they read) waits up to gather_s
  for others to share its pass while a class steps (at least gather_after other texts submitted in the last
  second); the moment somebody needs it (wait(), hurry()) or the batch is full, it goes.

One scheduler per torch module (scheduler_of), made on first use: every caller of a model, its core's decode steps and
any computation's passes, meets the same one. It holds the model only for a pass: softmaxes, records and figures run
outside it.
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

from model.decoding.batch_sampling import SampleRow, derive_batch
from model.decoding.batching import forward_batch, forward_one
from model.decoding.records import Distribution
from model.decoding.threads import all_cores
from model.runtime import CPU, keep_freed_memory, register_scheduler

STEPS_BEFORE_TURN = 2  # decode passes that may go before a waiting run's turn, however many steps keep coming
POLL_S = 0.05  # a waiting run looks again at least this often (a step taken back leaves no one to wake it)
DECODE_THREADS = 1  # the worker's torch threads: a one-token pass is bound by memory and Python (below)
MAX_BATCH = 16  # decode steps in one pass, unless the core says otherwise
RECENT_SUBMITS = 512  # submissions remembered to tell whether a class is stepping (gathering)
RECENT_S = 1.0  # ... within this long before the first queued job
PASS_LOG = 240  # decode passes remembered for the batching view


@dataclass(eq=False)  # a job is itself: compared by identity, so cancel() removes this one and no other
class DecodeJob:
    """One token for one cache, queued for the worker; `done` is set once `result` or `error` is in (and `dist`, if
    the job asked for its next position's distribution)."""

    cache: DynamicCache
    token_id: int
    sample: SampleRow | None = None  # the next position's settings: derive its distribution with the batch's
    done: threading.Event = field(default_factory=threading.Event)
    result: tuple | None = None  # (logits (V,), attention row (layers, heads, t) float16, ms)
    error: BaseException | None = None
    dist: Distribution | None = None  # derive() of the result's logits under `sample`, from the batch's sampler
    queued: float = field(default_factory=time.perf_counter)  # when submitted
    urgent: bool = False  # somebody waits for it (a step); a pass computed ahead nobody waits for yet is not


@dataclass(frozen=True)
class PassRecord:
    """One decode pass the worker ran: only counts and times, never whose steps or what text."""

    sessions: int  # steps it carried (one per session)
    ms: float  # wall time of the pass, batching and copying back included
    at: float  # when it ended, time.time() (seconds since the epoch)


class Scheduler:
    """Who runs the model next: decode steps first (batched by one worker), then whole-text passes in turn."""

    def __init__(self, model: torch.nn.Module, name: str = "", max_batch: int = MAX_BATCH, gather_s: float = 0.0,
                 gather_after: int = 2):
        self.model = model
        self.name = name or type(model).__name__
        self.max_batch = max_batch
        self.gather_s = gather_s  # how long a pass computed ahead may wait for others (0: never waits)
        self.gather_after = gather_after
        self.recent_s = RECENT_S
        self._cond = threading.Condition()  # guards everything below
        self._pending: list[DecodeJob] = []
        self._submitted: deque[tuple[float, int]] = deque(maxlen=RECENT_SUBMITS)  # (when, id of its cache)
        self._held = False  # a pass holds the model
        self._turns: deque[object] = deque()  # runs' passes waiting, in order of arrival
        self._steps_since_turn = 0  # decode passes since the last turn ended
        self._worker: threading.Thread | None = None
        self.steps = 0  # decode passes, ever
        self.turns = 0  # runs' passes, ever
        self.batch_sizes: list[int] = []  # every decode pass's size, in order, for the tests
        self.batch_histogram: Counter[int] = Counter()  # decode passes run at each size, for the benchmarks
        self.passes: deque[PassRecord] = deque(maxlen=PASS_LOG)  # the last decode passes, for the batching view
        self.heap_kept = False  # glibc keeps a pass's freed memory (set when the worker starts)
        register_scheduler(self)

    # ---- decode steps --------------------------------------------------------------------------------------------
    def submit(self, cache: DynamicCache, token_id: int, sample: SampleRow | None = None) -> DecodeJob:
        """Queue one token for the next decode pass and return at once; the worker appends its K and V to `cache`.

        The job's `done` is set when its `result` or `error` is in. Until then the cache belongs to the worker: the
        caller must not read or change it (see wait()). With `sample` (the settings of the position after the
        token), its `dist` is that position's Distribution, derived with the pass's other rows in one pipeline
        (batch_sampling.derive_batch), or None if that failed.
        """
        job = DecodeJob(cache, token_id, sample)
        with self._cond:
            if self._worker is None:
                self._start_worker()
            if self.gather_s:
                self._submitted.append((job.queued, id(cache)))
            self._pending.append(job)
            self._cond.notify_all()
        return job

    def run(self, cache: DynamicCache, token_id: int, sample: SampleRow | None = None,
            timeout: float = 120.0) -> DecodeJob:
        """submit() and wait(): the job, run (its `result` in, and its `dist` if `sample` asked for one)."""
        job = self.submit(cache, token_id, sample)
        if not self.wait(job, timeout):
            raise TimeoutError("The model did not answer in time; the server is overloaded.")
        if job.error is not None:
            raise job.error
        return job

    def wait(self, job: DecodeJob, timeout: float = 120.0) -> bool:
        """Wait for a submitted job: True once it has run (result or error in), False if it was still queued after
        `timeout` seconds and has been taken back (it never runs). A job the worker has taken is waited for to the
        end, so that nothing writes into its cache after this returns."""
        self.hurry(job)
        if job.done.wait(timeout):
            return True
        if self.cancel(job):
            return False
        job.done.wait()  # running: one forward pass from the end
        return True

    def hurry(self, job: DecodeJob) -> None:
        """Somebody waits for `job`: its pass goes at once, with whatever is queued (see gather_s)."""
        if not job.urgent:
            with self._cond:
                job.urgent = True
                self._cond.notify_all()

    def cancel(self, job: DecodeJob) -> bool:
        """Take back a job the worker has not started: True if it was still queued (it will never run)."""
        with self._cond:
            if job in self._pending:
                self._pending.remove(job)
                self._cond.notify_all()
                return True
            return False

    # ---- a pass of a whole-text run -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def turn(self):
        """Hold the model for one pass of a whole-text run, once waiting decode steps have gone (see the module)."""
        ticket = object()
        with self._cond:
            self._turns.append(ticket)
            try:
                while not (not self._held and self._turns[0] is ticket
                           and (not self._steps_ready() or self._steps_since_turn >= STEPS_BEFORE_TURN)):
                    self._cond.wait(POLL_S)
            finally:
                self._turns.remove(ticket)
            self._held = True
        try:
            yield
        finally:
            self._leave(turn=True)

    def held(self) -> bool:
        """True while a pass holds the model (a test's look: it may change the moment it is read)."""
        return self._held

    def has_pending(self) -> bool:
        """True while decode steps are queued and ready to go (not gathering others)."""
        with self._cond:
            return self._steps_ready()

    # ---- what it did --------------------------------------------------------------------------------------------
    def recent_passes(self, seconds: float | None = None) -> list[PassRecord]:
        """The remembered decode passes, oldest first (only those of the last `seconds` if given)."""
        passes = list(self.passes)  # a copy: the worker appends while we read
        if seconds is None:
            return passes
        since = time.time() - seconds
        return [p for p in passes if p.at >= since]

    # ---- the worker ---------------------------------------------------------------------------------------------
    def _turn_due(self) -> bool:
        """(Under the lock.) A run waits and STEPS_BEFORE_TURN decode passes went since its last turn: it goes next."""
        return bool(self._turns) and self._steps_since_turn >= STEPS_BEFORE_TURN

    def _steps_ready(self) -> bool:
        """(Under the lock.) Decode steps are queued and not gathering others: they go before a run's next pass."""
        return bool(self._pending) and self._gather_left() <= 0

    def _gather_left(self) -> float:
        """(Under the lock.) Seconds the queued jobs may still wait for others to share their pass: 0 once the batch
        is full, one of them is waited for, the first has waited gather_s, or no class is stepping (fewer than
        gather_after other texts submitted in the last second: nobody to share with)."""
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

    def _start_worker(self) -> None:
        self.heap_kept = keep_freed_memory()
        self._worker = threading.Thread(target=self._work, name=f"scheduler-{self.name}", daemon=True)
        self._worker.start()

    def _next_batch(self) -> list[DecodeJob]:
        """Wait until decode steps are ready and the model is free; hold it for their pass."""
        with self._cond:
            while True:
                if self._pending and not self._held and not self._turn_due():
                    left = self._gather_left()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                else:
                    self._cond.wait()  # a submit, a hurry, a cancel or a pass's end wakes it
            jobs, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            self._held = True
            return jobs

    def _work(self) -> None:
        # One thread for decode passes: a one-token pass is bound by memory and Python, and a second OpenMP thread
        # only spins (measured here: 79-98 ms on one thread, 91 ms on two, at twice the CPU; batches of 4-16
        # alike). The second core stays free for the web server, renders and the browser.
        torch.set_num_threads(DECODE_THREADS)  # this thread's setting: a prefill elsewhere sets its own
        while True:
            jobs = self._next_batch()
            self.batch_sizes.append(len(jobs))
            self.batch_histogram[len(jobs)] += 1
            t0 = time.perf_counter()
            try:
                with torch.no_grad(), CPU.part("model pass"):
                    if len(jobs) == 1:
                        results = [forward_one(self.model, jobs[0].cache, jobs[0].token_id)]
                    else:
                        results = forward_batch(self.model, [j.cache for j in jobs], [j.token_id for j in jobs])
                for job, result in zip(jobs, results):
                    job.result = result
            except BaseException as err:  # every session of the pass is told; none of their caches changed
                for job in jobs:
                    job.error = err
            finally:
                self._leave(turn=False)
            self.passes.append(PassRecord(len(jobs), (time.perf_counter() - t0) * 1000, time.time()))
            _sample([job for job in jobs if job.sample is not None and job.error is None])
            for job in jobs:
                job.done.set()

    def _leave(self, turn: bool) -> None:
        """A pass ended (or failed): the model is free, and whoever may go next is woken."""
        with self._cond:
            self._held = False
            if turn:
                self.turns += 1
                self._steps_since_turn = 0
            else:
                self.steps += 1
                self._steps_since_turn += 1
            self._cond.notify_all()


def _sample(jobs: list[DecodeJob]) -> None:
    """The next position's Distribution of every job that asked, in one pipeline over the pass's rows, outside the
    model (the next pass need not wait for it). If it fails, no job gets one: each session derives its own, and
    refuses bad settings there, in its words."""
    if not jobs:
        return
    try:
        with CPU.part("derive"):  # the same part as a session's own derive(): the benchmark compares the two
            dists = derive_batch(torch.stack([job.result[0] for job in jobs]), [job.sample for job in jobs])
    except Exception:  # noqa: BLE001
        return
    for job, dist in zip(jobs, dists):
        job.dist = dist


_SCHEDULERS: "weakref.WeakKeyDictionary[torch.nn.Module, Scheduler]" = weakref.WeakKeyDictionary()
_SCHEDULERS_LOCK = threading.Lock()


def scheduler_of(model: torch.nn.Module) -> Scheduler:
    """The scheduler of a model: one per torch module, made on first use."""
    with _SCHEDULERS_LOCK:
        scheduler = _SCHEDULERS.get(model)
        if scheduler is None:
            scheduler = _SCHEDULERS[model] = Scheduler(model)
        return scheduler


@contextlib.contextmanager
def model_pass(model: torch.nn.Module, cores: bool = True):
    """One pass of a whole-text run on `model`: its scheduler's turn (decode steps first), every core unless `cores` is
    False (a one-token pass, which a second thread only slows)."""
    with scheduler_of(model).turn(), (all_cores() if cores else contextlib.nullcontext()), torch.no_grad():
        yield
