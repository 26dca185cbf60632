"""Two models on one text: each one's surprisal per character, where they disagree most, and each one's continuation.

Two tokenizers cut a text in different places (SmolLM2 writes a Chinese character as two or three byte tokens, Gemma
3 270M as one token), so their per-token numbers do not line up. Characters do. Each token's surprisal,
-log2 P(token | the tokens before), is spread evenly over the bytes of the text it covers, and a character gets the
shares of its bytes: a token of three whole characters gives each a third, a byte token gives all its cost to the
character its byte belongs to, and a token that straddles two characters splits by bytes. Every token's cost lands
on some character, so the characters' surprisals add up to the text's -log2 P exactly (tests/test_two_models.py
checks it against a full forward pass, in English and in Chinese).

Each model reads the text exactly as a raw prompt (DecodeSession.encode_prompt): Gemma's tokenizer puts <bos>
first, so every token of the text is predicted; SmolLM2's puts nothing, so its first token has nothing to be
predicted from and is not scored (its bytes count for nothing). Bits per character divide by the characters
scored (a character partly covered by that first token counts by its share of bytes).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from model.decoding.loading import LoadedModel, available_models
from model.decoding.records import SamplingConfig, TokenInfo
from model.decoding.session import MAX_PROMPT_TOKENS, DecodeSession, encode_prompt
from model.decoding.tokens import token_bytes
from model.errors import SessionError
from model.inside.teacher_forcing import score_text, scored_ids
from model.decoding.core import computation

LN2 = math.log(2)
MAX_CHARS = 200  # a text to score: a sentence or two, drawn one bar per character
# Scoring keeps the logits of every position, and teacher forcing makes a few (T, V) copies of them: bound the
# cells (positions x vocabulary) as the lens does. Gemma's 262,144-token vocabulary allows 183 tokens, SmolLM2's 976.
MAX_CELLS = 48_000_000
DISAGREEMENTS = 5  # the stretches of text named where the two models disagree most
MAX_STEPS = 48  # tokens a continuation may take


@dataclass
class CharReading:
    """One model's reading of a text, per token and per character.

    Token j covers bytes spans[j] = [b0, b1) of the text's UTF-8; its surprisal is spread evenly over them.
    """

    model: str
    start: list[TokenInfo]  # the tokens the model reads before the text (Gemma: [<bos>]; SmolLM2: none)
    tokens: list[TokenInfo]  # the text's own tokens
    logprobs: list[float | None]  # per text token, ln P(token | everything before it), nats; None: not scored
    spans: list[tuple[int, int]]  # per text token, its bytes [b0, b1) in the text's UTF-8
    char_bits: np.ndarray  # (C,) float64: each character's surprisal, bits (its bytes' shares)
    char_scored: np.ndarray  # (C,) float64 in [0, 1]: the share of each character's bytes that scored tokens cover
    ms: float  # wall time: the pass (waits at the model's scheduler included) and the arithmetic

    @property
    def scored(self) -> int:
        """Tokens scored (all of the text's after a start token; all but the first without one)."""
        return sum(lp is not None for lp in self.logprobs)

    @property
    def logprob(self) -> float:
        """The text's log P in nats: the sum over its scored tokens (given the start token, or the first token)."""
        return float(sum(lp for lp in self.logprobs if lp is not None))

    @property
    def bits(self) -> float:
        """-log2 P of the text: the sum of char_bits."""
        return -self.logprob / LN2

    @property
    def perplexity(self) -> float:
        """Per token: exp(mean surprisal in nats). Not comparable across tokenizers (their tokens differ)."""
        return math.exp(-self.logprob / self.scored)

    @property
    def characters_scored(self) -> float:
        return float(self.char_scored.sum())

    @property
    def bits_per_char(self) -> float:
        """Bits per character scored: comparable across tokenizers, since both read the same characters."""
        return self.bits / self.characters_scored


@dataclass
class Disagreement:
    """A stretch of the text that starts and ends on a token boundary of both models, so each one's surprisal over
    it is the exact sum of its own tokens there (no spreading): chars [start, end) of the text."""

    start: int
    end: int
    text: str
    bits: tuple[float, ...]  # per model, in the readings' order

    @property
    def gap(self) -> float:
        """First model's bits minus the second's: > 0 where the first is more surprised."""
        return self.bits[0] - self.bits[1]


@dataclass
class TwoReadings:
    """A text read by each installed model (one or two), and where the two disagree most (largest gap first)."""

    text: str
    readings: list[CharReading]
    disagreements: list[Disagreement]


def check_text(text) -> str:
    """The text, or a refusal (the Score any text view's words: it is a text to score)."""
    if not isinstance(text, str) or not text.strip():
        raise SessionError("score_empty")
    if len(text) > MAX_CHARS:
        raise SessionError("score_too_long", n=len(text), limit=MAX_CHARS)
    return text


def char_of_byte(text: str) -> np.ndarray:
    """(bytes,) int: the index of the character each byte of the text's UTF-8 belongs to."""
    return np.repeat(np.arange(len(text)), [len(ch.encode("utf-8")) for ch in text])


@computation
def read_text(lm: LoadedModel, text: str) -> CharReading:
    """The text through one model in one teacher-forced pass (score_text: in chunks, turns at the scheduler), each token's surprisal
    spread over the characters its bytes overlap."""
    t0 = time.perf_counter()
    scored = score_text(lm, check_text(text), max_tokens=most_tokens(lm))
    special = lm.tokens.special_ids
    lead = next((i for i, tok in enumerate(scored.tokens) if tok.id not in special), len(scored.tokens))
    start, tokens = scored.tokens[:lead], scored.tokens[lead:]
    raws = [token_bytes(tok) for tok in tokens]
    if b"".join(raws) != text.encode("utf-8"):  # the spans would not be the text's bytes
        raise SessionError("two_models_unaligned", model=lm.name)
    # positions[k - 1] scores token k of the whole sequence (start tokens included); token 0 has no prediction
    logprobs = [None if lead + j == 0 else scored.positions[lead + j - 1].logprob for j in range(len(tokens))]
    owner = char_of_byte(text)
    width = np.bincount(owner, minlength=len(text))  # bytes per character
    char_bits, covered = np.zeros(len(text)), np.zeros(len(text))
    spans, at = [], 0
    for raw, lp in zip(raws, logprobs):
        b0, b1 = at, at + len(raw)
        spans.append((b0, b1))
        at = b1
        if lp is None:
            continue
        chars = owner[b0:b1] if b1 > b0 else owner[min(b0, len(owner) - 1):][:1]  # an empty token: the next char
        np.add.at(char_bits, chars, -lp / LN2 / len(chars))
        np.add.at(covered, chars, 1.0)
    return CharReading(lm.name, start, tokens, logprobs, spans, char_bits, np.minimum(covered / width, 1.0),
                       (time.perf_counter() - t0) * 1000)


def boundaries(reading: CharReading, owner: np.ndarray) -> set[int]:
    """The character offsets where one of the model's tokens ends and the next begins (0 and the end included)."""
    n = len(owner)
    ends = {0, n} | {b1 for _, b1 in reading.spans}
    # a token boundary inside a character (between two byte tokens) is no character boundary
    return {int(owner[b]) if b < n else int(owner[-1]) + 1 for b in ends if b in (0, n) or owner[b] != owner[b - 1]}


def disagreements(text: str, a: CharReading, b: CharReading, most: int = DISAGREEMENTS) -> list[Disagreement]:
    """The stretches between boundaries both tokenizers share, fully scored by both, largest |gap| first."""
    owner = char_of_byte(text)
    cuts = sorted(boundaries(a, owner) & boundaries(b, owner))
    found = []
    for c0, c1 in zip(cuts, cuts[1:]):
        if min(a.char_scored[c0:c1].min(), b.char_scored[c0:c1].min()) < 1 - 1e-9:
            continue  # a model's unscored first token lies in it
        found.append(Disagreement(c0, c1, text[c0:c1], (float(a.char_bits[c0:c1].sum()),
                                                          float(b.char_bits[c0:c1].sum()))))
    return sorted(found, key=lambda d: -abs(d.gap))[:most]


def most_tokens(lm: LoadedModel) -> int:
    """The tokens a text may have to be scored on `lm`: MAX_CELLS of (positions x vocabulary)."""
    return MAX_CELLS // lm.info.vocab


def read_by_each(cores: list, text: str) -> TwoReadings:
    """`text` read by each model, in its core (core.ModelCore or core_process.ProcessCore: a whole-text run there),
    and where two disagree. The text is checked on every model before the first pass: one too long for Gemma is
    refused before SmolLM2 reads it."""
    check_text(text)
    for core in cores:
        scored_ids(core.lm, text, most_tokens(core.lm))
    readings = [core.compute(read_text, text) for core in cores]
    found = disagreements(text, *readings[:2]) if len(readings) > 1 else []
    return TwoReadings(text, readings, found)


# ---- the same prompt continued by each model ---------------------------------------------------------------------
@dataclass
class Continuation:
    """One model's continuation of the prompt, stepped as a session steps (its settings and seed)."""

    model: str
    prompt_tokens: int  # the prompt as this model reads it (start token included)
    tokens: list[TokenInfo]  # the tokens it wrote
    text: str  # their decoded text
    logprob_t1: float  # ln P of the tokens written under the model's own distribution (T = 1, nothing cut)
    ended: bool  # it wrote an end-of-text token
    ms: float


def continue_text(session: DecodeSession, prompt: str, cfg: SamplingConfig, steps: int) -> Continuation:
    """`prompt` continued by up to `steps` tokens in a fresh session of its model: its normal prefill and steps (the
    scheduler; a session of the registry's shares its model's core), the same settings and seed as any session."""
    check_continuation(session.lm, prompt, cfg, steps, session.max_prompt_tokens)
    t0 = time.perf_counter()
    session.start(prompt, chat=False)
    while len(session.steps) < steps and not session.finished and len(session.ids) < session.max_tokens:
        session.step(cfg)
    return Continuation(session.lm.name, session.prompt_len, [s.token for s in session.steps], session.text,
                        session.logprob_t1(), session.finished, (time.perf_counter() - t0) * 1000)


def check_continuation(lm: LoadedModel, prompt: str, cfg: SamplingConfig, steps: int,
                       max_prompt_tokens: int = MAX_PROMPT_TOKENS) -> None:
    """Everything continue_text refuses, refused with no pass: the settings, the steps, the prompt on `lm` (its
    tokens within a session's bound). A caller continuing on several models checks each before the first pass."""
    cfg.validate()
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise SessionError("two_models_steps_range", value=steps, high=MAX_STEPS)
    encode_prompt(lm, prompt, chat=False, max_prompt_tokens=max_prompt_tokens)


PAIR = ("smollm2", "gemma3-270m")  # the two packaged models, in the order the view shows them


def installed_pair() -> tuple[list[str], list[str]]:
    """(the packaged models installed here, the ones that are not), each in PAIR's order."""
    here = set(available_models())
    return [m for m in PAIR if m in here], [m for m in PAIR if m not in here]
