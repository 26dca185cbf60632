"""A view an engine cannot feed: a small figure that says so in one plain sentence, instead of a blank or a guess."""
from __future__ import annotations

from .i18n import t
from .style import MUTED, base_layout, chart


def unavailable_chart(title_key: str, reason_key: str, lang: str = "en", **params) -> dict:
    """A titled, empty chart whose one line says why nothing is drawn (words from viz/i18n.py WORDS)."""
    hidden = {"visible": False}
    layout = base_layout(t(title_key, lang), lang, height=260, xaxis=hidden, yaxis=hidden,
                         annotations=[{"text": t(reason_key, lang, **params), "xref": "paper", "yref": "paper",
                                       "x": 0.5, "y": 0.55, "showarrow": False, "font": {"size": 18, "color": MUTED}}])
    return chart([], layout)
