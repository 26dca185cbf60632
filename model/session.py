"""One user's decode session: token ids, a DynamicCache, and a record of every step.

prefill -> (preview / step / step with a forced token / back / reset)*. The model is shared and
read-only; everything here belongs to one user. Computing the next token's pass ahead is in lookahead.py
(LookAhead, which DecodeSession mixes in); cutting the cache back and snapshotting it in cache_surgery.py.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import replace

import torch
from transformers import DynamicCache

from .batcher import StepBatcher, forward_one, model_lock
from .branches import Branch, BranchBook, BranchSummary, branch_bytes, branch_summaries
from .cache_surgery import crop_to, restore, snapshot
from .errors import SessionBusy, SessionError
from .kv import kv_bytes
from .loading import LoadedModel
from .lookahead import LookAhead
from .records import Distribution, PrefillRecord, SamplingConfig, StepRecord, TemperatureSweep, Timings
from .sampling import derive, temperature_sweep

MAX_PROMPT_CHARS = 4000  # checked before tokenizing, so a huge paste is refused at once
MAX_PROMPT_TOKENS = 448
MAX_TOKENS = 512  # prompt + generated: bounds one session's memory (attention rows grow as t^2)


class DecodeSession(LookAhead):
    """Stepwise decoding on a shared model, recording everything the views draw."""

    def __init__(self, lm: LoadedModel, max_prompt_tokens: int = MAX_PROMPT_TOKENS, max_tokens: int = MAX_TOKENS,
                 batcher: StepBatcher | None = None):
        self.lm = lm
        self.batcher = batcher  # shares forward passes with other sessions (a server); None: run alone
        self.max_prompt_tokens = max_prompt_tokens
        self.max_tokens = max_tokens
        self._lock = threading.RLock()  # re-entrant: step() reads through preview() while holding it
        self.prefill: PrefillRecord | None = None
        self.steps: list[StepRecord] = []
        self.ids: list[int] = []
        self._cache: DynamicCache | None = None
        self._next_logits: torch.Tensor | None = None  # (V,) logits for the next position
        self._prefill_logits: torch.Tensor | None = None  # kept so going back to the prompt recomputes nothing
        self._replay: list[tuple[SamplingConfig, int, bool]] = []  # a loaded trace's steps still to play back
        self._preview_memo: list[tuple[tuple, Distribution]] = []  # preview()'s last answers (this position, ahead)
        self._ahead = None  # LookAhead's prefetched pass; while its job runs, the worker owns the cache
        self.prefetch_hits = 0  # prefetches a step used
        self.prefetch_misses = 0  # prefetches thrown away (another token, back, a new prompt, a failed pass)
        self.branches = BranchBook()  # continuations kept when going back and stepping differently (branches.py)

    # ---- state -------------------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self.prefill is not None

    @property
    def prompt_len(self) -> int:
        return len(self.prefill.tokens) if self.prefill else 0

    @property
    def text(self) -> str:
        """The generated text so far (the prompt not included)."""
        return self.lm.tokens.text(self.ids[self.prompt_len :])

    @property
    def next_logits(self) -> torch.Tensor:
        """(V,) raw logits for the next position, from the last forward pass (a copy)."""
        self._require_started()
        return self._next_logits.clone()

    @property
    def finished(self) -> bool:
        """True when the last token ended the text (an end-of-sequence token)."""
        return bool(self.steps) and self.steps[-1].token.id in self._eos_ids()

    def _eos_ids(self) -> set[int]:
        eos = self.lm.model.generation_config.eos_token_id
        ids = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
        return ids | ({self.lm.tokenizer.eos_token_id} - {None})

    def _locked(self):
        """Hold the session for a change; refused at once if another change is under way (a double click)."""
        if not self._lock.acquire(blocking=False):
            raise SessionBusy("session_busy_stepping")
        return _Release(self._lock)

    def reading(self, timeout: float = 10.0):
        """Hold the session while reading several things that must agree (a render); waits for a change to end."""
        if not self._lock.acquire(timeout=timeout):
            raise SessionBusy("session_busy")
        return _Release(self._lock)

    # ---- prompting ---------------------------------------------------------------------------------
    def encode_prompt(self, prompt: str, chat: bool) -> list[int]:
        """The exact token ids the model will see, or SessionError saying what is wrong with the prompt."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise SessionError("prompt_empty")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise SessionError("prompt_too_long", n=len(prompt), limit=MAX_PROMPT_CHARS)
        try:
            prompt.encode("utf-8")
        except UnicodeEncodeError:
            raise SessionError("prompt_invalid_text") from None
        tok = self.lm.tokenizer
        # Every added token marked special is one control token when typed (all_special_tokens lists only the
        # named ones: 3 of SmolLM2's 17, without <file_sep>, <jupyter_code>, <empty_output>, ...).
        special = {t.content for t in tok.added_tokens_decoder.values() if t.special} | set(tok.all_special_tokens)
        typed = [s for s in special if s and s in prompt]
        if typed:
            raise SessionError("prompt_special_token", token=min(typed, key=prompt.find))  # the first one typed
        if chat:
            if not tok.chat_template:
                raise SessionError("no_chat_template", model=self.lm.name)
            ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True)
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        else:
            ids = tok(prompt, add_special_tokens=True)["input_ids"]
        if len(ids) > self.max_prompt_tokens:
            raise SessionError("prompt_too_many_tokens", n=len(ids), limit=self.max_prompt_tokens)
        return list(ids)

    @torch.no_grad()
    def start(self, prompt: str, chat: bool = False) -> PrefillRecord:
        """Prefill a prompt in one parallel pass; the old state is replaced only if this succeeds."""
        with self._locked():
            ids = self.encode_prompt(prompt, chat)
            self._settle()  # before taking the model lock, which the prefetch's pass needs; kept if the prefill fails
            # Only the last position's logits are used: the lm head over every prompt position was 30 % of a
            # 338-token prefill (1.5 s -> 1.06 s here), and 530 MB for Gemma's 262k-token vocabulary.
            cache, out, forward_ms = self._prefill(ids, output_attentions=True, logits_to_keep=1)
            attention = torch.cat(out.attentions, 0).to(torch.float16).numpy()  # (layers, heads, P, P)
            record = PrefillRecord(
                prompt=prompt,
                chat=chat,
                tokens=[self.lm.tokens.info(i) for i in ids],
                attention=attention,
                kv=kv_bytes(cache, self.lm.info),
                timings=Timings(forward_ms),
            )
            self.prefill, self.steps, self.ids, self._cache = record, [], ids, cache
            self._replay = []
            self._next_logits = self._prefill_logits = out.logits[0, -1].clone()
            self.branches.clear()  # a new prompt starts a new tree
            return record

    @torch.no_grad()
    def _prefill(self, ids: list[int], **kwargs) -> tuple[DynamicCache, object, float]:
        """ids through the model in one parallel pass into a new cache: (cache, model output, ms)."""
        cache = DynamicCache(config=self.lm.model.config)
        with model_lock(self.batcher), all_cores():
            t0 = time.perf_counter()  # one pass at a time: the batcher's decode passes wait for the lock
            out = self.lm.model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True, **kwargs)
            return cache, out, (time.perf_counter() - t0) * 1000

    def _rebuild(self, length: int) -> torch.Tensor:
        """Recompute the cache of the first `length` ids by a prefill; returns the logits after them (V,).

        Only for a cache that cannot be cut back (see cache_surgery.crop_to): a sliding-window layer past its window has
        dropped the tokens a shorter text needs, and nothing but running the model again brings them back.
        """
        self._cache, out, _ = self._prefill(self.ids[:length], logits_to_keep=1)
        return out.logits[0, -1].clone()

    # ---- one step ----------------------------------------------------------------------------------
    def _require_started(self):
        if not self.started:
            raise SessionError("not_started")

    def preview(self, cfg: SamplingConfig, force_token: int | None = None) -> Distribution:
        """The next token's distribution under cfg, and the token it would draw. No model run.

        The last answer is kept: a step's page, its prefetch and the next step all ask for the same one.
        It is keyed by the logits tensor itself (each prefix's logits are their own tensor, held by the key).
        """
        with self.reading():
            self._require_started()
            return self._derive(self._next_logits, self.ids, cfg, force_token)

    def _derive(self, logits: torch.Tensor, ids: list[int], cfg: SamplingConfig, force_token: int | None = None):
        """derive() for the position after `ids`, remembering its last two answers (keyed by the logits tensor)."""
        key = (logits, len(ids), cfg, force_token)
        for (k, dist) in self._preview_memo:
            if k[0] is logits and k[1:] == key[1:]:
                return dist
        dist = derive(logits, torch.tensor([ids]), cfg, len(ids), self.lm.tokens, force_token)  # SessionError if invalid
        self._preview_memo = [(key, dist), *self._preview_memo[:1]]
        return dist

    def sweep(self, cfg: SamplingConfig, temperatures: list[float]) -> TemperatureSweep:
        """Entropy and nucleus size of the next token's distribution across temperatures. No model run."""
        with self.reading():
            self._require_started()
            cfg.validate()
            return temperature_sweep(self._next_logits, torch.tensor([self.ids]), cfg, temperatures)

    def step(self, cfg: SamplingConfig, force_token: int | None = None, forced: bool | None = None) -> StepRecord:
        """Choose the next token (drawn, or forced by the user), append it, and run it through the model.

        `forced` overrides the record's forced flag (a replay forces the recorded token but keeps its flag).
        A step of the user's own ends a trace's play-back. If anything fails, the session is as it was.
        """
        record = self._step(cfg, force_token, forced)
        self._replay = []
        return record

    # ---- playing back a loaded trace ---------------------------------------------------------------
    def queue_replay(self, steps: list[tuple[SamplingConfig, int, bool]]) -> None:
        """Steps (settings, token id, forced) that replay_next() will take one at a time."""
        self._replay = list(steps)

    @property
    def replay_left(self) -> int:
        return len(self._replay)

    def replay_config(self) -> SamplingConfig | None:
        """The recorded settings of the next step to play back, or None when nothing is queued."""
        return self._replay[0][0] if self._replay else None

    def replay_next(self) -> StepRecord:
        """Take the next recorded step: its token, with the settings it was taken with."""
        if not self._replay:
            raise SessionError("nothing_to_replay")
        cfg, token, forced = self._replay[0]
        record = self._step(cfg, token, forced)
        self._replay.pop(0)
        return record

    @torch.no_grad()
    def _step(self, cfg: SamplingConfig, force_token: int | None = None, forced: bool | None = None) -> StepRecord:
        with self._locked():
            self._require_started()
            if len(self.ids) >= self.max_tokens:
                raise SessionError("token_limit", limit=self.max_tokens)
            if self.finished:
                raise SessionError("text_ended")
            t0 = time.perf_counter()
            dist = self.preview(cfg, force_token)
            if forced is not None:
                dist = replace(dist, forced=forced)
            sampling_ms = (time.perf_counter() - t0) * 1000
            at = len(self.steps)
            self.branches.check_room(at, dist.chosen.id, dist.config, dist.forced)  # before any pass
            dist, row, kv, forward_ms = self._advance(dist)
            record = StepRecord(
                step=len(self.steps) + 1,
                position=dist.position,
                distribution=dist,
                attention=row,
                kv=kv,
                timings=Timings(forward_ms, sampling_ms),
                text=self.text,
            )
            self.steps.append(record)
            self.branches.stepped(at, dist.chosen.id, dist.config, dist.forced)
            return record

    def _advance(self, dist: Distribution):
        """The chosen token appended, its pass run (or taken from the one run ahead): (the distribution as
        recorded, its attention row, the cache's bytes, the pass's ms). A failure changes nothing."""
        result = self._settle(dist.chosen.id)  # a hit: the cache holds the chosen token already
        if result is None:
            before = snapshot(self._cache)
            try:
                result = self._forward_one(dist.chosen.id)
            except BaseException:
                restore(self._cache, before)  # the forward may have appended to some layers before failing
                raise
        logits, row, forward_ms = result  # forward_ms: the pass that made this result, ahead or now
        self.ids.append(dist.chosen.id)
        self._next_logits = logits
        return dist, row, kv_bytes(self._cache, self.lm.info), forward_ms

    def _forward_one(self, token_id: int):
        """One token through the model with the cache: (next logits (V,), attention row (layers, heads, t), ms).

        With a batcher, the pass is shared with other sessions' steps that arrive at the same time.
        """
        if self.batcher is not None:
            return self.batcher.forward(self._cache, token_id)
        return forward_one(self.lm.model, self._cache, token_id)

    # ---- going back ------------------------------------------------------------------------------
    @torch.no_grad()
    def back(self, n: int = 1) -> None:
        """Undo the last n steps: crop the cache. Nothing before the kept tokens is recomputed (but see below).

        Only the last kept token's logits must be found again: the prompt's are stored; for a generated
        token, that one token is run again on the cropped cache (same inputs, same result).
        A cache past a sliding window cannot be cropped: its window layers have dropped the oldest tokens, which
        the shorter text needs again. Then, and only then, the kept ids are prefilled again (_rebuild).
        """
        with self._locked():
            self._require_started()
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise SessionError("back_count_invalid", n=n)
            if n > len(self.steps):
                raise SessionError("back_too_far", n=n, generated=len(self.steps))
            self._settle()
            keep = len(self.ids) - n
            before = snapshot(self._cache)
            if keep == self.prompt_len and crop_to(self._cache, keep):
                logits = self._prefill_logits
            elif keep > self.prompt_len and crop_to(self._cache, keep - 1):
                try:
                    logits, _, _ = self._forward_one(self.ids[keep - 1])
                except BaseException:
                    restore(self._cache, before)
                    raise
            else:
                logits = self._rebuild(keep)  # a new cache, set only if the prefill succeeds
            self.branches.cut(self.steps, self.ids, self._next_logits)  # kept if the next step goes another way
            del self.steps[-n:]
            del self.ids[keep:]
            self._next_logits = logits
            self._replay = []

    def reset(self) -> None:
        """Back to just after the prompt (every generated token undone)."""
        if self.steps:
            self.back(len(self.steps))

    def go_to(self, step: int) -> None:
        """Keep steps 1..step (0 = only the prompt)."""
        self._require_started()
        if not isinstance(step, int) or not 0 <= step <= len(self.steps):
            raise SessionError("step_out_of_range", last=len(self.steps), step=step)
        if step < len(self.steps):
            self.back(len(self.steps) - step)

    def adopt(self, other: "DecodeSession") -> None:
        """Take over another session's whole state (a replay built aside, then swapped in at once)."""
        with self._locked(), other._locked():
            self._settle()
            other._settle()  # its cache becomes ours: nothing may still be writing into it
            self.prefill, self.steps, self.ids, self._cache = other.prefill, other.steps, other.ids, other._cache
            self._next_logits, self._prefill_logits = other._next_logits, other._prefill_logits
            self._replay = list(other._replay)
            self.branches.adopt(other.branches)

    # ---- branches ----------------------------------------------------------------------------------
    def _as_branch(self) -> Branch:
        """The current text as a Branch record (its pending whole, if the user went back along it)."""
        return self.branches.leave(self.steps, self.ids, self._next_logits)

    @torch.no_grad()
    def switch_branch(self, branch_id: int) -> None:
        """Make a kept branch the current text; the current one is kept in its place.

        Its cache is recomputed by one prefill of its ids; its steps are the StepRecords it had and its next
        logits the ones it had, so every view of it is what it was. Refused (nothing changed) for a missing one.
        """
        with self._locked():
            self._require_started()
            chosen = self.branches.get(branch_id)
            self._settle()
            cache, _, _ = self._prefill(chosen.ids, logits_to_keep=1)  # set only if the prefill succeeds
            self.branches.switch(chosen, self._as_branch())
            self.steps, self.ids, self._cache = list(chosen.steps), list(chosen.ids), cache
            self._next_logits = chosen.next_logits
            self._replay = []

    @torch.no_grad()
    def add_branch(self, branch_id: int, parent: int | None, fork: int, steps: list[tuple[SamplingConfig, int, bool]]):
        """Keep, as branch `branch_id`, the text that follows `parent`'s first `fork` steps with these (settings,
        token, forced) steps (a replayed trace; None = from the prompt). Its prefix records are the parent's; its
        own are made by a prefill of the prefix and one pass per step, on a session of its own: this one is not
        touched until the branch is complete."""
        base = self.branch_record(parent) if parent is not None else self._prompt_branch()
        if not 0 <= fork <= base.length or branch_id in self.branches.kept or branch_id == self.branches.current_id:
            raise SessionError("trace_branch_damaged", branch=branch_id)
        work = self.sibling()
        work.prefill, work._prefill_logits = self.prefill, self._prefill_logits
        work.ids, work.steps = base.ids[: self.prompt_len + fork], list(base.steps[:fork])
        work._resume(base, fork)
        for config, token, forced in steps:
            work.step(config, force_token=token, forced=forced)
        with self._locked():
            self.branches.kept[branch_id] = replace(work._as_branch(), id=branch_id, parent=parent, fork=fork)

    def sibling(self) -> "DecodeSession":
        """A new, empty session on the same model with the same limits (a trace or a branch rebuilt aside)."""
        return DecodeSession(self.lm, self.max_prompt_tokens, self.max_tokens, self.batcher)

    def _prompt_branch(self) -> Branch:
        """The prompt alone, as the base of a branch that forks at step 0."""
        return Branch(-1, None, 0, self.ids[: self.prompt_len], [])

    def _resume(self, base: Branch, fork: int) -> None:
        """Set the cache and next logits for self.ids, `base`'s first `fork` steps (add_branch's work session)."""
        self._cache, out, _ = self._prefill(self.ids, logits_to_keep=1)
        self._next_logits = self._prefill_logits if fork == 0 else out.logits[0, -1].clone()

    def delete_branch(self, branch_id: int) -> None:
        """Forget a kept branch (not the current text); refused for a missing one."""
        with self._locked():
            self._require_started()
            self.branches.delete(branch_id)

    def branch_tree(self) -> list[BranchSummary]:
        """Every text of this prompt's tree, by id, the current one marked."""
        with self.reading():
            self._require_started()
            return branch_summaries(self.branches, self._as_branch(), self.lm.tokens.text, len(self.steps))

    def branch_record(self, branch_id: int) -> Branch:
        """A branch's records by id: the current text (whole, with a pending tail) or a kept one."""
        with self.reading():
            self._require_started()
            if branch_id == self.branches.current_id and not isinstance(branch_id, bool):
                return self._as_branch()
            return self.branches.get(branch_id)

    def branch_memory(self) -> int:
        """Bytes held by every text of the tree in attention rows and logits, each array once."""
        with self.reading():
            return branch_bytes(self.branches, self._as_branch()) if self.started else 0

    # ---- the whole session -------------------------------------------------------------------------
    def logprob_t1(self) -> float:
        """Natural log-probability of the generated text under the model's own T = 1 distribution."""
        return float(sum(s.distribution.chosen_logprob_t1 for s in self.steps))


@contextlib.contextmanager
def all_cores():
    """Every core for a pass over many tokens, a prefill (338 tokens: 0.9 s on 2 threads, 1.6 s on 1).

    torch's thread count is set per thread (OpenMP): this thread's own count comes back after the pass.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _Release:
    def __init__(self, lock):
        self.lock = lock

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.lock.release()
        return False
