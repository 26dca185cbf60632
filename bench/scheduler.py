"""A bystander's Next token while another student's heavy view runs on the same model (the model's scheduler, issue 30).

    .venv/bin/python -m bench.scheduler                        # both models, every view that runs the model itself
    .venv/bin/python -m bench.scheduler --models smollm2 --views lens consistency --seconds 15
    .venv/bin/python -m bench.scheduler --root /tmp/old-checkout --name scheduler_before   # the same, on another app
    .venv/bin/python -m bench.scheduler --model-process off on      # the model's core in the page's process, then apart

The app runs as its own server (bench.appserver). A bystander's page steps Next token every PACE_S on a short
prompt, and its wait for each answer is timed: first with nothing else running (the baseline), then while a
second page, on a long text of the same model (448 tokens), runs one heavy view again and again for the whole
window. The target: during any view, the bystander's p95 exceeds the baseline's p95 by at most about one pass
(the longest pass a view may hold the model for: a chunk of a long prefill, or the Training view's one pass).

`--chunks` measures instead what a chunked prefill costs (in this process, no server): a 448-token text through
each model in one pass and in chunks of 64, 128 and 256 tokens (each chunk's pass is what a waiting step may
wait for; their sum against the one pass is what chunking costs the run).

`--root` runs the same benchmark against another checkout's app.py: before and after in one sitting (the machine's
speed varies 2-3x between days; compare only within one run). Results: bench/results/<name>.json and a table.
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time

from bench import save, table
from bench.appserver import AppServer, OthersWatch
from bench.classroom import percentile

PACE_S = 0.3  # the bystander asks for its next step this long after the last answer (a presenter's pace)
SETTINGS = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0, order="transformers",
                seed=0, lang="en", layer=0, head="mean")
SHORT = {"smollm2": "The capital of France is", "gemma3-270m": "今天天气"}
LONG = {  # about 440 tokens on each model: a long text is where a run used to hold the model longest
    "smollm2": ("The history of the printing press begins in the fifteenth century, when movable type arrived, "
                "and within fifty years printers worked in two hundred cities across Europe. ") * 14,
    "gemma3-270m": "今天天气晴朗，我和朋友们一起去公园散步，看到很多人在湖边钓鱼。" * 15,
}
# Each view that runs the model beyond one step, as the page calls it: (api, arguments before the settings, whether
# the page's settings follow, or only its language).
VIEWS = {
    "lens": ("/logit_lens", (48,), False),
    "consistency": ("/consistency", (16, 16), True),
    "race": ("/sampler_race", (0.7, 0, 1.0, 0.0, "transformers", 32), True),
    "beams": ("/beams_search", (4, 1.0, 16), True),
    "constraints": ("/constrain", ("words", "yes no maybe", 16), True),
    "speculative": ("/speculative", (4, 32), True),
    "training": ("/compare_stepwise", (), False),
    "kv_measure": ("/measure", (), False),
    "score": ("/score_text", None, False),  # the text scored is the long text itself
    "patching": ("/patching", ("The Eiffel Tower is in the city of", "The Colosseum is in the city of", ""), False),
    "heads": ("/heads", (), False),  # its text is the page's own (a random sequence said twice)
    "attribution": ("/attribution", (40, -1, 64), False),  # the token at position 40: 40 tokens of context, 64 points
    "prefill_decode": ("/prefill_decode", (), False),  # measured once, then kept for five minutes (the class's figures)
}


def client(url):
    from gradio_client import Client

    return Client(url, verbose=False, download_files=False, analytics_enabled=False)


def start(c, model: str, prompt: str) -> None:
    c.predict(prompt, "raw", model, **SETTINGS, api_name="/start")


def run_view(c, name: str, model: str) -> None:
    api, args, settings = VIEWS[name]
    lang = "zh" if model == "gemma3-270m" else "en"
    if args is None:
        c.predict(LONG[model][:2000], lang, api_name=api)
    elif settings:
        c.predict(*args, **{**SETTINGS, "lang": lang}, api_name=api)
    else:
        c.predict(*args, lang, api_name=api)


def bystander(url: str, model: str, seconds: float, ready: threading.Event, out: list[float]) -> None:
    """Steps Next token every PACE_S for `seconds` after `ready`, on its own page; its waits go to `out` (s)."""
    c = client(url)
    start(c, model, SHORT[model])
    ready.wait()
    end, steps = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        if steps >= 400:  # far from the session's 512 tokens
            start(c, model, SHORT[model])
            steps = 0
        t0 = time.perf_counter()
        c.predict(**SETTINGS, api_name="/next_token")
        out.append(time.perf_counter() - t0)
        steps += 1
        time.sleep(PACE_S)


def phase(url: str, model: str, view: str | None, seconds: float) -> dict:
    """One window: the bystander's waits, with `view` running on another page meanwhile (None: nothing)."""
    waits, runs, errors, ready, stop = [], [], [], threading.Event(), threading.Event()
    heavy_page = None
    if view is not None:
        heavy_page = client(url)
        start(heavy_page, model, LONG[model])
        if view in ("training", "speculative", "race", "consistency", "beams", "constraints"):
            for _ in range(4):  # a few generated tokens: Training compares them; the others continue the text
                heavy_page.predict(**SETTINGS, api_name="/next_token")
    by = threading.Thread(target=bystander, args=(url, model, seconds, ready, waits))
    by.start()
    time.sleep(2.0)  # the bystander's page is open and started
    ready.set()

    def heavy():
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                run_view(heavy_page, view, model)
                runs.append(time.perf_counter() - t0)
            except Exception as err:  # noqa: BLE001 (reported, never hidden)
                errors.append(str(err)[:200])
                stop.wait(1.0)

    worker = threading.Thread(target=heavy) if view else None
    with OthersWatch() as others:
        if worker:
            worker.start()
        by.join()
        stop.set()
        if worker:
            worker.join(600)
    return {"model": model, "view": view or "nothing", "steps": len(waits),
            "p50_s": percentile(waits, 50), "p95_s": percentile(waits, 95), "max_s": max(waits) if waits else None,
            "mean_s": statistics.fmean(waits) if waits else None, "view_runs": len(runs),
            "view_run_s": statistics.median(runs) if runs else None, "errors": errors,
            "others_share": round(others.share, 3)}


def chunk_costs(models: list[str], repeats: int = 3) -> list[dict]:
    """A 448-token prefill of each model in one pass and in chunks: the longest chunk's pass and the total (ms)."""
    import torch

    from model.decoding.passes import prefill
    from model.decoding.loading import load_model

    rows = []
    for name in models:
        lm = load_model(name)
        ids = (lm.tokenizer(LONG[name])["input_ids"] * 2)[:448]
        torch.set_num_threads(1)  # a request thread's count outside a pass (WholeText.run); each pass takes both
        prefill(lm.model, ids, chunk=len(ids))  # warm-up
        for chunk in (448, 256, 128, 64):
            totals, longest = [], []
            for _ in range(repeats):
                t0 = time.perf_counter()
                done = prefill(lm.model, ids, chunk=chunk)
                totals.append((time.perf_counter() - t0) * 1000)
                longest.append(done.ms / done.passes)  # the mean pass; chunks are alike but for their last
            rows.append({"model": name, "chunk": chunk, "passes": done.passes, "total_ms": statistics.median(totals),
                         "pass_ms": statistics.median(longest)})
            print(table(["model", "chunk", "passes", "total ms", "pass ms"],
                        [[name, chunk, done.passes, rows[-1]["total_ms"], rows[-1]["pass_ms"]]]), flush=True)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["smollm2", "gemma3-270m"])
    ap.add_argument("--views", nargs="+", default=list(VIEWS), choices=list(VIEWS))
    ap.add_argument("--seconds", type=float, default=20.0, help="each window")
    ap.add_argument("--root", help="another checkout's app to measure (default: this one)")
    ap.add_argument("--name", default=f"scheduler_{time.strftime('%Y%m%d')}")
    ap.add_argument("--chunks", action="store_true", help="what a chunked prefill costs, per chunk size")
    ap.add_argument("--model-process", nargs="+", choices=["off", "on"], default=["off"],
                    help="each model's core in the page's process (off) or a process of its own (on); both: one "
                         "server each, one after the other (TBT_MODEL_PROCESS)")
    args = ap.parse_args(argv)
    if args.chunks:
        with OthersWatch() as others:
            rows = chunk_costs(args.models)
        print(f"others took {others.share:.2f} of the machine meanwhile")
        print("saved", save(args.name.replace("scheduler", "chunks"), {"chunks": rows, "others_share": others.share}))
        return
    rows, results = [], []
    header = ["core", "model", "while", "steps", "p50 s", "p95 s", "max s", "p95 - base", "runs", "run s", "errors",
              "others"]
    for mode in args.model_process:
        env = {"TBT_MODEL_PROCESS": "1" if mode == "on" else "0"}
        where = "own process" if mode == "on" else "page's process"
        with AppServer(root=args.root, startup_timeout_s=600, env=env) as srv:
            for model in args.models:
                base = phase(srv.url, model, None, args.seconds)
                results.append({**base, "model_process": mode})
                for view in [None, *args.views]:
                    r = base if view is None else phase(srv.url, model, view, args.seconds)
                    if view is not None:
                        results.append({**r, "model_process": mode})
                    extra = None if r["p95_s"] is None else r["p95_s"] - base["p95_s"]
                    rows.append([where, model, r["view"], r["steps"], r["p50_s"], r["p95_s"], r["max_s"], extra,
                                 r["view_runs"], r["view_run_s"] or 0.0, len(r["errors"]), r["others_share"]])
                    print(table(header, rows[-1:]), flush=True)
    print()
    print(table(header, rows))
    for r in results:
        for e in r["errors"][:2]:
            print(f"{r['model']} {r['view']}: {e}")
    print("saved", save(args.name, {"root": args.root or ".", "pace_s": PACE_S, "seconds": args.seconds,
                                    "phases": results}))


if __name__ == "__main__":
    main()
