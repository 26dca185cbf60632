"""How long a class waits after its models' processes die: kill -9 of every core process of a class's server
(app.py --model-process on, both models), then an English page (SmolLM2) and a Chinese one (Gemma 3 270M) each press
Next token until a step comes back (a page told "click again" clicks again at once).

    .venv/bin/python -m bench.recovery [--rounds 3] [--root /tmp/old-checkout]

The target (issue 46, item 6): a student waiting under 10 s on a quiet machine. Results: bench/results/recovery.json.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import threading
import time

import psutil
from gradio_client import Client

from bench import save, table
from bench.appserver import AppServer, OthersWatch

SETTINGS = dict(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0, order="transformers", seed=0,
                layer=0, head="mean")
PAGES = (("en", "smollm2", "The capital of France is"), ("zh", "gemma3-270m", "今天天气"))


def page(url: str, lang: str, model: str, prompt: str) -> Client:
    client = Client(url, verbose=False, analytics_enabled=False)
    client.predict(prompt, "raw", model, **SETTINGS, lang=lang, api_name="/start")
    client.predict(**SETTINGS, lang=lang, api_name="/next_token")
    return client


def until_a_step(client: Client, lang: str, since: float, out: dict) -> None:
    """Next token until one comes back: the seconds since the kill, and how many clicks were told to try again."""
    told = 0
    while True:
        try:
            client.predict(**SETTINGS, lang=lang, api_name="/next_token")
            break
        except Exception:  # noqa: BLE001 (the page's message: click again)
            told += 1
            if time.monotonic() - since > 300:
                raise
    out[lang] = (time.monotonic() - since, told)


def one_round(server: AppServer, clients: dict) -> dict:
    cores = psutil.Process(server.pid).children()
    for core in cores:
        os.kill(core.pid, signal.SIGKILL)
    psutil.wait_procs(cores, timeout=10)
    since, out = time.monotonic(), {}
    threads = [threading.Thread(target=until_a_step, args=(clients[lang], lang, since, out)) for lang in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--root", default=None, help="another checkout's app")
    ap.add_argument("--name", default="recovery")
    args = ap.parse_args(argv)
    rounds = []
    with OthersWatch() as others, AppServer(root=args.root, env={"TBT_MODEL_PROCESS": "1"},
                                            startup_timeout_s=600) as server:
        clients = {lang: page(server.url, lang, model, prompt) for lang, model, prompt in PAGES}
        for n in range(args.rounds):
            rounds.append(one_round(server, clients))
            print(table(["round", "page", "stepped again after s", "told to click again"],
                        [[n + 1, lang, f"{s:.1f}", told] for lang, (s, told) in rounds[-1].items()]), flush=True)
    median = {lang: statistics.median(r[lang][0] for r in rounds) for lang, _, _ in PAGES}
    print(f"median: " + ", ".join(f"{lang} {s:.1f} s" for lang, s in median.items())
          + f"; others took {others.share:.2f} of the machine")
    save(args.name, {"root": args.root or ".", "rounds": [{k: list(v) for k, v in r.items()} for r in rounds],
                     "median_s": median, "others_share": others.share})


if __name__ == "__main__":
    main()
