"""Tokens as every view names them: model.decoding.tokens.token_labels (byte runs grouped into the characters they make)
made into plotly-safe text, and the note a token that is only part of a character carries."""
from __future__ import annotations

import html

from model.decoding.records import TokenInfo
from model.decoding.tokens import TokenLabel, candidate_label, token_labels
from viz.i18n import t


def name(label: TokenLabel) -> str:
    """An axis tick or bar name, escaped for plotly: '今 1/2' for a part of a character, '<E4>…' for the start of
    one not finished, else the token's display."""
    return html.escape(label.short + ("…" if label.pending and not label.grouped else ""), quote=False)


def names(tokens: list[TokenInfo]) -> list[str]:
    """name() of each token of a text, in order (the labels see the whole run, so pass the text, not a slice of
    it cut inside a character, where you can)."""
    return [name(label) for label in token_labels(tokens)]


def byte_note(label: TokenLabel, lang: str = "en") -> str:
    """What a token that is not whole characters holds ('' for one that is): its bytes and its part of the
    character, or how much of a character it starts ('first byte of a 3-byte character')."""
    if label.pending:
        held, needed = label.pending
        return t("bytes_pending_one" if held == 1 else "bytes_pending", lang, hex=label.hex, held=held, needed=needed)
    if label.grouped:
        return t("bytes_part", lang, hex=label.hex, part=label.part, parts=label.parts, text=label.text)
    return ""


def hover_names(tokens: list[TokenInfo], lang: str = "en") -> list[str]:
    """name() of each token with its byte note on a second line (plotly hover text)."""
    return [name(label) + (f"<br>{html.escape(note, quote=False)}" if (note := byte_note(label, lang)) else "")
            for label in token_labels(tokens)]


def candidate_name(context: list[TokenInfo], token: TokenInfo, lang: str | None = None, escape: bool = True) -> str:
    """A candidate's name after the text so far (`context`, its last tokens): a byte that finishes the character
    the text ends inside shows it; with `lang`, the byte note follows in brackets. escape=False: plain text (a
    dropdown's choices), not plotly's HTML."""
    label = candidate_label(list(context), token)
    note = byte_note(label, lang) if lang else ""
    text = label.short + ("…" if label.pending and not label.grouped else "") + (f" ({note})" if note else "")
    return html.escape(text, quote=False) if escape else text
