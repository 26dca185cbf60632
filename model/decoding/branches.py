"""Branches: the continuations a session keeps when the user goes back and steps differently.

Going back does not throw the cut steps away at once: they wait as the *pending* continuation. Stepping again the
same way (same token, same settings) walks along it; stepping differently (a forced token, another seed, other
settings) keeps it as a Branch and starts a new one from the fork. A branch that is not the current text is
records only (token ids, StepRecords, the logits after its last token), never a cache: choosing it again prefills
its ids once, and every view of it (candidates, attention, KV) reads the very StepRecords it had.

Also here, because it reads the same ids: repeated_ngrams(), the stretches of a text that repeat an earlier n-gram.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.errors import SessionError
from model.decoding.records import StepRecord

MAX_BRANCHES = 16  # texts one session keeps per prompt, the current one included
REPEAT_MIN_N = 3  # a repeated stretch is at least this many tokens


@dataclass
class Branch:
    """One continuation of the prompt, kept whole from step 1 (its prefix records are shared with its parent)."""

    id: int  # 0 = the first text of this prompt; a new branch takes the next free number
    parent: int | None  # the branch it split from (None for the first)
    fork: int  # generated steps it shares with its parent; it differs from step fork + 1 on
    ids: list[int]  # prompt + generated token ids
    steps: list[StepRecord]  # every generated step, 1..len
    next_logits: torch.Tensor | None = None  # (V,) the logits after its last token, so its next chart is the same
    answers: list | None = None  # what its backend keeps along it (an engine's answer after each prefix): None for a
    # local model (choosing it again prefills its ids); an engine's branch asks the engine nothing again

    @property
    def length(self) -> int:
        """Generated tokens."""
        return len(self.steps)

    @property
    def logprob_t1(self) -> float:
        """Natural log-probability of its generated tokens under the model's T = 1 distribution (their sum)."""
        return float(sum(s.distribution.chosen_logprob_t1 for s in self.steps))


@dataclass
class BranchSummary:
    """What the tree shows of one branch."""

    id: int
    parent: int | None
    fork: int
    length: int
    logprob_t1: float
    current: bool
    text: str  # its generated text
    own_bytes: int  # attention + logits bytes held by this branch alone (not shared with another text)
    at: int  # steps on the page now: the current text after going back stands before its end; others, their length


class BranchBook:
    """The kept (not current) branches of one session, the current text's place in the tree, and the pending
    continuation cut by the last going back."""

    def __init__(self, limit: int = MAX_BRANCHES):
        self.limit = limit
        self.kept: dict[int, Branch] = {}
        self.current_id, self.current_parent, self.current_fork = 0, None, 0
        self.pending: Branch | None = None  # the whole text before going back, while the new one follows it
        self._next_id = 1

    def clear(self) -> None:
        """A new prompt: a new tree."""
        self.__init__(self.limit)

    @property
    def count(self) -> int:
        """Texts in the tree, the current one included."""
        return len(self.kept) + 1

    def cut(self, steps: list[StepRecord], ids: list[int], next_logits: torch.Tensor, answers: list | None = None) -> None:
        """The current text is about to lose its last steps (going back): remember it whole, unless a longer
        version of it is already pending (going back twice keeps the first, longer one)."""
        if self.pending is None:
            self.pending = self.leave(steps, ids, next_logits, answers)

    def diverges(self, at: int, token: int, config, forced: bool) -> bool:
        """Whether a step at generated index `at` (0-based) with this token and settings leaves the pending text."""
        p = self.pending
        if p is None or at >= p.length:
            return False
        old = p.steps[at].distribution
        return (old.chosen.id, old.config, old.forced) != (token, config, forced)

    def check_room(self, at: int, token: int, config, forced: bool) -> None:
        """Refuse a step that would keep one branch more than the limit, before any pass is run."""
        if self.diverges(at, token, config, forced) and self.count >= self.limit:
            raise SessionError("branch_limit", limit=self.limit)

    def stepped(self, at: int, token: int, config, forced: bool) -> None:
        """After a step at index `at`: keep the pending text as a branch if the step left it; forget it once the
        new text has walked past its end."""
        p = self.pending
        if p is None:
            return
        if self.diverges(at, token, config, forced):
            self.kept[p.id] = p
            self.current_id, self.current_parent, self.current_fork = self._next_id, p.id, at
            self._next_id += 1
            self.pending = None
        elif at + 1 >= p.length:
            self.pending = None  # the new text holds all of it (the same tokens, the same settings)

    def leave(self, steps: list[StepRecord], ids: list[int], next_logits: torch.Tensor,
              answers: list | None = None) -> Branch:
        """The current text as a Branch record, to keep when another is chosen (its pending whole, if any)."""
        if self.pending is not None:
            return self.pending
        return Branch(self.current_id, self.current_parent, self.current_fork, list(ids), list(steps), next_logits,
                      None if answers is None else list(answers))

    def get(self, branch_id) -> Branch:
        """A kept branch, or SessionError if there is none by that number (the current one is not 'kept')."""
        if isinstance(branch_id, bool) or not isinstance(branch_id, int) or branch_id not in self.kept:
            raise SessionError("branch_missing", branch=branch_id)
        return self.kept[branch_id]

    def switch(self, chosen: Branch, leaving: Branch) -> None:
        """`chosen` becomes the current text and `leaving` is kept in its place."""
        del self.kept[chosen.id]
        self.kept[leaving.id] = leaving
        self.current_id, self.current_parent, self.current_fork = chosen.id, chosen.parent, chosen.fork
        self.pending = None

    def delete(self, branch_id) -> None:
        """Forget a kept branch; its children now hang from its parent, at the shorter of the two forks."""
        gone = self.get(branch_id)
        del self.kept[gone.id]
        for b in [*self.kept.values(), *( [self.pending] if self.pending else [])]:
            if b.parent == gone.id:
                b.parent, b.fork = gone.parent, min(b.fork, gone.fork)
        if self.current_parent == gone.id:
            self.current_parent, self.current_fork = gone.parent, min(self.current_fork, gone.fork)

    def place(self, current_id: int, parent: int | None, fork: int) -> None:
        """Set the current text's place in the tree (a replayed trace): its number, parent and fork."""
        self.current_id, self.current_parent, self.current_fork = current_id, parent, fork
        if self.pending is not None:
            self.pending.id, self.pending.parent, self.pending.fork = current_id, parent, fork
        self._next_id = max([current_id, *self.kept]) + 1

    def adopt(self, other: "BranchBook") -> None:
        self.__dict__.update({k: (dict(v) if isinstance(v, dict) else v) for k, v in other.__dict__.items()})


def branch_summaries(book: BranchBook, current: Branch, text_of, at: int | None = None) -> list[BranchSummary]:
    """Every text of the tree (kept ones and the current `current`, shown up to step `at`), by id; own_bytes counts
    arrays no other holds."""
    texts = sorted([*book.kept.values(), current], key=lambda b: b.id)
    holders: dict[int, int] = {}
    for b in texts:
        for s in b.steps:
            holders[id(s)] = holders.get(id(s), 0) + 1
    out = []
    for b in texts:
        own = sum(_attention_bytes(s) for s in b.steps if holders[id(s)] == 1)
        own += 0 if b.next_logits is None else b.next_logits.numel() * b.next_logits.element_size()
        out.append(BranchSummary(b.id, b.parent, b.fork, b.length, b.logprob_t1, b is current,
                                 text_of(b.ids[len(b.ids) - b.length:]), own,
                                 at if b is current and at is not None else b.length))
    return out


def branch_bytes(book: BranchBook, current: Branch) -> int:
    """Bytes the whole tree holds in attention rows and logits, each array counted once."""
    seen, total = set(), 0
    for b in [*book.kept.values(), current]:
        for s in b.steps:
            if id(s) not in seen:
                seen.add(id(s))
                total += _attention_bytes(s)
        if b.next_logits is not None:
            total += b.next_logits.numel() * b.next_logits.element_size()
    return total


def _attention_bytes(step: StepRecord) -> int:
    """A step's attention row in bytes (0 on an engine's model: it sends none)."""
    return 0 if step.attention is None else step.attention.nbytes


# ---- repetition -------------------------------------------------------------------------------------------
@dataclass
class Repeat:
    """A stretch of generated tokens each of whose n-grams appeared earlier in the text (prompt included)."""

    start: int  # first position (index into ids) of the stretch
    end: int  # one past its last position
    source: int  # where its first n-gram appeared first
    n: int  # the n-gram length the search used

    @property
    def length(self) -> int:
        return self.end - self.start


def repeated_ngrams(ids: list[int], start: int = 0, n: int = REPEAT_MIN_N) -> list[Repeat]:
    """Maximal stretches of ids[start:] made of n-grams (n >= 3) that occurred earlier, anywhere before them.

    An n-gram at position i counts if the same n ids begin at some j < i (they may overlap: "a a a a" repeats).
    Overlapping hits merge into one stretch. Pure: no model, no tokenizer.
    """
    if n < REPEAT_MIN_N:
        raise ValueError(f"n must be at least {REPEAT_MIN_N}, got {n}")
    first: dict[tuple[int, ...], int] = {}
    hits: list[tuple[int, int]] = []  # (position, where it was first)
    for i in range(len(ids) - n + 1):
        gram = tuple(ids[i : i + n])
        if gram in first:
            if i >= start:
                hits.append((i, first[gram]))
        else:
            first[gram] = i
    out: list[Repeat] = []
    for i, src in hits:
        if out and i <= out[-1].end:
            out[-1].end = max(out[-1].end, i + n)
        else:
            out.append(Repeat(i, i + n, src, n))
    return out


def repeated_mask(ids: list[int], start: int = 0, n: int = REPEAT_MIN_N) -> np.ndarray:
    """(len(ids),) bool: True where a token lies in a repeated stretch."""
    mask = np.zeros(len(ids), bool)
    for r in repeated_ngrams(ids, start, n):
        mask[r.start : r.end] = True
    return mask
