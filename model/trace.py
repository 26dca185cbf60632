"""The session as JSON (what the command line prints and the app exports), and replaying such a file.

The trace keeps every step's settings, token and candidate summary, not the attention arrays: a replay
forces the recorded tokens through the same model, which makes them again.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, fields

from .errors import SessionError
from .records import SamplingConfig
from .session import DecodeSession

FORMAT = "token-by-token/trace"
VERSION = 1
MAX_TRACE_BYTES = 5_000_000


def to_trace(session: DecodeSession) -> dict:
    """The whole session as a JSON-ready dict."""
    if not session.started:
        raise SessionError("nothing_to_export")
    prefill = session.prefill
    steps = []
    for s in session.steps:
        d = asdict(s)
        d.pop("attention")
        steps.append(d)
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": session.lm.name,
        "prompt": prefill.prompt,
        "chat": prefill.chat,
        "prompt_tokens": [asdict(t) for t in prefill.tokens],
        "prefill": {"kv": asdict(prefill.kv), "timings": asdict(prefill.timings)},
        "steps": steps,
        "text": session.text,
        "logprob_t1": session.logprob_t1(),
    }


def read_trace(raw: bytes) -> dict:
    """An uploaded file's bytes as a trace dict to hand to replay(), or SessionError saying it is not a valid trace.

    Refused before any parsing past what is needed: more than MAX_TRACE_BYTES, not UTF-8 (a byte-order mark is
    allowed), not JSON, nested too deeply for the parser (json.loads would raise RecursionError), a number past
    Python's int-string limit (json.loads would raise a bare ValueError), anything but a JSON object at the top.
    What the object says is replay()'s to check.
    """
    if len(raw) > MAX_TRACE_BYTES:
        raise SessionError("trace_too_large", size=len(raw), limit=MAX_TRACE_BYTES)
    try:
        text = bytes(raw).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SessionError("trace_not_text") from None
    try:
        trace = json.loads(text)
    except RecursionError:
        raise SessionError("trace_too_deep") from None
    except json.JSONDecodeError as err:
        raise SessionError("trace_not_json", line=err.lineno, column=err.colno) from None
    except ValueError:  # the only other one: "Exceeds the limit (4300 digits) for integer string conversion"
        raise SessionError("trace_number_too_long", limit=sys.get_int_max_str_digits()) from None
    if not isinstance(trace, dict):
        raise SessionError("trace_not_ours", format=FORMAT)
    return trace


def parse_trace(trace, session: DecodeSession | None = None) -> tuple[str, bool, list[tuple[SamplingConfig, int, bool]]]:
    """Check a trace and return (prompt, chat, [(settings, token id, forced)]), or SessionError saying what is wrong.

    With the `session` to replay it on, also everything a replay would find out only by running the model: the
    model's name, the prompt (as encode_prompt checks a typed one), the steps against the session's token limit,
    every token id inside the vocabulary, and no step after an end-of-text token. No forward pass is run.
    """
    if not isinstance(trace, dict) or trace.get("format") != FORMAT:
        raise SessionError("trace_not_ours", format=FORMAT)
    if trace.get("version") != VERSION:
        raise SessionError("trace_version", version=trace.get("version"), supported=VERSION)
    prompt, chat, steps = trace.get("prompt"), trace.get("chat", False), trace.get("steps")
    if not isinstance(prompt, str) or not isinstance(chat, bool) or not isinstance(steps, list):
        raise SessionError("trace_damaged")
    if session is not None:
        if trace.get("model") != session.lm.name:
            raise SessionError("trace_other_model", model=trace.get("model"))
        prompt_tokens = len(session.encode_prompt(prompt, chat))
        room = session.max_tokens - prompt_tokens
        if len(steps) > room:  # before reading the steps: a 5 MB file can claim 98,002 of them
            raise SessionError("trace_too_many_steps", steps=len(steps), prompt_tokens=prompt_tokens,
                               limit=session.max_tokens, room=max(room, 0))
        vocab, ends = session.lm.info.vocab, session._eos_ids()
    names = {f.name for f in fields(SamplingConfig)}
    out = []
    for n, step in enumerate(steps, 1):
        try:
            dist = step["distribution"]
            config = SamplingConfig(**{k: v for k, v in dist["config"].items() if k in names}).validate()
            token, forced = dist["chosen"]["id"], dist.get("forced", False)
        except (KeyError, TypeError, ValueError) as err:
            raise SessionError("trace_step_damaged", step=n, reason=err) from None
        if not isinstance(token, int) or isinstance(token, bool) or not isinstance(forced, bool):
            raise SessionError("trace_token_not_int", step=n)
        if session is not None and not 0 <= token < vocab:
            raise SessionError("trace_token_out_of_vocab", step=n, token=token, vocab=vocab)
        if session is not None and n < len(steps) and token in ends:  # a step would refuse to follow it
            raise SessionError("trace_step_after_end", step=n + 1, end=n)
        out.append((config, token, forced))
    return prompt, chat, out


def replay(session: DecodeSession, trace, rewind: bool = False) -> int:
    """Re-run a trace on this session's model, step by step; returns the number of steps replayed.

    The session is replaced only if the whole trace replays; otherwise it is left as it was. With
    `rewind`, it is then wound back to the prompt with the steps queued, to be played back one at a time.
    """
    prompt, chat, steps = parse_trace(trace, session)  # checked whole first: a bad trace costs no forward pass
    fresh = DecodeSession(session.lm, session.max_prompt_tokens, session.max_tokens, session.batcher)
    fresh.start(prompt, chat)
    for config, token, forced in steps:
        fresh.step(config, force_token=token, forced=forced)
    if rewind:
        fresh.reset()
        fresh.queue_replay(steps)
    session.adopt(fresh)
    return len(steps)
