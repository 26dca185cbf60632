"""A session that takes over a text another session wrote: a room's follower exploring from the teacher's step.

The records are shared, not copied (they are never changed: a step appends a new one); the cache is rebuilt by
one prefill of the ids instead of one pass per step (a replay).
"""
from __future__ import annotations

import torch

from .records import PrefillRecord, StepRecord
from .session import DecodeSession


@torch.no_grad()
def take_text(fresh: DecodeSession, prefill: PrefillRecord, steps: list[StepRecord], ids: list[int]) -> DecodeSession:
    """`fresh` (a new session on the text's model) holding the text of `prefill` and `steps` (`ids`: its token
    ids, prompt and generated). One prefill of the ids rebuilds the cache; its logits at the prompt's end and at
    the last token are the two a session keeps (back to the prompt, and the next token).

    Here, beside DecodeSession, because it sets the session's own state, which has no public way to take records
    it did not make (model/session.py is kept as it is).
    """
    prompt_len = len(prefill.tokens)
    cache, out, _ = fresh._prefill(list(ids), logits_to_keep=len(ids) - prompt_len + 1)
    fresh.prefill, fresh.steps, fresh.ids, fresh._cache = prefill, list(steps), list(ids), cache
    fresh._prefill_logits, fresh._next_logits = out.logits[0, 0].clone(), out.logits[0, -1].clone()
    return fresh
