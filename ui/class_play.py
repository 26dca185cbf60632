"""The class plays, in the Room tab: the class as the sampler, and beat the model (issue 23, items 5 and 6).

The teacher (the page that opened a room) asks every student's device to draw the next token from the teacher's
distribution (the teacher's settings, the temperature set for the round), or starts a game over a short text;
each student's page draws (its own u, from the browser's Math.random, checked into [0, 1)) or guesses, and the
wall (the teacher's Room tab) shows the class's draws against p and the class's bits against the model's. The
logic is model/classroom/class_draws.py and model/classroom/guess_game.py, the figures viz/class_sampler.py; ui/views/room.py only
builds this (`build`) and adds its rows (`events`). State: ClassPlay, one entry per open room, bounded.
"""
from __future__ import annotations

import html
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field

import gradio as gr
import plotly.graph_objects as go

from model.classroom.class_draws import MC_CLASSES, DrawRound, fresh_u
from model.errors import SessionError
from model.classroom.guess_game import MAX_GUESS_CHARS, MAX_TEXT_CHARS, Game, matches, new_game
from ui.events import Event
from ui.handlers import friendly
from ui.strings import Refusal, t
from viz.class_sampler import draws_chart, game_chart
from viz.style import format_prob

POLL_S = 1.0  # the wall and the students' boxes ask for the play's state this often (a dict read)
MAX_ROUNDS = 6  # rounds of draws a room keeps (only the current one keeps its distribution)
MAX_PLAYS = 40  # rooms with play state (a room's entry goes when it closes; this bounds the rest)
COLD, HOT = 0.3, 1.5  # the two temperatures the teacher can ask for besides their own
# The student's page sends its own u: the browser's random number, taken when the button is pressed.
DEVICE_U_JS = "(u, lang) => [Math.random(), lang]"


@dataclass
class Play:
    """One room's play: its rounds of draws (newest last, the last open), and its game."""

    teacher: str
    rounds: list[tuple[DrawRound, object]] = field(default_factory=list)  # (round, the model's TokenDisplay)
    round_no: int = 0  # the current round's number (0: none yet)
    game: Game | None = None
    game_no: int = 0
    revision: int = 0  # every change: the wall draws again


class ClassPlay:
    """Every room's play by its code; the room registry (ui/rooms.py) says who teaches and who follows."""

    def __init__(self, rooms, max_plays: int = MAX_PLAYS, max_rounds: int = MAX_ROUNDS):
        self.rooms, self.max_plays, self.max_rounds = rooms, max_plays, max_rounds
        self._plays: OrderedDict[str, Play] = OrderedDict()
        self._lock = threading.Lock()

    # ---- who -------------------------------------------------------------------------------------------
    def _teaching(self, teacher: str) -> tuple[str, Play]:
        """The teacher's room code and its play (made on first use); Refusal('cp_no_room') without a room."""
        code = self.rooms.room_of(teacher)
        if code is None:
            raise Refusal("cp_no_room")
        for old in [c for c, p in self._plays.items() if self.rooms.room_of(p.teacher) != c]:
            del self._plays[old]  # its room closed
        play = self._plays.get(code)
        if play is None:
            play = self._plays[code] = Play(teacher)
            while len(self._plays) > self.max_plays:
                self._plays.popitem(last=False)
        self._plays.move_to_end(code)
        return code, play

    def _following(self, student: str) -> Play | None:
        code = self.rooms.code_of(student)  # Refusal when closed or not following (the room's tick says which)
        return self._plays.get(code)

    # ---- the teacher -------------------------------------------------------------------------------------
    def open_round(self, teacher: str, draw_round: DrawRound, tokens) -> None:
        """A new round of draws; the last one takes no more (its distribution is freed)."""
        with self._lock:
            _, play = self._teaching(teacher)
            if play.rounds:
                play.rounds[-1][0].close()
            play.rounds = [*play.rounds, (draw_round, tokens)][-self.max_rounds:]
            play.round_no += 1
            play.revision += 1

    def start_game(self, teacher: str, game: Game) -> None:
        with self._lock:
            _, play = self._teaching(teacher)
            play.game, play.game_no = game, play.game_no + 1
            play.revision += 1

    def reveal(self, teacher: str):
        with self._lock:
            _, play = self._teaching(teacher)
            if play.game is None:
                raise Refusal("cp_no_game")
            token = play.game.reveal()
            play.revision += 1
            return token

    def wall(self, teacher: str) -> tuple[int, list[dict], dict | None, Game | None]:
        """(revision, each kept round as a plain record, the game's score as one, the game) of the teacher's room."""
        with self._lock:
            _, play = self._teaching(teacher)
            rounds = [round_record(r, tokens) for r, tokens in play.rounds]
            score = asdict(play.game.score()) if play.game is not None else None
            return play.revision, rounds, score, play.game

    # ---- a student --------------------------------------------------------------------------------------------
    def draw(self, student: str, u) -> tuple[str, float, float]:
        """The student's token in the current round (display), its u and the round's T; Refusal without one."""
        with self._lock:
            play = self._following(student)
            if play is None or not play.rounds or play.rounds[-1][0].probs is None:
                raise Refusal("cp_no_round")
            draw_round, tokens = play.rounds[-1]
            token = draw_round.draw(student, fresh_u() if u is None else u)
            play.revision += 1
            return tokens.info(token).display, draw_round.draws[student][1], draw_round.temperature

    def guess(self, student: str, text) -> str:
        with self._lock:
            play = self._following(student)
            if play is None or play.game is None:
                raise Refusal("cp_no_game")
            said = play.game.guess(student, text)
            play.revision += 1
            return said

    def seen_by(self, student: str) -> dict:
        """What the student's boxes show: the current round (T, their draw) and the game (text so far, their
        guess, the last revealed token with their guess at it and the class's split)."""
        with self._lock:
            play = self._following(student)
            out = {"round": None, "game": None}
            if play is None:
                return out
            if play.rounds and play.rounds[-1][0].probs is not None:
                r, tokens = play.rounds[-1]
                mine = r.draws.get(student)
                out["round"] = {"no": play.round_no, "temperature": r.temperature,
                                "drawn": (tokens.info(mine[0]).display, mine[1]) if mine else None}
            game = play.game
            if game is not None:
                last = None
                if game.at > 0:
                    i = game.at - 1
                    tok, score = game.tokens[i], game.score()
                    last = {"token": tok.display, "guess": game.guess_of(student, i), "right": score.right[i],
                            "answered": score.answered[i], "p": tok.model_prob,
                            "mine_right": game.guess_of(student, i) is not None
                            and matches(game.guess_of(student, i), tok.text)}
                out["game"] = {"no": game_key(play), "at": game.at, "over": game.over, "text": game.shown(),
                               "guess": game.guess_of(student, game.at), "last": last,
                               "score": asdict(score) if game.over else None}
            return out


def game_key(play: Play) -> int:
    return play.game_no


def round_record(draw_round: DrawRound, tokens) -> dict:
    """A round as viz/class_sampler.draws_chart takes it (labels, probs, counts, expected, n, temperature) and
    its statistics (chi2, tv, dof, p_value)."""
    tab = draw_round.tally()
    labels = [tokens.info(i).display for i in tab.ids[:-1]] + [None]  # None: every other token (said by the page)
    return {"labels": labels, "probs": tab.probs, "counts": tab.counts, "expected": tab.expected, "n": tab.n,
            "temperature": draw_round.temperature, "chi2": tab.chi2, "tv": tab.tv, "dof": tab.dof,
            "p_value": tab.p_value, "bins": len(tab.ids)}


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
            self.play.rooms.room_of(request.session_hash) or _refuse("cp_no_room")
            session = self.app.session(request)
            self.play.open_round(request.session_hash, DrawRound.at_session(session, cfg, temperature),
                                 session.lm.tokens)
            return {**self.wall(request.session_hash, view.lang), self.timer: gr.Timer(active=True)}
        return class_draw_open

    def start_game(self, request: gr.Request, text, lang="en"):
        """A game over the teacher's text, on the teacher's model (the default one before any session)."""
        lm = self.app.local_model(request)
        self.play.rooms.room_of(request.session_hash) or _refuse("cp_no_room")
        self.play.start_game(request.session_hash, new_game(lm, text))
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


def _refuse(key: str):
    raise Refusal(key)
