"""The server's memory through a class: N students open a session each, step it, and close their tab.

The app runs in its own process (bench.appserver); each student is a gradio_client.Client, whose heartbeat
is what a page keeps open: closing it ends the session (unload), which frees its records and cache. A first
class of 5 warms the server up (its first batched passes, thread arenas: about 0.5 GB once, measured here);
then the server's RSS is read before a class of N, with all of them open, and once they have closed.
Target: back near the start (Gradio keeps a little state per session until its cache clean-up).

`--split` reads instead what the server holds by process, with the models' cores in the page's process and in
processes of their own (app.py --model-process off / on): after a Start and three steps on each model (an English
page on SmolLM2, a Chinese one on Gemma 3 270M), each process's resident memory (RSS) and its proportional share
(PSS: pages shared between processes counted once, split between them). `--root` reads another checkout's app.

    .venv/bin/python -m bench.server_memory [--students 30] [--steps 10]
    .venv/bin/python -m bench.server_memory --split [--root /tmp/old-checkout]
"""
from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import psutil
from gradio_client import Client

from bench import save, table
from bench.appserver import AppServer

SETTINGS = dict(temperature=0.8, top_k=0, top_p=0.9, min_p=0.0, repetition_penalty=1.0, order="transformers", seed=3,
                lang="en", layer=0, head="mean")
MB = 1 << 20


def student(url: str, n: int, steps: int) -> Client:
    client = Client(url, verbose=False, analytics_enabled=False)
    client.predict(f"Student {n} asks what a token is, and", "raw", "smollm2", **SETTINGS, api_name="/start")
    for _ in range(steps):
        client.predict(**SETTINGS, api_name="/next_token")
    return client


def by_process(pid: int) -> list[dict]:
    """The server and its children: each one's name, RSS and PSS (MiB)."""
    root = psutil.Process(pid)
    out = []
    for proc in [root, *root.children(recursive=True)]:
        info = proc.memory_full_info()
        name = "web process" if proc.pid == pid else f"core process {proc.pid}"
        out.append({"pid": proc.pid, "name": name, "rss_mib": info.rss / MB, "pss_mib": info.pss / MB})
    return out


def split(root: str | None, mode: str) -> dict:
    """What the app holds by process, its cores in the page's process (off) or their own (on), after a Start and
    three steps on each model."""
    env = {"TBT_MODEL_PROCESS": "1" if mode == "on" else "0"}
    with AppServer(root=root, env=env, startup_timeout_s=600) as server:
        for lang, model, prompt in (("en", "smollm2", "The capital of France is"), ("zh", "gemma3-270m", "今天天气")):
            client = Client(server.url, verbose=False, analytics_enabled=False)
            client.predict(prompt, "raw", model, **{**SETTINGS, "lang": lang}, api_name="/start")
            for _ in range(3):
                client.predict(**{**SETTINGS, "lang": lang}, api_name="/next_token")
        time.sleep(5)
        rows = by_process(server.pid)
    total = {"rss_mib": sum(r["rss_mib"] for r in rows), "pss_mib": sum(r["pss_mib"] for r in rows)}
    return {"model_process": mode, "root": root or ".", "processes": rows, **total}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--split", action="store_true", help="memory by process, the cores in the page's process and apart")
    ap.add_argument("--root", default=None, help="another checkout's app (with --split)")
    args = ap.parse_args(argv)
    if args.split:
        runs = [split(args.root, mode) for mode in ("off", "on")]
        rows = [[r["model_process"], p["name"][:40], f"{p['rss_mib']:.0f}", f"{p['pss_mib']:.0f}"]
                for r in runs for p in r["processes"]]
        rows += [[r["model_process"], "all", f"{r['rss_mib']:.0f}", f"{r['pss_mib']:.0f}"] for r in runs]
        print(table(["cores apart", "process", "RSS MiB", "PSS MiB"], rows))
        save("server_memory_split" + ("_before" if args.root else ""), {"runs": runs})  # (an A/B keeps both)
        return {"runs": runs}
    with AppServer() as server:
        proc = psutil.Process(server.pid)
        warm = [student(server.url, 1000 + n, args.steps) for n in range(5)]
        for client in warm:
            client.close()
        time.sleep(30)
        before = proc.memory_info().rss
        with ThreadPoolExecutor(max_workers=8) as pool:
            clients = list(pool.map(lambda n: student(server.url, n, args.steps), range(args.students)))
        open_rss = proc.memory_info().rss
        for client in clients:
            client.close()  # its heartbeat ends within its next beat (15 s): the server's unload frees the session
        series = []
        for _ in range(12):  # a minute, every 5 s
            time.sleep(5)
            series.append(proc.memory_info().rss / MB)
        after = proc.memory_info().rss
    results = {"students": args.students, "steps": args.steps, "rss_before_mb": before / MB,
               "rss_open_mb": open_rss / MB, "rss_after_mb": after / MB,
               "freed_share": (open_rss - after) / max(1, open_rss - before), "rss_after_close_mb_every_5s": series}
    print(table(["students", "steps", "RSS before", "all open", "after closing", "freed"],
                [[args.students, args.steps, f"{before / MB:.0f} MB", f"{open_rss / MB:.0f} MB", f"{after / MB:.0f} MB",
                  f"{results['freed_share']:.0%}"]]))
    print("after closing, every 5 s:", " ".join(f"{x:.0f}" for x in series), "MB")
    save("server_memory", results)
    return results


if __name__ == "__main__":
    main()
