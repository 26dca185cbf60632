"""How fast the server alone could play: Play's steps with no page and no web server in the way.

Each step is what a Play step does on the server (ui/play.py, play_tokens): commit the pass computed ahead (or
compute it), build the page's views, start the next pass in the batcher's worker. Back to back, so the
figure is an upper bound for Play on this machine: a page that drew in no time would still wait for this.

    .venv/bin/python -m bench.play_ceiling [--tokens 40]
"""
from __future__ import annotations

import argparse
import statistics
import time

from bench import PROMPT, save, table, wait_for_quiet

TARGET_PLAY_TOKENS_PER_S = 8


def run(tokens: int) -> dict:
    from app import App, build
    from ui.handlers import View
    from model.decoding.records import SamplingConfig
    from model.classroom.rooms import Rooms
    from model.serving.sessions import ModelRegistry, SessionStore

    models = ModelRegistry("smollm2")
    app = App(models, SessionStore(), Rooms())
    build(app, "smollm2")  # the page's views, which draw each step (no server is started)
    session = models.new_session()
    session.start(PROMPT)
    cfg, view = SamplingConfig(), View()
    app.answer(session, cfg, view)
    step_ms = []
    for _ in range(tokens):
        t0 = time.perf_counter()
        session.step(cfg)
        app.answer(session, cfg, view)  # the views, and the next pass started ahead
        step_ms.append((time.perf_counter() - t0) * 1000)
    session.preview_ahead(cfg)  # wait for the last pass ahead: exiting while the worker runs one aborts torch
    steady = step_ms[3:]  # the first steps warm caches
    median = statistics.median(steady)
    return {"tokens": tokens, "step_ms_median": median, "step_ms_p95": sorted(steady)[int(0.95 * (len(steady) - 1))],
            "tokens_per_s": 1000 / median}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=40)
    args = ap.parse_args(argv)
    results = {"other_cpu_share_before": wait_for_quiet(), **run(args.tokens)}
    print(table(["what", "steps", "median ms", "p95 ms", "tokens/s", "Play target"],
                [["server alone, Play's steps back to back", args.tokens, results["step_ms_median"],
                  results["step_ms_p95"], results["tokens_per_s"], f">= {TARGET_PLAY_TOKENS_PER_S} (with the page)"]]))
    print(f"wrote {save('play_ceiling', results)}")


if __name__ == "__main__":
    main()
