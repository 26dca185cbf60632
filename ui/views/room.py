"""Room: a teacher opens one and gets a code; students who join see the teacher's text, step and chart as the
teacher moves (read-only, polled twice a second), may explore from the teacher's step in a session of their own,
and go back to following. The registry is ui/rooms.py; what it shows comes from App.render's hook."""
from __future__ import annotations

import html
import json
import re

import gradio as gr
import torch
from gradio.context import get_blocks_context

import viz
from model.errors import SessionError
from model.session import DecodeSession
from ui.controls import client_of, plot
from ui.events import Event
from ui.handlers import friendly
from ui.protocol import PROTOCOL, chart_id
from ui.rooms import Rooms, Snapshot
from ui.strings import LANGS, Refusal, t

POLL_S = 0.5  # a follower's page asks for the room's state this often (a dict read when nothing changed)
TARGET = re.compile(r'data-%s="[^"]*"' % PROTOCOL["envelope"]["target"])
NAMED = re.compile(r' data-(?:%s|%s)="[^"]*"' % (PROTOCOL["envelope"]["key"], PROTOCOL["envelope"]["temperature"]))
# A link with ?room=CODE: the code typed in for the student, the Room tab opened and the code joined.
ROOM_LINK_JS = """() => {
  const code = new URLSearchParams(window.location.search).get('room') || '';
  const names = %s;
  const find = () => [...document.querySelectorAll('[role=tab], .overflow-dropdown button')]
    .find((b) => names.includes(b.textContent.trim()) && b.offsetParent);
  const join = () => setTimeout(() => document.querySelector('#tbt-room-join')?.click(), 300);
  if (code) setTimeout(() => {
    const tab = find();
    if (tab) { tab.click(); join(); return; }
    document.querySelector('[aria-label="More tabs"]')?.click();  // at 1280 px the later tabs sit in this menu
    setTimeout(() => { find()?.click(); join(); }, 200);
  }, 400);
  return code;
}"""


class RoomView:
    tab, title = "room", "tab_room"
    chart = None

    def __init__(self, app):
        self.app = app
        self.rooms = Rooms()
        app.on_render.append(self.rooms.on_render)

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_room"), elem_classes="tbt-explain"), "explain_room", "value")
        with gr.Row():
            self.open_btn = add(gr.Button(t("btn_room_open"), elem_id="tbt-room-open"), "btn_room_open", "value")
            self.close_btn = add(gr.Button(t("btn_room_close"), elem_id="tbt-room-close"), "btn_room_close", "value")
        self.info = gr.HTML("", elem_id="tbt-room-info")
        with gr.Row(equal_height=True):
            self.code = add(gr.Textbox(label=t("room_code"), elem_id="tbt-room-code", max_lines=1, scale=2),
                            "room_code")
            self.join_btn = add(gr.Button(t("btn_room_join"), elem_id="tbt-room-join", variant="primary", scale=1),
                                "btn_room_join", "value")
            self.explore_btn = add(gr.Button(t("btn_room_explore"), elem_id="tbt-room-explore", scale=1),
                                   "btn_room_explore", "value")
            self.back_btn = add(gr.Button(t("btn_room_back"), elem_id="tbt-room-back", scale=1), "btn_room_back",
                                "value")
        self.status = gr.HTML("", elem_id="tbt-room-status")
        self.mirror = gr.HTML("", elem_id="tbt-room-text")
        plot(self.tab)
        self.timer = gr.Timer(POLL_S, active=False)
        self.seen = gr.State(-1)  # the revision of the room this page shows

    # ---- the teacher ---------------------------------------------------------------------------------
    def open_room(self, request, cfg, view):
        """Open (or show again) the teacher's room, and hand it the page as it is now."""
        code = self.rooms.open(request.session_hash)
        try:
            session = self.app.session(request)
        except SessionError:
            return self._opened(code, view.lang)
        self.app.render(session, cfg, view)  # through App.render's hook: the room has the page at once
        return self._opened(code, view.lang)

    def _opened(self, code, lang):
        link = f"?room={code}"
        return (f'<div class="tbt-room-code" data-code="{code}" style="font: 600 44px/1.2 monospace; letter-spacing: 6px">{html.escape(code)}</div>'
                f'<p>{html.escape(t("room_opened", lang))} <a href="{link}" target="_blank">{html.escape(link)}</a></p>')

    def close_room(self, request: gr.Request, lang="en"):
        self.rooms.close(request.session_hash, "closed")
        return html.escape(t("room_closed_teacher", lang))

    # ---- a follower ----------------------------------------------------------------------------------
    def join_room(self, request: gr.Request, code, lang="en"):
        code = self.rooms.join(request.session_hash, code)
        return [t("room_waiting", lang, code=code), gr.Timer(active=True), -1]

    def follow(self, request: gr.Request, seen, lang="en"):
        """The timer's tick: the teacher's page as last rendered, if it changed since `seen`; no model pass."""
        try:
            code, snap = self.rooms.state(request.session_hash)
        except SessionError as err:  # closed, or not following
            return [f'<div class="tbt-room-ended">{html.escape(err.text(lang))}</div>', gr.skip(), gr.skip(), -1,
                    gr.Timer(active=False)]
        if snap is None or snap.revision == seen:
            return [gr.skip()] * 4 + [gr.skip()]
        return [self._status(code, snap, lang), self._text(snap, lang), self._chart(snap), snap.revision, gr.skip()]

    def _status(self, code: str, snap: Snapshot, lang: str) -> str:
        view = self.app.views.get(snap.tab)
        tab = t(view.title, lang) if view is not None else snap.tab
        line = t("room_following", lang, code=code, step=len(snap.steps), tab=tab)
        return (f'<div id="tbt-room-marker" data-step="{len(snap.steps)}" data-rev="{snap.revision}" '
                f'data-tab="{html.escape(snap.tab)}">{html.escape(line)}</div>')

    @staticmethod
    def _text(snap: Snapshot, lang: str) -> str:
        """The teacher's text in the follower's language; its chips do not go back a step when clicked."""
        chips = viz.token_chips_html(snap.prefill.tokens, snap.steps, lang).replace(' data-step="', ' data-room-step="')
        return f'<div id="tbt-room-chips">{chips}</div>'

    def _chart(self, snap: Snapshot):
        """The teacher's chart, drawn into this tab's plot: the carrier re-addressed, its step key dropped (the
        page's drawn-ahead charts are its own, not the teacher's)."""
        if snap.chart is None:
            return gr.skip()
        return NAMED.sub("", TARGET.sub(f'data-{PROTOCOL["envelope"]["target"]}="{chart_id(self.tab)}"', snap.chart,
                                        count=1), count=2)

    def explore(self, request, cfg, view):
        """The teacher's text as the follower's own session (records copied, the cache by one prefill); the
        mirror pauses until Back to the teacher."""
        _, snap = self.rooms.state(request.session_hash)
        if snap is None:
            raise Refusal("room_nothing_yet")
        session = session_from(self.app.models.new_session(snap.model), snap)
        self.app.store.put(request.session_hash, session, client=client_of(request))
        page = self.app.answer(session, cfg, view)
        return [*page, t("room_exploring", view.lang, step=len(snap.steps)), gr.Timer(active=False)]

    def back_to_teacher(self, request: gr.Request, lang="en"):
        code, _ = self.rooms.state(request.session_hash)
        return [t("room_waiting", lang, code=code), gr.Timer(active=True), -1]

    def unload(self, request: gr.Request):
        self.rooms.close(request.session_hash, "left")
        self.rooms.leave(request.session_hash)

    def events(self, page):
        h = page.handler
        follow_out = [self.status, self.mirror, page.figure, self.seen, self.timer]
        return [
            Event(get_blocks_context().root_block.load, None, [], [self.code], "page",
                  options={"js": ROOM_LINK_JS % json.dumps([t(self.title, lang) for lang in LANGS])}),
            Event(self.open_btn.click, h(self.open_room), page.page_in, [self.info], "views", "open_room"),
            Event(self.close_btn.click, friendly(self.close_room), [page.lang], [self.info], "page", "close_room"),
            Event(self.join_btn.click, friendly(self.join_room), [self.code, page.lang],
                  [self.status, self.timer, self.seen], "page", "join_room"),
            Event(self.code.submit, friendly(self.join_room), [self.code, page.lang],
                  [self.status, self.timer, self.seen], "page"),
            Event(self.timer.tick, friendly(self.follow), [self.seen, page.lang], follow_out, "page", "room_state"),
            Event(self.explore_btn.click, h(self.explore), page.page_in, [*page.step_out, self.status, self.timer],
                  "model", "explore"),
            Event(self.back_btn.click, friendly(self.back_to_teacher), [page.lang], [self.status, self.timer, self.seen],
                  "page", "back_to_teacher"),
        ]

@torch.no_grad()
def session_from(fresh: DecodeSession, snap: Snapshot) -> DecodeSession:
    """`fresh` holding the teacher's text: the records copied (they are never changed), the cache rebuilt by one
    prefill of the ids, whose logits at the prompt's end and at the last token are the two a session keeps.

    One pass instead of one per step (a replay); it reaches into DecodeSession's state, which has no public way
    to take records it did not make.
    """
    prompt_len = len(snap.prefill.tokens)
    cache, out, _ = fresh._prefill(list(snap.ids), logits_to_keep=len(snap.ids) - prompt_len + 1)
    fresh.prefill, fresh.steps, fresh.ids, fresh._cache = snap.prefill, list(snap.steps), list(snap.ids), cache
    fresh._prefill_logits, fresh._next_logits = out.logits[0, 0].clone(), out.logits[0, -1].clone()
    return fresh
