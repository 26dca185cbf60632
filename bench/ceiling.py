"""What bounds a class's throughput (issue 25, item 1's target), decomposed in one sitting, as ratios to generate.

    .venv/bin/python -m bench.ceiling                      # 16 and 32 clients, 45 s each, 2 rounds (A B A B)
    .venv/bin/python -m bench.ceiling --clients 16 --seconds 30 --rounds 1 --parts model gradio

Every client asks again as soon as its last answer arrived (saturation), with the same number of clients in each
part, and each part's steps/s and CPU per step are printed as ratios to single-stream `model.generate` measured in
the same run (bench.classroom's measurement, before and after; its CPU per token too):

- model:  the model side alone, no web. N sessions step from N Python threads of one process through the app's
          own `/next_token` handler (app.build's, called directly with a gr.Request: the settings and view parsed,
          the session's step through the batcher, the sampling, the page's render with the open tab's chart and
          the pass computed ahead, exactly what Gradio calls), in a subprocess with SmolLM2 only.
- gradio: Gradio alone, no model. A stand-in server (`--serve-gradio`) whose Blocks has the app's step events
          (start, next_token, reset), their inputs, outputs, triggers and lanes copied from the app's own Blocks
          (built in the stand-in's process), launched by ui/server.py's launch (the same queue settings,
          lighter_events, the guard), each handler returning a real step's output captured once at start-up (a
          text of CAPTURE_STEPS steps: the same sizes). Driven by bench.classroom's simulated students
          (its saturation scenario, gradio_client): the most steps/s one Gradio event per step reaches here.
- route:  a bare HTTP route on the same uvicorn (the stand-in's ROUTE, a Starlette route outside Gradio's event
          protocol): the same step's payload back for the same inputs, one POST per step (a keep-alive
          connection per client, as a browser's): the floor of a request.
- app:    the app itself, bench.classroom's saturation scenario (called, not copied), in one process.
- apart:  the same with its model in a process of its own (app.py --model-process on, issue 31): the web process
          and the model process, each one's CPU per step.
- core:   what a model process of its own would keep (issue 31): N sessions' caches stepped by one loop in one
          thread, each step one batched pass (batcher.forward_batch) and the batch's sampling (derive_batch), no
          handler, no render, no other thread: the most steps/s a model process could give on its core.

The machine is shared: compare only within one run; each part runs `--rounds` times, alternated (A B A B).
Results: bench/results/<name>.json (default ceiling_<date>), a table on stdout.
"""
from __future__ import annotations

import argparse
import copy
import inspect
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from bench import save, table
from bench.appserver import AppServer, OthersWatch
from bench.classroom import (DEFAULTS, LOCAL_MODEL, PROMPTS, REQUEST_TIMEOUT_S, cpu_lines, cpu_per_step, ended,
                             error_text, generate_tok_s, histogram, own_cpu_s, percentile, scenario, server_cpu_s,
                             stats_delta)

PARTS = ("model", "gradio", "route", "app", "apart", "core")
STEP_APIS = ("start", "next_token", "reset")  # the events the simulated students call (bench.classroom)
CAPTURE_STEPS = 16  # the stand-in's step: a text this many steps long (a saturated minute's texts: 10-40 steps)
ROUTE = "/tbt/ceiling/step"  # the stand-in's bare route
STANDIN = ["-m", "bench.ceiling", "--serve-gradio"]  # the stand-in server's command (AppServer adds --port)
WARM_FRACTION = 1 / 3  # the steady window starts after this share of a run (bench.classroom: at most 20 s)


# ---- the app's own page and its step handlers ------------------------------------------------------------------
def app_blocks(models=None):
    """The app's own page (app.build) on SmolLM2 alone, and its events by api_name."""
    import app as app_module
    from model.classroom.rooms import Rooms
    from model.serving.sessions import ModelRegistry, SessionStore

    models = models or ModelRegistry(LOCAL_MODEL)
    models.preload()
    demo = app_module.build(app_module.App(models, SessionStore(), Rooms()), models.default)
    return demo, {fn.api_name: fn for fn in demo.fns.values() if isinstance(fn.api_name, str)}


def arguments(fn, **given) -> list:
    """The values a client sends for the event `fn` (a BlockFunction of the app), in its inputs' order: `given`,
    else bench.classroom's DEFAULTS, else the input's own value (the open tab's gr.State)."""
    names = [p for p in inspect.signature(fn.fn).parameters if p != "request"]
    return [given.get(name, DEFAULTS.get(name, getattr(block, "value", None))) for name, block in zip(names, fn.inputs)]


def request_for(key: str):
    import gradio as gr

    return gr.Request(session_hash=key)


def started(fns, key: str, prompt: str, patience_s: float = 120.0) -> list:
    """A session for `key` through the app's own Start handler (the opening budget may ask to wait: retried)."""
    import gradio as gr

    give_up = time.monotonic() + patience_s
    while True:
        try:
            return fns["start"].fn(request_for(key), *arguments(fns["start"], prompt=prompt, mode="raw",
                                                                 model=LOCAL_MODEL))
        except gr.Error:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.5)


def capture(fns, steps: int = CAPTURE_STEPS) -> dict[str, list]:
    """Real outputs of the app's handlers, once: Start, a step after `steps` steps, Reset (what Gradio is given)."""
    key = "ceiling-capture"
    out = {"start": started(fns, key, PROMPTS[0])}
    args = arguments(fns["next_token"])
    for _ in range(steps):
        out["next_token"] = fns["next_token"].fn(request_for(key), *args)
    out["reset"] = fns["reset"].fn(request_for(key), *arguments(fns["reset"]))
    return out


# ---- (model) the model side alone --------------------------------------------------------------------------------
def model_side(clients: int, seconds: float) -> dict:
    """N sessions stepping through the app's /next_token handler from N threads of this process, each asking again
    as soon as its step returned: steps/s, this process's CPU per step (its split: model.runtime.CPU), batch sizes,
    over the steady window (after WARM_FRACTION of the run)."""
    from model.runtime import bench_stats

    demo, fns = app_blocks()
    keys = [f"ceiling-{i}" for i in range(clients)]
    for i, key in enumerate(keys):
        started(fns, key, PROMPTS[i % len(PROMPTS)])
    step, reset = fns["next_token"].fn, fns["reset"].fn
    step_args, reset_args = arguments(fns["next_token"]), arguments(fns["reset"])
    done, errors, latency = [[] for _ in keys], [], []
    t0 = time.monotonic()
    deadline = t0 + seconds

    def client(i: int, key: str):
        request = request_for(key)
        while time.monotonic() < deadline:
            t = time.perf_counter()
            try:
                out = step(request, *step_args)
                latency.append(time.perf_counter() - t)
                done[i].append(time.monotonic())
                if ended(out) or "512 of 512" in str(out[0]):
                    reset(request, *reset_args)  # what a student does at the end of the text
            except Exception as err:  # noqa: BLE001 (every failure is a finding)
                errors.append(error_text(err))

    threads = [threading.Thread(target=client, args=(i, key), daemon=True) for i, key in enumerate(keys)]
    for t in threads:
        t.start()
    time.sleep(seconds * WARM_FRACTION)
    with OthersWatch() as watch:  # this process is all of ours now (no children)
        warm, cpu_warm, stats_warm = time.monotonic(), own_cpu_s(), bench_stats()
        time.sleep(max(0.0, deadline - time.monotonic()))
        end, cpu_end, stats_end = time.monotonic(), own_cpu_s(), bench_stats()
    for t in threads:
        t.join(timeout=REQUEST_TIMEOUT_S)
    steps = sum(warm <= at <= end for times in done for at in times)
    delta = stats_delta(stats_warm, stats_end)
    return {"part": "model", "clients": clients, "seconds": seconds, "steady_window_s": end - warm,
            "steady_steps_per_s": steps / (end - warm), "steps_served": sum(map(len, done)),
            "server_ms_per_step": (cpu_end - cpu_warm) / max(1, steps) * 1000,
            "server_cores": (cpu_end - cpu_warm) / (end - warm),
            "load_generator_ms_per_step": None,  # the clients are this process's threads: in the figure above
            "latency_s": {"median": statistics.median(latency) if latency else None, "p95": percentile(latency, 95)},
            "batch_sizes": histogram(next(iter(delta["batch_sizes"].values()), {})),
            "cpu_per_step_ms": cpu_per_step(delta), "errors": len(errors), "error_kinds": sorted(set(errors))[:5],
            "others_cpu_share": watch.share}


def run_model_side(clients: int, seconds: float, flag: str = "--model-side") -> dict:
    """model_side (or core_side: flag --core-side) in a subprocess of its own (the model never held by this process)."""
    from bench.appserver import ROOT

    out = subprocess.run([sys.executable, "-m", "bench.ceiling", flag, str(clients), "--seconds",
                          str(seconds)], capture_output=True, text=True, cwd=ROOT)
    if out.returncode or "RESULT" not in out.stdout:
        raise RuntimeError(f"bench.ceiling {flag} failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.rsplit("RESULT", 1)[1])


# ---- (core) the model process's own work alone ----------------------------------------------------------------------
CORE_LENGTH = 256  # tokens: a session at this length starts its prompt again (the text a class steps through)


def core_side(clients: int, seconds: float) -> dict:
    """N sessions stepped together by one loop: a batched pass, the batch's sampling, each row's drawn token
    appended; steps/s and this process's CPU per step (pass and sampling apart) over the steady window."""
    import torch

    from model.decoding.batch_sampling import SampleRow, derive_batch
    from model.decoding.batching import forward_batch
    from model.decoding.scheduler import DECODE_THREADS
    from model.decoding.passes import prefill
    from model.decoding.loading import load_model
    from model.decoding.records import SamplingConfig

    lm = load_model(LOCAL_MODEL)
    torch.set_num_threads(DECODE_THREADS)  # the batcher's own setting for a decode pass
    cfg = SamplingConfig(**{k: DEFAULTS[k] for k in ("temperature", "top_k", "top_p", "min_p", "repetition_penalty",
                                                      "order", "seed")})  # the class's settings, as the other parts
    prompts = [lm.tokenizer(PROMPTS[i % len(PROMPTS)])["input_ids"] for i in range(clients)]

    def fresh(i: int):
        done = prefill(lm.model, prompts[i])
        return done.cache, list(prompts[i]), done.logits[-1]

    sessions = [list(fresh(i)) for i in range(clients)]
    with torch.no_grad():
        rows = [SampleRow(ids, cfg, len(ids), lm.tokens) for _, ids, _ in sessions]
        tokens = [d.chosen.id for d in derive_batch(torch.stack([s[2] for s in sessions]), rows)]
    steps, cpu = [], {"model pass": 0.0, "sampling": 0.0}
    t0 = time.monotonic()
    warm_at, deadline = t0 + seconds * WARM_FRACTION, t0 + seconds
    cpu_warm = None
    with torch.no_grad(), OthersWatch() as watch:
        while time.monotonic() < deadline:
            if cpu_warm is None and time.monotonic() >= warm_at:
                cpu_warm, warm = own_cpu_s(), time.monotonic()
            c0 = time.process_time()
            results = forward_batch(lm.model, [s[0] for s in sessions], tokens)
            c1 = time.process_time()
            for s, token in zip(sessions, tokens):
                s[1].append(token)
            rows = [SampleRow(ids, cfg, len(ids), lm.tokens) for _, ids, _ in sessions]
            dists = derive_batch(torch.stack([r[0] for r in results]), rows)
            c2 = time.process_time()
            tokens = [d.chosen.id for d in dists]
            for i, s in enumerate(sessions):
                if len(s[1]) >= CORE_LENGTH:
                    sessions[i] = list(fresh(i))
                    tokens[i] = derive_batch(sessions[i][2][None], [SampleRow(sessions[i][1], cfg,
                                                                              len(sessions[i][1]), lm.tokens)])[0].chosen.id
            if cpu_warm is not None:
                steps.append(len(sessions))
                cpu["model pass"] += c1 - c0
                cpu["sampling"] += c2 - c1
        end, cpu_end = time.monotonic(), own_cpu_s()
    n = max(1, sum(steps))
    total = (cpu_end - cpu_warm) / n * 1000
    split = {name: v / n * 1000 for name, v in cpu.items()}
    split["the rest"] = total - sum(split.values())
    return {"part": "core", "clients": clients, "seconds": seconds, "steady_window_s": end - warm,
            "steady_steps_per_s": sum(steps) / (end - warm), "steps_served": sum(steps),
            "server_ms_per_step": total, "server_cores": (cpu_end - cpu_warm) / (end - warm),
            "load_generator_ms_per_step": None, "latency_s": {"median": None, "p95": None},
            "batch_sizes": {"mean_batch_per_step": float(clients)}, "cpu_per_step_ms": {**split, "total": total},
            "errors": 0, "error_kinds": [], "others_cpu_share": watch.share}


# ---- (gradio, route) the stand-in server ---------------------------------------------------------------------
def standin_handler(app_fn, output: list):
    """A handler with the app handler's signature (the API's parameter names, its gr.Request) that returns a copy of
    `output`: what Gradio is given after a real step, with no model work."""
    def handler(*args, **kwargs):
        return copy.deepcopy(output)  # (a copy, as the app builds its answer anew: Gradio may change it)

    handler.__signature__ = inspect.signature(app_fn.fn)
    handler.__annotations__ = dict(getattr(app_fn.fn, "__annotations__", {}))
    handler.__name__ = app_fn.fn.__name__
    return handler


def standin_blocks(demo, fns, outputs: dict[str, list], apis=STEP_APIS):
    """A Blocks of the app's step events only: each of `apis` with copies of the app's inputs, outputs and trigger
    (the same component classes and constructor arguments; a component two events share is one copy), the same
    lane, progress and trigger mode, and a handler returning outputs[api]."""
    import gradio as gr

    copies = {}

    def copy_of(block):
        if block._id not in copies:
            args = {k: v for k, v in block.constructor_args.items() if k != "render"}  # (shared ones: unrendered)
            copies[block._id] = type(block)(**args)
        return copies[block._id]

    with gr.Blocks(title="bench.ceiling: the app's step events, no model", delete_cache=demo.delete_cache) as standin:
        for api in apis:
            fn = fns[api]
            (target, event), = fn.targets[:1]
            getattr(copy_of(demo.blocks[target]), event)(
                standin_handler(fn, outputs[api]), [copy_of(b) for b in fn.inputs], [copy_of(b) for b in fn.outputs],
                api_name=api, show_progress=fn.show_progress, concurrency_id=fn.concurrency_id,
                concurrency_limit=fn.concurrency_limit, queue=fn.queue, trigger_mode=fn.trigger_mode, js=fn.js)
    return standin


def route_payload(output: list) -> list:
    """A step's outputs as JSON values (the force list's update as its dict), for the bare route."""
    return json.loads(json.dumps(output, default=str))


def serve_gradio(port: int) -> None:
    """The stand-in server: the app's step events answering a captured step, launched as the app is, and ROUTE."""
    from starlette.responses import Response
    from starlette.routing import Route

    from ui.server import launch

    demo, fns = app_blocks()
    outputs = capture(fns)
    standin = standin_blocks(demo, fns, outputs)
    payload = route_payload(outputs["next_token"])

    async def step(request):  # a Starlette endpoint: no FastAPI parameter reading
        await request.json()  # the step's inputs, as a client sends them (read, not used)
        return Response(json.dumps({"data": payload}), media_type="application/json")
    print("CAPTURED a step's outputs, bytes:", [len(json.dumps(o)) for o in payload], flush=True)
    launch(standin, "127.0.0.1", port, app_kwargs={"routes": [Route(ROUTE, step, methods=["POST"])]})


def route_load(clients: int, seconds: float, seed: int = 0) -> dict:
    """N clients POSTing the step's inputs to the stand-in's bare ROUTE, each again as soon as its answer arrived
    (one keep-alive connection each): steps/s and CPU per step (server, load generator) over the steady window."""
    import httpx

    body = {"data": [DEFAULTS[k] for k in DEFAULTS]}
    with AppServer(command=STANDIN) as server:
        done, errors, latency = [[] for _ in range(clients)], [], []
        t0 = time.monotonic()
        deadline = t0 + seconds

        def client(i: int):
            with httpx.Client(timeout=REQUEST_TIMEOUT_S, trust_env=False) as http:
                while time.monotonic() < deadline:
                    t = time.perf_counter()
                    try:
                        answer = http.post(server.url + ROUTE, json=body)
                        answer.raise_for_status()
                        answer.json()
                        latency.append(time.perf_counter() - t)
                        done[i].append(time.monotonic())
                    except Exception as err:  # noqa: BLE001
                        errors.append(error_text(err))

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
        with OthersWatch() as watch:
            for t in threads:
                t.start()
            time.sleep(seconds * WARM_FRACTION)
            warm, cpu_warm = time.monotonic(), (own_cpu_s(), sum(server_cpu_s(server.pid).values()))
            time.sleep(max(0.0, deadline - time.monotonic()))
            end, cpu_end = time.monotonic(), (own_cpu_s(), sum(server_cpu_s(server.pid).values()))
            for t in threads:
                t.join(timeout=REQUEST_TIMEOUT_S)
    steps = sum(warm <= at <= end for times in done for at in times)
    return {"part": "route", "clients": clients, "seconds": seconds, "steady_window_s": end - warm,
            "steady_steps_per_s": steps / (end - warm), "steps_served": sum(map(len, done)),
            "server_ms_per_step": (cpu_end[1] - cpu_warm[1]) / max(1, steps) * 1000,
            "server_cores": (cpu_end[1] - cpu_warm[1]) / (end - warm),
            "load_generator_ms_per_step": (cpu_end[0] - cpu_warm[0]) / max(1, steps) * 1000,
            "latency_s": {"median": statistics.median(latency) if latency else None, "p95": percentile(latency, 95)},
            "batch_sizes": None, "errors": len(errors), "error_kinds": sorted(set(errors))[:5],
            "others_cpu_share": watch.share}


def from_scenario(part: str, clients: int, r: dict) -> dict:
    """bench.classroom's scenario result in this benchmark's terms."""
    cpu = r["steady_cpu"]
    hist = r.get("batch_sizes") or {}
    return {"part": part, "clients": clients, "seconds": r["minutes"] * 60, "steady_window_s": r["steady_window_s"],
            "steady_steps_per_s": r["steady_steps_per_s"], "steps_served": r["steps_served"],
            "server_ms_per_step": cpu["server_ms_per_step"], "server_cores": cpu["server_cores"],
            "load_generator_ms_per_step": cpu["load_generator_ms_per_step"],
            "latency_s": {"median": r["step_latency_s"]["median"], "p95": r["step_latency_s"]["p95"]},
            "batch_sizes": hist if hist.get("steps") else None, "cpu_per_step_ms": r.get("cpu_per_step_ms"),
            "errors": r["errors_total"], "error_kinds": list(r["errors"])[:5], "others_cpu_share": r["others_cpu_share"],
            "classroom": {k: v for k, v in r.items() if k != "server_stats_delta"}}


def run_part(part: str, clients: int, seconds: float, seed: int) -> dict:
    if part == "model":
        return run_model_side(clients, seconds)
    if part == "core":
        return run_model_side(clients, seconds, "--core-side")
    if part == "route":
        return route_load(clients, seconds, seed)
    command = STANDIN if part == "gradio" else None
    env = {"TBT_MODEL_PROCESS": "1" if part == "apart" else "0"}
    return from_scenario(part, clients, scenario(clients, 0.0, seconds / 60, seed, env=env, eager=True,
                                                 command=command))


# ---- the report --------------------------------------------------------------------------------------------------
NAMES = {"model": "model side alone (no web)", "gradio": "Gradio alone (no model)",
         "route": "bare HTTP route (no Gradio, no model)", "app": "the app, one process",
         "apart": "the app, its model apart",
         "core": "model process's own work (pass + batch sampling)"}


def summary(results: list[dict], generate: dict) -> list[dict]:
    """Per part and clients: the rounds' steps/s, CPU per step, mean batch, others' share, and ratios to generate."""
    gen, gen_cpu = generate["median"], generate["cpu_ms_per_token"]
    rows = []
    for part in PARTS:
        for clients in sorted({r["clients"] for r in results}):
            runs = [r for r in results if r["part"] == part and r["clients"] == clients]
            if not runs:
                continue
            rate = [r["steady_steps_per_s"] for r in runs]
            cpu = [r["server_ms_per_step"] for r in runs]
            batch = [r["batch_sizes"]["mean_batch_per_step"] for r in runs
                     if r.get("batch_sizes") and r["batch_sizes"].get("mean_batch_per_step")]
            rows.append({"part": part, "clients": clients, "steps_per_s": rate, "x_generate": [x / gen for x in rate],
                         "server_ms_per_step": cpu, "cpu_x_generate": [c / gen_cpu for c in cpu],
                         "load_generator_ms_per_step": [r["load_generator_ms_per_step"] for r in runs],
                         "server_cores": [r["server_cores"] for r in runs], "mean_batch": batch,
                         "others_cpu_share": [r["others_cpu_share"] for r in runs],
                         "p95_s": [r["latency_s"]["p95"] for r in runs], "errors": [r["errors"] for r in runs],
                         "two_cores_steps_per_s": [2000 / c if c else None for c in cpu]})
    return rows


def fmt(values, spec=".1f", sep=", ") -> str:
    return sep.join("-" if v is None else format(v, spec) for v in values) or "-"


def report(rows: list[dict], generate: dict, results: list[dict]) -> str:
    gen = generate["median"]
    out = (f"single-stream generate (the day's: median of before and after, {generate['setting']}): {gen:.1f} tokens/s,"
           f" CPU {generate['cpu_ms_per_token']:.1f} ms a token; 4 x generate = {4 * gen:.1f} steps/s\n"
           f"  before / after: {fmt([g['median'] for g in generate['measured']])} tokens/s"
           f" ({'; '.join(', '.join(f'{k} {v:.1f}' for k, v in g['medians'].items()) for g in generate['measured'])})\n\n")
    out += table(["what ran", "clients", "steps/s (rounds)", "x generate", "server CPU ms/step", "CPU x generate's token",
                  "2 cores' steps/s at that CPU", "load gen ms/step", "server cores", "mean batch", "others CPU",
                  "p95 s", "errors"],
                 [[NAMES[r["part"]], r["clients"], fmt(r["steps_per_s"]), fmt(r["x_generate"], ".2f"),
                   fmt(r["server_ms_per_step"]), fmt(r["cpu_x_generate"], ".2f"), fmt(r["two_cores_steps_per_s"]),
                   fmt(r["load_generator_ms_per_step"]), fmt(r["server_cores"], ".2f"), fmt(r["mean_batch"]),
                   fmt(r["others_cpu_share"], ".0%"), fmt(r["p95_s"], ".2f"), fmt(r["errors"], "d")] for r in rows])
    for r in results:  # the server's parts, and (apart) each process's CPU
        procs = ((r.get("classroom") or {}).get("steady_cpu") or {}).get("by_process")
        lines = cpu_lines(r.get("cpu_per_step_ms"), procs)
        if lines:
            out += f"\n\n{NAMES[r['part']]}, {r['clients']} clients, round {r['round']}:{lines}"
    return out + ("\n(steps/s: each round's, the steady window; x generate: over the day's generate; server CPU: the"
                  " server process's (model: the one process, its client threads included) per step; CPU x"
                  " generate's token: over generate's CPU per token; 2 cores' steps/s: 2000 / server CPU ms, what"
                  " two whole cores could serve at that cost; others CPU: other processes' share of the machine)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[16, 32], help="clients in each part (default 16 32)")
    ap.add_argument("--seconds", type=float, default=45.0, help="length of each run (default 45)")
    ap.add_argument("--rounds", type=int, default=2, help="each part this many times, alternated (default 2)")
    ap.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    ap.add_argument("--generate-runs", type=int, default=2, help="runs of each thread setting per generate (default 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default=None, help="results file name (default ceiling_<UTC date and time>)")
    ap.add_argument("--model-side", type=int, default=None, help=argparse.SUPPRESS)  # the subprocess of part model
    ap.add_argument("--core-side", type=int, default=None, help=argparse.SUPPRESS)  # the subprocess of part core
    ap.add_argument("--serve-gradio", action="store_true", help=argparse.SUPPRESS)  # the stand-in server
    ap.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve_gradio:
        return serve_gradio(args.port)
    if args.core_side:
        print("RESULT", json.dumps(core_side(args.core_side, args.seconds)), flush=True)
        os._exit(0)
    if args.model_side:
        print("RESULT", json.dumps(model_side(args.model_side, args.seconds)), flush=True)
        os._exit(0)  # (the batcher's worker thread would keep a normal exit waiting)
    name = args.name or time.strftime("ceiling_%Y%m%d_%H%M", time.gmtime())
    print("single-stream generate ...", flush=True)
    gens, results = [generate_tok_s(args.generate_runs)], []
    about = {"clients": args.clients, "seconds": args.seconds, "rounds": args.rounds, "parts": args.parts}
    for k in range(args.rounds):
        for clients in args.clients:
            for part in args.parts:
                print(f"round {k + 1}: {NAMES[part]}, {clients} clients, {args.seconds:g} s ...", flush=True)
                try:
                    result = {**run_part(part, clients, args.seconds, args.seed), "round": k + 1}
                except Exception as err:  # noqa: BLE001 (one part failing leaves the others' figures)
                    result = {"part": part, "clients": clients, "round": k + 1, "failed": error_text(err)}
                    print(f"  failed: {result['failed']}", flush=True)
                results.append(result)
                save(name, {**about, "generate": gens, "runs": results, "complete": False})
                if "failed" not in result:
                    print(f"  {result['steady_steps_per_s']:.1f} steps/s, server CPU "
                          f"{result['server_ms_per_step']:.1f} ms/step, others {result['others_cpu_share']:.0%}",
                          flush=True)
    print("single-stream generate again ...", flush=True)
    gens.append(generate_tok_s(args.generate_runs))
    generate = {"median": statistics.median(g["median"] for g in gens), "setting": gens[0]["setting"],
                "cpu_ms_per_token": statistics.median(g["cpu_ms_per_token"][g["setting"]] for g in gens),
                "measured": gens}
    rows = summary([r for r in results if "failed" not in r], generate)
    print(report(rows, generate, [r for r in results if "failed" not in r]))
    print(f"wrote {save(name, {**about, 'generate': generate, 'summary': rows, 'runs': results, 'complete': True})}")


if __name__ == "__main__":
    main()
