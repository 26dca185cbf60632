"""What the page or the API sends, read by one reader of each kind: whole numbers (a forced token id, a count, a
branch, a layer), strictly ASCII digits; and text (a prompt, a constraint, a guess, a code, a lesson file), which
must be valid text.

str.isdigit() and int() disagree on what a digit is: "²" and "①" pass isdigit() and int() refuses them, while
int() takes "٣" (an Arabic-Indic three), "1_000" and " 7". Every page input that should be a whole number is read
by whole_number() instead, to one answer; what is refused, and how, is its caller's (each names the input).

A JSON client can send a lone surrogate ("\\ud800"): Python keeps it in a str, but nothing after can encode it (a
tokenizer, a log line, Gradio's answer to the page). Every text a page sends is checked by valid_text() before it is
used or stored, and refused under its caller's key.
"""
from __future__ import annotations

import math
import numbers
import re

from model.errors import SessionError

_DIGITS = re.compile(r"[0-9]{1,18}")  # ASCII only; 18 digits fit an int64, and int() never meets a 5,000-digit paste
_SHOWN = 24  # characters of a refused value quoted back in the message
TOKEN_CHARS = 64  # a text longer than this is no single token: refused before the whole of it is tokenized


def shown(value):
    """A refused value as a message quotes it ({value!r}): itself, or its text cut short if it is long."""
    text = value if isinstance(value, str) else repr(value)
    return value if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def whole_number(value, *, text: bool) -> int | None:
    """The whole number `value` is, or None: the one reader of whole numbers from the page and the API.

    Takes an integer (not a bool; a numpy one too), a finite float with no fractional part (a Gradio Number gives
    5.0) and, if `text` (an input typed or picked as text: a token id, a branch, a head), a str of 1-18 ASCII digits
    with spaces around it; a number box's input takes no text ("8" is not a count). Numbers may be negative, text
    may not: a str with a sign, "²", "①", full-width and other scripts' digits, "1_000", "1e3" and "0x10" are None.
    The range is the caller's to check.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and value == int(value):
        return int(value)
    if text and isinstance(value, str) and _DIGITS.fullmatch(value.strip(" ")):
        return int(value.strip(" "))
    return None


def parse_whole(value, error_key: str) -> int:
    """A whole number >= 0 (whole_number's, text too), or SessionError(error_key, value=<what was typed, shortened>)."""
    number = whole_number(value, text=True)
    if number is None or number < 0:
        raise SessionError(error_key, value=shown(value))
    return number


def parse_token_id(value) -> int:
    """A forced token's id: whole_number's reading (text too), or SessionError("forced_token_not_an_id"). A negative number is
    read as itself: whether the id is inside the vocabulary is derive()'s check, which names the vocabulary's size."""
    number = whole_number(value, text=True)
    if number is None:
        raise SessionError("forced_token_not_an_id", value=shown(value))
    return number


def whole_in_range(value, low: int, high: int, key: str) -> int:
    """value as a whole number in [low, high] (whole_number, no text), or SessionError(key, value, low, high)."""
    number = whole_number(value, text=False)
    if number is None or not low <= number <= high:
        raise SessionError(key, value=shown(value), low=low, high=high)
    return number


def a_name(value, limit: int = 200) -> str | None:
    """A name the page sends back (a lesson's id in the browser's saved progress): a str of at most `limit`
    characters, or None for anything else (a list, a number, a 5 MB text), which no table holds."""
    return value if isinstance(value, str) and len(value) <= limit else None


def valid_text(value, key: str, refusal: type[SessionError] = SessionError, **params):
    """`value` as it is, or refusal(key, **params) if it is a str that is not valid text: one holding a lone
    surrogate (U+D800-U+DFFF), which cannot be encoded as UTF-8, so neither tokenized nor sent back to a page (Gradio
    fails to serialise the answer, and the answers of every page the text reaches). The one check of the text a page
    sends; anything that is not a str is passed on unchanged (its type, emptiness and length are the caller's)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise refusal(key, **params) from None
    return value


def one_token(lm, text, key: str, invalid_key: str) -> int:
    """`text` as the one token of lm's vocabulary it is, as typed (a leading space counts: " Paris" is not "Paris"),
    or SessionError(key, answer=text, n=its token count, tokens=how it tokenizes); invalid_key for text that is
    not valid text. The one check of "exactly one token" (Patching's answer, the lens's pinned tokens)."""
    if not isinstance(text, str):
        raise SessionError(key, answer=shown(text), n="?", tokens="?")
    valid_text(text, invalid_key)
    ids = lm.tokenizer(text[:TOKEN_CHARS], add_special_tokens=False)["input_ids"]  # a token is never this long
    if len(ids) != 1 or len(text) > TOKEN_CHARS:
        n = f"{len(ids)}" if len(text) <= TOKEN_CHARS else f"{len(ids)}+"
        tokens = " | ".join(lm.tokens.info(i).display for i in ids) or "-"
        raise SessionError(key, answer=text[:TOKEN_CHARS], n=n, tokens=tokens)
    return ids[0]


MAX_NOTES_CHARS = 4_000  # a student's notes (about two printed pages): the notes box, a trace, a summary


def valid_notes(notes) -> str:
    """A student's notes as a page or a trace sent them: plain text of at most MAX_NOTES_CHARS ('' for None);
    refused ('notes_too_long', 'notes_invalid_text', 'notes_not_text') otherwise."""
    if notes is None:
        return ""
    if not isinstance(notes, str):
        raise SessionError("notes_not_text")
    valid_text(notes, "notes_invalid_text")
    if len(notes) > MAX_NOTES_CHARS:
        raise SessionError("notes_too_long", n=len(notes), limit=MAX_NOTES_CHARS)
    return notes
