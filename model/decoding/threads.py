"""How many torch threads a piece of work runs on: every core for a long pass, one for the rest.

torch's thread count is set per thread (OpenMP): each context below sets this thread's count and puts it back after.
A reduction over the vocabulary (a softmax, an entropy) adds in another order on one thread than on two, which moves
its last bits: the sampling pipeline runs on one thread wherever it runs (a request's thread, the scheduler's worker,
a core process), so a distribution is the same record everywhere.
"""
from __future__ import annotations

import contextlib
import functools
import os

import torch


@contextlib.contextmanager
def all_cores():
    """Every core for a pass over many tokens, a prefill (338 tokens: 0.9 s on 2 threads, 1.6 s on 1)."""
    before = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def one_core():
    """One thread: a run's work between its passes (the other core stays with the class's decode passes and the web
    server), and the sampling pipeline (the same bits on every thread)."""
    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


def on_one_thread(fn):
    """fn run in one_core() (a decorator for the sampling pipeline's entry points)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with one_core():
            return fn(*args, **kwargs)
    return run
