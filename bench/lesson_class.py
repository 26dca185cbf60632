"""A class pressing a lesson's measured question at once, and a bystander's Next token meanwhile (issue 46).

    .venv/bin/python -m bench.lesson_class                                   # the model in this process
    .venv/bin/python -m bench.lesson_class --model-process on
    .venv/bin/python -m bench.lesson_class --root /tmp/old-checkout --name lesson_class_before
    .venv/bin/python -m bench.lesson_class --button start       # Lesson 11 started by the whole class at once

The app runs as its own server (bench.appserver). STUDENTS pages open Lesson 17 (its first step asks whether a
cached step takes the same time on a long text: measured on this machine, seconds); a bystander on another page
steps Next token every PACE_S on a short prompt and its wait for each answer is timed: first with nothing else
running (the baseline), then while every student presses Reveal at once, until the last reveal is shown. The
target: the bystander's p95 during the reveals within about one pass of its baseline. Also said: each student's
wait for the reveal, and how many different measurements the class was shown (1: made once and shared).
With --button start, the students instead press Start on Lesson 11 at once, whose first step draws a beam search
of the step's text (a whole-text run inside the lesson's step).
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time

from bench import save, table
from bench.appserver import AppServer, OthersWatch
from bench.classroom import percentile
from bench.scheduler import PACE_S, SETTINGS, SHORT, client, start

STUDENTS = 16
LESSON = "interview-myths"  # Lesson 17: its first step is the measured step_time question
BEAMS_LESSON = "beam-search"  # Lesson 11: its first step's chart is a beam search


def bystander(url: str, ready: threading.Event, stop: threading.Event, out: list[float]) -> None:
    """Steps Next token every PACE_S from `ready` until `stop`, on its own page; its waits go to `out` (s)."""
    c = client(url)
    start(c, "smollm2", SHORT["smollm2"])
    ready.set()
    steps = 0
    while not stop.is_set():
        if steps >= 400:
            start(c, "smollm2", SHORT["smollm2"])
            steps = 0
        t0 = time.perf_counter()
        c.predict(**SETTINGS, api_name="/next_token")
        out.append(time.perf_counter() - t0)
        steps += 1
        stop.wait(PACE_S)


def window(url: str, students: int, seconds: float, button: str = "reveal") -> dict:
    """The bystander's waits: for `seconds` with nothing else (students 0), or while `students` press `button`
    (reveal: Lesson 17's first question; start: Lesson 11's Start)."""
    waits, ready, stop = [], threading.Event(), threading.Event()
    pages = [client(url) for _ in range(students)]
    for page in pages:
        if button == "reveal":
            page.predict(LESSON, **SETTINGS, api_name="/lesson_open")
        else:
            start(page, "smollm2", SHORT["smollm2"])
    by = threading.Thread(target=bystander, args=(url, ready, stop, waits))
    by.start()
    ready.wait()
    time.sleep(2.0)  # a few steps of the bystander's before
    before = len(waits)
    reveals, shown, errors = [], [], []

    def reveal(page):
        t0 = time.perf_counter()
        try:
            if button == "reveal":
                out = page.predict(**SETTINGS, api_name="/lesson_reveal")
                shown.append(out[0])  # the reveal's words and numbers (the same text: the same measurement)
            else:
                page.predict(BEAMS_LESSON, **SETTINGS, api_name="/lesson_open")
            reveals.append(time.perf_counter() - t0)
        except Exception as err:  # noqa: BLE001 (reported, never hidden)
            errors.append(str(err)[:200])

    with OthersWatch() as others:
        t0 = time.perf_counter()
        if students:
            threads = [threading.Thread(target=reveal, args=(page,)) for page in pages]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            time.sleep(seconds)
        wall = time.perf_counter() - t0
        stop.set()
        by.join()
    during = waits[before:]
    return {"students": students, "window_s": wall, "steps": len(during), "p50_s": percentile(during, 50),
            "p95_s": percentile(during, 95), "max_s": max(during) if during else None,
            "reveal_p50_s": statistics.median(reveals) if reveals else None,
            "reveal_max_s": max(reveals) if reveals else None, "measurements_shown": len(set(shown)),
            "errors": errors, "others_share": round(others.share, 3)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=STUDENTS)
    ap.add_argument("--seconds", type=float, default=15.0, help="the baseline's window")
    ap.add_argument("--model-process", choices=["on", "off"], default="off")
    ap.add_argument("--root", help="another checkout's app to measure (default: this one)")
    ap.add_argument("--button", choices=["reveal", "start"], default="reveal")
    ap.add_argument("--name", default=None)
    args = ap.parse_args(argv)
    name = args.name or f"lesson_class_{args.button}_{args.model_process}_{time.strftime('%Y%m%d')}"
    with AppServer(root=args.root, startup_timeout_s=600,
                   command=["app.py", "--model", "smollm2", "--model-process", args.model_process]) as srv:
        base = window(srv.url, 0, args.seconds)
        during = window(srv.url, args.students, args.seconds, args.button)
    head = ["while", "steps", "p50 s", "p95 s", "max s", "p95 - base", "answer p50 s", "answer max s",
            "measurements", "errors", "others"]
    rows = [[f"{r['students']} x {args.button}" if r["students"] else "nothing", r["steps"], r["p50_s"], r["p95_s"],
             r["max_s"], r["p95_s"] - base["p95_s"], r["reveal_p50_s"] or 0.0, r["reveal_max_s"] or 0.0,
             r["measurements_shown"], len(r["errors"]), r["others_share"]] for r in (base, during)]
    print(table(head, rows))
    for e in during["errors"][:3]:
        print("error:", e)
    print("saved", save(name, {"root": args.root or ".", "model_process": args.model_process, "button": args.button,
                               "pace_s": PACE_S,
                               "windows": [base, during]}))


if __name__ == "__main__":
    main()
