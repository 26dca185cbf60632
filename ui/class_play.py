"""The class plays, in the Room tab: the teacher's buttons and wall, the students' draw and guess boxes (issue 23,
items 5 and 6: the class as the sampler, and beat the model).

The teacher (the page that opened a room) asks every student's device to draw the next token from the teacher's
distribution (the teacher's settings, the temperature set for the round), or starts a game over a short text;
each student's page draws (its own u, from the browser's Math.random, checked into [0, 1)) or guesses, and the
wall (the teacher's Room tab) shows the class's draws against p and the class's bits against the model's. The
logic is model/classroom/class_draws.py and model/classroom/guess_game.py, the registry of each room's plays
model/classroom/class_play.py (App.class_play), the figures viz/class_sampler.py; ui/views/room.py only builds
this (`build`) and adds its rows (`events`).
"""
from __future__ import annotations

import html

import gradio as gr
import plotly.graph_objects as go

from model.classroom.class_draws import MC_CLASSES, DrawRound
from model.classroom.class_play import ClassPlay
from model.classroom.guess_game import MAX_GUESS_CHARS, MAX_TEXT_CHARS, Game, new_game
from model.errors import SessionError
from ui.events import Event
from ui.handlers import friendly
from ui.strings import t
from viz.class_sampler import draws_chart, game_chart
from viz.style import format_prob

POLL_S = 1.0  # the wall and the students' boxes ask for the play's state this often (a dict read)
COLD, HOT = 0.3, 1.5  # the two temperatures the teacher can ask for besides their own
# The student's page sends its own u: the browser's random number, taken when the button is pressed.
DEVICE_U_JS = "(u, lang) => [Math.random(), lang]"


def stats_html(record: dict | None, lang: str) -> str:
    """The numbers under the histogram, and one plain sentence on what they mean."""
    if record is None:
        return ""
    n = record["n"]
    line = t("cp_stats", lang, chi2=f"{record['chi2']:.2f}", bins=record["bins"], dof=record["dof"],
             tv=f"{record['tv']:.3f}", p=f"{record['p_value']:.3f}")
    if n < 5:
        meaning = t("cp_meaning_few", lang, n=n)
    elif record["p_value"] >= 0.05:
        meaning = t("cp_meaning_fits", lang, share=format_prob(record["p_value"]), classes=f"{MC_CLASSES:,}", n=n)
    else:
        meaning = t("cp_meaning_off", lang, share=format_prob(record["p_value"]), classes=f"{MC_CLASSES:,}", n=n)
    return (f'<div id="tbt-cp-stats" data-n="{n}" data-chi2="{record["chi2"]:.6g}" data-tv="{record["tv"]:.6g}" '
            f'data-p="{record["p_value"]:.6g}"><p>{html.escape(line)}</p><p>{html.escape(meaning)}</p></div>')


def game_html(score: dict | None, game: Game | None, lang: str) -> str:
    """The game on the wall: the text so far, and the class's total against the model's, in words."""
    if game is None:
        return ""
    head = t("game_wall_text", lang, text=game.shown(), at=game.at, total=len(game.tokens))
    if not score["tokens"]:
        body = t("game_wall_wait", lang)
    else:
        body = t("game_wall_score", lang, klass=f"{score['class_total']:.1f}", model=f"{score['model_total']:.1f}",
                 n=len(score["tokens"]), kmean=f"{score['class_mean']:.2f}",
                 mmean=f"{score['model_cross_entropy']:.2f}")
        body += " " + t("game_class_wins" if score["class_total"] < score["model_total"] else "game_model_wins", lang)
    if game.over:
        body += " " + t("game_wall_over", lang, ce=f"{score['text_cross_entropy']:.2f}")
    return (f'<div id="tbt-game-wall" data-at="{game.at}" data-class="{score["class_total"]:.6g}" '
            f'data-model="{score["model_total"]:.6g}"><p><b>{html.escape(head)}</b></p><p>{html.escape(body)}</p></div>')


class ClassPlayView:
    """The class's plays in the Room tab: the teacher's buttons and wall, the students' draw and guess boxes."""

    def __init__(self, app, tab: str):
        self.app, self.tab = app, tab
        self.play = getattr(app, "class_play", None) or ClassPlay(app.rooms)
        app.class_play = self.play

    def build(self, page):
        add = page.labels.add
        self.page = page
        # a student's boxes: shown while the teacher asks for a draw, or a game is on
        with gr.Group(visible=False, elem_classes="tbt-cp-draw-box") as self.draw_box:  # (a Group writes an id twice)
            self.draw_ask = gr.Markdown("")
            self.u = gr.Number(None, visible=False, elem_id="tbt-cp-u")  # the device's u, set by DEVICE_U_JS
            self.draw_btn = add(gr.Button(t("btn_cp_draw_mine"), variant="primary", elem_id="tbt-cp-draw-mine"),
                                "btn_cp_draw_mine", "value")
            self.drawn = gr.HTML("", elem_id="tbt-cp-drawn")
        with gr.Group(visible=False, elem_classes="tbt-game-box") as self.guess_box:
            self.game_text = gr.HTML("", elem_id="tbt-game-text")
            with gr.Row(equal_height=True):
                self.guess_in = add(gr.Textbox(label=t("game_guess"), max_lines=1, max_length=MAX_GUESS_CHARS,
                                               elem_id="tbt-game-guess", scale=3), "game_guess")
                self.guess_btn = add(gr.Button(t("btn_game_send"), variant="primary", elem_id="tbt-game-send",
                                               scale=1), "btn_game_send", "value")
            self.guess_said = gr.HTML("", elem_id="tbt-game-said")
        # the teacher's controls and the wall
        with gr.Accordion(t("cp_teacher"), open=False, elem_id="tbt-cp-teacher") as acc:
            add(acc, "cp_teacher", "label")
            add(gr.Markdown(t("cp_explain"), elem_classes="tbt-explain"), "cp_explain", "value")
            with gr.Row():
                self.draw_mine = add(gr.Button(t("btn_cp_draw"), elem_id="tbt-cp-draw"), "btn_cp_draw", "value")
                self.draw_cold = add(gr.Button(t("btn_cp_draw_cold"), elem_id="tbt-cp-draw-cold"), "btn_cp_draw_cold",
                                     "value")
                self.draw_hot = add(gr.Button(t("btn_cp_draw_hot"), elem_id="tbt-cp-draw-hot"), "btn_cp_draw_hot",
                                    "value")
            self.draws_plot = gr.Plot(visible=False, elem_id="tbt-cp-plot", show_label=False)
            self.stats = gr.HTML("", elem_id="tbt-cp-stats-box")
            add(gr.Markdown(t("game_explain"), elem_classes="tbt-explain"), "game_explain", "value")
            with gr.Row(equal_height=True):
                self.game_in = add(gr.Textbox(label=t("game_text"), max_lines=1, max_length=MAX_TEXT_CHARS,
                                              elem_id="tbt-game-in", scale=3), "game_text")
                self.game_start = add(gr.Button(t("btn_game_start"), elem_id="tbt-game-start", scale=1),
                                      "btn_game_start", "value")
                self.game_reveal = add(gr.Button(t("btn_game_reveal"), variant="primary", elem_id="tbt-game-reveal",
                                                 scale=1), "btn_game_reveal", "value")
            self.game_wall = gr.HTML("", elem_id="tbt-game-wall-box")
            self.game_plot = gr.Plot(visible=False, elem_id="tbt-game-plot", show_label=False)
        self.timer = gr.Timer(POLL_S, active=False)
        self.seen = gr.State(None)

    # ---- the teacher ----------------------------------------------------------------------------------------
    def opener(self, temperature: float | None):
        """The handler of one of the three draw buttons: a round at the teacher's step, at `temperature` (None:
        the teacher's own)."""
        def class_draw_open(request, cfg, view):
            self.play.teaching(request.session_hash)  # refused before any work
            session = self.app.session(request)
            self.play.open_round(request.session_hash, DrawRound.at_session(session, cfg, temperature),
                                 session.lm.tokens)
            return {**self.wall(request.session_hash, view.lang), self.timer: gr.Timer(active=True)}
        return class_draw_open

    def start_game(self, request: gr.Request, text, lang="en"):
        """A game over the teacher's text, on the teacher's model (the default one before any session)."""
        self.play.teaching(request.session_hash)  # refused before the game's forward pass
        self.play.start_game(request.session_hash, new_game(self.app.local_core(request), text))
        return {**self.wall(request.session_hash, lang), self.timer: gr.Timer(active=True)}

    def reveal(self, request: gr.Request, lang="en"):
        self.play.reveal(request.session_hash)
        return self.wall(request.session_hash, lang)

    def wall(self, teacher: str, lang: str) -> dict:
        revision, rounds, score, game = self.play.wall(teacher)
        for r in rounds:
            r["labels"] = [label if label is not None else t("cs_other", lang) for label in r["labels"]]
        shown = {self.seen: ("t", revision, lang), self.stats: stats_html(rounds[-1] if rounds else None, lang),
                 self.game_wall: game_html(score, game, lang)}
        shown[self.draws_plot] = gr.update(value=go.Figure(**draws_chart(rounds, lang)), visible=True) if rounds \
            else gr.update(visible=False)
        shown[self.game_plot] = gr.update(value=go.Figure(**game_chart(score, lang)), visible=True) \
            if score and score["tokens"] else gr.update(visible=False)
        return shown

    # ---- a student -----------------------------------------------------------------------------------------
    def draw(self, request: gr.Request, u, lang="en"):
        token, u, temperature = self.play.draw(request.session_hash, u)
        return html.escape(t("cp_drew", lang, token=token, u=f"{u:.4f}"))

    def send_guess(self, request: gr.Request, text, lang="en"):
        said = self.play.guess(request.session_hash, text)
        return html.escape(t("game_sent", lang, guess=said))

    def tick(self, request: gr.Request, seen, lang="en"):
        """The timer: the wall on the teacher's page, the boxes on a student's, when something changed."""
        user = request.session_hash
        if self.play.rooms.room_of(user) is not None:
            revision = self.play.wall(user)[0]
            return {self.seen: gr.skip()} if seen == ("t", revision, lang) else self.wall(user, lang)
        try:
            state = self.play.seen_by(user)
        except SessionError:  # not following (any more): nothing to poll
            return {self.timer: gr.Timer(active=False), self.seen: None, self.draw_box: gr.update(visible=False),
                    self.guess_box: gr.update(visible=False)}
        r, g = state["round"], state["game"]
        now = ("s", r and (r["no"], r["drawn"] is not None), g and (g["no"], g["at"]), lang)
        if seen is not None and now == tuple(seen):
            return {self.seen: gr.skip()}
        shown = {self.seen: now, self.draw_box: gr.update(visible=r is not None),
                 self.guess_box: gr.update(visible=g is not None)}
        if r is not None:
            shown[self.draw_ask] = t("cp_draw_ask", lang, temperature=f"{r['temperature']:g}")
            shown[self.draw_btn] = gr.update(interactive=r["drawn"] is None)
            shown[self.drawn] = "" if r["drawn"] is None else \
                html.escape(t("cp_drew", lang, token=r["drawn"][0], u=f"{r['drawn'][1]:.4f}"))
        if g is not None:
            shown[self.game_text] = game_student_html(g, lang)
            if seen is None or not seen[2] or seen[2] != now[2]:  # a new token to guess: the box starts empty
                shown[self.guess_in] = gr.update(value="", interactive=not g["over"])
                shown[self.guess_btn] = gr.update(interactive=not g["over"])
                shown[self.guess_said] = ""
        return shown

    def activate(self):
        return gr.Timer(active=True), None

    def events(self, page, joins):
        """Rows of the wiring table; `joins`: the room's triggers after which a student follows (join, back)."""
        h = page.handler
        wall_out = [self.seen, self.stats, self.game_wall, self.draws_plot, self.game_plot, self.timer]
        tick_out = [self.seen, self.timer, self.draw_box, self.guess_box, self.draw_ask, self.draw_btn, self.drawn,
                    self.game_text, self.guess_in, self.guess_btn, self.guess_said, *wall_out[1:5]]
        rows = [
            Event(self.draw_mine.click, h(self.opener(None)), page.page_in, wall_out, "views", "class_draw_open"),
            Event(self.draw_cold.click, h(self.opener(COLD)), page.page_in, wall_out, "views", "class_draw_cold"),
            Event(self.draw_hot.click, h(self.opener(HOT)), page.page_in, wall_out, "views", "class_draw_hot"),
            Event(self.game_start.click, friendly(self.start_game), [self.game_in, page.lang], wall_out, "measure",
                  "game_start"),
            Event(self.game_reveal.click, friendly(self.reveal), [page.lang], wall_out[:5], "page", "game_reveal"),
            Event(self.draw_btn.click, friendly(self.draw), [self.u, page.lang], [self.drawn], "page", "class_draw",
                  options={"js": DEVICE_U_JS}),
            Event(self.guess_btn.click, friendly(self.send_guess), [self.guess_in, page.lang], [self.guess_said],
                  "page", "game_guess"),
            Event(self.guess_in.submit, friendly(self.send_guess), [self.guess_in, page.lang], [self.guess_said],
                  "page"),
            Event(self.timer.tick, friendly(self.tick), [self.seen, page.lang], tick_out, "page", "class_play_state"),
        ]
        rows += [Event(trigger, self.activate, [], [self.timer, self.seen], "page") for trigger in joins]
        return rows


def game_student_html(g: dict, lang: str) -> str:
    """A student's game box: the text so far, and what became of their guess at the last revealed token."""
    lines = [f'<p id="tbt-game-so-far" data-at="{g["at"]}"><b>{html.escape(t("game_so_far", lang))}</b> '
             f'{html.escape(g["text"])}</p>']
    last = g["last"]
    if last is not None:
        if last["guess"] is None:
            mine = t("game_you_none", lang)
        else:
            mine = t("game_you_right" if last["mine_right"] else "game_you_wrong", lang, guess=last["guess"])
        said = t("game_last", lang, token=last["token"], mine=mine, right=last["right"], answered=last["answered"],
                 p=format_prob(last["p"]))
        lines.append(f'<p id="tbt-game-last">{html.escape(said)}</p>')
    if g["over"]:
        score = g["score"]
        said = t("game_over_student", lang, klass=f"{score['class_total']:.1f}", model=f"{score['model_total']:.1f}")
    else:
        said = t("game_ask", lang)
    lines.append(f"<p>{html.escape(said)}</p>")
    return "".join(lines)
