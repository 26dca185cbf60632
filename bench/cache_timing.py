"""The "Measure now" button: how long model.decoding.timing.measure_cache_timing takes, and the curve it measures.

Runs measure_cache_timing as the app does (default_lengths, default repeats and budget) on texts of 128 and 512
tokens, RUNS times each, and reports the wall time and the medians of the step times it returns.
Target: under ~5 s at 512 tokens (the longest a session gets).
Also checks the one shortcut it takes: its longest pass without a cache writes a fresh cache (to serve the
cached steps, saving a prefill as long); that pass is timed against the same pass with use_cache=False.

    .venv/bin/python -m bench.cache_timing [--runs 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from transformers import DynamicCache

from bench import PROMPT, CpuWatch, save, table, wait_for_quiet
from model.decoding.loading import load_model
from model.decoding.timing import default_lengths, measure_cache_timing


def measure_as_the_app(lm, ids: list[int], runs: int) -> dict:
    """Wall seconds of `runs` measurements of the whole text, and the median curve they return."""
    walls, curves = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        curves.append(measure_cache_timing(lm, ids, default_lengths(len(ids))))
        walls.append(time.perf_counter() - t0)
    return {"tokens": len(ids), "wall_s": walls, "wall_s_median": statistics.median(walls),
            "seq_len": curves[0].seq_len,
            "cached_ms": [statistics.median(c.cached_ms[i] for c in curves) for i in range(len(curves[0].seq_len))],
            "full_ms": [statistics.median(c.full_ms[i] for c in curves) for i in range(len(curves[0].seq_len))]}


@torch.no_grad()
def cache_writing_cost(lm, ids: list[int], runs: int = 6) -> dict:
    """Median ms of the whole text through the model without a cache, and the same pass writing a fresh one."""
    x = torch.tensor([ids])  # (1, T)
    times = {"use_cache_false_ms": [], "fresh_cache_ms": []}
    for run in range(runs):  # A B, then B A: neither always runs first
        for key in sorted(times, reverse=bool(run % 2)):
            cache = DynamicCache(config=lm.model.config) if key == "fresh_cache_ms" else None
            t0 = time.perf_counter()
            lm.model(input_ids=x, past_key_values=cache, use_cache=cache is not None, logits_to_keep=1)
            times[key].append((time.perf_counter() - t0) * 1000)
    medians = {key: statistics.median(v) for key, v in times.items()}
    return {"tokens": len(ids), **medians, "extra_share": medians["fresh_cache_ms"] / medians["use_cache_false_ms"] - 1,
            "runs": times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    lm = load_model()
    ids = lm.tokenizer(" ".join([PROMPT] * 8))["input_ids"][:512]
    measure_cache_timing(lm, ids[:64], [8, 64], repeats=1)  # warm-up
    quiet = wait_for_quiet()
    with CpuWatch() as watch:
        results = [measure_as_the_app(lm, ids[:n], args.runs) for n in (128, 512)]
        writing = cache_writing_cost(lm, ids)
    for r in results:
        print(f"{r['tokens']} tokens: measure_cache_timing took {r['wall_s_median']:.2f} s (median of {args.runs}: "
              + ", ".join(f"{w:.2f}" for w in r["wall_s"]) + ")")
        print(table(["tokens", "cached step ms", "no cache ms", "ratio"],
                    [[t, c, f, f / c] for t, c, f in zip(r["seq_len"], r["cached_ms"], r["full_ms"])]))
    print(f"target: under ~5 s at 512 tokens -> {'met' if results[-1]['wall_s_median'] < 5 else 'NOT met'}")
    print(f"{writing['tokens']} tokens without a cache: {writing['use_cache_false_ms']:.0f} ms; writing a fresh one: "
          f"{writing['fresh_cache_ms']:.0f} ms ({writing['extra_share']:+.1%})")
    print(f"other processes took {watch.other_share:.0%} of the CPU meanwhile")
    print("wrote", save("cache_timing", {"target_s": 5, "results": results, "cache_writing": writing,
                                         "other_cpu_share_before": quiet, "other_cpu_share": watch.other_share}))


if __name__ == "__main__":
    main()
