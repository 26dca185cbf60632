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

In the saturation scenario (`--scenarios saturate`) every student clicks Next token as soon as their last step
arrived (no pause): the server's throughput at its limit. Its steps/s is reported as a ratio to single-stream
`model.generate` measured in the same run (in a subprocess, before and after the scenarios, the median of the runs;
the server is not running then), with the batch sizes the batcher formed (the server runs in bench mode,
TBT_BENCH_STATS=1, and the benchmark reads GET /tbt/bench/stats: counts and CPU seconds only) and the server's CPU
per step split into the model's pass, the figures, the rest of the page's render, the step's own bookkeeping
(sampling, records, starting the next pass ahead) and Gradio with everything else (the process's CPU minus those).
Target: saturation >= 4 x generate; 80 students clicking every 1-3 s (about 40 steps/s) at p95 <= 1 s.

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
import os
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
CONNECT_SPREAD_S = 10.0  # students open the page within this many seconds of the scenario's start
AHEAD_AFTER_S = 0.2  # ui/protocol.py ahead_after_ms: a page asks for the next step's chart this long after a step
SATURATION_TARGET = 4.0  # saturation steps/s over single-stream generate tokens/s
WARM_S = 20.0  # the steady window (steps/s, batch sizes, CPU split) starts this long after the students set off,
# or once every student has started, if later
STATS_ROUTE = "/tbt/bench/stats"  # ui/play.py, only when the server runs with TBT_BENCH_STATS=1
# gradio_client makes a new httpx client for every request, and httpx loads the CA certificates into a new SSL
# context each time (about 30 ms of CPU), even for http://. Measured here: 38 % of the load generator's CPU, a
# core at 30 students, taken from the server's two. One context made once serves every student's requests.
SSL_CONTEXT = ssl.create_default_context()


@dataclass
class Student:
    """One simulated student: what they did and what they saw."""

    index: int
    plays: bool  # True: presses Play (bursts of back-to-back steps); False: clicks every 1-3 s
    eager: bool = False  # True: clicks again as soon as the last step arrived (the saturation scenario)
    ahead: bool = False  # True: asks for the next step's chart AHEAD_AFTER_S after each step, as the page does
    ahead_latency_s: list[float] = field(default_factory=list)
    step_latency_s: list[float] = field(default_factory=list)
    step_done_at: list[float] = field(default_factory=list)  # time.monotonic() when each step arrived
    start_latency_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    connect_s: float | None = None
    connect_retries: int = 0  # page loads that timed out and were tried again


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

    lowest_priority()
    rng = random.Random(seed * 1000 + student.index)
    time.sleep(rng.uniform(0, CONNECT_SPREAD_S))  # a class's pages open over some seconds, not in one instant
    t0 = time.perf_counter()
    while True:  # a page that did not load is loaded again (gradio_client's first request has a fixed time-out)
        try:
            client = Client(url, verbose=False, download_files=False, analytics_enabled=False,
                            ssl_verify=SSL_CONTEXT)
            break
        except Exception as err:  # noqa: BLE001 (every failure is a finding, grouped by message)
            if time.monotonic() + 5 >= deadline or stop.is_set():
                student.errors.append("connect: " + error_text(err))
                return
            student.connect_retries += 1
            stop.wait(rng.uniform(1, 3))
    student.connect_s = time.perf_counter() - t0
    try:
        time.sleep(rng.uniform(0, 3))  # students do not all press Start in the same instant
        prompt = PROMPTS[student.index % len(PROMPTS)]
        started, result = False, None
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                if not started:
                    try:
                        _, seconds = call(client, "/start", prompt, "raw", model, **DEFAULTS)
                    except Exception as err:  # noqa: BLE001 (a refused Start is counted as such, then retried)
                        student.errors.append("start: " + error_text(err))
                        stop.wait(min(rng.uniform(1, 3), max(0.0, deadline - time.monotonic())))
                        continue
                    student.start_latency_s.append(seconds)
                    started = True
                    continue
                if student.plays:
                    result = play(client, url, rng.randint(PLAY_BURST // 2, PLAY_BURST), student, deadline, stop)
                else:
                    result, seconds = call(client, "/next_token", **DEFAULTS)
                    student.step_latency_s.append(seconds)
                    student.step_done_at.append(time.monotonic())
                if ended(result) or "512 of 512" in str(result[0]):
                    call(client, "/reset", **DEFAULTS)  # what a student does at the end of the text
            except Exception as err:  # noqa: BLE001
                student.errors.append(error_text(err))
                if "No text yet" in str(err) or "idle" in str(err):
                    started = False
            pause = rng.uniform(3, 6) if student.plays else 0.0 if student.eager else rng.uniform(1, 3)
            if (student.ahead and not student.plays and pause > AHEAD_AFTER_S and started and result is not None
                    and 'data-ahead="0"' not in str(result[0]) and not ended(result)):
                # as the page does (assets/js/ahead.js): the next step's chart, asked for once the step has rested,
                # unless the step's status line said the server is busy (ui/lanes.py AheadPolicy)
                stop.wait(AHEAD_AFTER_S)
                pause -= AHEAD_AFTER_S
                if time.monotonic() < deadline and not stop.is_set():
                    try:
                        _, seconds = call(client, "/next_chart", **DEFAULTS)
                        student.ahead_latency_s.append(seconds)
                        pause -= seconds
                    except Exception as err:  # noqa: BLE001
                        student.errors.append("next_chart: " + error_text(err))
            stop.wait(min(max(0.0, pause), max(0.0, deadline - time.monotonic())))
    finally:
        client.close()


LOAD_NICE = 19  # the simulated students' priority: the server (nice 0) gets a core before any student's thread


def lowest_priority() -> None:
    """This thread (a simulated student, and the threads its client starts, which inherit it) at the lowest CPU
    priority. Linux keeps a nice value per thread, so the server process, started before, keeps its own: real
    students' browsers are not on the server, and their stand-ins should take only the CPU it leaves."""
    if hasattr(os, "setpriority"):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOAD_NICE)


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
            student.step_done_at.append(time.monotonic())
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


def read_stats(url: str) -> dict | None:
    """The server's bench-mode counters (model/runtime.py bench_stats), or None if it does not answer them."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(url.rstrip("/") + STATS_ROUTE, timeout=30) as r:
            return json.loads(r.read())
    except OSError:
        return None


def stats_delta(before: dict | None, after: dict | None) -> dict | None:
    """What the server did between two reads of its counters: CPU seconds, CPU by part, passes by batch size; and
    under "cores" the same for each core process (--model-process), whose passes are the server's."""
    if not before or not after:
        return None
    parts = {}
    for name, row in after["parts"].items():
        old = before["parts"].get(name, {"calls": 0, "cpu_s": 0.0, "wall_s": 0.0})
        parts[name] = {k: row[k] - old[k] for k in row}
    sizes = {}
    for model, hist in after["batch_sizes"].items():
        old = before["batch_sizes"].get(model, {})
        sizes[model] = {int(k): v - old.get(k, 0) for k, v in hist.items() if v - old.get(k, 0)}
    cores = lambda read: read.get("cores", read.get("apart", {}))  # noqa: E731 ("apart": a checkout before issue 44)
    apart = {name: stats_delta(cores(before).get(name), stats) for name, stats in cores(after).items()
             if stats.get("pid") == cores(before).get(name, {}).get("pid")}  # not one restarted between
    for one in apart.values():
        for model, hist in one["batch_sizes"].items():
            sizes[model] = {k: sizes.get(model, {}).get(k, 0) + hist.get(k, 0) for k in {*sizes.get(model, {}), *hist}}
    return {"process_cpu_s": after["process_cpu_s"] - before["process_cpu_s"], "parts": parts, "batch_sizes": sizes,
            "cores": apart}


def cpu_per_step(delta: dict | None) -> dict | None:
    """The server's CPU per step (ms), split: the model's pass, the figures, the rest of the render, the step's
    bookkeeping, and Gradio with everything else (the process's CPU minus the parts measured). With the model in a
    process of its own, the pass and the batch's sampling are that process's, and "model process rest" is the
    rest of its CPU (unpickling, its sessions' threads); "gradio + rest" is then the web process's own."""
    if not delta or not delta["parts"].get("step", {}).get("calls"):
        return None
    apart = list(delta.get("cores", {}).values())
    p = lambda name, d=delta: d["parts"].get(name, {}).get("cpu_s", 0.0)  # noqa: E731
    q = lambda name: p(name) + sum(p(name, one) for one in apart)  # noqa: E731 (a part wherever it ran)
    steps = delta["parts"]["step"]["calls"]
    # derive runs inside step and prefetch (and before a render): counted once, on its own
    split = {"model pass": q("model pass"), "sampling (derive)": q("derive"), "figures": p("figures"),
             "render (text, list)": p("render") - p("figures"),
             "step + prefetch": max(0.0, p("step") + p("prefetch") - p("derive"))}
    in_model = sum(p(n, one) for one in apart for n in ("model pass", "derive"))  # of the parts, the model processes'
    model_cpu = sum(one["process_cpu_s"] for one in apart)
    split["gradio + rest"] = delta["process_cpu_s"] - (sum(split.values()) - in_model)
    if apart:
        split["model process rest"] = model_cpu - in_model
    total = delta["process_cpu_s"] + model_cpu
    out = {"steps": steps, **{k: v / steps * 1000 for k, v in split.items()}, "total": total / steps * 1000}
    if apart:
        out["web process"] = delta["process_cpu_s"] / steps * 1000
        out["model processes"] = model_cpu / steps * 1000
    return out


def histogram(sizes: dict[int, int]) -> dict:
    """Passes and steps by batch size, and the mean batch a step ran in."""
    passes, steps = sum(sizes.values()), sum(k * v for k, v in sizes.items())
    return {"passes": dict(sorted(sizes.items())), "steps": steps,
            "mean_batch_per_pass": steps / passes if passes else None,
            "mean_batch_per_step": sum(k * k * v for k, v in sizes.items()) / steps if steps else None}


PROFILE_PARTS = [  # (part, a substring of a frame): a sample counts for the first part one of its frames names
    ("model pass", "model/decoding/scheduler.py"), ("figures", "/viz/"), ("render (text, list)", "ui/state.py"),
    ("step + prefetch", "model/"), ("app handlers", "/ui/"),
    ("gradio + web", ("gradio", "fastapi", "starlette", "uvicorn", "anyio", "asyncio", "h11", "httpx", "pydantic",
                      "orjson", "json", "websockets", "sse")),
]


def profile_parts(path: str) -> dict:
    """A py-spy raw profile (collapsed stacks, one line each: frames separated by ';', then a count) summed into
    PROFILE_PARTS, each part's share of the samples; and the hottest leaf frames inside the model pass and outside."""
    parts, leaves = Counter(), {"model pass": Counter(), "rest": Counter()}
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, count = line.rstrip().rpartition(" ")
        if not count.isdigit():
            continue
        frames, n = stack.split(";"), int(count)
        part = "other"
        for name, marks in PROFILE_PARTS:
            marks = (marks,) if isinstance(marks, str) else marks
            if any(m in f for f in frames for m in marks):
                part = name
                break
        parts[part] += n
        leaves["model pass" if part == "model pass" else "rest"][frames[-1][:120]] += n
    total = sum(parts.values()) or 1
    return {"samples": total, "share": {k: v / total for k, v in parts.most_common()},
            "top_leaves": {k: [(f, n / total) for f, n in c.most_common(12)] for k, c in leaves.items()}}


PROFILE_DETAIL = [  # (part, substrings of a stack): a sample counts for the first part whose marks its stack contains
    ("model pass", ("forward_batch", "Scheduler._work")),
    ("sampling (derive)", ("derive (model/decoding/sampling.py",)),
    ("figures", ("App._chart",)),
    ("render (text, force list)", ("App.render",)),
    ("handler, other (step, prefetch)", ("page_handler.<locals>.handler",)),
    ("Gradio: monitoring summary (pandas)", ("compute_analytics_summary",)),
    ("Gradio: matplotlib import", ("MatplotlibBackendMananger",)),
    ("Gradio: queue-place messages", ("broadcast_estimations",)),
    ("Gradio: inputs (preprocess)", ("preprocess_data",)),
    ("Gradio: outputs (postprocess)", ("postprocess_data",)),
    ("Gradio: queue, join, process_api", ("Blocks.process_api", "Queue.process_events", "queue_join", "fair_push")),
    ("web: server-sent events", ("sse_stream", "StreamingResponse")),
    ("web: HTTP routing, middleware", ("RequestResponseCycle.run_asgi",)),
    ("web: HTTP parsing, sockets", ("_read_ready", "H11Protocol", "data_received", "connection_made",
                                    "_call_connection_lost")),
    ("event loop, worker threads", ("select (selectors.py", "_run_once", "WorkerThread.run")),
]


def profile_detail(path: str, cpu_ms_per_step: float | None = None) -> dict:
    """A py-spy raw profile split into PROFILE_DETAIL's parts: each part's share of the samples, and (given the
    server's CPU per step) its ms per step, the share times that CPU."""
    counts, total = Counter(), 0
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, count = line.rstrip().rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        counts[next((name for name, marks in PROFILE_DETAIL if any(m in stack for m in marks)), "other")] += n
    share = {name: counts[name] / (total or 1) for name in [p for p, _ in PROFILE_DETAIL] + ["other"]}
    return {"samples": total, "share": share,
            "ms_per_step": {k: v * cpu_ms_per_step for k, v in share.items()} if cpu_ms_per_step else None}


def start_profile(pid: int, seconds: float, path: str):
    """py-spy sampling the server for `seconds` (its CPU samples only, not idle threads), written to `path`."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return subprocess.Popen([spy, "record", "-p", str(pid), "-d", str(max(1, int(seconds))), "-f", "raw",
                             "-o", path, "--nonblocking", "-r", "50"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def own_cpu_s() -> float:
    """CPU seconds of this process (every student's thread: the load generator), user and system."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def server_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds so far (user and system, every thread) of the server process ("web") and of each process it
    started ("model <pid>": a model process of --model-process; else its name), by process."""
    import psutil

    root = psutil.Process(pid)
    out = {}
    for proc in [root, *root.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            name = ("web" if proc is root else f"model {proc.pid}" if "spawn_main" in " ".join(proc.cmdline())
                    else f"{proc.name()} {proc.pid}")
        except psutil.Error:  # ended meanwhile
            continue
        out[name] = t.user + t.system
    return out


def scenario(n_students: int, play_share: float, minutes: float, seed: int, model: str = LOCAL_MODEL,
             env: dict[str, str] | None = None, eager: bool = False, profile: str | None = None,
             root: str | None = None, port: int | None = None, ahead: bool = False,
             command: list[str] | None = None) -> dict:
    """One scenario on a fresh server (its environment `env` added; `root`: the checkout whose app.py runs, this
    one if None): N students on `model` for `minutes`, a share of them pressing Play (or, `eager`, every one
    clicking again as soon as a step arrives). The load generator's own CPU (this process) and the server's are
    read over the steady window, per step served in it. `command`: another server than app.py (bench.ceiling's
    stand-in), started the same way."""
    with AppServer(env={"GRADIO_PROFILING": "1", "TBT_BENCH_STATS": "1", **(env or {})}, root=root,
                   port=port, command=command) as server:
        time.sleep(2)
        rss_start = server.rss_bytes()
        players = set(random.Random(seed).sample(range(n_students), round(n_students * play_share)))
        students = [Student(i, i in players, eager, ahead) for i in range(n_students)]
        stop = threading.Event()
        monitor = RssMonitor(server)
        monitor.start()
        t0 = time.monotonic()
        deadline = t0 + minutes * 60
        warm = t0 + min(WARM_S, minutes * 60 / 3)
        threads = [threading.Thread(target=run_student, args=(s, server.url, deadline, stop, seed, model),
                                    daemon=True) for s in students]
        with OthersWatch() as watch:
            for t in threads:
                t.start()
            time.sleep(max(0.0, warm - time.monotonic()))
            while time.monotonic() < t0 + minutes * 30 and not all(s.start_latency_s or s.errors for s in students):
                time.sleep(0.5)  # the steady window starts once every student has a text (at most half the run)
            warm = time.monotonic()
            stats_warm = read_stats(server.url)
            cpu_warm = (own_cpu_s(), server_cpu_s(server.pid), time.monotonic())
            spy = start_profile(server.pid, deadline - time.monotonic(), profile) if profile else None
            time.sleep(max(0.0, deadline - time.monotonic()))
            stats_end = read_stats(server.url)
            cpu_end = (own_cpu_s(), server_cpu_s(server.pid), time.monotonic())
            for t in threads:  # the last request may still be running at the deadline: allow it to finish
                t.join(timeout=max(0.0, deadline + REQUEST_TIMEOUT_S + 30 - time.monotonic()))
            stop.set()
        hung = sum(t.is_alive() for t in threads)
        elapsed = time.monotonic() - t0
        monitor.stop.set()
        rss_end = server.rss_bytes()
        traces = server.profiling_traces()
    if spy is not None:
        spy.wait(timeout=60)
    result = summarise(students, elapsed, minutes, hung, rss_start, rss_end, monitor.peak, traces, watch.share,
                       play_share)
    delta = stats_delta(stats_warm, stats_end)
    steady = sum(warm <= at <= deadline for s in students for at in s.step_done_at) / (deadline - warm)
    # the steps of the steady window alone (every student has a text): the class starting is left out
    result["step_latency_steady_s"] = stats([x for s in students for x, at in zip(s.step_latency_s, s.step_done_at)
                                             if warm <= at <= deadline])
    sizes = next(iter(delta["batch_sizes"].values()), {}) if delta else {}
    steady_steps = steady * (deadline - warm)
    window = cpu_end[2] - cpu_warm[2]
    used = {name: cpu_end[1][name] - cpu_warm[1].get(name, 0.0) for name in cpu_end[1]}
    cpu = {"load_generator_nice": LOAD_NICE,
           "load_generator_ms_per_step": (cpu_end[0] - cpu_warm[0]) / max(1, steady_steps) * 1000,
           "load_generator_cores": (cpu_end[0] - cpu_warm[0]) / window,
           "server_ms_per_step": sum(used.values()) / max(1, steady_steps) * 1000,
           "server_cores": sum(used.values()) / window,
           "by_process": {name: {"ms_per_step": s / max(1, steady_steps) * 1000, "cores": s / window}
                          for name, s in used.items()}}
    return {"model": model, "scenario": "saturate" if eager else "play" if play_share else "click", **result,
            "students_ask_ahead": ahead,
            "root": str(root) if root else "this checkout", "steady_cpu": cpu,
            "steady_steps_per_s": steady, "steady_window_s": deadline - warm, "batch_sizes": histogram(sizes),
            "cpu_per_step_ms": cpu_per_step(delta), "server_stats_delta": delta,
            "profile": profile_parts(profile) if profile else None,
            "profile_detail": profile_detail(profile, cpu["server_ms_per_step"]) if profile else None}


def cpu_lines(parts: dict | None, by_process: dict | None) -> str:
    """A run's server CPU per step as report lines: by part (cpu_per_step), and by process when more than one ran."""
    out = ""
    if parts:
        out += "\n  server CPU per step (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items() if k != "steps")
    if by_process and len(by_process) > 1:
        out += "\n  CPU by process: " + ", ".join(f"{k} {v['ms_per_step']:.1f} ms/step ({v['cores']:.2f} cores)"
                                                 for k, v in by_process.items())
    return out


def generate_tok_s(runs: int = 3, new_tokens: int = 64) -> dict:
    """Single-stream `model.generate` tokens/s on this machine now (bench.engine's run, greedy, prefill included),
    in a subprocess of its own so this process never holds the model: on torch's default threads (2 here) and on
    one (the batcher's), `runs` each, alternated. The reference is the faster of the two medians: on a loaded
    machine two OpenMP threads can lose most of their time waiting for each other, which would flatter a ratio."""
    import json
    import subprocess
    import sys

    from bench.appserver import ROOT

    code = (
        "import json, time, torch; from bench.engine import run_generate; from model.decoding.loading import load_model\n"
        "lm = load_model(); run_generate(lm, {'do_sample': False}, 4); rates = {'default': [], 'one thread': []}\n"
        "cpu = {'default': [], 'one thread': []}; default = torch.get_num_threads()\n"
        f"for _ in range({runs}):\n"
        "    for name, n in (('default', default), ('one thread', 1)):\n"
        "        torch.set_num_threads(n); c = time.process_time()\n"
        f"        s, _ = run_generate(lm, {{'do_sample': False}}, {new_tokens}); rates[name].append({new_tokens} / s)\n"
        f"        cpu[name].append((time.process_time() - c) / {new_tokens} * 1000)\n"
        "print('RATES', json.dumps([rates, cpu]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    rates, cpu = json.loads(out.split("RATES", 1)[1])
    medians = {k: statistics.median(v) for k, v in rates.items()}
    best = max(medians, key=medians.get)  # the reference's setting, and its CPU per token (the process's, ms)
    return {"runs": rates, "medians": medians, "median": medians[best], "new_tokens": new_tokens, "setting": best,
            "cpu_ms_per_token": {k: statistics.median(v) for k, v in cpu.items()}}


def stats(values) -> dict:
    """n, median, p95 and max of some latencies."""
    return {"n": len(values), "median": statistics.median(values) if values else None,
            "p95": percentile(values, 95), "max": max(values, default=None)}


def summarise(students, elapsed, minutes, hung, rss_start, rss_end, rss_peak, traces, others, play_share) -> dict:
    """The figures of one scenario."""
    steps = [x for s in students for x in s.step_latency_s]
    errors = Counter(e for s in students for e in s.errors)
    phases = {}
    for fn in ("next_token", "start", "next_chart"):
        ts = [t for t in traces if t["fn_name"] == fn]
        phases[fn] = {p: stats([t[f"{p}_ms"] for t in ts]) for p in ("queue_wait", "fn_call", "postprocess", "total")}
    return {
        "students": len(students), "players": sum(s.plays for s in students), "play_share": play_share,
        "minutes": minutes, "elapsed_s": elapsed, "threads_still_running": hung,
        "step_latency_s": stats(steps),
        "step_latency_clickers_s": stats([x for s in students if not s.plays for x in s.step_latency_s]),
        "step_latency_players_s": stats([x for s in students if s.plays for x in s.step_latency_s]),
        "start_latency_s": stats([x for s in students for x in s.start_latency_s]),
        "next_chart_latency_s": stats([x for s in students for x in s.ahead_latency_s]),
        "connect_s": stats([s.connect_s for s in students if s.connect_s is not None]),
        "connect_retries": sum(s.connect_retries for s in students),
        "steps_served": len(steps), "steps_per_s": len(steps) / (minutes * 60),
        "errors_total": sum(errors.values()), "errors": dict(errors.most_common()),
        "starts_refused": sum(n for e, n in errors.items() if e.startswith("start:")),
        "step_errors": sum(n for e, n in errors.items() if not e.startswith("start:")),
        "server_rss_start_mb": rss_start / 2**20, "server_rss_end_mb": rss_end / 2**20,
        "server_rss_peak_mb": rss_peak / 2**20, "server_phases_ms": phases, "others_cpu_share": others,
    }


def report(results: list[dict], generate: dict | None = None) -> str:
    gen = generate["median"] if generate else None
    rows = []
    for r in results:
        lat, ph = r["step_latency_s"], r["server_phases_ms"]["next_token"]
        name = r.get("scenario") or ("clicking" if not r["players"] else "play")
        if name == "play":
            name = f"{r['players']} play"
        target = ""
        if name == "saturate" and gen:
            target = "met" if r["steady_steps_per_s"] >= SATURATION_TARGET * gen else "MISSED"
        elif name == "click" and r["students"] in (30, 60, 80):
            target = "met" if lat["p95"] is not None and lat["p95"] <= TARGET_P95_S and not r["step_errors"] else "MISSED"
        hist = r.get("batch_sizes") or {}
        steady = r.get("steady_steps_per_s")
        cpu = r.get("steady_cpu") or {}
        rows.append([r.get("label", ""), r["students"], name, lat["n"], lat["median"], lat["p95"],
                     (r.get("step_latency_steady_s") or {}).get("p95"), r["step_errors"], r["starts_refused"],
                     r["steps_per_s"], steady, f"{steady / gen:.2f}" if gen and steady else "-",
                     f"{hist['mean_batch_per_step']:.1f}" if hist.get("mean_batch_per_step") else "-",
                     ph["queue_wait"]["median"], ph["fn_call"]["median"], ph["postprocess"]["median"],
                     cpu.get("server_ms_per_step"), cpu.get("load_generator_ms_per_step"),
                     f"{r['others_cpu_share']:.0%}", target])
    out = ""
    if gen:
        runs = "; ".join(", ".join(f"{k} {v:.1f}" for k, v in m.items()) for m in generate["runs"])
        out = f"single-stream generate: {gen:.1f} tokens/s (before; after: {runs})\n\n"
    out += table(["server", "students", "scenario", "steps", "median s", "p95 s", "steady p95 s", "step err", "Starts refused", "steps/s",
                  "steady/s", "x generate", "batch", "queue ms", "handler ms", "post ms", "server CPU ms/step", "load gen CPU ms/step", "others CPU",
                  "target"], rows)
    for r in results:
        hist, cpu = r.get("batch_sizes") or {}, r.get("cpu_per_step_ms")
        if hist.get("passes"):
            out += (f"\n\n{r.get('label', '')} {r['students']} {r.get('scenario')}: passes by batch size (steady window) "
                    + ", ".join(f"{k}: {v}" for k, v in hist["passes"].items())
                    + f"; a step ran in a batch of {hist['mean_batch_per_step']:.1f} on average")
        out += cpu_lines(cpu, (r.get("steady_cpu") or {}).get("by_process"))
        if r.get("profile"):
            out += ("\n  py-spy, share of the server's samples: "
                    + ", ".join(f"{k} {v:.0%}" for k, v in r["profile"]["share"].items()))
        detail = (r.get("profile_detail") or {}).get("ms_per_step")
        if detail:
            out += "\n  py-spy x server CPU, ms per step: " + ", ".join(f"{k} {v:.1f}" for k, v in detail.items())
    errors = [(r["students"], r.get("scenario"), msg, n) for r in results for msg, n in r["errors"].items()]
    if errors:
        out += "\n\nErrors:\n" + "\n".join(f"  {s} students ({p}): {n} x {msg}" for s, p, msg, n in errors)
    return out + ("\n(p95 s: every step of the run; steady p95 s: the steps after every student had a text;"
                  " steps/s: over the whole run; steady/s: after the first seconds, the x generate ratio's;"
                  " batch: the mean batch a step ran in; queue / handler / post: medians of the server's phases for"
                  " /next_token, GRADIO_PROFILING; server / load gen CPU: per step served in the steady window,"
                  " the server process and this one, whose threads are the students)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, nargs="+", default=[10, 30, 60], help="class sizes (default 10 30 60)")
    ap.add_argument("--minutes", type=float, default=3.0, help="length of each scenario (default 3)")
    ap.add_argument("--play-share", type=float, default=1 / 3, help="share pressing Play in the second scenario")
    ap.add_argument("--scenarios", nargs="+", choices=["click", "play", "saturate"], default=["click", "play"],
                    help="click: every 1-3 s; play: a share presses Play; saturate: every one clicks at once again")
    ap.add_argument("--saturate-students", type=int, nargs="*", default=[],
                    help="also run the saturation scenario at these class sizes, first")
    ap.add_argument("--profile", action="store_true",
                    help="sample the server with py-spy in each scenario's steady window (/tmp/tbt-profile-*.txt)")
    ap.add_argument("--no-generate", action="store_true", help="skip measuring single-stream generate")
    ap.add_argument("--generate-runs", type=int, default=3,
                    help="runs of each thread setting in each generate measurement (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="classroom", help="results file name (default classroom)")
    ap.add_argument("--server-roots", nargs="+", default=[None], metavar="DIR",
                    help="A/B: run each scenario on the app of each of these checkouts in turn (default: this one)")
    ap.add_argument("--ahead", action="store_true",
                    help="students clicking every 1-3 s also ask for the next step's chart 0.2 s after each step,"
                         " as a page does (/next_chart): two events per step, not one")
    ap.add_argument("--rounds", type=int, default=1, help="repeat the whole plan (A B A B with two roots and 2)")
    ap.add_argument("--port", type=int, default=None, help="the server's port (default: a free one in 7850-7899)")
    ap.add_argument("--model-process", nargs="+", choices=["off", "on"], default=["off"],
                    help="the server with its model in a process of its own (app.py --model-process): on, off, or "
                         "both (off on: each scenario on both, in turn)")
    ap.add_argument("--engine", action="store_true",
                    help="start vLLM here and have the students use its model, not the app's own")
    args = ap.parse_args(argv)
    if args.engine:
        from model.vllm.session import engine_model_name  # torch and transformers: only when needed

        engine = start_engine()
        model, env = engine_model_name(engine.model), engine_env(engine)
    else:
        engine, model, env = None, LOCAL_MODEL, {}
    try:
        about = {"model": model, "engine_started_s": engine.started_s if engine else None}
        gens = []
        if not args.no_generate:
            print("single-stream generate ...", flush=True)
            gens.append(generate_tok_s(args.generate_runs))
        results = []
        plan = [(n, "saturate") for n in args.saturate_students] + [(n, name) for n in args.students
                                                                       for name in args.scenarios]
        labels = {root: chr(ord("A") + i) for i, root in enumerate(args.server_roots)}
        runs = [(k, n, name, root, mode) for k in range(args.rounds) for n, name in plan for root in args.server_roots
                for mode in args.model_process]
        for k, n, name, root, mode in runs:
            share = args.play_share if name == "play" else 0.0
            label = labels[root] if len(labels) > 1 else ""
            label += {"on": "apart", "off": "here"}[mode] if len(args.model_process) > 1 else ""
            mode_env = {"TBT_MODEL_PROCESS": "1" if mode == "on" else "0"}
            print(f"{label} {n} students, {name} on {model} ({root or 'this checkout'}): {args.minutes:g} min ...",
                  flush=True)
            prof = (f"/tmp/tbt-profile-{args.name}-{label}{k}-{n}-{name}.txt" if args.profile else None)
            results.append({**scenario(n, share, args.minutes, args.seed, model, {**env, **mode_env},
                                       eager=name == "saturate",
                                       profile=prof, root=root, port=args.port,
                                       ahead=args.ahead), "label": label, "round": k})
            save(args.name, {**about, "generate": gens, "scenarios": results, "complete": False})  # kept if stopped
        if gens:
            print("single-stream generate again ...", flush=True)
            gens.append(generate_tok_s(args.generate_runs))
    finally:
        if engine:
            engine.stop()
    # the day's figure: the median of the before and after references (each the faster thread setting's median)
    generate = ({"median": statistics.median(g["median"] for g in gens), "runs": [g["medians"] for g in gens],
                 "before": gens[0], "after": gens[-1]} if gens else None)
    print(f"Model: {model}" + (" (vLLM on this machine's cores: the app's overhead)" if engine else ""))
    print(report(results, generate))
    print(f"wrote {save(args.name, {**about, 'generate': generate, 'scenarios': results, 'complete': True})}")


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
