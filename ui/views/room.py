"""Room: a teacher opens one and gets a code; students who join see the teacher's text, step and chart as the
teacher moves (read-only, polled twice a second, in the student's language), may explore from the teacher's step
in a session of their own, and go back to following. When the teacher's lesson asks a question, the students see
it here and send a guess; the teacher's Lesson tab counts them, and after the reveal each student sees how their
own guess did and how the class split. The registry is model/classroom/rooms.py (App.rooms); what it shows comes from
App.render's hook.

The teacher's wall: the code in large letters, a QR code of the join link (segno; the address students reach,
chosen by the operator only: ui/reach.py; on a loopback address no QR code but a plain word that only this machine
can join) and the number of students whose page is there, refreshed by the wall's tick (which keeps the room open);
opened, it fits a 1280 x 800 projector's screen (the explanation and the student's Join box make way). A student's page while following shows the room only:
its own session (controls, text, other tabs) is hidden by the style sheet below until Explore from here."""
from __future__ import annotations

import functools
import html
import json

import gradio as gr
import segno
from gradio.context import get_blocks_context

import viz
from model.classroom.journal import Answer, right_values
from model.classroom.rooms import MAX_NAME_CHARS, Question, Snapshot, Split
from model.errors import SessionError
from ui.class_play import ClassPlayView
from ui.class_report import ClassReportView
from ui.controls import plot
from ui.guard import address
from ui.events import Event
from ui.handlers import friendly
from ui.protocol import CARRIERS, IDS, carried_figure
from ui.state import carrier
from ui.strings import LANGS, Refusal, t
from ui.summary import summaries_of
from viz.guesses import after_reveal_chart

POLL_S = 0.5  # a follower's page asks for the room's state this often (a dict read when nothing changed)
WALL_S = 2.0  # the teacher's wall counts its students this often (and keeps the room open: model/classroom/rooms.py)
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
# The wall opened: scrolled up until its count is at the screen's foot, the code and QR code above it (the text
# panel above them stays in its place at the top)
WALL_IN_VIEW_JS = "() => setTimeout(() => document.querySelector('#tbt-room-joined')?.scrollIntoView({block: 'end'}), 50)"
# One text per student: while the page follows a room (its status carries .tbt-room-on), the student's own session
# (the controls, its text, the other tabs) is hidden, so the teacher's text and chart are the page, and nothing of
# the student's own session (the same prompt's candidates) gives a question's answer away. Explore shows it again.
FOLLOWING = ":is(.tbt-controls, #%s, .tbt-room-teacher, .tbt-room-explain, .tbt-room-joinrow, #tbt-room-back, " \
            ".tabs [role=tablist], #tbt-room-info, #tbt-cp-teacher, #tbt-report-box, #%s)" % (CARRIERS["text"], IDS["nav"])
# The teacher's page with its wall up: no student's Join box, and the explanation gives the wall its room
WALL_UP = ":is(.tbt-room-joinrow, .tbt-room-explain)"
ROOM_CSS = (f"<style>body:has(.tbt-room-on) {FOLLOWING} {{display: none !important}}"
            " body:not(:has(.tbt-room-on, .tbt-room-exploring)) :is(#tbt-room-explore, #tbt-room-back)"
            " {display: none !important} body:has(.tbt-room-exploring) #tbt-room-explore {display: none !important}"
            f" body:has(.tbt-room-wall) {WALL_UP} {{display: none !important}}</style>")


class RoomView:
    tab, title = "room", "tab_room"
    chart = None

    def __init__(self, app):
        self.app = app
        self.rooms = app.rooms
        app.on_render.append(self.rooms.on_render)
        self.play = ClassPlayView(app, self.tab)  # the class as the sampler, beat the model (ui/class_play.py)
        self.report = ClassReportView(app, self.tab)  # the class report (ui/class_report.py)

    def build(self, page):
        add = page.labels.add
        self.page = page
        add(gr.Markdown(t("explain_room"), elem_classes=["tbt-explain", "tbt-room-explain"]), "explain_room", "value")
        with gr.Row(elem_classes="tbt-room-teacher"):
            self.open_btn = add(gr.Button(t("btn_room_open"), elem_id="tbt-room-open"), "btn_room_open", "value")
            self.renew_btn = add(gr.Button(t("btn_room_renew"), elem_id="tbt-room-renew"), "btn_room_renew", "value")
            self.close_btn = add(gr.Button(t("btn_room_close"), elem_id="tbt-room-close"), "btn_room_close", "value")
        self.info = gr.HTML("", elem_id="tbt-room-info")  # the teacher's wall: code, QR code, link
        self.joined = gr.HTML("", elem_id="tbt-room-joined")  # and how many students are there
        with gr.Row(equal_height=True, elem_classes="tbt-room-joinrow"):
            self.code = add(gr.Textbox(label=t("room_code"), elem_id="tbt-room-code", max_lines=1, scale=2),
                            "room_code")
            # the seat's name, as the class report lists it (optional: else the seat's number)
            self.name = add(gr.Textbox("", label=t("room_seat_name"), elem_id="tbt-room-name", max_lines=1, scale=2,
                                       max_length=MAX_NAME_CHARS, placeholder=t("room_seat_name_hint")),
                            words=lambda lang: {"label": t("room_seat_name", lang),
                                                "placeholder": t("room_seat_name_hint", lang)})
            self.join_btn = add(gr.Button(t("btn_room_join"), elem_id="tbt-room-join", variant="primary", scale=1),
                                "btn_room_join", "value")
        self.status = gr.HTML("", elem_id="tbt-room-status")
        with gr.Row(equal_height=True):
            self.explore_btn = add(gr.Button(t("btn_room_explore"), elem_id="tbt-room-explore", scale=1),
                                   "btn_room_explore", "value")
            self.back_btn = add(gr.Button(t("btn_room_back"), elem_id="tbt-room-back", scale=1), "btn_room_back",
                                "value")
        with gr.Column(visible=False, elem_id="tbt-room-question") as self.question_box:  # the teacher's question
            self.question = gr.Markdown("")
            with gr.Row(equal_height=True):
                self.answer = add(gr.Radio([], label=t("room_guess_pick"), elem_id="tbt-room-guess", scale=3),
                                  "room_guess_pick")
                self.send = add(gr.Button(t("btn_room_guess"), variant="primary", elem_id="tbt-room-send", scale=1),
                                "btn_room_guess", "value")
            self.sent = gr.HTML("", elem_id="tbt-room-sent")  # after the reveal: this student's feedback
        self.play.build(page)
        self.report.build(page)
        self.mirror = gr.HTML("", elem_id="tbt-room-text")
        plot(self.tab)
        gr.HTML(ROOM_CSS, elem_classes="tbt-hidden", js_on_load=None)
        self.timer = gr.Timer(POLL_S, active=False)
        self.wall_timer = gr.Timer(WALL_S, active=False)
        self.seen = gr.State(None)  # what of the room this page shows: (revision, question, open, language)

    # ---- the teacher ---------------------------------------------------------------------------------
    def open_room(self, request, cfg, view):
        """Open (or show again) the teacher's room, and hand it the page as it is now: a started session only
        (a room is a page's, not a script's), at most ROOMS_PER_ADDRESS from one address."""
        session = self.app.session(request)  # (refuses before any room is made)
        code = self.rooms.open(request.session_hash, address(request))
        self.app.render(session, cfg, view)  # through App.render's hook: the room has the page at once
        return self._opened(code, view.lang)

    def renew_room(self, request, cfg, view):
        """The room under a new code: every follower out (told so), the old code refused; the wall shows the new."""
        session = self.app.session(request)
        code = self.rooms.renew(request.session_hash, address(request))
        self.app.render(session, cfg, view)
        return self._opened(code, view.lang)

    def _opened(self, code, lang):
        link, reachable = self.app.reach.join_link(code)
        return [wall_html(code, link, reachable, lang), joined_html(self.rooms.followers(code), lang),
                gr.Timer(active=True)]

    def wall_tick(self, request: gr.Request, lang="en"):
        """The teacher's wall: how many students are in the room now (their pages tick); the tick keeps the room
        open. The room gone (closed, idle): the wall says so and stops."""
        try:
            _, followers = self.rooms.wall(request.session_hash)
        except SessionError:
            return ["", gr.Timer(active=False)]
        return [joined_html(followers, lang), gr.skip()]

    def close_room(self, request: gr.Request, lang="en"):
        self.rooms.close(request.session_hash, "closed")
        return [html.escape(t("room_closed_teacher", lang)), "", gr.Timer(active=False)]

    # ---- a follower ----------------------------------------------------------------------------------
    def join_room(self, request: gr.Request, code, lang="en", name=""):
        code = self.rooms.join(request.session_hash, code, address(request), name)
        return [following(t("room_waiting", lang, code=code)), gr.Timer(active=True), None]

    def follow(self, request: gr.Request, seen, lang="en"):
        """The timer's tick: the teacher's page as last rendered and the question asked, in this page's language,
        if either changed since `seen`; no model pass."""
        try:
            code, snap, question, guessed = self.rooms.state(request.session_hash, address(request))
        except SessionError as err:  # closed, or not following
            return {self.status: ended(err, lang), self.seen: None, self.timer: gr.Timer(active=False),
                    self.question_box: gr.update(visible=False)}
        now = (snap.revision if snap else None, question.key if question else None, question.open if question else None,
               lang)
        if snap is None or now == seen:
            return {self.status: gr.skip()}  # nothing changed: every output as it was ({} is one value)
        ask = seen is None or now[1:] != tuple(seen)[1:]  # the question changed: show it again
        if ask and question is not None and not question.open:  # revealed: the student's answer, for their summary
            self._journal(request, code, question)
        chart = self._chart(snap, lang) if question is None or not question.open else \
            carrier(after_reveal_chart(lang), self.tab)  # the teacher's chart would give the answer away
        shown = {self.status: self._status(code, snap, lang), self.mirror: self._text(snap, lang),
                 self.page.figure: chart, self.seen: now}
        return {**shown, **self._question(request, question, guessed, lang)} if ask else shown

    def _question(self, request, question: Question | None, guessed: str | None, lang: str) -> dict:
        """The question box: hidden without a question; after the reveal, the choices stay but take no guess."""
        if question is None:
            return {self.question_box: gr.update(visible=False), self.question: "",
                    self.answer: gr.update(choices=[], value=None), self.send: gr.update(), self.sent: ""}
        said = html.escape(t("room_guess_sent", lang) if guessed is not None else "")
        if not question.open:  # this student's guess, how the model scored it and how the class split
            said = f"<p>{html.escape(t('room_guess_revealed', lang))}</p>" + \
                feedback_html(self.rooms.split(request.session_hash), question.choices[lang], lang)
        return {self.question_box: gr.update(visible=True), self.question: question.words[lang],
                self.answer: gr.update(choices=question.choices[lang], value=guessed, interactive=question.open),
                self.send: gr.update(interactive=question.open), self.sent: said}

    def _journal(self, request, code: str, question: Question) -> None:
        """A revealed question as the student's summary keeps it: their answer, how it was scored, the right one."""
        try:
            split = self.rooms.split(request.session_hash)
        except SessionError:
            return
        record = split.scores.get(split.mine) if split.mine is not None else None
        if record is None:  # no guess (or one the reveal could not score): the question's answer, no verdict
            any_record = next(iter(split.scores.values()), None)
            record = {**any_record, "guess": None, "right": None} if any_record else {"kind": None, "right": None}
        summaries_of(self.app).answered(request.session_hash, Answer(
            f"room:{code}#{question.key}", "room", {}, None, dict(question.words), dict(question.choices),
            split.mine, record, right_values(record)))

    def send_guess(self, request: gr.Request, value, lang="en"):
        """A follower's guess at the teacher's question: counted (without a name) on the teacher's page."""
        self.rooms.guess(request.session_hash, value)
        return html.escape(t("room_guess_sent", lang))

    def _status(self, code: str, snap: Snapshot, lang: str) -> str:
        view = self.app.views.get(snap.tab)
        tab = t(view.title, lang) if view is not None else snap.tab
        line = t("room_following", lang, code=code, step=len(snap.steps), tab=tab)
        return (f'<div id="tbt-room-marker" class="tbt-room-on" data-step="{len(snap.steps)}" '
                f'data-rev="{snap.revision}" data-tab="{html.escape(snap.tab)}">{html.escape(line)}</div>')

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
        _, snap, question, _ = self.rooms.state(request.session_hash, address(request))
        if snap is None:
            raise Refusal("room_nothing_yet")
        if question is not None and question.open:  # the student's own session would show the answer
            raise Refusal("room_explore_after_reveal")
        # one prefill of the ids, not a replay
        session = self.app.open_session(request, snap.model,
                                        lambda s: s.take_records(snap.prefill, snap.steps, snap.ids))
        text, figure, force = self.app.answer(session, cfg, view)
        return {self.page.text: text, self.page.figure: figure, self.page.force: force,
                self.status: f'<div class="tbt-room-exploring">{html.escape(t("room_exploring", view.lang, step=len(snap.steps)))}</div>',
                self.timer: gr.Timer(active=False)}

    def back_to_teacher(self, request: gr.Request, lang="en"):
        try:
            code = self.rooms.state(request.session_hash, address(request))[0]
        except SessionError as err:  # the room closed while this student explored
            return [ended(err, lang), gr.Timer(active=False), None]
        return [following(t("room_waiting", lang, code=code)), gr.Timer(active=True), None]

    def unload(self, request: gr.Request):
        self.rooms.close(request.session_hash, "left")
        self.rooms.leave(request.session_hash)

    def events(self, page):
        h = page.handler
        follow_out = [self.status, self.mirror, page.figure, self.seen, self.timer, self.question_box, self.question,
                      self.answer, self.send, self.sent]
        opened = [self.info, self.joined, self.wall_timer]
        return [
            Event(get_blocks_context().root_block.load, None, [], [self.code], "page",
                  options={"js": ROOM_LINK_JS % json.dumps([t(self.title, lang) for lang in LANGS])}),
            Event(self.open_btn.click, h(self.open_room), page.page_in, opened, "views", "open_room",
                  then_js=WALL_IN_VIEW_JS),
            Event(self.renew_btn.click, h(self.renew_room), page.page_in, opened, "views", "renew_room",
                  then_js=WALL_IN_VIEW_JS),
            Event(self.wall_timer.tick, friendly(self.wall_tick), [page.lang], [self.joined, self.wall_timer], "page",
                  "room_wall"),
            Event(self.close_btn.click, friendly(self.close_room), [page.lang], opened, "page", "close_room"),
            Event(self.join_btn.click, friendly(self.join_room), [self.code, page.lang, self.name],
                  [self.status, self.timer, self.seen], "page", "join_room"),
            Event(self.code.submit, friendly(self.join_room), [self.code, page.lang, self.name],
                  [self.status, self.timer, self.seen], "page"),
            Event(self.timer.tick, friendly(self.follow), [self.seen, page.lang], follow_out, "page", "room_state"),
            Event(self.explore_btn.click, h(self.explore), page.page_in, [*page.step_out, self.status, self.timer],
                  "model", "explore"),
            Event(self.back_btn.click, friendly(self.back_to_teacher), [page.lang], [self.status, self.timer, self.seen],
                  "page", "back_to_teacher"),
            Event(self.send.click, friendly(self.send_guess), [self.answer, page.lang], [self.sent], "page",
                  "room_guess"),
            *self.play.events(page, [self.join_btn.click, self.code.submit, self.back_btn.click]),
            *self.report.events(page),
        ]


def following(line: str) -> str:
    """The status of a page that follows a room (its class hides the student's own session: ROOM_CSS)."""
    return f'<div class="tbt-room-on">{html.escape(line)}</div>'


@functools.lru_cache(maxsize=32)
def qr_data_uri(link: str) -> str:
    """The QR code of `link` (segno, error correction M) as a PNG data URI: an image, no markup of its own."""
    return segno.make(link, error="m").png_data_uri(scale=8, border=2)


def wall_html(code: str, link: str, reachable: bool, lang: str) -> str:
    """The teacher's wall: the code large enough to read across a classroom, the QR code of the join link and
    the link itself; when only this machine can open the link (`reachable` False), no QR code but a plain word
    saying so and how to serve the class."""
    if reachable and link.startswith("http"):
        qr = (f'<img class="tbt-room-qr" src="{html.escape(qr_data_uri(link))}" width="220" height="220" '
              f'alt="{html.escape(t("room_qr_alt", lang))}" style="image-rendering: pixelated; background: #fff">')
    else:
        qr = (f'<p class="tbt-room-local" style="flex: 1 1 260px; font-size: 18px; font-weight: 600">'
              f'{html.escape(t("room_local_only", lang))}</p>')
    return (f'<div class="tbt-room-wall" data-reachable="{str(reachable).lower()}" '
            f'style="display: flex; gap: 28px; align-items: center; flex-wrap: wrap">'
            f'<div style="flex: 1 1 320px; min-width: 0"><div class="tbt-room-code" data-code="{html.escape(code)}" '
            f'style="font: 700 64px/1.1 monospace; letter-spacing: 8px">{html.escape(code)}</div>'
            f'<p>{html.escape(t("room_opened", lang))} <a href="{html.escape(link)}" target="_blank" '
            f'style="word-break: break-all">{html.escape(link)}</a></p></div>{qr}</div>')


def joined_html(followers: int, lang: str) -> str:
    return (f'<div class="tbt-room-count" data-count="{followers}" style="font-size: 28px; font-weight: 600">'
            f'{html.escape(t("room_joined", lang, n=followers))}</div>')


def feedback_html(split: Split, choices: list[tuple[str, str]], lang: str) -> str:
    """After the reveal, for one student: their own guess, the model's probability and rank of it (for a token)
    or whether it was right, the model's answer, and how the class split (counts and shares, no names)."""
    labels = dict((value, label) for label, value in choices)
    lines = []
    mine = split.scores.get(split.mine) if split.mine is not None else None
    if split.mine is None:
        lines.append(t("room_feedback_none", lang))
    elif mine is not None and "answer" in mine and mine["answer"] is None:  # the machine too busy to measure it
        lines.append(t("room_feedback_right" if mine.get("right") else "room_feedback_wrong", lang,
                       guess=labels.get(split.mine, split.mine)) + " " + t("room_feedback_no_verdict", lang))
    elif mine is not None and "prob" in mine:
        lines.append(t("room_feedback_token", lang, guess=labels.get(split.mine, split.mine),
                       prob=f"{mine['prob']:.1%}", rank=f"{mine['rank']:,}"))
    else:
        right = mine is not None and mine.get("right")
        lines.append(t("room_feedback_right" if right else "room_feedback_wrong", lang,
                       guess=labels.get(split.mine, split.mine)))
    any_record = next(iter(split.scores.values()), None)
    if any_record is not None and "top" in any_record:
        lines.append(t("room_feedback_top", lang, token=any_record["top"].replace(" ", "␣"), prob=f"{any_record['top_prob']:.1%}"))
    total = sum(split.counts.values())
    rows = []
    for label, value in choices:
        n = split.counts.get(value, 0)
        share = n / total if total else 0.0
        tags = (" ✓" if split.scores.get(value, {}).get("right") else "") + \
            (f" ← {t('room_feedback_you', lang)}" if value == split.mine else "")
        rows.append(f'<div style="display: flex; gap: 8px; align-items: center"><span style="min-width: 7em">'
                    f'{html.escape(label)}</span><span style="display: inline-block; height: 14px; width: '
                    f'{round(160 * share)}px; background: var(--color-accent, #e07000)"></span>'
                    f'<span>{n} ({share:.0%}){html.escape(tags)}</span></div>')
    head = t("room_feedback_class", lang, n=total)
    return ('<div id="tbt-room-feedback">' + "".join(f"<p>{html.escape(line)}</p>" for line in lines) +
            f"<p><b>{html.escape(head)}</b></p>{''.join(rows)}</div>")


def ended(err: SessionError, lang: str) -> str:
    """The room's status when there is no room to follow (closed, or never joined)."""
    return f'<div class="tbt-room-ended">{html.escape(err.text(lang))}</div>'


@functools.lru_cache(maxsize=16)  # every follower of a room is sent the same chart: re-addressed once
def in_room(chart: str, tab: str) -> str:
    """A chart carrier the teacher's page received, for the plot of the follower's `tab`: the same figure,
    without the step key and temperature (the page's drawn-ahead charts are its own, not the teacher's)."""
    return carrier(carried_figure(chart), tab)
