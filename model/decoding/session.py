"""One user's decode session: token ids, a record of every step, and the backend that makes the numbers.

prefill -> (preview / step / step with a forced token / back / reset)*. Every change is written here once, for
every kind of model; the backend (backend.py) runs the model: CoreBackend on the model's core (core.py: its KV cache,
attention rows, the next pass computed ahead, whole-text computations; in this process or its own), EngineBackend on
a serving engine (model/vllm). What a backend can give is its `capabilities`. The model is shared and read-only;
everything here belongs to one user.

A change answers with the next position's Distribution under the settings the page shows (the core derives it with
its batch), and, for a server's session (ahead=True), the core starts the next pass ahead by itself: one call per
click, and the page's render derives nothing.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace

import torch

from model.decoding.backend import AHEAD_DRAWN, Backend, Capabilities, CoreBackend
from model.decoding.branches import Branch, BranchBook, BranchSummary, branch_bytes, branch_summaries
from model.decoding.core import core_of
from model.errors import SessionBusy, SessionError
from model.decoding.loading import LoadedModel
from model.parse import valid_text
from model.decoding.records import Distribution, PrefillRecord, SamplingConfig, SpecChoice, StepRecord, TemperatureSweep, Timings
from model.decoding.sampling import temperature_sweep
from model.runtime import CPU

MAX_PROMPT_CHARS = 4000  # checked before tokenizing, so a huge paste is refused at once
MAX_PROMPT_TOKENS = 448
MAX_TOKENS = 512  # prompt + generated: bounds one session's memory (attention rows grow as t^2)


def backend_for(lm) -> Backend:
    """The backend a model runs on when nobody hands the session one (the command line, a test): a local model's
    core in this process (core.core_of); an engine's model makes its own (model/vllm: it asks its engine). A
    server's sessions are handed theirs by the model registry (model/serving/sessions.py)."""
    return CoreBackend(core_of(lm)) if isinstance(lm, LoadedModel) else lm.backend()


def encode_prompt(lm, prompt: str, chat: bool, max_prompt_tokens: int = MAX_PROMPT_TOKENS) -> list[int]:
    """The exact token ids `lm` will see for a typed prompt, or SessionError saying what is wrong with it."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise SessionError("prompt_empty")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise SessionError("prompt_too_long", n=len(prompt), limit=MAX_PROMPT_CHARS)
    valid_text(prompt, "prompt_invalid_text")
    tok = lm.tokenizer
    # Every added token marked special is one control token when typed (all_special_tokens lists only the named
    # ones: 3 of SmolLM2's 17, without <file_sep>, <jupyter_code>, <empty_output>, ...).
    special = {t.content for t in tok.added_tokens_decoder.values() if t.special} | set(tok.all_special_tokens)
    typed = [s for s in special if s and s in prompt]
    if typed:
        raise SessionError("prompt_special_token", token=min(typed, key=prompt.find))  # the first one typed
    if chat:
        if not tok.chat_template:
            raise SessionError("no_chat_template", model=lm.name)
        ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    else:
        ids = tok(prompt, add_special_tokens=True)["input_ids"]
    if len(ids) > max_prompt_tokens:
        raise SessionError("prompt_too_many_tokens", n=len(ids), limit=max_prompt_tokens)
    return list(ids)


@dataclass(frozen=True)
class WholeText:
    """One consistent copy of a session's text, for a computation on all of it (a lens, a search, a race, a
    measurement): the runner every view that runs the model beyond one step goes through (DecodeSession.whole_text).

    run() ships the computation to the model's core (core.ModelCore.compute, in this process or its own), where its
    passes go through the model's scheduler (decode steps first, long passes in chunks) and its work between them
    takes one core, so the other stays with the class's steps.
    """

    core: object  # the model's core (core.ModelCore, or core_process.ProcessCore)
    lm: LoadedModel  # the model's name, tokenizer and shape (its weights are in the core)
    ids: list[int]  # prompt + generated, copied: the session may step on meanwhile
    prompt_len: int
    max_tokens: int  # the session's limit, prompt and generated
    room: int  # tokens the session may still add (max_tokens - len(ids), at least 0)
    ended: bool  # the last token ended the text (an end-of-text token)
    settings: dict = field(default_factory=dict)  # position of each generated token -> the SamplingConfig its step
    #                                               used (its u: draw_u(seed, position)); the prompt's have none

    def run(self, compute, *args, **kwargs):
        """compute(lm, ids, *args, **kwargs) in the model's core (compute marked core.computation), with plain
        arguments: its plain record back."""
        return self.core.compute(compute, list(self.ids), *args, **kwargs)

    def compute(self, compute, *args, **kwargs):
        """compute(lm, *args, **kwargs) in the model's core: a computation that takes what it needs of the text (its
        prompt, a part of it) as arguments."""
        return self.core.compute(compute, *args, **kwargs)


class DecodeSession:
    """Stepwise decoding on a shared model, recording everything the views draw, over the model's backend."""

    def __init__(self, lm, max_prompt_tokens: int = MAX_PROMPT_TOKENS, max_tokens: int = MAX_TOKENS,
                 backend: Backend | None = None, ahead: bool = False):
        self.backend = backend if backend is not None else backend_for(lm)
        self.max_prompt_tokens = max_prompt_tokens
        self.max_tokens = max_tokens
        # compute the next pass ahead after every change (a server's session: the page draws meanwhile)
        self.computes_ahead = ahead and self.backend.capabilities.prefetch
        # what the core was last asked to run ahead: (text length, token or AHEAD_DRAWN, the settings it draws under)
        self._asked_ahead: tuple[int, int | str, SamplingConfig | None] | None = None
        self._lock = threading.RLock()  # re-entrant: step() reads through preview() while holding it
        self.prefill: PrefillRecord | None = None
        self.steps: list[StepRecord] = []
        self.ids: list[int] = []
        self._next_logits: torch.Tensor | None = None  # (V,) logits for the next position
        self._prefill_logits: torch.Tensor | None = None  # kept so going back to the prompt recomputes nothing
        self._replay: list[tuple[SamplingConfig, int, bool]] = []  # a loaded trace's steps still to play back
        self._preview_memo: list[tuple[tuple, Distribution]] = []  # preview()'s last answers (this position, ahead)
        self.branches = BranchBook()  # continuations kept when going back and stepping differently (branches.py)

    # ---- state -------------------------------------------------------------------------------------
    @property
    def lm(self):
        """The model this session runs on (its backend's)."""
        return self.backend.lm

    @lm.setter
    def lm(self, lm) -> None:
        """Another handle on the same model (say, an engine's model with another client): the backend follows."""
        self.backend.lm = lm

    @property
    def capabilities(self) -> Capabilities:
        """What this session's backend gives beyond the logits: attention, cache tensors, local weights, prefetch."""
        return self.backend.capabilities

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
        return bool(self.steps) and self.steps[-1].token.id in self.eos_ids()

    def eos_ids(self) -> set[int]:
        """The token ids that end a text."""
        return self.backend.eos_ids()

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

    def whole_text(self, refusal: str = "engine_needs_local") -> WholeText:
        """The text as it is now, for a computation on all of it that runs the model here (WholeText.run).

        Refused with `refusal` (a key naming what the view needs) on a model without local weights (an engine's),
        and with not_started before a prompt."""
        if not self.capabilities.runs_locally:
            raise SessionError(refusal, model=self.lm.name)
        with self.reading():
            self._require_started()
            return WholeText(self.backend.core, self.lm, list(self.ids), self.prompt_len, self.max_tokens,
                             max(self.max_tokens - len(self.ids), 0), self.finished,
                             {s.position: s.distribution.config for s in self.steps})

    # ---- prompting ---------------------------------------------------------------------------------
    def encode_prompt(self, prompt: str, chat: bool) -> list[int]:
        """The exact token ids the model will see, or SessionError saying what is wrong with the prompt."""
        return encode_prompt(self.lm, prompt, chat, self.max_prompt_tokens)

    def start(self, prompt: str, chat: bool = False, cfg: SamplingConfig | None = None) -> PrefillRecord:
        """Prefill a prompt (one parallel pass, or one engine request); the old state is replaced only if this
        succeeds. cfg: the settings the page shows next (their distribution comes back with the pass)."""
        with self._locked():
            ids = self.encode_prompt(prompt, chat)
            result = self.backend.start(ids, cfg, self._ahead(ids, cfg))
            record = PrefillRecord(
                prompt=prompt,
                chat=chat,
                tokens=[self.lm.tokens.info(i) for i in ids],
                attention=result.attention,
                kv=result.kv,
                timings=Timings(result.ms),
            )
            self.prefill, self.steps, self.ids = record, [], ids
            self._replay = []
            self._next_logits = self._prefill_logits = result.logits
            self._remember(result.logits, ids, cfg, result.next)
            self.branches.clear()  # a new prompt starts a new tree
            return record

    def take_records(self, prefill: PrefillRecord, steps: list[StepRecord], ids: list[int]) -> None:
        """Hold a text made elsewhere (a room's teacher's): its records as they are (never changed), the backend's
        state made for its ids at once (one prefill on a local model), not step by step."""
        with self._locked():
            prompt_len = len(prefill.tokens)
            logits = self.backend.resume(list(ids), keep=len(ids) - prompt_len + 1)  # after the prompt .. the last
            self.prefill, self.steps, self.ids = prefill, list(steps), list(ids)
            self._prefill_logits, self._next_logits = logits[0].clone(), logits[-1].clone()
            self._replay, self._asked_ahead = [], None
            self.branches.clear()

    # ---- one step ----------------------------------------------------------------------------------
    def _require_started(self):
        if not self.started:
            raise SessionError("not_started")

    def preview(self, cfg: SamplingConfig, force_token: int | None = None) -> Distribution:
        """The next token's distribution under cfg, and the token it would draw. No model run.

        The last answers are kept: the distribution a change came back with (derived in the core), and what was
        derived here since. They are keyed by the logits tensor itself (each prefix's logits are their own tensor).
        """
        with self.reading():
            self._require_started()
            return self._derive(self._next_logits, self.ids, cfg, force_token)

    def _derive(self, logits: torch.Tensor, ids: list[int], cfg: SamplingConfig, force_token: int | None = None):
        """derive() for the position after `ids`, unless it is remembered (keyed by the logits tensor)."""
        key = (logits, len(ids), cfg, force_token)
        for (k, dist) in self._preview_memo:
            if k[0] is logits and k[1:] == key[1:]:
                return dist
        with CPU.part("derive"):  # the sampling pipeline over the whole vocabulary, once per position and settings
            dist = self.backend.derive(logits, ids, cfg, force_token)  # SessionError if invalid
        self._remember(logits, ids, cfg, dist, force_token)
        return dist

    def _remember(self, logits, ids, cfg, dist: Distribution | None, force_token: int | None = None) -> None:
        """Keep `dist` as preview()'s answer for these logits and settings (a change's StepResult.next: the page's
        render then derives nothing); nothing for None."""
        if dist is not None and cfg is not None:
            self._preview_memo = [((logits, len(ids), cfg, force_token), dist), *self._preview_memo[:1]]

    def _ahead(self, ids: list[int], cfg: SamplingConfig | None, replay: list | None = None, ended: bool = False):
        """What the core should run ahead once the text is `ids`: the token the next distribution under cfg draws
        (or a play-back's next recorded token, `replay` being what is left to play), or None: a session that does not
        compute ahead, a text full or ended."""
        replay = self._replay if replay is None else replay
        ahead = None
        if self.computes_ahead and len(ids) < self.max_tokens and not ended:
            ahead = replay[0][1] if replay else AHEAD_DRAWN if cfg is not None else None
        self._asked_ahead = None if ahead is None else (len(ids), ahead, cfg)
        return ahead

    def sweep(self, cfg: SamplingConfig, temperatures: list[float]) -> TemperatureSweep:
        """Entropy and nucleus size of the next token's distribution across temperatures. No model run."""
        with self.reading():
            self._require_started()
            cfg.validate()
            return temperature_sweep(self._next_logits, torch.tensor([self.ids]), cfg, temperatures)

    def step(self, cfg: SamplingConfig, force_token: int | None = None,
             forced: bool | SpecChoice | None = None) -> StepRecord:
        """Choose the next token (drawn, or forced by the user), append it, and run it through the model.

        `forced` says what chose force_token instead (a replay forces the recorded token but keeps its flag; a kept
        speculative token passes its SpecChoice): a claim checked against the settings and seed (_claimed).
        A step of the user's own ends a trace's play-back. If anything fails, the session is as it was.
        """
        with CPU.part("step"):  # its wall time includes waiting for the scheduler's pass; its CPU does not
            record = self._step(cfg, force_token, forced, replay_after=[])
        self._replay = []
        return record

    # ---- computing ahead (a backend with capabilities.prefetch, a session with ahead=True) -----------------------
    @property
    def prefetched(self) -> int | None:
        """The token id whose forward pass is being (or has been) computed ahead, or None."""
        return self.backend.held() if self.capabilities.prefetch else None

    def prefetch(self, cfg: SamplingConfig) -> bool:
        """Start the forward pass of the token step(cfg) would choose (replay_next()'s, during a play-back): after a
        change the core did not run ahead already (new settings, a trace loaded, a teacher's text taken).

        Returns at once: True if a pass was started. False, doing nothing, when the session does not compute ahead
        (an engine batches its own users; a session made without a server), when it is busy, not started, finished
        or full, when cfg is invalid, and when a pass of this token is already asked for, held or running. The pass
        runs in the scheduler's worker without the session lock: renders never wait for it.
        """
        if not self.computes_ahead or not self._lock.acquire(blocking=False):
            return False
        try:
            if not self.started or self.finished or len(self.ids) >= self.max_tokens:
                return False
            try:
                token = self._replay[0][1] if self._replay else self.preview(cfg).chosen.id
            except (ValueError, TypeError, AttributeError):  # not valid settings (SessionError is a ValueError)
                return False
            asked = self._asked_ahead
            if asked is not None and asked[0] == len(self.ids) and (
                    asked[1] == token or (asked[1] == AHEAD_DRAWN and asked[2] == cfg and not self._replay)):
                return False  # the core runs it ahead already (asked with the change): no second call
            # the next position's distribution under cfg, derived with the batch's (a play-back shows its recorded
            # settings instead: derived by the render)
            started = self.backend.prefetch(self.ids, token, None if self._replay else cfg)
            if started:
                self._asked_ahead = (len(self.ids), token, cfg)
            return started
        finally:
            self._lock.release()

    def preview_ahead(self, cfg: SamplingConfig, timeout: float = 10.0) -> tuple[list[int], Distribution] | None:
        """What the next step(cfg) will show: (the ids then, the next distribution), from the pass computed ahead.

        Holds the session only to look (a Next token meanwhile must not find it busy): it waits for the pass without
        it. None when nothing is computed ahead for these settings (or a trace plays back), the pass failed or was
        taken back, or the session changed. The answer is remembered, so that the step then derives nothing.
        """
        if not self.computes_ahead:
            return None
        with self.reading():
            if self._replay or not self.started:
                return None
            ids, token = list(self.ids), self.preview(cfg).chosen.id
        got = self.backend.ahead(timeout)
        if got is None or got[0] != token or list(got[1]) != ids:
            return None
        _, _, logits, dist = got
        with self.reading():
            if self.ids != ids:
                return None  # the session changed meanwhile
            ids = [*ids, token]
            if dist is not None and dist.position == len(ids) and dist.config == cfg:
                self._remember(logits, ids, cfg, dist)
        return ids, self._derive(logits, ids, cfg)

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
        record = self._step(cfg, token, forced, replay_after=self._replay[1:])
        self._replay.pop(0)
        return record

    def _step(self, cfg: SamplingConfig, force_token: int | None = None,
              forced: bool | SpecChoice | None = None, replay_after: list | None = None) -> StepRecord:
        with self._locked():
            self._require_started()
            if len(self.ids) >= self.max_tokens:
                raise SessionError("token_limit", limit=self.max_tokens)
            if self.finished:
                raise SessionError("text_ended")
            t0 = time.perf_counter()
            dist = self.preview(cfg, force_token)
            if forced is not None:
                dist = self._claimed(dist, cfg, forced, self._next_logits, self.ids)
            sampling_ms = (time.perf_counter() - t0) * 1000
            at, token = len(self.steps), dist.chosen.id
            self.branches.check_room(at, token, dist.config, dist.forced)  # before any pass
            after = [*self.ids, token]
            ahead = self._ahead(after, dist.config, replay_after, ended=token in self.eos_ids())
            result = self.backend.advance(self.ids, token, dist.config, ahead)  # a failure changes nothing
            if result.chosen_t1 is not None:  # forced from outside an engine's top N: its own numbers for it
                dist = dist.with_chosen_t1(*result.chosen_t1)
            self.ids.append(token)
            self._next_logits = result.logits
            self._remember(result.logits, self.ids, dist.config, result.next)
            record = StepRecord(
                step=len(self.steps) + 1,
                position=dist.position,
                distribution=dist,
                attention=result.attention,
                kv=result.kv,
                timings=Timings(result.ms, sampling_ms),
                text=self.text,
            )
            self.steps.append(record)
            self.branches.stepped(at, token, dist.config, dist.forced)
            return record

    def follow(self, steps: list[tuple[SamplingConfig, int, bool | SpecChoice]]) -> None:
        """Append recorded (settings, token, what chose it) steps, as step(cfg, force_token=token, forced=...) one by
        one would, but with their tokens run through the model in chunks (Sequence.follow: a turn at the model's
        scheduler per PREFILL_CHUNK tokens) instead of a pass per step: a replayed trace's texts (issue 32 item
        10: 1,024 steps were 1,024 passes, minutes of an import slot). Each record is a step's: its distribution
        derived from the logits after its prefix, its claim checked on them, its attention row and KV bytes; its
        forward_ms is its share of its chunk's pass. On a backend that does not run here (an engine), one step()
        each. All or nothing: if anything fails, the session is as it was.
        """
        if not self.capabilities.runs_locally:
            for cfg, token, forced in steps:
                self.step(cfg, force_token=token, forced=forced)
            return
        with self._locked():
            self._require_started()
            if len(self.ids) + len(steps) > self.max_tokens:
                raise SessionError("token_limit", limit=self.max_tokens)
            ends, start = self.eos_ids(), len(self.ids)
            ids = self.ids + [token for _, token, _ in steps]
            if any(i in ends for i in ids[start - 1 if self.steps else start : -1]):
                raise SessionError("text_ended")  # a step after an end-of-text token
            records: list[StepRecord] = []
            logits = [self._next_logits]  # the logits after the text so far: the next step's to derive from

            def each(next_logits, row, kv, forward_ms):
                i = len(records)
                cfg, token, claim = steps[i]
                before = ids[: start + i]
                t0 = time.perf_counter()
                dist = self._derive(logits[0], before, cfg) if claim is False else None
                if dist is None or dist.chosen.id != token:  # an honest draw is its own record: one derive, not two
                    dist = self._derive(logits[0], before, cfg, token)
                    if claim is not None:
                        dist = self._claimed(dist, cfg, claim, logits[0], before)
                sampling_ms = (time.perf_counter() - t0) * 1000
                logits[0] = next_logits
                records.append(StepRecord(step=len(self.steps) + i + 1, position=dist.position, distribution=dist,
                                          attention=row, kv=kv, timings=Timings(forward_ms, sampling_ms),
                                          text=self.lm.tokens.text(ids[self.prompt_len : start + i + 1])))

            if steps:
                self.backend.follow(ids, start, each)  # a failure changes nothing
            walked = [(at, r.token.id, r.distribution.config, r.distribution.forced)
                      for at, r in enumerate(records, len(self.steps))]
            for step in walked:  # all checked first: a refusal changes nothing
                self.branches.check_room(*step)
            for step in walked:
                self.branches.stepped(*step)
            self.ids, self.steps = ids, self.steps + records
            self._next_logits = logits[0]
            self._replay, self._asked_ahead = [], None

    def _claimed(self, dist: Distribution, cfg: SamplingConfig, claim, logits: torch.Tensor,
                 ids: list[int]) -> Distribution:
        """The step after `ids` (whose next `logits` these are) as what really chose its token, whatever the caller
        (a trace, a speculative run) claims.

        claim True: forced. A SpecChoice: checked again (model/speculative.reproduce_choice), with the numbers
        recomputed; False: drawn, if the settings and seed draw this token here. A claim they do not reproduce
        is recorded as forced, marked so (issue 20 items 8, 9).
        """
        if claim is True:
            return replace(dist, forced=True)
        if isinstance(claim, SpecChoice):
            from model.speed.speculative import reproduce_choice  # speculative imports what session does not need
            spec = reproduce_choice(logits, ids, cfg, dist.chosen.id, claim)
            return replace(dist, forced=spec is None, speculative=spec, marked_forced=spec is None)
        drawn = self._derive(logits, ids, cfg).chosen.id == dist.chosen.id
        return replace(dist, forced=not drawn, marked_forced=not drawn)

    # ---- going back ------------------------------------------------------------------------------
    def back(self, n: int = 1, cfg: SamplingConfig | None = None) -> None:
        """Undo the last n steps: the backend cut back (a cache cropped, an engine's answers kept: nothing asked
        again; see Sequence.back), the cut steps kept as the pending branch. A failure changes nothing. cfg: the
        settings the page shows next (their distribution comes back with the call)."""
        with self._locked():
            self._require_started()
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise SessionError("back_count_invalid", n=n)
            if n > len(self.steps):
                raise SessionError("back_too_far", n=n, generated=len(self.steps))
            keep = len(self.ids) - n
            answers = self.backend.answers()  # the backend's, along the whole text, before it is cut back
            result = self.backend.back(self.ids, keep, cfg, self._ahead(self.ids[:keep], cfg, replay=[]))
            self.branches.cut(self.steps, self.ids, self._next_logits, answers)  # kept if the next step goes another way
            del self.steps[-n:]
            del self.ids[keep:]
            self._next_logits = self._prefill_logits if keep == self.prompt_len else result.logits
            if keep == self.prompt_len:  # the prompt's own logits, as start() gave them (a memo's key is the tensor)
                result.logits = self._prefill_logits
            self._remember(result.logits, self.ids, cfg, result.next)
            self._replay = []

    def reset(self, cfg: SamplingConfig | None = None) -> None:
        """Back to just after the prompt (every generated token undone)."""
        if self.steps:
            self.back(len(self.steps), cfg)

    def go_to(self, step: int, cfg: SamplingConfig | None = None) -> None:
        """Keep steps 1..step (0 = only the prompt)."""
        self._require_started()
        if not isinstance(step, int) or not 0 <= step <= len(self.steps):
            raise SessionError("step_out_of_range", last=len(self.steps), step=step)
        if step < len(self.steps):
            self.back(len(self.steps) - step, cfg)

    def adopt(self, other: "DecodeSession") -> None:
        """Take over another session's whole state (a replay built aside, then swapped in at once)."""
        with self._locked(), other._locked():
            self.backend.adopt(other.backend)
            self.prefill, self.steps, self.ids = other.prefill, other.steps, other.ids
            self._next_logits, self._prefill_logits = other._next_logits, other._prefill_logits
            self._replay, self._asked_ahead = list(other._replay), None
            self.branches.adopt(other.branches)

    # ---- branches ----------------------------------------------------------------------------------
    def _as_branch(self) -> Branch:
        """The current text as a Branch record (its pending whole, if the user went back along it)."""
        return self.branches.leave(self.steps, self.ids, self._next_logits, self.backend.answers())

    def switch_branch(self, branch_id: int) -> None:
        """Make a kept branch the current text; the current one is kept in its place.

        The backend holds its ids again (a local cache by one prefill; an engine's answers kept along it, nothing
        asked); its steps are the StepRecords it had and its next logits the ones it had, so every view of it is
        what it was. Refused (nothing changed) for a missing one.
        """
        with self._locked():
            self._require_started()
            chosen = self.branches.get(branch_id)
            leaving = self._as_branch()
            self.backend.resume(chosen.ids, chosen.answers)  # a failure changes nothing
            self.branches.switch(chosen, leaving)
            self.steps, self.ids = list(chosen.steps), list(chosen.ids)
            self._next_logits = chosen.next_logits
            self._replay, self._asked_ahead = [], None

    def add_branch(self, branch_id: int, parent: int | None, fork: int, steps: list[tuple[SamplingConfig, int, bool]]):
        """Keep, as branch `branch_id`, the text that follows `parent`'s first `fork` steps with these (settings,
        token, forced) steps (a replayed trace; None = from the prompt). Its prefix records are the parent's; its
        own are made by a prefill of the prefix (or the parent's engine answers) and follow() of its steps (in
        chunks), on a session of its own: this one is not touched until the branch is complete."""
        base = self.branch_record(parent) if parent is not None else self._prompt_branch()
        if not 0 <= fork <= base.length or branch_id in self.branches.kept or branch_id == self.branches.current_id:
            raise SessionError("trace_branch_damaged", branch=branch_id)
        work = self.sibling()
        work.prefill, work._prefill_logits = self.prefill, self._prefill_logits
        work.ids, work.steps = base.ids[: self.prompt_len + fork], list(base.steps[:fork])
        logits = work.backend.resume(work.ids, None if base.answers is None else base.answers[: fork + 1])
        work._next_logits = self._prefill_logits if fork == 0 else logits[-1].clone()
        work.follow(steps)
        with self._locked():
            self.branches.kept[branch_id] = replace(work._as_branch(), id=branch_id, parent=parent, fork=fork)

    def sibling(self) -> "DecodeSession":
        """A new, empty session on the same model with the same limits (a trace or a branch rebuilt aside)."""
        return DecodeSession(self.lm, self.max_prompt_tokens, self.max_tokens, self.backend.sibling(),
                             self.computes_ahead)

    def close(self) -> None:
        """The user is gone: free what the backend holds for this session (a core's sequence: its cache, its pass
        ahead). Also done when the session is dropped; the records stay readable."""
        self.backend.close()

    def _prompt_branch(self) -> Branch:
        """The prompt alone, as the base of a branch that forks at step 0."""
        answers = self.backend.answers()
        return Branch(-1, None, 0, self.ids[: self.prompt_len], [], answers=None if answers is None else answers[:1])

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


class _Release:
    """Lets go of the session's own lock (taken by _locked or reading) at the end of a `with`."""

    def __init__(self, taken):
        self.taken = taken

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.taken.release()
        return False
