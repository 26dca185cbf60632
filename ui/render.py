"""The page's own small pieces of HTML and choices: the text panel with its status line, the force list."""
from __future__ import annotations

import html

from model.decoding.records import Distribution, KVBytes
from ui.protocol import IDS, PROTOCOL
from ui.strings import t
from viz.labels import candidate_name
from viz.style import format_bytes, format_prob


def status_html(step: int, tokens: int, max_tokens: int, kv: KVBytes, logprob: float, ended: bool,
                revision: int, lang: str = "en", replay_left: int = 0, ahead: bool = True) -> str:
    """One line under the text: step, tokens, cache bytes measured vs formula, log-probability.

    The outer div carries data-step / data-rev / data-ended so a presenter's Play loop and the browser
    tests can wait for the page to show a new step; data-ahead="0" (`ahead` False) tells the page not to ask for
    the next step's chart (the server is busy with a class).
    """
    if kv.measured == 0 and kv.formula > 0:  # an engine's model: no cache tensors here, only the formula
        line = t("status_line_formula", lang, step=step, tokens=tokens, max_tokens=max_tokens,
                 size=format_bytes(kv.formula), logprob=f"{logprob:.2f}")
    else:
        line = t("status_line", lang, step=step, tokens=tokens, max_tokens=max_tokens,
                 measured=f"{kv.measured:,}", formula=f"{kv.formula:,}", size=format_bytes(kv.measured),
                 logprob=f"{logprob:.2f}")
    if ended:
        line += " · " + t("msg_end_of_text", lang)
    if replay_left:
        line += " · " + t("msg_replaying", lang, n=replay_left)
    names = PROTOCOL["marker"]
    no_ahead = "" if ahead else f' data-{names["ahead"]}="0"'
    return (f'<div id="{IDS["marker"]}" class="tbt-status" data-{names["step"]}="{step}" '
            f'data-{names["revision"]}="{revision}" data-{names["ended"]}="{int(ended)}"{no_ahead}>'
            f'{html.escape(line)}</div>')


def text_panel(chips: str, status: str) -> str:
    """The text so far (its chips, in their scrolling box) and the status line under it: one element."""
    return f'<div id="{IDS["chips"]}">{chips}</div>{status}'


def force_choices(dist: Distribution, lang: str = "en", context: list = ()) -> list[tuple[str, int]]:
    """(label, token id) for each candidate, most probable first: what a user may force instead of the draw.
    `context`: the text's last tokens, so a byte is named by the character it finishes or starts."""
    return [
        (f"{candidate_name(context, c.token, lang, escape=False)}  ·  {format_prob(c.prob_t1)}  ·  {t('fate_' + c.fate, lang)}", c.token.id)
        for c in sorted(dist.candidates, key=lambda c: c.rank)
    ]
