"""The class report of a full room (issue 49): 80 seats, each named, 12 questions answered by all, 6 rounds of draws
and a 16-token game guessed by everyone. How long the server takes to make it (the room's records copied, counted,
written as CSV and as the printable page), how large its files are, and how long headless Chromium takes to render
the page and to print it to PDF. No model: the room is filled through its own registry, as the API would.

    nice -n 19 .venv/bin/python -m bench.class_report [--runs 20]

Target: the report of a room of 80 renders in under a second (issue 49; a figure, not a timed test).
"""
from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import torch

from bench import CpuWatch, save, table
from model.classroom.class_draws import DrawRound
from model.classroom.class_play import ClassPlay
from model.classroom.guess_game import Game, GameToken
from model.classroom.report import class_report, report_csv
from model.classroom.rooms import MAX_FOLLOWERS, Question, Rooms
from model.decoding.records import SamplingConfig
from viz.report import report_page

SEATS, QUESTIONS, ROUNDS, GAME_TOKENS = MAX_FOLLOWERS, 12, 6, 16
TARGET_S = 1.0
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


class _Tokens:
    def info(self, token_id):
        return SimpleNamespace(display=f"␣tok{token_id}")


def full_room(seed: int = 0):
    """A room of SEATS named students who answered QUESTIONS questions, drew ROUNDS rounds and played one game."""
    rng = random.Random(seed)
    now = [0.0]
    rooms = Rooms(clock=lambda: now[0], follower_stale_s=3600.0)  # (each page would tick: none lapses here)
    play = ClassPlay(rooms)
    code = rooms.open("teacher", "10.0.0.1")
    students = [f"student-{n}" for n in range(SEATS)]
    for n, student in enumerate(students):
        now[0] = n * 3.0  # a class arriving over four minutes
        rooms.wall("teacher")  # the teacher's wall ticks meanwhile (it keeps the room open)
        rooms.join(student, code, None, f"Student {n + 1}")
    choices = {lang: [(f"␣choice{k}", f" choice{k}") for k in range(4)] for lang in ("en", "zh")}
    for q in range(QUESTIONS):
        rooms.ask("teacher", Question(f"lesson#{q}", {"en": f"**Question {q + 1}?**", "zh": f"**第 {q + 1} 题？**"},
                                      choices))
        for student in students:
            rooms.guess(student, f" choice{rng.choice([0, 0, 1, 2, 3])}")
        rooms.reveal("teacher", lambda value: {"right": value == " choice0"})
    logits = torch.randn(2000, generator=torch.Generator().manual_seed(seed))
    for r in range(ROUNDS):
        play.open_round("teacher", DrawRound.open(logits, [1, 2, 3], SamplingConfig(temperature=0.5 + r / 4)),
                        _Tokens())
        for student in students:
            play.draw(student, rng.random())
    tokens = [GameToken(k, f" w{k}", f"␣w{k}", 0.3, 1.7) for k in range(GAME_TOKENS)]
    texts = ["Open"] + [" ".join(["Open"] + [f"w{i}" for i in range(k + 1)]) for k in range(GAME_TOKENS)]
    play.start_game("teacher", Game("Open", [0] * (GAME_TOKENS + 1), 1, tokens, texts))
    for k in range(GAME_TOKENS):
        for student in students:
            play.guess(student, rng.choice([f"w{k}", "the", "a"]))
        play.reveal("teacher")
    return rooms, play


def make(rooms, play, lang: str = "en"):
    """What the Room tab's button does (ui/class_report.py), without the files' folder: the CSV and the page."""
    room = rooms.report("teacher")
    rounds, games = play.results("teacher")
    report = class_report(room, rounds, games)
    return report_csv(report, lang, "(other)"), report_page(report, lang, "now")


def browser_times(page_html: str, runs: int) -> dict:
    """Headless Chromium: load and lay out the page (to its load event, then a frame), and print it to PDF."""
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="tbt-bench-report-"))
    path = folder / "report.html"
    path.write_text(page_html, encoding="utf-8")
    render, pdf = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 800})
        for _ in range(runs):
            t0 = time.perf_counter()
            tab.goto(path.as_uri())
            tab.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
            render.append(time.perf_counter() - t0)
        for _ in range(max(3, runs // 4)):
            t0 = time.perf_counter()
            data = tab.pdf(format="A4")
            pdf.append(time.perf_counter() - t0)
        browser.close()
    shutil.rmtree(folder, ignore_errors=True)
    return {"render_s": statistics.median(render), "render_max_s": max(render), "pdf_s": statistics.median(pdf),
            "pdf_bytes": len(data)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args(argv)
    rooms, play = full_room()
    made = []
    with CpuWatch() as watch:
        for _ in range(args.runs):
            t0 = time.perf_counter()
            csv_text, page = make(rooms, play)
            made.append(time.perf_counter() - t0)
    seen = browser_times(page, args.runs)
    results = {"seats": SEATS, "questions": QUESTIONS, "rounds": ROUNDS, "game_tokens": GAME_TOKENS,
               "make_s": statistics.median(made), "make_max_s": max(made), "csv_bytes": len(csv_text.encode()),
               "page_bytes": len(page.encode()), "csv_rows": csv_text.count("\n") - 1, **seen,
               "other_cpu_share": watch.other_share, "target_s": TARGET_S}
    rows = [["server: make (records, CSV, page)", results["make_s"], results["make_max_s"]],
            ["Chromium: load and lay out", results["render_s"], results["render_max_s"]],
            ["Chromium: print to PDF (A4)", results["pdf_s"], ""]]
    print(table(["a room of 80's report", "median s", "max s"], rows))
    print(f"CSV {results['csv_bytes']:,} B in {results['csv_rows']:,} rows; page {results['page_bytes']:,} B; "
          f"PDF {results['pdf_bytes']:,} B; other processes took {watch.other_share:.0%} of the CPU")
    total = results["make_s"] + results["render_s"]
    print(f"made and rendered in {total:.3f} s (target {TARGET_S} s): {'met' if total < TARGET_S else 'NOT met'}")
    print(f"wrote {save('class_report', results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
