"""Beat the model: the class guesses a short text token by token, scored in bits against the model.

The teacher picks a text: what comes before "|" is shown (the opening); without "|", its first word (first
character in a text without spaces). Every later token is guessed, one at a time: before the teacher reveals a
token, each student sends one guess (a later one replaces theirs). Scores, in bits, per guessed token x_t:

  model   -log2 p(x_t | x_<t), p from ONE forward pass over the whole text (teacher.parallel_pass, log_softmax
          over the full vocabulary): the model's cross-entropy on the text is their mean.
  class   -log2 q_t with q_t = (k + 1) / (n + 2): k of the n students who guessed were right (Laplace's rule
          of succession: as if two more students had answered, one right), so a token nobody guessed costs
          log2(n + 2) bits, not infinity, and one the whole class guessed costs log2((n + 2) / (n + 1)).
A guess is right when it equals the token's text, spaces around both and letter case ignored.
Lower is better: fewer bits = less surprised. No words here: ui/class_play.py says them.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from model.errors import SessionError
from model.parse import valid_text
from model.decoding.session import encode_prompt
from model.inside.teacher_forcing import teacher_forcing

MAX_TEXT_CHARS = 200  # the teacher's text
MAX_GUESSED = 16  # tokens the class guesses in one game
MAX_GUESS_CHARS = 40  # one student's guess
MAX_STUDENTS = 100  # guesses kept per token (a room holds fewer followers)


def split_text(text) -> tuple[str, str]:
    """(opening, the part to guess) of the teacher's text; SessionError if it is not a short text of both."""
    if not isinstance(text, str) or not text.strip():
        raise SessionError("game_text_empty")
    valid_text(text, "game_invalid_text")
    if len(text) > MAX_TEXT_CHARS:
        raise SessionError("game_text_too_long", n=len(text), limit=MAX_TEXT_CHARS)
    if "|" in text:
        opening, rest = text.split("|", 1)
    else:
        stripped = text.lstrip()
        cut = re.search(r"\S\s", stripped)
        end = cut.start() + 1 if cut else 1  # the first word, or the first character of a text without spaces
        opening, rest = text[: len(text) - len(stripped) + end], stripped[end:]
    if not opening.strip() or not rest.strip():
        raise SessionError("game_text_empty")
    return opening, rest


@dataclass
class GameToken:
    """One token of the text to guess, with what the model gave it (from the full forward pass)."""

    id: int
    text: str  # as decoded: what a guess is compared with
    display: str  # as the page shows a token ("␣Paris")
    model_prob: float  # p(x_t | x_<t) at T = 1, in [0, 1]
    model_bits: float  # -log2 of it


@dataclass
class GameScore:
    """The game so far: per revealed token, the model's and the class's bits; their totals and means."""

    tokens: list[str]  # display of each revealed token
    model_bits: list[float]
    class_bits: list[float]
    right: list[int]  # students right at each token
    answered: list[int]  # students who guessed at each token
    model_total: float
    class_total: float
    model_cross_entropy: float  # mean model bits over the revealed tokens (bits per token); nan before any
    class_mean: float
    text_cross_entropy: float  # the model's mean over the whole text to guess (every token, revealed or not)


def class_bits(right: int, answered: int) -> float:
    """-log2((right + 1) / (answered + 2)): the class's surprise at a token, in bits (module docstring)."""
    return -math.log2((right + 1) / (answered + 2))


def matches(guess: str, token_text: str) -> bool:
    """A guess is right when it equals the token, spaces around both and letter case ignored."""
    return guess.strip().casefold() == token_text.strip().casefold()


def valid_guess(guess) -> str:
    if not isinstance(guess, str) or not guess.strip():
        raise SessionError("game_guess_empty")
    valid_text(guess, "game_guess_invalid_text")
    if len(guess) > MAX_GUESS_CHARS:
        raise SessionError("game_guess_too_long", limit=MAX_GUESS_CHARS)
    return guess.strip()


@dataclass
class Game:
    """A game in a room: the opening shown, the tokens to guess, the token being guessed (`at`), each
    revealed token's guesses (student -> guess), and the current token's guesses (open until revealed)."""

    opening: str
    ids: list[int]  # the whole text's token ids, as the model saw them
    opening_len: int  # tokens shown from the start
    tokens: list[GameToken]
    texts: list[str]  # the text shown after 0, 1, ... len(tokens) tokens revealed (decoded whole: a character
    #                   split over byte tokens shows when it completes)
    at: int = 0  # index into tokens of the one being guessed; len(tokens) when the game is over
    guesses: list[dict[str, str]] = field(default_factory=list)  # one dict per token so far (the last is open)

    @property
    def over(self) -> bool:
        return self.at >= len(self.tokens)

    def shown(self) -> str:
        """The text the class sees: the opening and every revealed token."""
        return self.texts[self.at]

    def guess(self, student: str, text) -> str:
        """A student's guess at the current token (a later one replaces theirs)."""
        text = valid_guess(text)
        if self.over:
            raise SessionError("game_over")
        while len(self.guesses) <= self.at:
            self.guesses.append({})
        now = self.guesses[self.at]
        if student not in now and len(now) >= MAX_STUDENTS:
            raise SessionError("game_full", limit=MAX_STUDENTS)
        now[student] = text
        return text

    def reveal(self) -> GameToken:
        """The current token is shown; guesses move on to the next."""
        if self.over:
            raise SessionError("game_over")
        while len(self.guesses) <= self.at:
            self.guesses.append({})
        token = self.tokens[self.at]
        self.at += 1
        return token

    def guess_of(self, student: str, index: int) -> str | None:
        return self.guesses[index].get(student) if index < len(self.guesses) else None

    def score(self) -> GameScore:
        revealed = self.tokens[: self.at]
        right = [sum(matches(g, tok.text) for g in self.guesses[i].values()) for i, tok in enumerate(revealed)]
        answered = [len(self.guesses[i]) for i in range(len(revealed))]
        model = [tok.model_bits for tok in revealed]
        klass = [class_bits(r, n) for r, n in zip(right, answered)]
        mean = (lambda xs: sum(xs) / len(xs) if xs else math.nan)
        return GameScore([tok.display for tok in revealed], model, klass, right, answered, sum(model), sum(klass),
                         mean(model), mean(klass), mean([tok.model_bits for tok in self.tokens]))


def new_game(core, text) -> Game:
    """A game over `text` (split_text), the model's probability of every token to guess from one forward pass in the
    model's core (`core`: core.ModelCore, or core_process.ProcessCore)."""
    lm = core.lm
    opening, rest = split_text(text)
    opening_ids = encode_prompt(lm, opening, chat=False)  # a prompt's limits and refusals; a BOS if any
    rest_ids = lm.tokenizer(rest, add_special_tokens=False)["input_ids"]
    if len(rest_ids) > MAX_GUESSED:
        raise SessionError("game_too_many_tokens", n=len(rest_ids), limit=MAX_GUESSED)
    ids = list(opening_ids) + list(rest_ids)
    record = core.compute(teacher_forcing, ids, prompt_len=len(opening_ids))  # in parallel, log_softmax inside
    tokens = []
    for pos in record.positions[len(opening_ids) - 1:]:  # positions[i] scores ids[i + 1]
        tokens.append(GameToken(pos.token.id, lm.tokenizer.decode([pos.token.id]), pos.token.display, pos.prob,
                                pos.cross_entropy_bits))
    texts = [lm.tokenizer.decode(ids[: len(opening_ids) + k], skip_special_tokens=True).rstrip("\ufffd")
             for k in range(len(tokens) + 1)]
    return Game(opening, ids, len(opening_ids), tokens, texts)
