"""Memory: what one session holds at its 512-token limit, and whether 60 sessions give their memory back.

1. One session: a ~100-token prompt, then steps up to MAX_TOKENS (512). Reports the bytes of what it records,
   by part (attention rows, candidate records, the rest of the step records, the KV cache: measured on its
   tensors, and the formula), and the process RSS growth. Target: the parts add up to the RSS growth within
   a few MB, and the KV bytes measured equal the formula (docs/what-it-teaches.md: Its size).
2. The server's case: 60 sessions, each a prompt and 20 steps, all open at once, then dropped and collected.
   Reports RSS at the start, at the peak and at the end, after gc and after glibc's malloc_trim (which hands
   freed heap pages back to the OS). Target: every session is collected (a weak reference to each is dead),
   and the end RSS is near the start (within 10% of the peak growth).

    .venv/bin/python -m bench.memory [--sessions 60] [--steps 20]
"""
from __future__ import annotations

import argparse
import gc
import sys
import weakref
from dataclasses import fields, is_dataclass

import numpy as np

from bench import PROMPT, rss_bytes, save, table
from model.decoding.loading import load_model
from model.decoding.records import SamplingConfig
from model.decoding.session import MAX_TOKENS, DecodeSession
from model.runtime import return_freed_memory

LONG_PROMPT = PROMPT + " some say it spread the Reformation, others that it mostly printed calendars and indulgences."
CFG = SamplingConfig(temperature=0.8, top_p=0.9, top_k=50, seed=3)
MB = 1 << 20


def deep_size(obj, seen: set | None = None) -> int:
    """Bytes of a record and everything it holds: Python objects by sys.getsizeof, numpy arrays by nbytes."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, np.ndarray):
        return size + (0 if obj.flags.owndata else obj.nbytes)  # getsizeof counts only a buffer the array owns
    if isinstance(obj, dict):
        return size + sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set)):
        return size + sum(deep_size(x, seen) for x in obj)
    if is_dataclass(obj):
        return size + deep_size(vars(obj), seen)
    return size


def step_avoiding_end(session: DecodeSession, cfg: SamplingConfig) -> None:
    """One step; if it would draw the end-of-text token, the most probable other candidate is forced instead."""
    dist = session.preview(cfg)
    eos = {session.lm.tokenizer.eos_token_id, session.lm.model.generation_config.eos_token_id}
    force = next(c.token.id for c in dist.candidates if c.token.id not in eos) if dist.chosen.id in eos else None
    session.step(cfg, force_token=force)


def malloc_trim() -> bool:
    """Ask glibc to return freed heap memory to the OS; False where that is not available."""
    return return_freed_memory()


def one_session(lm) -> dict:
    """One session from a ~100-token prompt to MAX_TOKENS: bytes of each part, and the RSS growth."""
    gc.collect()
    malloc_trim()
    rss_before = rss_bytes()
    session = DecodeSession(lm)
    prefill = session.start(LONG_PROMPT)
    while len(session.ids) < MAX_TOKENS:
        step_avoiding_end(session, CFG)
    gc.collect()
    rss_after = rss_bytes()
    malloc_trim()
    rss_trimmed = rss_bytes()
    steps = session.steps
    attention = prefill.attention.nbytes + sum(s.attention.nbytes for s in steps)
    seen: set = set()  # shared objects (configs, tokens) are counted once, in the first part that holds them
    candidates = sum(deep_size(s.distribution, seen) for s in steps)
    other = deep_size([prefill, steps], seen) - attention  # the rest of the records, attention buffers aside
    kv = steps[-1].kv
    logits = 2 * session.next_logits.numel() * session.next_logits.element_size()  # next and prefill logits
    return {
        "prompt_tokens": session.prompt_len, "tokens": len(session.ids), "steps": len(steps),
        "attention_bytes": attention, "candidate_records_bytes": candidates,
        "other_record_bytes": other, "kv_measured_bytes": kv.measured, "kv_formula_bytes": kv.formula,
        "logits_bytes": logits, "sum_bytes": attention + candidates + other + kv.measured + logits,
        "rss_growth_bytes": rss_after - rss_before, "rss_growth_after_trim_bytes": rss_trimmed - rss_before,
    }


def open_sessions(lm, count: int, steps: int) -> tuple[list[weakref.ref], int]:
    """Open `count` sessions of a prompt and `steps` steps, all at once, and drop them: weak references, peak RSS."""
    sessions = []
    for i in range(count):
        session = DecodeSession(lm)
        session.start(f"{PROMPT} ({i})")
        for _ in range(steps):
            step_avoiding_end(session, CFG)
        sessions.append(session)
    return [weakref.ref(s) for s in sessions], rss_bytes()


def many_sessions(lm, count: int, steps: int, rounds: int) -> dict:
    """`rounds` x (`count` sessions open at once, then dropped and collected): RSS at the start, each peak, the end.

    Without malloc_trim, glibc keeps freed pages for the next allocations instead of returning them; a second
    round that peaks no higher than the first shows they are reused, not leaked.
    """
    gc.collect()
    malloc_trim()
    start, peaks, ends, alive = rss_bytes(), [], [], 0
    for _ in range(rounds):
        refs, peak = open_sessions(lm, count, steps)
        peaks.append(peak)
        gc.collect()
        ends.append(rss_bytes())
        alive += sum(r() is not None for r in refs)
    trimmed = malloc_trim()
    end = rss_bytes()
    return {
        "sessions": count, "steps_each": steps, "rounds": rounds, "sessions_still_alive": alive,
        "rss_start_bytes": start, "rss_peak_bytes": peaks, "rss_end_after_gc_bytes": ends,
        "rss_end_after_trim_bytes": end if trimmed else None,
        "returned_share": (max(peaks) - end) / (max(peaks) - start),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    lm = load_model()
    warm_up = DecodeSession(lm)  # a process's first passes allocate for good (thread pools, kernels, caches)
    warm_up.start(LONG_PROMPT)
    for _ in range(3):
        warm_up.step(CFG)
    del warm_up
    one = one_session(lm)
    print(f"One session: {one['prompt_tokens']} prompt tokens + {one['steps']} steps = {one['tokens']} tokens")
    print(table(["part", "MB"], [
        ["attention rows (float16)", one["attention_bytes"] / MB],
        ["candidate records", one["candidate_records_bytes"] / MB],
        ["other record fields", one["other_record_bytes"] / MB],
        ["KV cache, measured", one["kv_measured_bytes"] / MB],
        ["KV cache, formula", one["kv_formula_bytes"] / MB],
        ["logits kept (2 x V)", one["logits_bytes"] / MB],
        ["sum of the parts", one["sum_bytes"] / MB],
        ["process RSS growth", one["rss_growth_bytes"] / MB],
        ["RSS growth after malloc_trim", one["rss_growth_after_trim_bytes"] / MB],
    ]))
    many = many_sessions(lm, args.sessions, args.steps, args.rounds)
    print(f"\n{args.rounds} x {many['sessions']} sessions of ~{len(lm.tokenizer(PROMPT)['input_ids'])} prompt tokens + "
          f"{many['steps_each']} steps, all open, then dropped: {many['sessions_still_alive']} still alive after gc")
    rows = [["start", many["rss_start_bytes"] / MB]]
    for r, (peak, end) in enumerate(zip(many["rss_peak_bytes"], many["rss_end_after_gc_bytes"]), 1):
        rows += [[f"round {r}: peak (all open)", peak / MB], [f"round {r}: end, after gc", end / MB]]
    rows.append(["end, after malloc_trim", (many["rss_end_after_trim_bytes"] or 0) / MB])
    print(table(["moment", "RSS MB"], rows))
    print(f"returned {many['returned_share']:.0%} of the peak growth")
    print("wrote", save("memory", {"one_session": one, "many_sessions": many}))


if __name__ == "__main__":
    main()
