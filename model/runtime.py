"""What a server process measures of itself, and how it asks glibc for memory: kept apart from the model's core.

  CPU            where this process's CPU goes, by part (the model's passes, the sampling, the renders): CpuSplit
  schedulers     every scheduler of this process, whose batch sizes the benchmarks read (registered, never owned)
  bench_stats()  what the classroom benchmark reads from a server in bench mode (ui/play.py's stats route)
  keep_freed_memory() / return_freed_memory()   glibc malloc: keep a pass's freed memory for the next pass;
                 give the heap's free pages back when sessions go

Nothing here changes what the app computes; the core and the page only report to it.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import threading
import time
import weakref


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


CPU = CpuSplit()  # one per process
_SCHEDULERS: "weakref.WeakSet" = weakref.WeakSet()  # every scheduler of this process (model/decoding/scheduler.py)


def register_scheduler(scheduler) -> None:
    """Count `scheduler`'s batch sizes in bench_stats() (held weakly: a scheduler that goes is forgotten)."""
    _SCHEDULERS.add(scheduler)


def bench_stats() -> dict:
    """What the classroom benchmark reads from a server in bench mode: the process's CPU seconds so far, the CPU
    split by part, and each model's scheduler's batch sizes (how many decode passes ran at each size)."""
    t = os.times()
    return {"process_cpu_s": t.user + t.system, "parts": CPU.snapshot(), "pid": os.getpid(),
            "batch_sizes": {s.name: {str(k): v for k, v in sorted(s.batch_histogram.items())}
                            for s in list(_SCHEDULERS) if s.batch_histogram}}


# ---- glibc's malloc ------------------------------------------------------------------------------------------
HEAP_KEEP_MB = (64, 512)  # allocations up to 64 MB from the heap, freed heap kept up to 512 MB


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def keep_freed_memory(mmap_mb: int = HEAP_KEEP_MB[0], trim_mb: int = HEAP_KEEP_MB[1]) -> bool:
    """Let glibc's malloc keep the memory a pass frees for the next pass (True if it could be set).

    A batch-16 pass allocates tens of MB of short-lived tensors (the padded cache, eager attention's repeated keys
    and values, the logits); by default glibc maps each such block fresh from the kernel and gives the heap's top
    back after the pass, so every pass page-faults all of it in again. Measured here (bench.precision --heap,
    256 cached tokens, others taking half the machine): a batch-16 pass 1.3 s of CPU with the default, 0.63 s with
    this; at 64 tokens and at batch 1 no difference. The price: up to trim_mb of freed memory stays with the
    process (a pass's peak, once reached). Process-wide; set once a scheduler runs decode passes (a server).
    """
    try:
        m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
        libc = _libc()
        return bool(libc.mallopt(m_mmap_threshold, mmap_mb << 20)) and bool(libc.mallopt(m_trim_threshold, trim_mb << 20))
    except (OSError, AttributeError):  # not glibc: nothing to set
        return False


def return_freed_memory() -> bool:
    """Hand the heap's free pages back to the system (glibc keeps them otherwise: bench.memory measured 1.69 GB
    resident after 60 sessions were freed, 1.00 GB after this). False where there is no glibc."""
    try:
        _libc().malloc_trim(0)
        return True
    except (OSError, AttributeError):
        return False
