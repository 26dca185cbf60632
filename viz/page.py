"""Small pieces of the page: the status line (with the step marker), the force list, and the carrier of a chart.

A chart travels to the page as its plotly JSON in a hidden element (figure_carrier); assets/app.js draws it
with Plotly.react into a plot that stays on the page, so a step re-draws the chart instead of building a new
one (gr.Plot builds it and then resizes it: two full draws per update).
"""
from __future__ import annotations

import html
import itertools
import json
import re

from model.records import Distribution, KVBytes
from viz.i18n import t
from viz.style import chart_json, format_bytes, format_prob


def status_html(step: int, tokens: int, max_tokens: int, kv: KVBytes, logprob: float, ended: bool,
                revision: int, lang: str = "en", replay_left: int = 0) -> str:
    """One line under the text: step, tokens, cache bytes measured vs formula, log-probability.

    The outer div carries data-step / data-rev / data-ended so a presenter's Play loop and the browser
    tests can wait for the page to show a new step.
    """
    line = t("status_line", lang, step=step, tokens=tokens, max_tokens=max_tokens,
             measured=f"{kv.measured:,}", formula=f"{kv.formula:,}", size=format_bytes(kv.measured),
             logprob=f"{logprob:.2f}")
    if ended:
        line += " · " + t("msg_end_of_text", lang)
    if replay_left:
        line += " · " + t("msg_replaying", lang, n=replay_left)
    return (f'<div id="tbt-marker" class="tbt-status" data-step="{step}" data-rev="{revision}" '
            f'data-ended="{int(ended)}">{html.escape(line)}</div>')


def text_panel(chips: str, status: str) -> str:
    """The text so far (its chips, in the scrolling box #tbt-chips) and the status line under it: one element."""
    return f'<div id="tbt-chips">{chips}</div>{status}'


def force_choices(dist: Distribution, lang: str = "en") -> list[tuple[str, int]]:
    """(label, token id) for each candidate, most probable first: what a user may force instead of the draw."""
    return [
        (f"{c.token.display}  ·  {format_prob(c.prob_t1)}  ·  {t('fate_' + c.fate, lang)}", c.token.id)
        for c in sorted(dist.candidates, key=lambda c: c.rank)
    ]


_carrier_revision = itertools.count(1)


def figure_carrier(fig: dict, target: str, key: str | None = None, temperature: float | None = None,
                   kind: str = "tbt-figdata") -> str:
    """A hidden element holding the chart `fig` as plotly JSON, for app.js to draw into the element `target`.

    The JSON is the element's text (only & < > escaped: JSON is full of quotes, which an attribute would
    have to spell &quot;). Each carrier has its own data-rev, so the page draws every update exactly once.
    A candidate chart also names what it shows, `key` (the text and every setting but the temperature) and
    the temperature, so the page can tell it from a chart of the same step it already drew (figure_bundle).
    `kind` "tbt-figahead": the chart the next step will show, for the page to draw ahead (app.py, next_chart).
    """
    named = (f' data-key="{html.escape(key, quote=True)}" data-t="{temperature_key(temperature)}"'
             if key is not None and temperature is not None else "")
    return (f'<div class="{kind}" hidden data-target="{html.escape(target, quote=True)}"{named} '
            f'data-rev="{next(_carrier_revision)}">{html.escape(chart_json(fig), quote=False)}</div>')


def temperature_key(temperature: float) -> str:
    """How a temperature names a chart on the page: two decimals, as the slider's 0.05 steps."""
    return f"{temperature:.2f}"


def figure_bundle(figs: dict[float, dict], key: str) -> str:
    """A hidden element holding one candidate chart per temperature, for one `key` (text and other settings).

    app.js draws from it while the temperature slider moves, at once, instead of waiting for the server.
    """
    entries = ",".join(f'"{temperature_key(t)}":{chart_json(fig)}' for t, fig in figs.items())
    return (f'<div class="tbt-figbundle" hidden data-key="{html.escape(key, quote=True)}">'
            f'{html.escape("{" + entries + "}", quote=False)}</div>')


CARRIER = re.compile(r'<div class="tbt-fig(?:data|bundle|ahead)"[^>]*>(.*)</div>', re.S)


def carried_figure(carrier: str) -> dict:
    """The plotly figure (data, layout) in a figure_carrier element, or {temperature: figure} in a bundle."""
    return json.loads(html.unescape(CARRIER.fullmatch(carrier).group(1)))
