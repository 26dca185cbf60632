"""Engine overhead: the instrumented DecodeSession against plain `model.generate` with a cache.

Measures tokens per second from the prompt to NEW_TOKENS generated tokens (prefill included in both) for
  session: DecodeSession.start + step x NEW_TOKENS (attention rows, candidates, every sampling stage, KV bytes)
  generate: lm.model.generate(min_new_tokens = max_new_tokens = NEW_TOKENS), with a DynamicCache,
greedy and sampled (T 0.8, top-p 0.9, top-k 50), in one process, runs alternated A B A B (RUNS of each).
Target: session tokens/s >= 0.9 x generate's, in both settings. The ratio reported is the median over pairs
of (session / generate) in that pair: a pair runs back to back, so a slow spell of the machine hits both.

    .venv/bin/python -m bench.engine [--runs 7] [--tokens 64] [--profile]

--profile also prints the cProfile top of NEW_TOKENS session steps (where the overhead goes).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

import torch

from bench import PROMPT, CpuWatch, save, table, wait_for_quiet
from model.decoding.loading import load_model
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession

SETTINGS = {  # name: (session config, the same settings for generate)
    "greedy": (SamplingConfig(temperature=0), {"do_sample": False}),
    "sampled": (SamplingConfig(temperature=0.8, top_p=0.9, top_k=50, seed=7),
                {"do_sample": True, "temperature": 0.8, "top_p": 0.9, "top_k": 50}),
}


def run_session(lm, cfg: SamplingConfig, new_tokens: int) -> tuple[float, list[int]]:
    """Seconds from the prompt to `new_tokens` recorded steps, and the generated ids."""
    session = DecodeSession(lm)
    t0 = time.perf_counter()
    session.start(PROMPT)
    for _ in range(new_tokens):
        session.step(cfg)
    seconds = time.perf_counter() - t0
    return seconds, session.ids[session.prompt_len :]


@torch.no_grad()
def run_generate(lm, kwargs: dict, new_tokens: int) -> tuple[float, list[int]]:
    """Seconds for generate() to produce exactly `new_tokens` tokens after the prompt, and the generated ids."""
    ids = torch.tensor([lm.tokenizer(PROMPT)["input_ids"]])  # (1, P), as the session encodes it
    torch.manual_seed(7)
    t0 = time.perf_counter()
    out = lm.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                            min_new_tokens=new_tokens, **kwargs)
    seconds = time.perf_counter() - t0
    return seconds, out[0, ids.shape[1] :].tolist()


def compare(lm, name: str, runs: int, new_tokens: int, max_other: float = 0.1) -> dict:
    """Alternate session and generate runs: tokens/s of each (median) and the median ratio of a pair.

    A pair of runs during which other processes took more than `max_other` of the CPU is run again once the
    machine is quiet (at most 3 x `runs` times in all), so a burst of load elsewhere does not decide the ratio.
    """
    cfg, kwargs = SETTINGS[name]
    rates, outputs, shares, discarded = {"session": [], "generate": []}, {}, [], 0
    while len(shares) < runs:
        pair = {}
        with CpuWatch() as watch:
            for which, run in (("session", lambda: run_session(lm, cfg, new_tokens)),
                               ("generate", lambda: run_generate(lm, kwargs, new_tokens))):
                seconds, outputs[which] = run()
                if len(outputs[which]) != new_tokens:
                    raise RuntimeError(f"{which} made {len(outputs[which])} tokens, not {new_tokens} (an end token?)")
                pair[which] = new_tokens / seconds
        if watch.other_share > max_other and discarded < 3 * runs:
            discarded += 1
            wait_for_quiet(max_other)
            continue
        shares.append(watch.other_share)
        for which, rate in pair.items():
            rates[which].append(rate)
    if name == "greedy" and outputs["session"] != outputs["generate"]:
        raise RuntimeError("greedy session and generate() disagree: the benchmark would compare different work")
    ratio = statistics.median(s / g for s, g in zip(rates["session"], rates["generate"]))
    return {"setting": name, "runs": runs, "new_tokens": new_tokens, "session_tok_s": statistics.median(rates["session"]),
            "generate_tok_s": statistics.median(rates["generate"]), "ratio": ratio, "session_runs": rates["session"],
            "generate_runs": rates["generate"], "other_cpu_share": max(shares), "pairs_discarded": discarded}


def profile_steps(lm, new_tokens: int, top: int = 25) -> None:
    """Print where the time of `new_tokens` sampled session steps goes."""
    session = DecodeSession(lm)
    session.start(PROMPT)
    profiler = cProfile.Profile()
    profiler.runcall(lambda: [session.step(SETTINGS["sampled"][0]) for _ in range(new_tokens)])
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each, alternated")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per run")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of the session steps")
    args = parser.parse_args()
    lm = load_model()
    run_session(lm, SETTINGS["greedy"][0], 4)  # warm-up: first passes of a process run slow
    run_generate(lm, SETTINGS["greedy"][1], 4)
    quiet = wait_for_quiet()
    results = [compare(lm, name, args.runs, args.tokens) for name in SETTINGS]
    print(table(["setting", "session tok/s", "generate tok/s", "ratio", "other CPU (worst pair)", "pairs redone"],
                [[r["setting"], r["session_tok_s"], r["generate_tok_s"], r["ratio"], f"{r['other_cpu_share']:.0%}",
                  r["pairs_discarded"]] for r in results]))
    print("target: ratio >= 0.9 ->", "met" if all(r["ratio"] >= 0.9 for r in results) else "NOT met")
    path = save("engine", {"target_ratio": 0.9, "prompt_tokens": len(lm.tokenizer(PROMPT)["input_ids"]),
                           "other_cpu_share_before": quiet, "results": results})
    print("wrote", path)
    if args.profile:
        profile_steps(lm, args.tokens)


if __name__ == "__main__":
    main()
