"""The session as JSON (what the command line prints and the app exports), and replaying such a file.

The trace keeps every step's settings, token and candidate summary, not the attention arrays: a replay
forces the recorded tokens through the same model, which makes them again.
"""
from __future__ import annotations

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


def parse_trace(trace) -> tuple[str, bool, list[tuple[SamplingConfig, int, bool]]]:
    """Check a trace and return (prompt, chat, [(settings, token id, forced)]), or SessionError saying what is wrong."""
    if not isinstance(trace, dict) or trace.get("format") != FORMAT:
        raise SessionError("trace_not_ours", format=FORMAT)
    if trace.get("version") != VERSION:
        raise SessionError("trace_version", version=trace.get("version"), supported=VERSION)
    prompt, chat, steps = trace.get("prompt"), trace.get("chat", False), trace.get("steps")
    if not isinstance(prompt, str) or not isinstance(chat, bool) or not isinstance(steps, list):
        raise SessionError("trace_damaged")
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
        out.append((config, token, forced))
    return prompt, chat, out


def replay(session: DecodeSession, trace, rewind: bool = False) -> int:
    """Re-run a trace on this session's model, step by step; returns the number of steps replayed.

    The session is replaced only if the whole trace replays; otherwise it is left as it was. With
    `rewind`, it is then wound back to the prompt with the steps queued, to be played back one at a time.
    """
    prompt, chat, steps = parse_trace(trace)
    if trace.get("model") != session.lm.name:
        raise SessionError("trace_other_model", model=trace.get("model"))
    fresh = DecodeSession(session.lm, session.max_prompt_tokens, session.max_tokens, session.batcher)
    fresh.start(prompt, chat)
    for config, token, forced in steps:
        fresh.step(config, force_token=token, forced=forced)
    if rewind:
        fresh.reset()
        fresh.queue_replay(steps)
    session.adopt(fresh)
    return len(steps)
