"""Speculative decoding read from the engine: one greedy request over the session's text, streamed, with vLLM's
own drafted / accepted counts per verifying step (EngineClient.speculative_completion), beside this app's own
round-by-round prompt lookup on the local model of the same family when the app has it loaded.

Where the two must agree: both are greedy, so each writes its model's own greedy continuation whatever its drafts
(a draft is kept only where it is the argmax). Where they may differ: the engine's n-gram window
(prompt_lookup_min/max) and its number of drafts per step (num_speculative_tokens) are the operator's flags, not the
page's slider; vLLM matches the longest n-gram, this app the first occurrence of its n-gram (transformers' choice).
"""
from __future__ import annotations

from dataclasses import dataclass

from model.vllm.client import EngineSpecRun
from model.errors import SessionError
from model.parse import whole_in_range
from model.speed.speculative import GREEDY, MAX_DRAFT, speculative_decode
from model.speed.speculative_records import SpeculativeRun

SHAPE = ("layers", "heads", "kv_heads", "head_dim", "hidden", "vocab")  # ModelInfo fields a twin must share


@dataclass
class EngineSpecComparison:
    """The engine's speculative run over a text, and the app's own on the local twin (None when not loaded)."""

    engine: EngineSpecRun
    engine_name: str  # the picker's name of the engine's model
    local: SpeculativeRun | None  # the app's prompt lookup, greedy, on the same ids and as many tokens
    local_name: str | None  # the local model's name (None: no twin loaded)
    tokens: list  # TokenInfo of each token the engine wrote, for the page's text
    text: str  # what the engine wrote, decoded

    @property
    def agree(self) -> int | None:
        """Leading generated tokens the two have in common (None without a local run)."""
        if self.local is None:
            return None
        n = 0
        for a, b in zip(self.engine.generated, self.local.generated):
            if a != b:
                break
            n += 1
        return n

    @property
    def compared(self) -> int | None:
        """Tokens both wrote (the shorter of the two), over which `agree` counts (None without a local run)."""
        return None if self.local is None else min(len(self.engine.generated), len(self.local.generated))


def is_twin(engine_lm, local_lm) -> bool:
    """True when `local_lm` is the engine's model here: the same shape (ModelInfo) and the same tokenizer
    vocabulary, so the same ids mean the same text and greedy decoding writes the same tokens."""
    if getattr(local_lm, "model", None) is None:
        return False
    a, b = engine_lm.info, local_lm.info
    if any(getattr(a, f) != getattr(b, f) for f in SHAPE):
        return False
    return engine_lm.tokenizer.get_vocab() == local_lm.tokenizer.get_vocab()


def engine_text(session) -> tuple[list[int], int, bool]:
    """The session's ids, the room left in it (tokens) and whether its text ended, read together."""
    with session.reading():
        session._require_started()
        ids = list(session.ids)
        return ids, max(min(session.max_tokens, session.lm.info.context) - len(ids), 0), session.finished


def engine_speculate(session, max_new_tokens: int, twin=None, draft_len: int = 4) -> EngineSpecComparison:
    """The engine's greedy speculative continuation of the session's text (`max_new_tokens` at most, fewer if the
    text has less room), and, when `twin` (the core of a loaded local model, is_twin) is given, the app's own
    speculative run on it at `draft_len` drafts per round over the same ids. The session is only read: a fault of the engine is
    its keyed SessionError and changes nothing."""
    ids, room, ended = engine_text(session)
    if ended:
        raise SessionError("text_ended")
    if room < 1:
        raise SessionError("engine_context", limit=session.lm.info.context)
    n = min(int(max_new_tokens), room)
    if twin is not None:  # the local run's own bound, checked before the engine's request (not after it)
        whole_in_range(draft_len, 1, MAX_DRAFT, "spec_draft_len_range")
    run = session.lm.client.speculative_completion(ids, n)
    local = twin.compute(speculative_decode, ids, GREEDY, draft_len, max_new_tokens=n) if twin is not None else None
    tokens = [session.lm.tokens.info(i) for i in run.generated]
    return EngineSpecComparison(run, session.lm.name, local, twin.lm.name if twin is not None else None, tokens,
                                session.lm.tokens.text(list(run.generated)))
