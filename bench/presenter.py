"""What the presenter feels, in headless Chromium: Next token until the step is on screen, the temperature box
until the chart is redrawn, Play's tokens per second, and the bytes each step sends to the browser.

    .venv/bin/python -m bench.presenter [--steps 50] [--moves 30] [--pause 1]

The app runs as its own server process. Every time is taken inside the page (performance.now() at the
click, then requestAnimationFrame until the page shows the result), so Python and Playwright overhead do
not count; a frame is ~16.7 ms, the resolution of these figures. A chart is on screen when the page's script
says it shows it ('tbt-shown', assets/js/charts.js): drawn by Plotly.react, or drawn ahead and now shown.
Next token is timed clicked back to back, and with a pause between a step shown and the next click (a
presenter reading it), in which the page draws the next step's chart ahead. A temperature move is done when
the chart shows that temperature: its page of the flipbook (drawn ahead from the bundle of every
temperature, after the first move at a step), or drawn into the plot. A Play step counts once the marker
shows it and its candidate chart is shown; the Play run also splits the CPU of a step between the server
(and its decode thread) and the browser. Bytes are counted with the DevTools protocol
(Network.dataReceived: bytes on the wire, headers excluded; Network.eventSourceMessageReceived: the JSON of
each server-sent event).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from collections import defaultdict

from bench import save, table, wait_for_quiet
from bench.appserver import AppServer, OthersWatch

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
TARGETS_MS = {"short": 150, "long": 250, "temperature": 60}
TARGET_PLAY_TOKENS_PER_S = 8
SHORT_PROMPT = "Once upon a time, in a small village,"  # 11 tokens: + 50 steps stays under 64
LONG_PROMPT = (
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined movable "
    "metal type, oil-based ink and a wooden press adapted from those used for wine. Within fifty years, printers "
    "were working in more than two hundred cities across Europe, and the price of books fell so far that ordinary "
    "merchants could own them. Scribes who had copied manuscripts by hand for generations found that a single "
    "workshop could now produce in a week what a monastery had produced in a year. The first great books were "
    "Bibles, grammars and calendars, but pamphlets, ballads and news sheets soon followed, and with them a new kind "
    "of reader who bought cheap print at fairs and read it aloud to friends. Universities gained standard editions "
    "of classical texts, so that a scholar in Padua and a scholar in Paris could discuss the same page, line by "
    "line, for the first time. Maps, tables of the stars and drawings of plants and the human body could be copied "
    "exactly, and errors could be corrected in the next edition instead of multiplying with every copy. Governments "
    "and churches quickly noticed the power of the press: they licensed printers, censored books and burned those "
    "they disliked, while authors learned to publish anonymously or abroad. Over the next three centuries, "
    "newspapers, novels, encyclopedias and scientific journals grew out of the same simple machine, and literacy "
    "spread from clerks and clergy to craftsmen, farmers and their children. Historians still argue about what "
    "followed, but most agree that the printing press changed not only how people read, but also what they "
    "believed could be known, and who was allowed to know it. In the nineteenth century, steam-driven presses and "
    "cheap paper made from wood pulp brought"
)  # ~340 tokens: + 50 steps is about 390, near the 448-token prompt cap and the 512-token session cap

# In-page helpers. The page's script (assets/js/charts.js) fires 'tbt-shown' on a plot each time it shows a new chart:
# once Plotly.react has drawn it, or when it shows a chart drawn ahead (the next step's, or a temperature's page
# of the flipbook). `shownAfter(id, t0, t)` is the first such event since t0 (for temperature t, if given), or
# undefined; its `how` is "drawn" (at this event) or "ready" (drawn ahead).
JS_HELPERS = """
  if (!window.__tbtShown) {
    window.__tbtShown = [];
    document.addEventListener('tbt-shown', (e) => window.__tbtShown.push({id: e.target.id, ...e.detail, at: performance.now()}));
  }
  const shownAfter = (id, t0, t) => window.__tbtShown.find((s) => s.id === id && s.at >= t0 && (t === undefined || s.t === t));
  const dataMs = (t0) => {  // click -> last byte of this event's response stream (null if not complete yet)
    const ends = performance.getEntriesByType('resource')
      .filter((e) => e.name.includes('/queue/data') && e.startTime >= t0 && e.responseEnd > 0).map((e) => e.responseEnd);
    return ends.length ? Math.max(...ends) - t0 : null;
  };
"""

# Click Next token; resolve at the first frame where the marker shows a new step AND the chart shows it.
JS_TIME_STEP = """async ([buttonId, chartId, timeoutMs]) => {""" + JS_HELPERS + """
  const marker = () => document.querySelector('#tbt-marker');
  const step0 = marker().dataset.step;
  performance.clearResourceTimings();  // the buffer holds 250 entries; each step adds two
  const t0 = performance.now();
  document.getElementById(buttonId).click();
  return await new Promise((resolve) => {
    let markerMs = null;
    const poll = () => {
      const now = performance.now(), m = marker();
      if (markerMs === null && m && m.dataset.step !== step0) markerMs = now - t0;
      const shown = markerMs !== null && shownAfter(chartId, t0);
      if (shown)
        return requestAnimationFrame(() => resolve({ms: now - t0, marker_ms: markerMs, data_ms: dataMs(t0), how: shown.how,
                                                    step: Number(m.dataset.step), ended: m.dataset.ended === '1'}));
      if (now - t0 > timeoutMs) return resolve({ms: null, marker_ms: markerMs, timeout: true});
      requestAnimationFrame(poll);
    };
    requestAnimationFrame(poll);
  });
}"""

# Type a temperature into the slider's number box (an `input` event, as typing does); resolve when the candidate
# chart shows it: drawn now, or its page of the flipbook drawn ahead (assets/js/charts.js). `how` says which.
JS_TIME_TEMPERATURE = """async ([value, timeoutMs]) => {""" + JS_HELPERS + """
  const box = document.querySelector("#tbt-temperature input[type='number']");
  const want = Number(value).toFixed(2);
  performance.clearResourceTimings();
  const setValue = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
  const t0 = performance.now();
  setValue.call(box, String(value));
  box.dispatchEvent(new Event('input', {bubbles: true}));
  return await new Promise((resolve) => {
    const poll = () => {
      const now = performance.now();
      const shown = shownAfter('tbt-fig-candidates', t0, want);
      if (shown) return requestAnimationFrame(() => resolve({ms: now - t0, data_ms: dataMs(t0), how: shown.how}));
      if (now - t0 > timeoutMs) return resolve({ms: null, timeout: true});
      requestAnimationFrame(poll);
    };
    requestAnimationFrame(poll);
  });
}"""

# Click Play; a step counts as shown once the marker shows it AND the candidate chart has been drawn for its
# position (the chart is drawn in a task of its own, so it may lag the marker; a step whose chart was never
# drawn, because the next one arrived first, is not counted). Until `n` steps, the end of text, or time out.
JS_TIME_PLAY = """async ([n, timeoutMs]) => {
  const marker = () => document.querySelector('#tbt-marker');
  const caption = document.getElementById('tbt-cap-candidates');  // the chart's title, drawn with it (assets/js/charts.js)
  const position = () => { const m = /position (\\d+)/.exec(caption.textContent || '');
                           return m ? Number(m[1]) : null; };
  const step0 = Number(marker().dataset.step), position0 = position();
  const markerAt = new Map(), chartAt = new Map();
  const t0 = performance.now();
  document.addEventListener('tbt-shown', (e) => {  // the candidate plot shows a new chart (assets/js/charts.js)
    const p = position();
    if (e.target.id === 'tbt-fig-candidates' && p !== null && !chartAt.has(p)) chartAt.set(p, performance.now() - t0);
  });
  document.getElementById('tbt-play').click();
  const shown = () => [...markerAt].filter(([k]) => chartAt.has(position0 + k))
                                   .map(([k, ms]) => Math.max(ms, chartAt.get(position0 + k))).sort((a, b) => a - b);
  return await new Promise((resolve) => {
    const poll = () => {
      const now = performance.now(), m = marker();
      const k = m ? Number(m.dataset.step) - step0 : 0;
      if (k > 0 && !markerAt.has(k)) markerAt.set(k, now - t0);
      const ended = m && m.dataset.ended === '1';
      const done = shown().length >= n || (ended && chartAt.has(position0 + k)) || now - t0 > timeoutMs;
      if (done) return resolve({shown_ms: shown(), steps: k, ended, timeout: now - t0 > timeoutMs,
                                markers: markerAt.size, charts: chartAt.size});
      requestAnimationFrame(poll);
    };
    requestAnimationFrame(poll);
  });
}"""


class NetworkMeter:
    """Bytes the browser receives per request, from the DevTools protocol.

    Each event (a step, a redraw) is its own POST /queue/join plus its own GET /queue/data event stream, so
    `mark()` after an event returns the requests sent during it, and `wire(ids)` their bytes once they have
    arrived (DevTools reports a stream's chunks with some delay, so sizes are read at the end, not per step).
    """

    def __init__(self, page):
        self.requests: dict[str, dict] = {}  # request id -> url, bytes received on the wire / decoded, bytes sent
        self._seen = 0
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.on("Network.requestWillBeSent", self._sent)
        self.cdp.on("Network.dataReceived", self._data)
        self.cdp.send("Network.enable")

    def _sent(self, e):
        self.requests.setdefault(e["requestId"], {"url": e["request"]["url"], "wire": 0, "decoded": 0,
                                                   "sent": len(e["request"].get("postData", "").encode())})

    def _data(self, e):
        r = self.requests.setdefault(e["requestId"], {"url": "", "wire": 0, "decoded": 0, "sent": 0})
        r["wire"] += e.get("encodedDataLength", 0)
        r["decoded"] += e.get("dataLength", 0)

    def mark(self) -> list[str]:
        """The ids of the requests sent since the last mark."""
        ids = list(self.requests)[self._seen :]
        self._seen = len(self.requests)
        return ids

    def received(self, ids: list[str]) -> tuple[int, int]:
        """(body bytes, bytes on the wire) received for these requests; headers excluded."""
        return (sum(self.requests[i]["decoded"] for i in ids), sum(self.requests[i]["wire"] for i in ids))

    def uploaded(self, ids: list[str]) -> int:
        """Bytes of the request bodies the browser sent for these requests."""
        return sum(self.requests[i]["sent"] for i in ids)


def summary(values: list[float]) -> dict:
    """Median, p95 (nearest rank), mean, min, max and count of a list of milliseconds (or bytes)."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return {"n": 0, "median": None, "p95": None, "mean": None, "min": None, "max": None}
    return {"n": len(v), "median": statistics.median(v), "p95": v[min(len(v) - 1, max(0, round(0.95 * len(v)) - 1))],
            "mean": statistics.fmean(v), "min": v[0], "max": v[-1]}


def wait_rev_change(page, rev: str, timeout_ms: int = 120_000) -> None:
    page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.rev !== '{rev}'", timeout=timeout_ms)


def restart(page, prompt: str) -> int:
    """Type `prompt`, press Start, wait for the page to show step 0; return the number of prompt tokens."""
    page.locator("#tbt-prompt textarea").fill(prompt)
    rev = page.locator("#tbt-marker").get_attribute("data-rev")
    page.locator("#tbt-start").click()
    wait_rev_change(page, rev)
    page.locator("#tbt-plot-candidates .js-plotly-plot .main-svg").first.wait_for(timeout=60_000)
    page.wait_for_timeout(300)  # let the first draw and its resize settle
    text = page.locator("#tbt-marker").inner_text()  # "Step 0 · 11 of 512 tokens · ..."
    return int(text.split("·")[1].split()[0])


def reset_if_ended(page, result: dict) -> bool:
    """The model ended the text: press Reset (back to the prompt) so Next token works again."""
    if not result.get("ended"):
        return False
    rev = page.locator("#tbt-marker").get_attribute("data-rev")
    page.locator("#tbt-reset").click()
    wait_rev_change(page, rev)
    page.wait_for_timeout(300)
    return True


def time_steps(page, meter: NetworkMeter, server: AppServer, steps: int, pause_s: float, warmup: int = 3) -> dict:
    """Next token `steps` times (after `warmup` uncounted ones), `pause_s` after each step is shown: latency to
    the page showing it, bytes per step."""
    latencies, marker_ms, data_ms, requests, resets, tokens, hows = [], [], [], [], 0, [], []
    for i in range(warmup + steps):
        if i == warmup:
            server.profiling_clear()
        page.wait_for_timeout(pause_s * 1000)
        meter.mark()
        r = page.evaluate(JS_TIME_STEP, ["tbt-next", "tbt-fig-candidates", 60_000])
        if r.get("timeout"):
            raise RuntimeError(f"Step {i} did not show within 60 s: {r}")
        if i >= warmup:
            latencies.append(r["ms"])
            hows.append(r["how"])
            marker_ms.append(r["marker_ms"])
            data_ms.append(r["data_ms"])
            requests.append(meter.mark())
        text = page.locator("#tbt-marker").inner_text()
        tokens.append(int(text.split("·")[1].split()[0]))
        if reset_if_ended(page, r):
            resets += 1
            meter.mark()
    traces = server.profiling_traces("next_token")
    page.wait_for_timeout(1000)  # the last DevTools data events
    body = [meter.received(ids)[0] for ids in requests]
    wire = [meter.received(ids)[1] for ids in requests]
    return {"latency_ms": summary(latencies), "marker_ms": summary(marker_ms), **split(latencies, data_ms),
            **server_phases(traces), **trend(latencies),
            "body_bytes_per_step": summary(body), "wire_bytes_per_step": summary(wire),
            "upload_bytes_per_step": summary([meter.uploaded(ids) for ids in requests]),
            "tokens_in_session": {"min": min(tokens), "max": max(tokens)}, "resets_after_end_of_text": resets,
            "steps_by_how": by_how(latencies, hows),
            "raw_latency_ms": latencies}


def by_how(latencies: list[float], hows: list[str]) -> dict:
    """The latencies of charts drawn at the event and of charts drawn ahead (and only shown), apart."""
    return {how: summary([ms for ms, h in zip(latencies, hows) if h == how]) for how in sorted(set(hows))}


def split(latencies: list[float], data_ms: list[float | None]) -> dict:
    """Click -> last byte of the response (server + network), and response -> chart drawn (the browser)."""
    pairs = [(ms, d) for ms, d in zip(latencies, data_ms) if d is not None]
    return {"response_ms": summary([d for _, d in pairs]), "browser_render_ms": summary([ms - d for ms, d in pairs])}


def trend(latencies: list[float], n: int = 10) -> dict:
    """Median of the first n and of the last n: does the page get slower the longer it is used?"""
    return {"first_10_median_ms": statistics.median(latencies[:n]), "last_10_median_ms": statistics.median(latencies[-n:])}


def server_phases(traces: list[dict]) -> dict:
    """Median / p95 of Gradio's per-request phases (GRADIO_PROFILING=1): queue wait, handler, postprocess, total."""
    return {f"server_{phase}_ms": summary([t[f"{phase}_ms"] for t in traces])
            for phase in ("queue_wait", "preprocess", "fn_call", "postprocess", "total")}


def time_temperature(page, meter: NetworkMeter, server: AppServer, moves: int, warmup: int = 2) -> dict:
    """Type `moves` temperatures into the box: latency until the candidate chart is redrawn, bytes per move."""
    values = [0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 0.2, 0.6, 1.0]
    latencies, data_ms, requests, hows = [], [], [], []
    for i in range(warmup + moves):
        if i == warmup:
            server.profiling_clear()
        meter.mark()
        r = page.evaluate(JS_TIME_TEMPERATURE, [values[i % len(values)], 60_000])
        if r.get("timeout"):
            raise RuntimeError(f"Temperature move {i} was not redrawn within 60 s")
        if i >= warmup:
            latencies.append(r["ms"])
            data_ms.append(r["data_ms"])
            hows.append(r["how"])
            requests.append(meter.mark())
        page.wait_for_timeout(100)  # a teacher's moves are apart; a move during the last one's request would merge
    traces = [t for t in server.profiling_traces() if t["fn_name"] != "next_token"]
    page.evaluate(JS_TIME_TEMPERATURE, [1.0, 60_000])  # back to the default for the steps
    page.wait_for_timeout(1000)
    meter.mark()
    body = [meter.received(ids)[0] for ids in requests]
    return {"latency_ms": summary(latencies), **split(latencies, data_ms), **server_phases(traces),
            "body_bytes_per_move": summary(body),
            # 'ready': its chart was drawn ahead (a page of the flipbook, or the plot already held it); 'drawn': at the move
            "moves_by_how": by_how(latencies, hows),
            "raw_latency_ms": latencies, "raw_how": hows}


def time_play(page, n: int) -> dict:
    """Set 'Tokens to play' to n, press Play, and time each step as it appears."""
    box = page.locator("#tbt-play-steps input[type='number']")
    box.fill(str(n))
    box.press("Tab")
    page.wait_for_timeout(300)
    r = page.evaluate(JS_TIME_PLAY, [n, 120_000])
    shown = r["shown_ms"]
    page.wait_for_timeout(500)
    out = {"steps_shown": len(shown), "steps_taken": r["steps"], "ended_early": r["ended"], "timeout": r["timeout"],
           "seconds": shown[-1] / 1000 if shown else None}
    out["tokens_per_s"] = len(shown) / (shown[-1] / 1000) if shown else 0.0  # from the click to the last step shown
    out["tokens_per_s_steady"] = (len(shown) - 1) / ((shown[-1] - shown[0]) / 1000) if len(shown) > 1 else 0.0
    gaps = [b - a for a, b in zip(shown, shown[1:])]
    out["gap_ms"] = summary(gaps)
    return out


class PlayCpu:
    """CPU time during Play, split: the server (and its busiest thread, the batcher's decode worker) and the
    rest of this benchmark's processes (the browser, mostly). Two cores give 2 x the wall time to share."""

    def __init__(self, server: AppServer):
        import psutil

        self.server = psutil.Process(server.pid)

    def _now(self):
        from bench.appserver import _tree_cpu_s

        t = self.server.cpu_times()
        threads = {th.id: th.user_time + th.system_time for th in self.server.threads()}
        return time.perf_counter(), _tree_cpu_s(), t.user + t.system, threads

    def __enter__(self):
        self._start = self._now()
        return self

    def __exit__(self, *exc):
        self._end = self._now()
        return False

    def per_step(self, steps: int) -> dict:
        (w0, tree0, srv0, th0), (w1, tree1, srv1, th1) = self._start, self._end
        busiest = max((th1[k] - th0.get(k, 0.0) for k in th1), default=0.0)
        ms = lambda seconds: round(seconds * 1000 / max(steps, 1), 1)  # noqa: E731
        return {"wall": ms(w1 - w0), "server": ms(srv1 - srv0), "server_decode_thread": ms(busiest),
                "browser_and_bench": ms((tree1 - tree0) - (srv1 - srv0))}


def open_page(browser, url: str):
    """A fresh page (its own session, nothing stored by earlier runs), with the app started on load."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    page = context.new_page()
    page.problems = []
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    page.goto(url)
    page.locator("#tbt-marker").wait_for(timeout=120_000)  # the page starts a session on load
    return page


def run(steps: int, moves: int, play_n: int, pause_s: float, server_env: dict[str, str], root: str | None = None,
        quiet_wait_s: float = 120, port: int | None = None) -> dict:
    """Each text on a fresh page: the page keeps state between steps, so texts must not share one. Next token
    is timed twice per text: clicked back to back, and with `pause_s` between a step shown and the next click
    (a presenter reading the step; the page draws the next step's chart meanwhile)."""
    from playwright.sync_api import sync_playwright

    quiet = wait_for_quiet(max_share=0.15, timeout_s=quiet_wait_s)
    results = {"server_root": root or "this checkout", "steps": steps, "temperature_moves": moves, "play_tokens": play_n, "pause_s": pause_s, "server_env": server_env,
               "other_cpu_share_before": quiet, "page_errors": []}
    with AppServer(env={"GRADIO_PROFILING": "1", **server_env}, root=root, port=port) as server, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            for name, prompt in (("short", SHORT_PROMPT), ("long", LONG_PROMPT)):
                page = open_page(browser, server.url)
                meter = NetworkMeter(page)
                for scenario, pause in ((f"next_token_{name}_rapid", 0.0), (f"next_token_{name}", pause_s)):
                    prompt_tokens = restart(page, prompt)  # the same text again: a short text stays under 64 tokens
                    with OthersWatch() as watch:
                        r = time_steps(page, meter, server, steps, pause)
                    r.update(prompt_tokens=prompt_tokens, other_cpu_share=watch.share, pause_s=pause)
                    results[scenario] = r
                with OthersWatch() as watch:
                    t = time_temperature(page, meter, server, moves)
                t.update(other_cpu_share=watch.share, tokens_in_session=r["tokens_in_session"]["max"])
                results[f"temperature_{name}"] = t
                results["page_errors"] += page.problems
                page.context.close()
            page = open_page(browser, server.url)
            restart(page, SHORT_PROMPT)
            with OthersWatch() as watch, PlayCpu(server) as cpu:
                results["play"] = time_play(page, play_n)
            results["play"].update(other_cpu_share=watch.share, cpu_ms_per_step=cpu.per_step(results["play"]["steps_shown"]))
            results["page_errors"] += page.problems
        finally:
            browser.close()
    return results


def report(results: dict) -> str:
    """The table: latency to the page showing the result, split into response (server + network) and browser."""
    rows = []
    pause = f"{results['pause_s']:g} s apart"
    for key, label, target in [("next_token_short", f"Next token, short text, {pause}", TARGETS_MS["short"]),
                               ("next_token_short_rapid", "Next token, short text, back to back", TARGETS_MS["short"]),
                               ("next_token_long", f"Next token, long text, {pause}", TARGETS_MS["long"]),
                               ("next_token_long_rapid", "Next token, long text, back to back", TARGETS_MS["long"]),
                               ("temperature_short", "Temperature, short text", TARGETS_MS["temperature"]),
                               ("temperature_long", "Temperature, long text", TARGETS_MS["temperature"])]:
        r = results[key]
        lat = r["latency_ms"]
        size = r.get("body_bytes_per_step") or r.get("body_bytes_per_move")
        tokens = r["tokens_in_session"]
        tokens = f"{tokens['min']}-{tokens['max']}" if isinstance(tokens, dict) else str(tokens)
        drift = f"{r['first_10_median_ms']:.0f} -> {r['last_10_median_ms']:.0f}" if "first_10_median_ms" in r else ""
        rows.append([label, tokens, lat["n"], lat["median"], lat["p95"], r["server_total_ms"]["median"],
                     r["response_ms"]["median"], r["browser_render_ms"]["median"], drift, f"{size['mean']:,.0f}",
                     f"<= {target}", "met" if lat["median"] <= target else "MISSED", f"{r['other_cpu_share']:.0%}"])
    play = results["play"]
    cpu = play.get("cpu_ms_per_step")
    rows.append(["Play: tokens/s (from click; steady)", "", play["steps_shown"], play["tokens_per_s"],
                 play["tokens_per_s_steady"], "", "", "", "", "", f">= {TARGET_PLAY_TOKENS_PER_S}",
                 "met" if play["tokens_per_s"] >= TARGET_PLAY_TOKENS_PER_S else "MISSED", f"{play['other_cpu_share']:.0%}"])
    return table(["what", "tokens", "n", "median ms", "p95 ms", "server ms", "response ms", "browser ms",
                  "first10 -> last10", "bytes/step", "target", "", "others CPU"], rows) + (
        "\nmedians; server = Gradio's handler time (GRADIO_PROFILING), response = click to the last byte of the "
        "reply, browser = from there until the chart is drawn; bytes/step = mean response body bytes (all requests "
        "of the run / steps: a reply stream kept open into the next step would move bytes between steps)"
        + "".join(f"\n{label}: " + ", ".join(f"{r['n']} {how} (median {r['median']:.0f} ms)" for how, r in results[key][
            "steps_by_how"].items()) for key, label in (("next_token_short", "steps, short text, paced"),
                                                       ("next_token_short_rapid", "steps, short text, back to back"),
                                                       ("next_token_long", "steps, long text, paced"),
                                                       ("next_token_long_rapid", "steps, long text, back to back")))
        + "".join(f"\ntemperature moves, {name} text: " + ", ".join(
            f"{r['n']} {how} (median {r['median']:.0f} ms)" for how, r in results[f"temperature_{name}"]["moves_by_how"].items())
            for name in ("short", "long"))
        + "  [ready: drawn ahead, only shown; drawn: drawn at the move]"
        + (f"\nPlay, CPU per step shown: server {cpu['server']:.0f} ms (of it the decode pass's thread "
           f"{cpu['server_decode_thread']:.0f} ms), browser and benchmark {cpu['browser_and_bench']:.0f} ms; "
           f"the two cores give {2 * cpu['wall']:.0f} ms (2 x {cpu['wall']:.0f} ms of wall time)" if cpu else ""))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=50, help="timed Next token clicks per text (default 50)")
    ap.add_argument("--moves", type=int, default=30, help="timed temperature moves per text (default 30)")
    ap.add_argument("--play", type=int, default=30, help="'Tokens to play' for the Play run (default 30)")
    ap.add_argument("--pause", type=float, default=1.0,
                    help="seconds between a step shown and the next click, a presenter reading it (default 1)")
    ap.add_argument("--server-env", nargs="*", default=[], metavar="NAME=VALUE",
                    help="environment for the app server, to compare a setting (e.g. GRADIO_RUN_HISTORY=False)")
    ap.add_argument("--name", default="presenter", help="results file name (default presenter)")
    ap.add_argument("--server-root", default=None, metavar="DIR",
                    help="serve the app of another checkout (an A/B against the same benchmark; default: this one)")
    ap.add_argument("--quiet-wait", type=float, default=120,
                    help="seconds to wait at most for the machine to be quiet before starting (default 120)")
    ap.add_argument("--port", type=int, default=None, help="the server's port (default: a free one in 7850-7899)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    results = run(args.steps, args.moves, args.play, args.pause, dict(kv.split("=", 1) for kv in args.server_env),
                  args.server_root, args.quiet_wait, args.port)
    results["wall_s"] = time.perf_counter() - t0
    print(report(results))
    print(f"wrote {save(args.name, results)}")


if __name__ == "__main__":
    main()
