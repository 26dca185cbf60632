"""Start-up: seconds from launching Python to the first generated token, on a first start and on later ones.

First start: no converted weights yet (a fresh, temporary TOKEN_BY_TOKEN_CACHE, so the real cache is left
alone): the GGUF is dequantized and saved. Later start: the same folder, now converted. Each start is a new
process that imports, loads the model, prefills a prompt and takes one step. Reports each phase and the total.
Target: a later start reaches its first token in a few seconds (the README promises "about a second" for
the load); the first start is a one-off of tens of seconds.

    .venv/bin/python -m bench.startup [--later 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("python_and_imports", "load", "prefill", "first_step")


def child() -> None:
    """In the new process: time each phase up to the first token; print them as JSON (wall-clock seconds)."""
    marks = [time.time()]
    from model.decoding.loading import load_model
    from model.decoding.records import SamplingConfig
    from model.decoding.session import DecodeSession

    from bench import PROMPT

    marks.append(time.time())
    lm = load_model()
    marks.append(time.time())
    session = DecodeSession(lm)
    session.start(PROMPT)
    marks.append(time.time())
    session.step(SamplingConfig(temperature=0))
    marks.append(time.time())
    print(json.dumps({"marks": marks}))


def one_start(cache_dir: str) -> dict:
    """Launch a child start with the given converted-weights folder; seconds per phase and in total."""
    launched = time.time()
    out = subprocess.run([sys.executable, "-m", "bench.startup", "--child"], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={**os.environ, "TOKEN_BY_TOKEN_CACHE": cache_dir})
    marks = [launched, *json.loads(out.stdout.strip().splitlines()[-1])["marks"][1:]]
    phases = {name: b - a for name, a, b in zip(PHASES, marks, marks[1:])}
    return {**phases, "to_first_token": marks[-1] - launched}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--later", type=int, default=3, help="later starts (median reported)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child()
    from bench import CpuWatch, save, table, wait_for_quiet

    quiet = wait_for_quiet()
    with tempfile.TemporaryDirectory(prefix="tbt-cache-") as cache_dir, CpuWatch() as watch:
        first = one_start(cache_dir)
        later = [one_start(cache_dir) for _ in range(args.later)]
    median = {key: statistics.median(run[key] for run in later) for key in later[0]}
    print(table(["start", *PHASES, "to first token (s)"],
                [["first (converts)", *(first[k] for k in PHASES), first["to_first_token"]],
                 [f"later (median of {args.later})", *(median[k] for k in PHASES), median["to_first_token"]]]))
    print(f"other processes took {watch.other_share:.0%} of the CPU meanwhile")
    print("wrote", save("startup", {"first": first, "later_median": median, "later_runs": later,
                                    "other_cpu_share_before": quiet, "other_cpu_share": watch.other_share}))


if __name__ == "__main__":
    main()
