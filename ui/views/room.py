"""Room: a teacher opens one and gets a code; students who join see the teacher's text, step and chart as the
teacher moves (read-only, polled twice a second, in the student's language), may explore from the teacher's step
in a session of their own, and go back to following. When the teacher's lesson asks a question, the students see
it here and send a guess; the teacher's Lesson tab counts them. The registry is ui/rooms.py (App.rooms); what it
shows comes from App.render's hook."""
from __future__ import annotations

import functools
import html
import json

import gradio as gr
from gradio.context import get_blocks_context

import viz
from model.errors import SessionError
from ui.class_play import ClassPlayView
from ui.controls import client_of, plot
from ui.events import Event
from ui.handlers import friendly
from ui.protocol import carried_figure
from ui.rooms import Question, Snapshot
from ui.state import carrier
from ui.strings import LANGS, Refusal, t
from viz.guesses import after_reveal_chart

POLL_S = 0.5  # a follower's page asks for the room's state this often (a dict read when nothing changed)
# A link with ?room=CODE: the code typed in for the student, the Room tab opened and the code joined.
ROOM_LINK_JS = """() => {
  const code = new URLSearchParams(window.location.search).get('room') || '';
  const names = %s;
  if (code) setTimeout(() => {
    [...document.querySelectorAll('[role=tab]')].find((b) => names.includes(b.textContent.trim()))?.click();
    setTimeout(() => document.querySelector('#tbt-room-join')?.click(), 300);
  }, 400);
  return code;
}"""


class RoomView:
    tab, title = "room", "tab_room"
    chart = None

    def __init__(self, app):
        self.app = app
        self.rooms = app.rooms
        app.on_render.append(self.rooms.on_render)
        self.play = ClassPlayView(app, self.tab)  # the class as the sampler, beat the model (ui/class_play.py)

    def build(self, page):
        add = page.labels.add
        self.page = page
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
        with gr.Group(visible=False, elem_id="tbt-room-question") as self.question_box:  # the teacher's question
            self.question = gr.Markdown("")
            with gr.Row(equal_height=True):
                self.answer = add(gr.Radio([], label=t("room_guess_pick"), elem_id="tbt-room-guess", scale=3),
                                  "room_guess_pick")
                self.send = add(gr.Button(t("btn_room_guess"), variant="primary", elem_id="tbt-room-send", scale=1),
                                "btn_room_guess", "value")
            self.sent = gr.HTML("", elem_id="tbt-room-sent")
        self.play.build(page)
        self.mirror = gr.HTML("", elem_id="tbt-room-text")
        plot(self.tab)
        self.timer = gr.Timer(POLL_S, active=False)
        self.seen = gr.State(None)  # what of the room this page shows: (revision, question, open, language)

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
        return [t("room_waiting", lang, code=code), gr.Timer(active=True), None]

    def follow(self, request: gr.Request, seen, lang="en"):
        """The timer's tick: the teacher's page as last rendered and the question asked, in this page's language,
        if either changed since `seen`; no model pass."""
        try:
            code, snap, question, guessed = self.rooms.state(request.session_hash)
        except SessionError as err:  # closed, or not following
            return {self.status: ended(err, lang), self.seen: None, self.timer: gr.Timer(active=False),
                    self.question_box: gr.update(visible=False)}
        now = (snap.revision if snap else None, question.key if question else None, question.open if question else None,
               lang)
        if snap is None or now == seen:
            return {self.status: gr.skip()}  # nothing changed: every output as it was ({} is one value)
        ask = seen is None or now[1:] != tuple(seen)[1:]  # the question changed: show it again
        chart = self._chart(snap, lang) if question is None or not question.open else \
            carrier(after_reveal_chart(lang), self.tab)  # the teacher's chart would give the answer away
        shown = {self.status: self._status(code, snap, lang), self.mirror: self._text(snap, lang),
                 self.page.figure: chart, self.seen: now}
        return {**shown, **self._question(question, guessed, lang)} if ask else shown

    def _question(self, question: Question | None, guessed: str | None, lang: str) -> dict:
        """The question box: hidden without a question; after the reveal, the choices stay but take no guess."""
        if question is None:
            return {self.question_box: gr.update(visible=False), self.question: "",
                    self.answer: gr.update(choices=[], value=None), self.send: gr.update(), self.sent: ""}
        said = t("room_guess_sent", lang) if guessed is not None else ""
        if not question.open:
            said = t("room_guess_revealed", lang)
        return {self.question_box: gr.update(visible=True), self.question: question.words[lang],
                self.answer: gr.update(choices=question.choices[lang], value=guessed, interactive=question.open),
                self.send: gr.update(interactive=question.open), self.sent: html.escape(said)}

    def send_guess(self, request: gr.Request, value, lang="en"):
        """A follower's guess at the teacher's question: counted (without a name) on the teacher's page."""
        self.rooms.guess(request.session_hash, value)
        return html.escape(t("room_guess_sent", lang))

    def _status(self, code: str, snap: Snapshot, lang: str) -> str:
        view = self.app.views.get(snap.tab)
        tab = t(view.title, lang) if view is not None else snap.tab
        line = t("room_following", lang, code=code, step=len(snap.steps), tab=tab)
        return (f'<div id="tbt-room-marker" data-step="{len(snap.steps)}" data-rev="{snap.revision}" '
                f'data-tab="{html.escape(snap.tab)}">{html.escape(line)}</div>')

    @staticmethod
    def _text(snap: Snapshot, lang: str) -> str:
        """The teacher's text in the follower's language; its chips do not go back a step when clicked."""
        chips = viz.token_chips_html(snap.prefill.tokens, snap.steps, lang, legend_key="chips_legend_room",
                                     step_data="room-step")
        return f'<div id="tbt-room-chips">{chips}</div>'

    def _chart(self, snap: Snapshot, lang: str):
        """The teacher's chart in the follower's language, drawn into this tab's plot: the carrier re-addressed,
        its step key dropped (the page's drawn-ahead charts are its own, not the teacher's)."""
        chart = snap.charts.get(lang) or next(iter(snap.charts.values()), None)
        if chart is None:
            return gr.skip()
        return in_room(chart, self.tab)

    def explore(self, request, cfg, view):
        """The teacher's text as the follower's own session (records copied, the cache by one prefill); the
        mirror pauses until Back to the teacher."""
        snap = self.rooms.state(request.session_hash)[1]
        if snap is None:
            raise Refusal("room_nothing_yet")
        session = self.app.models.new_session(snap.model)
        session.take_records(snap.prefill, snap.steps, snap.ids)  # one prefill of the ids, not a replay
        self.app.store.put(request.session_hash, session, client=client_of(request))
        text, figure, force = self.app.answer(session, cfg, view)
        return {self.page.text: text, self.page.figure: figure, self.page.force: force,
                self.status: t("room_exploring", view.lang, step=len(snap.steps)), self.timer: gr.Timer(active=False)}

    def back_to_teacher(self, request: gr.Request, lang="en"):
        try:
            code = self.rooms.state(request.session_hash)[0]
        except SessionError as err:  # the room closed while this student explored
            return [ended(err, lang), gr.Timer(active=False), None]
        return [t("room_waiting", lang, code=code), gr.Timer(active=True), None]

    def unload(self, request: gr.Request):
        self.rooms.close(request.session_hash, "left")
        self.rooms.leave(request.session_hash)

    def events(self, page):
        h = page.handler
        follow_out = [self.status, self.mirror, page.figure, self.seen, self.timer, self.question_box, self.question,
                      self.answer, self.send, self.sent]
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
            Event(self.send.click, friendly(self.send_guess), [self.answer, page.lang], [self.sent], "page",
                  "room_guess"),
            *self.play.events(page, [self.join_btn.click, self.code.submit, self.back_btn.click]),
        ]

def ended(err: SessionError, lang: str) -> str:
    """The room's status when there is no room to follow (closed, or never joined)."""
    return f'<div class="tbt-room-ended">{html.escape(err.text(lang))}</div>'


@functools.lru_cache(maxsize=16)  # every follower of a room is sent the same chart: re-addressed once
def in_room(chart: str, tab: str) -> str:
    """A chart carrier the teacher's page received, for the plot of the follower's `tab`: the same figure,
    without the step key and temperature (the page's drawn-ahead charts are its own, not the teacher's)."""
    return carrier(carried_figure(chart), tab)
