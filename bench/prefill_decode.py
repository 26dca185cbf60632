"""Prefill against decode on this machine, in one sitting: the figures the Prefill vs decode view shows, printed.

    .venv/bin/python -m bench.prefill_decode                   # both models
    .venv/bin/python -m bench.prefill_decode --models smollm2

For each model: this machine's FLOP rate and bandwidth, tokens per second and time per token of a prefill at 16-512
tokens and of the app's batched decode pass at batch 1-32, FLOPs per byte and where each pass is bound; the three
ways a long prompt can meet a decoding class, laid out from the measured passes by the scheduler's rule (the split-off
way a model). Then the laid-out unchunked and chunked ways are checked against the real thing: a class's decode
passes run back to back through the model's scheduler (its worker's batched passes) while the long prefill runs
through the same scheduler in one pass, then in its chunks; the class's gaps between tokens are timed.
Results: bench/results/prefill_decode_<date>.json.
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import threading
import time

import torch

from bench import save, table
from bench.appserver import OthersWatch


def class_under_prefill(lm, chunk: int, class_batch: int, context: int, long_prefill: int, settle: int = 4) -> dict:
    """A class of `class_batch` sequences decoding back to back as the model's scheduler runs a class's steps (submitted
    together, one batched pass in its worker), while a long prefill runs through the same scheduler (its turns) in
    chunks of `chunk` tokens: the
    class's gaps between the ends of its passes, the ones overlapping the prefill, and when the prefill ended (ms
    from its start)."""
    from transformers import DynamicCache

    from model.decoding.passes import prefill
    from model.decoding.scheduler import scheduler_of
    from model.speed.throughput import measurement_ids

    model = lm.model
    scheduler = scheduler_of(model)
    ids = measurement_ids(lm, long_prefill + context + 1)
    base = DynamicCache(config=model.config)
    with torch.no_grad():
        model(input_ids=torch.tensor([ids[:context]]), past_key_values=base, use_cache=True, logits_to_keep=1)
    ends, stop, started, done = [], threading.Event(), threading.Event(), {}

    def decoding():
        n = 0
        while not stop.is_set():
            caches = [copy.deepcopy(base) for _ in range(class_batch)]
            jobs = [scheduler.submit(cache, ids[context]) for cache in caches]
            for job in jobs:
                scheduler.wait(job)
            ends.append(time.perf_counter())
            n += 1
            if n == settle:
                started.set()

    worker = threading.Thread(target=decoding)
    worker.start()
    started.wait()
    t0 = time.perf_counter()
    prefill(model, ids[:long_prefill], chunk=chunk, cache=True)
    done["end"] = time.perf_counter()
    time.sleep(0.05)
    while len([e for e in ends if e > done["end"]]) < settle:
        time.sleep(0.01)
    stop.set()
    worker.join()
    gaps = [(b - a) * 1000 for a, b in zip(ends, ends[1:])]
    during = [(b - a) * 1000 for a, b in zip(ends, ends[1:]) if b > t0 and a < done["end"]]
    before = [(b - a) * 1000 for a, b in zip(ends, ends[1:]) if b <= t0]
    return {"chunk": chunk, "prefill_ms": (done["end"] - t0) * 1000, "gaps_ms": gaps,
            "worst_gap_ms": max(during) if during else None, "normal_gap_ms": statistics.median(before)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["smollm2", "gemma3-270m"])
    ap.add_argument("--name", default=f"prefill_decode_{time.strftime('%Y%m%d')}")
    args = ap.parse_args(argv)

    from model.decoding.passes import PREFILL_CHUNK
    from model.decoding.loading import load_model
    from model.speed.prefill_decode import CLASS_BATCH, CONTEXT_TOKENS, LONG_PREFILL, compute
    from ui.views.prefill_decode import measurement_summary
    from viz.prefill_decode import figures_table, prefill_decode_summary

    results = []
    with OthersWatch() as others:
        for name in args.models:
            lm = load_model(name)
            m = compute(lm)
            print(f"\n== {name} ==")
            print(figures_table(m))
            print()
            print(prefill_decode_summary(m))
            rows = [[line.name, line.worst_gap, line.first_token_ms] for line in m.timelines]
            real = [class_under_prefill(lm, chunk, CLASS_BATCH, CONTEXT_TOKENS, LONG_PREFILL)
                    for chunk in (LONG_PREFILL, PREFILL_CHUNK)]
            for row, run in zip(rows, real):
                row += [run["worst_gap_ms"], run["prefill_ms"], run["normal_gap_ms"]]
            rows[2] += ["(a model)", "", ""]
            print()
            print(table(["way", "laid out: worst gap ms", "prefill done ms", "run: worst gap ms", "prefill done ms",
                         "normal gap ms"], rows), flush=True)
            results.append({"model": name, "measurement": measurement_summary(m), "run_together": real})
    print(f"\nothers took {others.share:.2f} of the machine meanwhile")
    print("saved", save(args.name, {"models": results, "others_share": others.share}))


if __name__ == "__main__":
    main()
