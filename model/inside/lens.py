"""The logit lens: every layer's residual stream read as if it were the last one.

One forward pass over the text with output_hidden_states=True gives the residual stream after the embeddings and
after each decoder layer. Each of those, put through the model's final norm and its LM head (the unembedding), is
a distribution over the vocabulary: the layer's "guess" at the next token. The last layer's is the model's real
output. The other layers were never trained to be read this way: a lens shows where in the stack the final answer
becomes readable, not what a layer "thinks".
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from model.errors import SessionError
from model.parse import one_token
from model.decoding.loading import LoadedModel
from model.decoding.records import TokenInfo
from model.decoding.sampling import derive
from model.decoding.passes import prefill
from model.decoding.threads import one_core
from model.decoding.session import MAX_TOKENS
from model.decoding.core import computation

LENS_WINDOW = 48  # positions read (the last ones), as many as the attention view shows
LENS_MAX_TOKENS = MAX_TOKENS  # the longest text one lens pass takes: a session's own limit
# The readings' work, positions x (layers + 1) x vocabulary (a softmax over every token of every cell): SmolLM2's
# whole window (48 x 31 x 49,152 = 73M) fits; Gemma 3 270M's 262,144-token vocabulary allows 15 positions
# (48 would be 239M: 13 s of one core here, while the class's steps want it too).
LENS_MAX_CELLS = 75_000_000
MAX_PINS = 8  # pinned tokens charted at once: a line each, still told apart
OWN_PINS = 3  # the pins a lens starts with: the model's own most probable next tokens (own_candidates)
PIN_CHARS = 400  # the pins' text: 8 tokens and their commas fit many times over


def lens_positions(lm: LoadedModel, window: int) -> int:
    """The positions a lens of `window` reads on this model: the window, or fewer if its readings would pass
    LENS_MAX_CELLS (at least one)."""
    per_position = (lm.info.layers + 1) * lm.info.vocab
    return max(1, min(window, LENS_MAX_CELLS // per_position))


@dataclass
class LogitLens:
    """Layer x position readings of one text. Row 0 is the embeddings, row l (1..layers) decoder layer l's output.

    Column j is position start + j of the text; the lens there predicts the token at start + j + 1.
    """

    tokens: list[TokenInfo]  # the input token at each position shown (W,)
    start: int  # the first position shown (0-based, in the whole text)
    targets: list[TokenInfo]  # per position, the token compared: the next token of the text; at the last position
    #                           (no next token yet) the final layer's top token
    target_is_next: list[bool]  # (W,) True where the target is the text's own next token
    top_ids: np.ndarray  # (layers + 1, W) int64: the most probable token of each layer's reading
    top_tokens: list[list[TokenInfo]]  # the same, as tokens
    top_prob: np.ndarray  # (layers + 1, W) float32: its probability, in [0, 1]
    target_prob: np.ndarray  # (layers + 1, W) float32: the target's probability under each layer's reading
    target_rank: np.ndarray  # (layers + 1, W) int64: the target's rank (1 = top) under each layer's reading
    final_max_abs_diff: float  # the last layer's lens against the model's own logits, max |difference|
    ms: float  # wall time of the passes and the readings (waits at the model's scheduler included)
    asked: int | None = None  # the positions asked for; more than shown when LENS_MAX_CELLS bounded the readings
    # The commitment strip: per position, the first layer from which the target stays every reading's top token
    # (-1: the last layer's top is another token, so it never does: a sampled token the model did not rank first)
    committed: np.ndarray | None = None  # (W,) int64, a row of top_ids (0 = the embeddings)
    # per position whose target is a generated token: whether that step's own u (its settings and seed) draws the
    # target from the committed layer's reading; None where there is no step (a prompt token, the last position)
    # or no committed layer
    drawn_at_commit: list[bool | None] | None = None
    # the residual stream at the positions read, (layers + 1, W, d) float32, the last row already normed: what the
    # pinned tokens' probabilities are read from (pinned_probs), without a second pass or a kept (W, V) per layer
    hidden: torch.Tensor | None = None

    @property
    def layers(self) -> int:
        """Decoder layers (rows minus the embeddings)."""
        return self.top_prob.shape[0] - 1


def lens_logits(model, hidden: torch.Tensor, normed: bool = False) -> torch.Tensor:
    """(..., d) residual stream -> (..., V) logits: the final norm (unless already `normed`), the LM head, and the
    final logit soft-capping if the model has one (Gemma 2 does; SmolLM2 and Gemma 3 270M have none)."""
    x = hidden if normed else model.model.norm(hidden)
    logits = model.lm_head(x)  # SmolLM2's is tied to its embedding matrix: the same weights, read back
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def commitment(top_ids: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """(layers + 1, W) top tokens, (W,) targets -> (W,) the first row from which every row's top is the target,
    -1 where the last row's is not."""
    agree = top_ids == targets[None, :]  # (L + 1, W)
    tail = np.flip(np.cumprod(np.flip(agree, 0), 0), 0).astype(bool)  # row r: agree at r and every row after it
    first = tail.argmax(0)
    return np.where(tail[-1], first, -1).astype(np.int64)


def check_lens_text(ids: list[int], window: int) -> None:
    """Refuse a lens the bounds do not allow: positions 1..LENS_WINDOW, a text of 1..LENS_MAX_TOKENS tokens."""
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= LENS_WINDOW:
        raise SessionError("lens_window_range", value=window, high=LENS_WINDOW)
    if not ids:
        raise SessionError("not_started")
    if len(ids) > LENS_MAX_TOKENS:
        raise SessionError("lens_too_long", n=len(ids), limit=LENS_MAX_TOKENS)


@computation
@torch.no_grad()
def logit_lens(lm: LoadedModel, ids: list[int], window: int = LENS_WINDOW, settings: dict | None = None) -> LogitLens:
    """The logit lens of the last `window` positions of `ids`, from one prefill with output_hidden_states=True.

    The passes go through the model's scheduler (passes.prefill: in chunks, decode steps first); the readings, a
    softmax over the whole vocabulary per layer, run after it on one core, holding nothing.
    transformers hands back num_layers + 1 hidden states: the embeddings (Gemma's already scaled by sqrt(d)), then
    each decoder layer's output, the last one with the final norm already applied: it goes to the LM head as it is,
    so that row is the model's real output.
    settings: position of each generated token -> its step's SamplingConfig (WholeText.settings), for the
    commitment strip's draw: the step's pipeline and u (derive) on the committed layer's reading.
    """
    check_lens_text(ids, window)
    model = lm.model
    n = len(ids)
    start = max(0, n - lens_positions(lm, window))
    t0 = time.perf_counter()
    done = prefill(model, ids, keep=n - start, hidden_from=start)
    states = done.hidden  # (layers + 1) x (W, d)
    with one_core():
        final = lens_logits(model, states[-1], normed=True).float()  # (W, V)
        final_diff = float((final - done.logits.float()).abs().max())
        target = torch.tensor(ids[start + 1:] + [int(final[-1].argmax())])  # (W,)
        tops, top_ps, target_p, target_rank = [], [], [], []
        for layer, h in enumerate(states):  # one layer's (W, V) at a time: Gemma's 262k-token vocabulary is large
            logits = final if layer == len(states) - 1 else lens_logits(model, h).float()
            probs = torch.softmax(logits, -1)  # over the whole vocabulary
            top_p, top = probs.max(-1)  # (W,)
            tops.append(top)
            top_ps.append(top_p)
            target_p.append(probs.gather(1, target[:, None])[:, 0])
            # tokens with a strictly higher logit, plus one: on logits, not probabilities, which underflow to 0
            # in the early layers and would stop counting the tokens above a target at probability 0
            target_rank.append((logits > logits.gather(1, target[:, None])).sum(1) + 1)
        top_ids = torch.stack(tops).numpy()
        committed = commitment(top_ids, target.numpy())
        drawn = [_drawn_at(lm, states, ids, start + c + 1, int(committed[c]), (settings or {}).get(start + c + 1))
                 for c in range(n - start - 1)] + [None]  # the last position: no step chose its target yet
    ms = (time.perf_counter() - t0) * 1000
    info = lm.tokens.info
    return LogitLens(
        tokens=[info(i) for i in ids[start:]],
        start=start,
        targets=[info(int(i)) for i in target],
        target_is_next=[True] * (n - start - 1) + [False],
        top_ids=top_ids,
        top_tokens=[[info(int(i)) for i in row] for row in top_ids],
        top_prob=torch.stack(top_ps).numpy(),
        target_prob=torch.stack(target_p).numpy(),
        target_rank=torch.stack(target_rank).numpy(),
        final_max_abs_diff=final_diff,
        ms=ms,
        asked=window,
        committed=committed,
        drawn_at_commit=drawn,
        hidden=torch.stack([h.float() for h in states]),
    )


def pin_ids(lm: LoadedModel, text) -> list[int]:
    """The tokens typed to pin, comma-separated, each exactly one token of lm's vocabulary as typed (a leading space
    counts: " Paris"); empty entries skipped, repeats kept once, at most MAX_PINS. Refused, naming the entry and how
    it tokenizes (model.parse.one_token), before anything runs."""
    if text is None:
        return []
    if not isinstance(text, str) or len(text) > PIN_CHARS:
        raise SessionError("lens_pins_too_long", limit=PIN_CHARS)
    ids: list[int] = []
    for entry in text.split(","):
        if entry.strip() == "":
            continue
        i = one_token(lm, entry, "lens_pin_tokens", "lens_pin_invalid_text")
        if i not in ids:
            ids.append(i)
    if len(ids) > MAX_PINS:
        raise SessionError("lens_pins_too_many", n=len(ids), limit=MAX_PINS)
    return ids


@computation
@torch.no_grad()
def own_candidates(lm: LoadedModel, lens: LogitLens, n: int = OWN_PINS) -> str:
    """The pins a lens starts with, as the pins' text (pin_ids reads it back): the model's own most probable next
    tokens at the lens's last position, i.e. the last layer's reading there (the model's output at T = 1), most
    probable first, at most `n`. Each is written as the text that is exactly that one token ("␣Paris"); a token no
    text is (a byte of a character), one that is only spaces, or one with a comma (the pins' separator) is passed
    over. From the kept hidden states: one LM head row, no pass."""
    with one_core():
        logits = lens_logits(lm.model, lens.hidden[-1, -1:], normed=True).float()[0]  # (V,)
    texts: list[str] = []
    for i in torch.topk(logits, min(64, logits.shape[0])).indices.tolist():
        text = lm.tokenizer.convert_tokens_to_string([lm.tokens.info(i).piece])
        if text.strip() and "," not in text and lm.tokenizer(text, add_special_tokens=False)["input_ids"] == [i]:
            texts.append(text)
        if len(texts) == n:
            break
    return ",".join(texts)


def lens_column(lens: LogitLens, position) -> int:
    """The column of the lens at a position of the text (start .. start + W - 1), or SessionError."""
    n = len(lens.tokens)
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position - lens.start < n:
        raise SessionError("lens_position_range", value=position, low=lens.start, high=lens.start + n - 1)
    return position - lens.start


@computation
@torch.no_grad()
def pinned_probs(lm: LoadedModel, lens: LogitLens, ids: list[int], column: int) -> np.ndarray:
    """(layers + 1, len(ids)) float32: each layer's lens probability of each token at one column of the lens, read
    from its kept hidden states (the final norm, the LM head, a softmax over the whole vocabulary): (layers + 1) x V
    of work, one core, outside the model's scheduler, as the lens's own readings."""
    states = lens.hidden[:, column]  # (layers + 1, d)
    with one_core():  # one LM head over every layer's row at once: the (V, d) weights read once, not per layer
        x = torch.cat([lm.model.model.norm(states[:-1]), states[-1:]])  # the last row is already normed
        probs = torch.softmax(lens_logits(lm.model, x, normed=True).float(), -1)[:, ids]
    return probs.numpy()


def _drawn_at(lm: LoadedModel, states, ids: list[int], position: int, layer: int, cfg) -> bool | None:
    """Whether the step that chose ids[position] (its settings `cfg` and their u) draws it from the lens's reading at
    `layer`: the session's own pipeline (derive) on that reading. None without a step or a committed layer."""
    if cfg is None or layer < 0:
        return None
    column = position - 1 - (len(ids) - states[0].shape[0])  # the hidden states' column of the position before
    logits = lens_logits(lm.model, states[layer][column], normed=layer == len(states) - 1).float()
    dist = derive(logits, torch.tensor([ids[:position]]), cfg, position, lm.tokens, top_n=1)
    return dist.chosen.id == ids[position]
