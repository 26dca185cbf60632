"""Whole numbers typed on the page (a forced token id, a count), read strictly: ASCII digits only.

str.isdigit() and int() disagree on what a digit is: "²" and "①" pass isdigit() and int() refuses them, while
int() takes "٣" (an Arabic-Indic three), "1_000" and " 7". A page input is read here instead, to one answer.
"""
from __future__ import annotations

import math
import re

from .errors import SessionError

_DIGITS = re.compile(r"[0-9]{1,18}")  # ASCII only; 18 digits fit an int64, and int() never meets a 5,000-digit paste
_SHOWN = 24  # characters of a refused value quoted back in the message


def _shown(value):
    """The refused value as the message quotes it ({value!r}): itself, or its text cut short if it is long."""
    text = value if isinstance(value, str) else repr(value)
    return value if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def parse_whole(value, error_key: str) -> int:
    """A whole number >= 0 from a page input, or SessionError(error_key, value=<what was typed, shortened>).

    Takes an int (not a bool), a float with no fractional part (a Gradio Number gives 5.0), or a str of ASCII
    digits with spaces around it. Refuses signs, "²", "①", full-width and other scripts' digits, "1_000",
    "1e3" and more than 18 digits. The range (e.g. inside the vocabulary) is the caller's to check.
    """
    if isinstance(value, bool):
        pass
    elif isinstance(value, int) and value >= 0:
        return value
    elif isinstance(value, float) and math.isfinite(value) and value >= 0 and value == int(value):
        return int(value)
    elif isinstance(value, str) and _DIGITS.fullmatch(value.strip(" ")):
        return int(value.strip(" "))
    raise SessionError(error_key, value=_shown(value))


def parse_token_id(value) -> int:
    """A forced token's id: a whole number (an int, or a float such as 5.0 from a number box), or a str of ASCII
    digits. Anything else is refused with SessionError("forced_token_not_an_id"). Whether the id is inside the
    vocabulary (a negative one is not) is derive()'s check, which names the vocabulary's size."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    return parse_whole(value, "forced_token_not_an_id")
