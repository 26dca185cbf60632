"""The server's memory through a class: N students open a session each, step it, and close their tab.

The app runs in its own process (bench.appserver); each student is a gradio_client.Client, whose heartbeat
is what a page keeps open: closing it ends the session (unload), which frees its records and cache. A first
class of 5 warms the server up (its first batched passes, thread arenas: about 0.5 GB once, measured here);
then the server's RSS is read before a class of N, with all of them open, and once they have closed.
Target: back near the start (Gradio keeps a little state per session until its cache clean-up).

    .venv/bin/python -m bench.server_memory [--students 30] [--steps 10]
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


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args(argv)
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
