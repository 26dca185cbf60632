"""How long a teacher's action takes to reach the phones of a room, in real browsers (issue 33, item 8).

The app in its own process (bench.appserver), a teacher's page at 1280 x 800 in headless Chromium with a room open,
and N phone pages (390 x 844) joined with the room's code. Each round the teacher takes a step (Next token), asks
the class to draw (the class as the sampler) and starts a game of Beat the model; each phone's page notes the time
(its own clock: one machine, one clock) at which what the teacher did shows on it, polled every 20 ms in the page.
Prints the seconds from the teacher's click to each phone, median and max per action. No model of its own, no
timing asserted: a figure for docs/performance.md.

    .venv/bin/python -m bench.room_reach [--phones 3] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import statistics

from bench.appserver import AppServer
from bench.layout_audit import CHROMIUM, FLAGS, open_view

# In a phone's page: the time (ms since the epoch) at which `condition` (a JS expression over `base`, the value of
# `before` when the watch began) first holds
WATCH = """([before, condition]) => {
  window.__tbtSeen = null;
  const base = new Function('return (' + before + ');')();
  const test = new Function('base', 'return (' + condition + ');');
  const id = setInterval(() => { let ok = false; try { ok = test(base); } catch (e) {}
    if (ok) { window.__tbtSeen = Date.now(); clearInterval(id); } }, 20);
}"""
VISIBLE = "(!!document.querySelector('{0}') && document.querySelector('{0}').offsetParent !== null)"
DRAW = "document.querySelector('#tbt-cp-draw-mine')"
GAME_TEXT = "(document.querySelector('#tbt-game-text')?.innerText || '')"
ACTIONS = {
    # the teacher's click; on a phone, what it showed before and what shows the action
    "next token": ("#tbt-next", "null", "document.querySelector('#tbt-room-marker')?.dataset.step === '{step}'"),
    # (each phone draws once it is asked: its button is then off until the next round asks again)
    "the class draws": ("#tbt-cp-draw", "null", VISIBLE.format("#tbt-cp-draw-mine") + f" && !{DRAW}.disabled"),
    "beat the model": ("#tbt-game-start", GAME_TEXT,
                       VISIBLE.format("#tbt-game-guess") + f" && {GAME_TEXT} !== base && {GAME_TEXT} !== ''"),
}
GAME = "The capital of France is| Paris, and the capital of Italy is Rome."


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phones", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    took = {name: [] for name in ACTIONS}
    with AppServer() as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        teacher = browser.new_page(viewport={"width": 1280, "height": 800}, locale="en-US")
        teacher.goto(server.url)
        teacher.locator("#tbt-marker").wait_for(timeout=180_000)
        open_view(teacher, "Room")
        teacher.click("#tbt-room-open")
        code = teacher.locator(".tbt-room-code").get_attribute("data-code", timeout=60_000)
        phones = []
        for _ in range(args.phones):
            phone = browser.new_page(viewport={"width": 390, "height": 844}, locale="en-US", is_mobile=True,
                                     has_touch=True)
            phone.goto(f"{server.url}/?room={code}")
            phone.wait_for_function("() => document.querySelector('#tbt-room-marker')?.dataset.step === '0'",
                                    timeout=120_000)
            phones.append(phone)
        teacher.locator(f".tbt-room-count[data-count='{args.phones}']").wait_for(timeout=60_000)
        teacher.locator("#tbt-cp-teacher").click()  # the teacher's panel of the class's play, opened
        step = 0
        for round_ in range(args.rounds):
            for name, (button, before, condition) in ACTIONS.items():
                if name == "next token":
                    step += 1
                for phone in phones:
                    phone.evaluate(WATCH, [before, condition.format(step=step)])
                if name == "beat the model":
                    teacher.locator("#tbt-game-in textarea, #tbt-game-in input").first.fill(GAME)
                clicked = teacher.evaluate("() => Date.now()")
                teacher.click(button)
                for phone in phones:
                    phone.wait_for_function("() => window.__tbtSeen !== null", timeout=120_000)
                    took[name].append((phone.evaluate("() => window.__tbtSeen") - clicked) / 1000)
                if name == "the class draws":
                    for phone in phones:
                        phone.click("#tbt-cp-draw-mine")
                if name == "beat the model":  # a token revealed, and every phone showing it before the next round
                    shown = [phone.evaluate(f"() => {GAME_TEXT}") for phone in phones]
                    teacher.click("#tbt-game-reveal")
                    for phone, text in zip(phones, shown):
                        phone.wait_for_function(f"(text) => {GAME_TEXT} !== text", arg=text, timeout=120_000)
                teacher.wait_for_timeout(1500)
            print(f"round {round_ + 1}: " + ", ".join(f"{n} {statistics.median(v[-args.phones:]):.2f} s"
                                                     for n, v in took.items()), flush=True)
        browser.close()
    summary = {name: {"median_s": round(statistics.median(v), 2), "max_s": round(max(v), 2), "n": len(v)}
               for name, v in took.items()}
    print(json.dumps({"phones": args.phones, "rounds": args.rounds, "from_click_to_phone": summary}, indent=1))


if __name__ == "__main__":
    main()
