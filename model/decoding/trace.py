"""The session as JSON (what the command line prints and the app exports), and replaying such a file.

The trace keeps every step's settings, token and candidate summary, not the attention arrays: a replay
forces the recorded tokens through the same model, which makes them again.

Version 2 adds the branches (model/decoding/branches.py): "branch" places the current text in the tree ({"id", "parent",
"fork", "tail": the steps cut by going back, still pending}) and "branches" lists the kept ones by id, each with the
steps after its fork ({"id", "parent", "fork", "steps"}). A version-1 trace is one text with no branches.

What chose each token is checked on import, never taken on trust (issue 20 item 9): a step that says the model drew
it ("forced": false) is drawn again from its settings and seed, and a step kept from a speculative run
("speculative": {"kind", ...}) has its accept test or residual draw run again. A claim that does not reproduce is
not refused: the step is imported as forced, marked so ("marked_forced"), because traces written before these checks
(a kept speculative run was then recorded as plain draws) and float differences between machines must still import,
and the token itself is what the trace is about. marked_steps() lists the steps so marked.

"notes" (optional, since issue 49; a trace without it still reads) is the student's notes, plain text of at most
MAX_NOTES_CHARS characters: exported with the session, given back to the notes box on import (trace_notes).
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict

from dataclasses import dataclass, field

from model.decoding.branches import MAX_BRANCHES
from model.errors import SessionError
from model.parse import valid_notes
from model.decoding.records import SETTING_NAMES, SPEC_KINDS, SamplingConfig, SpecChoice
from model.decoding.session import DecodeSession

FORMAT = "token-by-token/trace"
VERSION = 2
READS = (1, 2)  # the versions parse_trace accepts
MAX_TRACE_BYTES = 5_000_000
# Steps one trace may hold, every text of its tree together: one full-length text (511 steps after a 1-token prompt)
# and as much again in branches. A replay runs each text through the model once, in chunks (DecodeSession.follow), so
# the largest valid trace is at most 16 texts x 512 tokens, about 80 passes of at most 128 tokens (it was a pass per
# step: 1,024 and the branches' prefills, about 212 s of one import slot here); 16 full-length texts (8,176 steps)
# are still refused before the first pass.
MAX_TRACE_STEPS = 1024


def to_trace(session: DecodeSession, notes: str = "") -> dict:
    """The whole session as a JSON-ready dict, with the student's `notes` (valid_notes)."""
    notes = valid_notes(notes)
    if not session.started:
        raise SessionError("nothing_to_export")
    prefill = session.prefill
    book = session.branches
    whole = session.branch_record(book.current_id)
    kept = [{"id": b.id, "parent": b.parent, "fork": b.fork, "steps": _steps_json(b.steps[b.fork :])}
            for b in sorted(book.kept.values(), key=lambda b: b.id)]
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": session.lm.name,
        "prompt": prefill.prompt,
        "chat": prefill.chat,
        "prompt_tokens": [asdict(t) for t in prefill.tokens],
        "prefill": {"kv": asdict(prefill.kv), "timings": asdict(prefill.timings)},
        "steps": _steps_json(session.steps),
        "text": session.text,
        "logprob_t1": session.logprob_t1(),
        "branch": {"id": book.current_id, "parent": book.current_parent, "fork": book.current_fork,
                   "tail": _steps_json(whole.steps[len(session.steps) :])},
        "branches": kept,
        "notes": notes,
    }


def trace_notes(trace: dict) -> str | None:
    """The notes a trace holds (checked as valid_notes), or None for a trace without any (written before issue 49)."""
    return None if "notes" not in trace else valid_notes(trace["notes"])


def _steps_json(steps) -> list[dict]:
    """Steps as JSON-ready dicts, without their attention arrays (a replay makes them again)."""
    out = []
    for s in steps:
        d = asdict(s)
        d.pop("attention")
        out.append(d)
    return out


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
    if trace.get("version") not in READS or isinstance(trace.get("version"), bool):
        raise SessionError("trace_version", version=trace.get("version"), supported=" / ".join(map(str, READS)))
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
    return prompt, chat, _parse_steps(steps, session)


def _parse_steps(steps: list, session: DecodeSession | None, first: int = 1) -> list[tuple[SamplingConfig, int, bool]]:
    """Each step's (settings, token id, forced), numbered from `first`, or SessionError naming the first bad one."""
    if session is not None:
        vocab, ends = session.lm.info.vocab, session.eos_ids()
    out = []
    for n, step in enumerate(steps, first):
        try:
            dist = step["distribution"]
            config = SamplingConfig(**{k: v for k, v in dist["config"].items() if k in SETTING_NAMES}).validate()
            token, forced = dist["chosen"]["id"], dist.get("forced", False)
            spec = _spec_claim(dist.get("speculative"))
        except (KeyError, TypeError, ValueError) as err:
            raise SessionError("trace_step_damaged", step=n, reason=err) from None
        if not isinstance(token, int) or isinstance(token, bool) or not isinstance(forced, bool):
            raise SessionError("trace_token_not_int", step=n)
        if spec is not None and not forced:
            forced = spec  # a claim the replay checks again (DecodeSession._claimed), as it checks a drawn one
        if session is not None and not 0 <= token < vocab:
            raise SessionError("trace_token_out_of_vocab", step=n, token=token, vocab=vocab)
        if session is not None and n < len(steps) + first - 1 and token in ends:  # a step would refuse to follow it
            raise SessionError("trace_step_after_end", step=n + 1, end=n)
        out.append((config, token, forced))
    return out


def _spec_claim(raw) -> SpecChoice | None:
    """A step's "speculative" entry (what chose a token kept from a speculative run) as a claim, or None (absent, as in
    every trace written before it). Only its kind and rejected draft are read: the numbers are recomputed."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("kind") not in SPEC_KINDS:
        raise ValueError("speculative: kind must be one of " + ", ".join(SPEC_KINDS))
    rejected = raw.get("rejected")
    if raw["kind"] == "residual" and (not isinstance(rejected, int) or isinstance(rejected, bool)):
        raise ValueError("speculative: a residual draw names the rejected draft's id")
    return SpecChoice(raw["kind"], 0.0, 0.0, rejected if raw["kind"] == "residual" else None)


@dataclass
class TraceTree:
    """A trace's branches, checked: the current text's place and pending tail, and the kept ones in build order."""

    id: int = 0
    parent: int | None = None
    fork: int = 0
    tail: list = field(default_factory=list)  # (settings, token, forced) steps cut by going back, still pending
    kept: list = field(default_factory=list)  # (id, parent, fork, [(settings, token, forced) after the fork])


def _whole_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def parse_branches(trace: dict, steps: list, session: DecodeSession | None = None) -> TraceTree:
    """The branches of a trace parse_trace accepted (`steps`: its parsed steps), or SessionError. No pass is run.

    Checked: at most MAX_TRACE_STEPS steps over all its texts, numbers unique whole numbers, at most MAX_BRANCHES texts, each parent the current text or a branch
    listed before it (so no cycle), each fork inside its parent, each branch's steps valid and (with the session)
    the whole text within the session's token limit and never past an end-of-text token.
    """
    if trace.get("version") == 1:
        return TraceTree()
    here, kept = trace.get("branch"), trace.get("branches")
    if not isinstance(here, dict) or not isinstance(kept, list) or not isinstance(here.get("tail"), list):
        raise SessionError("trace_damaged")
    cid, cparent, cfork = here.get("id"), here.get("parent"), here.get("fork")
    if not _whole_int(cid) or not _whole_int(cfork) or not (cparent is None or _whole_int(cparent)):
        raise SessionError("trace_branch_damaged", branch=cid)
    if len(kept) > MAX_BRANCHES - 1:
        raise SessionError("branch_limit", limit=MAX_BRANCHES)
    total = len(steps) + len(here["tail"]) + sum(len(b["steps"]) for b in kept
                                                  if isinstance(b, dict) and isinstance(b.get("steps"), list))
    if total > MAX_TRACE_STEPS:  # before any step is read: every one is a forward pass
        raise SessionError("trace_too_much_work", steps=total, texts=len(kept) + 1, limit=MAX_TRACE_STEPS)
    room = None
    if session is not None:
        room = session.max_tokens - len(session.encode_prompt(trace["prompt"], trace.get("chat", False)))
    try:
        tail = _parse_steps(here["tail"], session, len(steps) + 1)
        whole = {cid: steps + tail}
        _check_text(whole[cid], session, room, cid)
        tree = TraceTree(cid, cparent, cfork, tail)
        for b in kept:
            bid = b.get("id") if isinstance(b, dict) else None
            if (not _whole_int(bid) or bid in whole or not isinstance(b.get("steps"), list) or not b["steps"]
                    or not _whole_int(b.get("fork"))):
                raise SessionError("trace_branch_damaged", branch=bid)
            parent, fork = b.get("parent"), b["fork"]
            base = [] if parent is None else whole.get(parent) if _whole_int(parent) else None
            if base is None or fork > len(base) or (parent is None and fork != 0):
                raise SessionError("trace_branch_damaged", branch=bid)
            own = _parse_steps(b["steps"], session, fork + 1)
            whole[bid] = base[:fork] + own
            _check_text(whole[bid], session, room, bid)
            tree.kept.append((bid, parent, fork, own))
    except SessionError as err:
        if err.key == "trace_branch_damaged":
            raise
        raise SessionError("trace_branch_damaged", branch=locals().get("bid", cid)) from None
    if cparent is not None and (cparent not in whole or cparent == cid or cfork > len(whole[cid])):
        raise SessionError("trace_branch_damaged", branch=cid)
    return tree


def _check_text(steps: list, session: DecodeSession | None, room: int | None, branch) -> None:
    """One whole text of a tree: within the token limit, nothing after an end-of-text token."""
    if session is None:
        return
    ends = session.eos_ids()
    if len(steps) > room or any(token in ends for _, token, _ in steps[:-1]):
        raise SessionError("trace_branch_damaged", branch=branch)


def marked_steps(session: DecodeSession) -> list[int]:
    """The step numbers of the current text whose claimed draw did not reproduce (imported as forced)."""
    return [s.step for s in session.steps if s.distribution.marked_forced]


def replay(session: DecodeSession, trace, rewind: bool = False) -> int:
    """Re-run a trace on this session's model; returns the number of steps replayed.

    Each text of its tree is run through the model once, in chunks of PREFILL_CHUNK tokens (its prompt by start(),
    a branch's prefix by a prefill, the steps by DecodeSession.follow), not a pass per step: the largest valid
    trace (MAX_TRACE_STEPS over 16 texts) is about 100 passes instead of 1,024 and more (issue 32 item 10).

    A step whose claimed draw (or speculative choice) does not reproduce is taken as forced (marked_forced).

    The session is replaced only if the whole trace replays; otherwise it is left as it was. With
    `rewind`, it is then wound back to the prompt with the steps queued, to be played back one at a time.
    """
    prompt, chat, steps = parse_trace(trace, session)  # checked whole first: a bad trace costs no forward pass
    tree = parse_branches(trace, steps, session)  # so are its branches
    fresh = session.sibling()  # an engine's session replays on the engine
    fresh.start(prompt, chat)
    fresh.follow(steps + tree.tail)  # each text's tokens in chunks, not a pass per step (DecodeSession.follow)
    if tree.tail:
        fresh.back(len(tree.tail))  # the cut steps wait as the pending continuation, as they did
    fresh.branches.place(tree.id, tree.parent, tree.fork)
    for branch_id, parent, fork, own in tree.kept:
        fresh.add_branch(branch_id, parent, fork, own)
    fresh.branches.place(tree.id, tree.parent, tree.fork)  # again: the next new branch's number follows them all
    if rewind:
        fresh.reset()
        fresh.queue_replay(steps)
    session.adopt(fresh)
    return len(steps)
