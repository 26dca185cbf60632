"""A classroom on one server: N students, each with their own session, stepping at their own pace.

    .venv/bin/python -m bench.classroom --students 10 30 60 --minutes 3
    .venv/bin/python -m bench.classroom --engine --students 30 60 --minutes 2 --scenarios click --name classroom_engine

Each student is a gradio_client.Client (its own session) in its own thread: /start, then /next_token every
1-3 s (a seeded random.Random per student). In the second scenario a third of the students press Play:
/play for 15-30 tokens, saying each step taken as the page does (POST /tbt/play/<token>/shown) as soon as it
arrives, then a pause of a few seconds. A player's step latency is the time from saying the last step taken
(or from pressing Play) to the next step's arrival. Each scenario gets a fresh server process
(so one scenario's sessions do not fill the next one's store) started with Gradio's profiling on, which
splits each request's time into queue wait, handler (fn_call) and postprocess on the server.

Reported per scenario: step latency as the student's client sees it (median, p95, max), errors grouped by
message, steps served per second, the server's resident memory at the start and end, and the server-side
phases. Target: 30 students clicking, p95 <= 1 s and no errors.

With --engine, a real vLLM (tests/engine_server.py: `make engine` installs it) is started once for all the
scenarios, serving the app's converted SmolLM2 folder; each app server is pointed at it (TBT_ENGINE_URL, ...) and
the students pick its model ("vllm:smollm2-v1") at /start. On one machine the engine shares its cores with the
app and the students, so this measures the app's overhead on an engine model, not an engine's speed.
"""
from __future__ import annotations

import argparse
import random
import re
import ssl
import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from bench import save, table
from bench.appserver import AppServer, OthersWatch

LOCAL_MODEL = "smollm2"

DEFAULTS = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0, order="transformers", seed=0,
                lang="en", layer=0, head="mean")
PROMPTS = ["Once upon a time, in a small village,", "The capital of France is", "def fibonacci(n):",
           "The best way to learn a language is", "In the year 2050, cities will"]
TARGET_P95_S = 1.0
REQUEST_TIMEOUT_S = 120.0  # a step that takes longer than this is counted as an error (and cancelled)
PLAY_BURST = 30
# gradio_client makes a new httpx client for every request, and httpx loads the CA certificates into a new SSL
# context each time (about 30 ms of CPU), even for http://. Measured here: 38 % of the load generator's CPU, a
# core at 30 students, taken from the server's two. One context made once serves every student's requests.
SSL_CONTEXT = ssl.create_default_context()


@dataclass
class Student:
    """One simulated student: what they did and what they saw."""

    index: int
    plays: bool  # True: presses Play (bursts of back-to-back steps); False: clicks every 1-3 s
    step_latency_s: list[float] = field(default_factory=list)
    start_latency_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    connect_s: float | None = None


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in [0, 100]) of a list, or None if it is empty."""
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(q / 100 * len(v)) - 1))] if v else None


def error_text(err: BaseException) -> str:
    """One line: the app's message for an AppError, else the exception's type and message."""
    from gradio_client.exceptions import AppError

    if isinstance(err, AppError):
        return f"AppError: {err}"
    return f"{type(err).__name__}: {err}"[:300]


def call(client, api: str, *args, **kwargs):
    """One request with a time limit; returns (result, seconds). A request that runs over is cancelled."""
    t0 = time.perf_counter()
    job = client.submit(*args, **kwargs, api_name=api)
    try:
        result = job.result(timeout=REQUEST_TIMEOUT_S)
    except TimeoutError:
        job.cancel()
        raise TimeoutError(f"{api} took over {REQUEST_TIMEOUT_S:.0f} s") from None
    return result, time.perf_counter() - t0


def ended(result) -> bool:
    """True when the page says the model ended the text (the status marker's data-ended)."""
    return 'data-ended="1"' in str(result[0])


def run_student(student: Student, url: str, deadline: float, stop: threading.Event, seed: int, model: str) -> None:
    """Connect, start on `model`, then step until the deadline: every 1-3 s, or in Play bursts."""
    from gradio_client import Client

    rng = random.Random(seed * 1000 + student.index)
    t0 = time.perf_counter()
    try:
        client = Client(url, verbose=False, download_files=False, analytics_enabled=False, ssl_verify=SSL_CONTEXT)
    except Exception as err:  # noqa: BLE001 (every failure is a finding, grouped by message)
        student.errors.append("connect: " + error_text(err))
        return
    student.connect_s = time.perf_counter() - t0
    try:
        time.sleep(rng.uniform(0, 3))  # students do not all press Start in the same instant
        prompt = PROMPTS[student.index % len(PROMPTS)]
        started = False
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                if not started:
                    _, seconds = call(client, "/start", prompt, "raw", model, **DEFAULTS)
                    student.start_latency_s.append(seconds)
                    started = True
                    continue
                if student.plays:
                    result = play(client, url, rng.randint(PLAY_BURST // 2, PLAY_BURST), student, deadline, stop)
                else:
                    result, seconds = call(client, "/next_token", **DEFAULTS)
                    student.step_latency_s.append(seconds)
                if ended(result) or "512 of 512" in str(result[0]):
                    call(client, "/reset", **DEFAULTS)  # what a student does at the end of the text
            except Exception as err:  # noqa: BLE001
                student.errors.append(error_text(err))
                if "No text yet" in str(err) or "idle" in str(err):
                    started = False
            pause = rng.uniform(3, 6) if student.plays else rng.uniform(1, 3)
            stop.wait(min(pause, max(0.0, deadline - time.monotonic())))
    finally:
        client.close()


def play(client, url: str, n: int, student: Student, deadline: float, stop: threading.Event):
    """Press Play for n tokens and take each step as the page does; returns the last step's outputs."""
    import httpx

    job = client.submit(n, **DEFAULTS, api_name="/play")
    asked, seen, last = time.perf_counter(), 0, None
    while not job.done() or len(job.outputs()) > seen:
        outputs = job.outputs()
        if len(outputs) == seen:
            if time.perf_counter() - asked > REQUEST_TIMEOUT_S:
                job.cancel()
                raise TimeoutError(f"/play sent no step for {REQUEST_TIMEOUT_S:.0f} s")
            time.sleep(0.005)
            continue
        seen, out = len(outputs), outputs[-1]
        token = re.search(r'data-token="([^"]+)"', str(out[3]))
        if token:  # a step (the last output only sends the force list and ends the Play)
            student.step_latency_s.append(time.perf_counter() - asked)
            last = out
            what = "stop" if time.monotonic() >= deadline or stop.is_set() else "shown"
            asked = time.perf_counter()
            httpx.post(f"{url.rstrip('/')}/tbt/play/{token.group(1)}/{what}", timeout=REQUEST_TIMEOUT_S)
    job.result(timeout=REQUEST_TIMEOUT_S)  # raises the server's error, if there was one
    return last or [""]


class RssMonitor(threading.Thread):
    """Samples the server's resident memory every `every_s` seconds (peak and last)."""

    def __init__(self, server: AppServer, every_s: float = 2.0):
        super().__init__(daemon=True)
        self.server, self.every_s, self.peak, self.stop = server, every_s, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, self.server.rss_bytes())
            except Exception:  # noqa: BLE001 (the server is gone: nothing more to sample)
                return
            self.stop.wait(self.every_s)


def scenario(n_students: int, play_share: float, minutes: float, seed: int, model: str = LOCAL_MODEL,
             env: dict[str, str] | None = None) -> dict:
    """One scenario on a fresh server (its environment `env` added): N students on `model` for `minutes`, a share
    of them pressing Play."""
    with AppServer(env={"GRADIO_PROFILING": "1", **(env or {})}) as server:
        time.sleep(2)
        rss_start = server.rss_bytes()
        players = set(random.Random(seed).sample(range(n_students), round(n_students * play_share)))
        students = [Student(i, i in players) for i in range(n_students)]
        stop = threading.Event()
        monitor = RssMonitor(server)
        monitor.start()
        t0 = time.monotonic()
        deadline = t0 + minutes * 60
        threads = [threading.Thread(target=run_student, args=(s, server.url, deadline, stop, seed, model),
                                    daemon=True) for s in students]
        with OthersWatch() as watch:
            for t in threads:
                t.start()
            for t in threads:  # the last request may still be running at the deadline: allow it to finish
                t.join(timeout=max(0.0, deadline + REQUEST_TIMEOUT_S + 30 - time.monotonic()))
            stop.set()
        hung = sum(t.is_alive() for t in threads)
        elapsed = time.monotonic() - t0
        monitor.stop.set()
        rss_end = server.rss_bytes()
        traces = server.profiling_traces()
    return {"model": model, **summarise(students, elapsed, minutes, hung, rss_start, rss_end, monitor.peak, traces,
                                        watch.share, play_share)}


def summarise(students, elapsed, minutes, hung, rss_start, rss_end, rss_peak, traces, others, play_share) -> dict:
    """The figures of one scenario."""
    def stats(values):
        return {"n": len(values), "median": statistics.median(values) if values else None,
                "p95": percentile(values, 95), "max": max(values, default=None)}

    steps = [x for s in students for x in s.step_latency_s]
    errors = Counter(e for s in students for e in s.errors)
    phases = {}
    for fn in ("next_token", "start"):
        ts = [t for t in traces if t["fn_name"] == fn]
        phases[fn] = {p: stats([t[f"{p}_ms"] for t in ts]) for p in ("queue_wait", "fn_call", "postprocess", "total")}
    return {
        "students": len(students), "players": sum(s.plays for s in students), "play_share": play_share,
        "minutes": minutes, "elapsed_s": elapsed, "threads_still_running": hung,
        "step_latency_s": stats(steps),
        "step_latency_clickers_s": stats([x for s in students if not s.plays for x in s.step_latency_s]),
        "step_latency_players_s": stats([x for s in students if s.plays for x in s.step_latency_s]),
        "start_latency_s": stats([x for s in students for x in s.start_latency_s]),
        "connect_s": stats([s.connect_s for s in students if s.connect_s is not None]),
        "steps_served": len(steps), "steps_per_s": len(steps) / (minutes * 60),
        "errors_total": sum(errors.values()), "errors": dict(errors.most_common()),
        "server_rss_start_mb": rss_start / 2**20, "server_rss_end_mb": rss_end / 2**20,
        "server_rss_peak_mb": rss_peak / 2**20, "server_phases_ms": phases, "others_cpu_share": others,
    }


def report(results: list[dict]) -> str:
    rows = []
    for r in results:
        lat, ph = r["step_latency_s"], r["server_phases_ms"]["next_token"]
        name = "clicking" if not r["players"] else f"{r['players']} play"
        target = ""
        if r["students"] == 30 and not r["players"]:
            target = "met" if lat["p95"] is not None and lat["p95"] <= TARGET_P95_S and not r["errors_total"] else "MISSED"
        rows.append([r["students"], name, lat["n"], lat["median"], lat["p95"], lat["max"], r["errors_total"],
                     r["steps_per_s"], ph["queue_wait"]["median"], ph["fn_call"]["median"], ph["postprocess"]["median"],
                     f"{r['server_rss_start_mb']:.0f} -> {r['server_rss_end_mb']:.0f}", f"{r['others_cpu_share']:.0%}",
                     target])
    out = table(["students", "scenario", "steps", "median s", "p95 s", "max s", "errors", "steps/s", "queue ms",
                 "handler ms", "post ms", "RSS MB", "others CPU", "p95<=1s"], rows)
    errors = [(r["students"], r["players"], msg, n) for r in results for msg, n in r["errors"].items()]
    if errors:
        out += "\n\nErrors:\n" + "\n".join(f"  {s} students ({p} playing): {n} x {msg}" for s, p, msg, n in errors)
    return out + "\n(queue / handler / post: medians of the server's phases for /next_token, GRADIO_PROFILING)"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, nargs="+", default=[10, 30, 60], help="class sizes (default 10 30 60)")
    ap.add_argument("--minutes", type=float, default=3.0, help="length of each scenario (default 3)")
    ap.add_argument("--play-share", type=float, default=1 / 3, help="share pressing Play in the second scenario")
    ap.add_argument("--scenarios", nargs="+", choices=["click", "play"], default=["click", "play"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="classroom", help="results file name (default classroom)")
    ap.add_argument("--engine", action="store_true",
                    help="start vLLM here and have the students use its model, not the app's own")
    args = ap.parse_args(argv)
    if args.engine:
        from model.engine_session import engine_model_name  # torch and transformers: only when needed

        engine = start_engine()
        model, env = engine_model_name(engine.model), engine_env(engine)
    else:
        engine, model, env = None, LOCAL_MODEL, {}
    try:
        about = {"model": model, "engine_started_s": engine.started_s if engine else None}
        results = []
        for n in args.students:
            for name in args.scenarios:
                share = args.play_share if name == "play" else 0.0
                print(f"{n} students, {name} on {model}: {args.minutes:g} min ...", flush=True)
                results.append(scenario(n, share, args.minutes, args.seed, model, env))
                save(args.name, {**about, "scenarios": results, "complete": False})  # kept if stopped midway
    finally:
        if engine:
            engine.stop()
    print(f"Model: {model}" + (" (vLLM on this machine's cores: the app's overhead)" if engine else ""))
    print(report(results))
    print(f"wrote {save(args.name, {**about, 'scenarios': results, 'complete': True})}")


def start_engine():
    """vLLM on the app's converted SmolLM2 folder (tests/engine_server.py), answering; stop() it after."""
    from tests.engine_server import start_engine as start

    engine = start()
    print(f"vLLM answered {engine.started_s:.0f} s after launch, at {engine.url}", flush=True)
    return engine


def engine_env(engine) -> dict[str, str]:
    """The app server's environment that points it at `engine` (app.py reads TBT_ENGINE_*)."""
    return {"TBT_ENGINE_URL": engine.url, "TBT_ENGINE_MODEL": engine.model, "TBT_ENGINE_FOLDER": str(engine.folder)}


if __name__ == "__main__":
    main()
