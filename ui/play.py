"""Play: one streaming request that writes up to N tokens, paced by the page.

The server sends a step, then the next only once the page says it has taken that one (POST to the protocol's
play route: <token>/shown, or <token>/stop), and computes it meanwhile. So Play runs as fast as the page draws,
never ahead of it, and a page that stops answering ends it. The token is random, one per Play: it can only
pace or stop that Play.
"""
from __future__ import annotations

import os
import secrets
import threading
from dataclasses import dataclass, field

import gradio as gr
from fastapi import HTTPException

from model.runtime import bench_stats
from model.errors import SessionError
from ui.controls import GLOBALS, advance, hidden_button, hidden_html
from ui.events import Event
from ui.handlers import whole
from ui.protocol import IDS, PROTOCOL

PLAY_WAIT_S = 10.0  # a Play whose page has not taken its last step after this ends (the page closed or hung)


@dataclass
class _Play:
    taken: threading.Event = field(default_factory=threading.Event)
    stopped: bool = False


class PlayPacer:
    """Every running Play, by its token; the page's word on each (shown or stop) lets it go on or ends it."""

    def __init__(self):
        self._plays: dict[str, _Play] = {}
        self._lock = threading.Lock()

    def open(self) -> str:
        token = secrets.token_urlsafe(16)
        with self._lock:
            self._plays[token] = _Play()
        return token

    def expect(self, token: str) -> None:
        """A step is about to be sent: wait() waits for the page to take it."""
        self._plays[token].taken.clear()

    def wait(self, token: str) -> bool:
        """True once the page took the step; False if it stopped the Play or did not answer in PLAY_WAIT_S."""
        play = self._plays[token]
        return play.taken.wait(PLAY_WAIT_S) and not play.stopped

    def signal(self, token: str, what: str) -> bool:
        """The page's word on its Play ('shown' or 'stop'); False if there is no such Play (any more)."""
        with self._lock:
            play = self._plays.get(token)
        if play is None:
            return False
        play.stopped |= what == "stop"
        play.taken.set()
        return True

    def close(self, token: str) -> None:
        with self._lock:
            self._plays.pop(token, None)


PLAYS = PlayPacer()  # one per server process: tokens are random, so several pages (and test servers) share it


def play_marker(token: str, step: int, of: int) -> str:
    """The hidden element that tells the page its Play is running, and under which token it answers."""
    return f'<div id="{IDS["playing"]}" data-token="{token}" data-step="{step}" data-of="{of}"></div>'


async def pace_play(token: str, what: str):
    """POST <play route><token>/shown (the page took the last step) or /stop."""
    if what not in ("shown", "stop"):
        raise HTTPException(404, "Say 'shown' or 'stop'.")
    if not PLAYS.signal(token, what):
        raise HTTPException(404, "No such Play: it has ended.")
    return {"ok": True}


def add_route(app, models=None) -> None:
    """The page's word on its Play: not a queued event (an event costs the page about 45 ms of work, a step's
    budget), and it runs nothing: it only lets the Play's streaming request, which is queued, go on or stop. In bench
    mode, the server's own counters too (`models`: the registry, whose core processes report theirs)."""
    app.add_api_route(PROTOCOL["play_route"] + "{token}/{what}", pace_play, methods=["POST"])
    if os.environ.get(BENCH_STATS_ENV) == "1":  # bench mode only (bench/classroom.py sets it): counts and times
        app.add_api_route(BENCH_STATS_ROUTE, lambda: server_stats(models), methods=["GET"], include_in_schema=False)


def server_stats(models=None) -> dict:
    """This process's bench_stats(), and under "cores" each core process's own (--model-process)."""
    processes = models.processes() if models is not None else {}
    return {**bench_stats(), "cores": {name: core.stats() for name, core in processes.items()}}


BENCH_STATS_ENV = "TBT_BENCH_STATS"
BENCH_STATS_ROUTE = "/tbt/bench/stats"  # the batch sizes the scheduler formed and the server's CPU by part (no text)


class Play:
    """The Play button (the page's script toggles it) and the hidden trigger of the streaming request."""

    def __init__(self, app):
        self.app = app

    def build(self, page):
        self.box = hidden_html("play")  # a running Play's token
        self.run = hidden_button("play_run", "play")

    def play_tokens(self, request, steps, cfg, view):
        """Up to `steps` Next tokens, each sent once the page took the one before (PlayPacer). The force list is
        left alone while playing and sent once, where Play stops."""
        n = whole(steps, "play_steps")  # (its slider has already refused one out of range)
        session = self.app.session(request)

        def still_shown():  # the page's session is still this one (not a new text, nor an expired one)
            try:
                return self.app.session(request) is session
            except SessionError:
                return False

        token = PLAYS.open()
        try:
            for done in range(1, n + 1):
                if done > 1 and not still_shown():
                    break
                advance(session, cfg)
                text_and_status, tab_chart, _ = self.app.answer(session, cfg, view)
                PLAYS.expect(token)
                yield text_and_status, tab_chart, gr.skip(), play_marker(token, done, n)
                if not PLAYS.wait(token) or session.finished or len(session.ids) >= session.max_tokens:
                    break  # stopped, or the page is gone; the text ended, or is full
        finally:
            PLAYS.close(token)
        yield gr.skip(), gr.skip(), self.app.render(session, cfg, view)[2] if still_shown() else gr.skip(), ""

    def events(self, page):
        return [
            Event(page.play.click, None, options={"js": f"() => window.{GLOBALS['play']}()"}, lane="page"),
            Event(self.run.click, page.handler(self.play_tokens, "steps"), [page.play_steps, *page.page_in],
                  [*page.step_out, self.box], "play", "play", then_js=f"() => window.{GLOBALS['play_ended']}()"),
        ]
