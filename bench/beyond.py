"""How long each 'beyond one sampled path' view takes on a 64-token text: python -m bench.beyond [--models ...].

Each computation is called as its tab calls it (no server): the logit lens at 48 positions, a 32-step sampler race,
beam search at B = 4 with its greedy and sampled texts (16 new tokens), self-consistency with N = 8 (16 tokens), and
a regular-expression constraint (16 tokens). One warm-up call per model first; each figure is the median of
`--runs`, with the CPU share other processes took (this machine is shared: only near 0 is a figure comparable).
"""
from __future__ import annotations

import argparse
import statistics
import time

from bench import PROMPT, CpuWatch, save, table
from model.strategies.beams import beam_search, sampled_continuation
from model.strategies.consistency import self_consistency
from model.strategies.constrain import Constraint, constrained_decode
from model.inside.lens import logit_lens
from model.decoding.loading import available_models, load_model
from model.strategies.race import race
from model.decoding.records import SamplingConfig

TOKENS = 64
SAMPLED = SamplingConfig(temperature=0.8, top_p=0.95, seed=3)


def views(lm, ids: list[int]) -> dict:
    """name -> a call that runs that view's computation once on `ids`."""
    plain, other = SamplingConfig(seed=3), SamplingConfig(temperature=0.7, top_p=0.9, seed=3)
    pattern = Constraint("regex", r" [A-Z][a-z]+( [a-z]+){1,6}\.")
    return {
        "logit lens, 48 positions": lambda: logit_lens(lm, ids, 48),
        "sampler race, 32 steps": lambda: race(lm, ids, plain, other, 32, 512),
        "beams B=4 + greedy + sampled, 16 tokens": lambda: (beam_search(lm, ids, 4, 1.0, 16),
                                                            beam_search(lm, ids, 1, 1.0, 16),
                                                            sampled_continuation(lm, ids, SAMPLED, 16)),
        "self-consistency N=8, 16 tokens": lambda: self_consistency(lm, ids, SAMPLED, 8, 16),
        "constraint (regex), 16 tokens": lambda: constrained_decode(lm, ids, pattern, SamplingConfig(), 16),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=[m for m in ("smollm2", "gemma3-270m") if m in available_models()])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows, results = [], {}
    for name in args.models:
        lm = load_model(name)
        ids = lm.tokenizer(PROMPT * 2)["input_ids"][:TOKENS]
        for view, call in views(lm, ids).items():
            call()  # warm-up (and llguidance's tokenizer, built once per model)
            times, others = [], []
            for _ in range(args.runs):
                with CpuWatch() as watch:
                    t0 = time.perf_counter()
                    call()
                    times.append(time.perf_counter() - t0)
                others.append(watch.other_share)
            med, spread = statistics.median(times), (min(times), max(times))
            results.setdefault(name, {})[view] = {"median_s": med, "min_s": spread[0], "max_s": spread[1],
                                                  "other_cpu_share": max(others)}
            rows.append([name, view, med, spread[0], spread[1], f"{100 * max(others):.0f} %"])
            print(table(["model", "view", "median s", "min s", "max s", "others' CPU"], rows[-1:]), flush=True)
    print()
    print(table(["model", "view", "median s", "min s", "max s", "others' CPU"], rows))
    print("saved", save("beyond", {"tokens": TOKENS, "runs": args.runs, "views": results}))


if __name__ == "__main__":
    main()
