"""The class plays registry: each open room's rounds of draws (the class as the sampler) and its guessing game.

The teacher (the page that opened a room) asks every student's device to draw the next token from the teacher's
distribution, or starts a game over a short text; each student draws or guesses, and the teacher's wall shows
the class's draws against p and the class's bits against the model's. The rounds are DrawRound
(model/classroom/class_draws.py), the games Game (model/classroom/guess_game.py); this module keeps which room
has which, and who may do what: the rooms registry (model/classroom/rooms.py) says who teaches and who follows.
No words and no Gradio here: a refusal is a SessionError whose key is in model/errors.py; ui/class_play.py shows
it all. State: ClassPlay, one entry per open room, bounded.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field

from model.classroom.class_draws import DrawRound, fresh_u
from model.classroom.guess_game import Game, matches
from model.errors import SessionError

MAX_ROUNDS = 6  # rounds of draws a room keeps (only the current one keeps its distribution)
MAX_PLAYS = 40  # rooms with play state (a room's entry goes when it closes; this bounds the rest)
MAX_GAMES = 4  # games a room's report keeps (each one's score: a few hundred numbers)


@dataclass
class Play:
    """One room's play: its rounds of draws (newest last, the last open), and its game."""

    teacher: str
    rounds: list[tuple[DrawRound, object]] = field(default_factory=list)  # (round, the model's TokenDisplay)
    round_no: int = 0  # the current round's number (0: none yet)
    game: Game | None = None
    game_no: int = 0
    games: list[tuple[int, str, dict]] = field(default_factory=list)  # earlier games: (number, text, score), newest last
    revision: int = 0  # every change: the wall draws again


class ClassPlay:
    """Every room's play by its code; the room registry (model/classroom/rooms.py) says who teaches and who
    follows. All of it under one lock."""

    def __init__(self, rooms, max_plays: int = MAX_PLAYS, max_rounds: int = MAX_ROUNDS):
        self.rooms, self.max_plays, self.max_rounds = rooms, max_plays, max_rounds
        self._plays: OrderedDict[str, Play] = OrderedDict()
        self._lock = threading.Lock()
        rooms.on_close.append(self.forget)  # a room's rounds and games go with it

    def forget(self, code: str) -> None:
        """A room closed: its rounds (every student's draw) and games (every guess) are let go."""
        with self._lock:
            self._plays.pop(code, None)

    # ---- who -------------------------------------------------------------------------------------------
    def teaching(self, teacher: str) -> str:
        """The code of the teacher's room; refused ('cp_no_room') without one. A page asks this before it
        does the work a round or a game needs (the model's distribution, a game's forward pass)."""
        code = self.rooms.room_of(teacher)
        if code is None:
            raise SessionError("cp_no_room")
        return code

    def _teaching(self, teacher: str) -> tuple[str, Play]:
        """The teacher's room code and its play (made on first use); refused ('cp_no_room') without a room."""
        code = self.teaching(teacher)
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
        """What the student's boxes show: any follower of the room, seated or not (the room's tick says which)."""
        code = self.rooms.code_of(student)  # a refusal when closed or not following
        return self._plays.get(code)

    def _voting(self, student: str) -> Play | None:
        """A vote (a draw, a game's guess) counts only from a seated follower: the seats' cap bounds the voters.
        Refused ('room_seat_lapsed') when the student's page has not ticked lately; its next tick seats it again."""
        return self._plays.get(self.rooms.seat_of(student))

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
            if play.game is not None and play.game.at > 0:  # the game it replaces, for the report
                play.games = [*play.games, (play.game_no, play.game.texts[-1], asdict(play.game.score()))][-MAX_GAMES:]
            play.game, play.game_no = game, play.game_no + 1
            play.revision += 1

    def reveal(self, teacher: str):
        with self._lock:
            _, play = self._teaching(teacher)
            if play.game is None:
                raise SessionError("cp_no_game")
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

    def results(self, teacher: str) -> tuple[list[dict], list[tuple[int, str, dict]]]:
        """For the class report: each kept round as a plain record (round_record, its number "no" added) and each
        game with a revealed token ((number, its whole text, its score as a plain record)), oldest first; ([], [])
        before the room played."""
        with self._lock:
            code = self.teaching(teacher)
            play = self._plays.get(code)
            if play is None:
                return [], []
            first = play.round_no - len(play.rounds) + 1
            rounds = [{**round_record(r, tokens), "no": first + i} for i, (r, tokens) in enumerate(play.rounds)]
            games = list(play.games)
            if play.game is not None and play.game.at > 0:
                games.append((play.game_no, play.game.texts[-1], asdict(play.game.score())))
            return rounds, games

    # ---- a student --------------------------------------------------------------------------------------------
    def draw(self, student: str, u) -> tuple[str, float, float]:
        """The student's token in the current round (display), its u and the round's T; a refusal without one."""
        with self._lock:
            play = self._voting(student)
            if play is None or not play.rounds or play.rounds[-1][0].probs is None:
                raise SessionError("cp_no_round")
            draw_round, tokens = play.rounds[-1]
            token = draw_round.draw(student, fresh_u() if u is None else u)
            play.revision += 1
            return tokens.info(token).display, draw_round.draws[student][1], draw_round.temperature

    def guess(self, student: str, text) -> str:
        with self._lock:
            play = self._voting(student)
            if play is None or play.game is None:
                raise SessionError("cp_no_game")
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
