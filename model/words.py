"""The app's two languages, and the one lookup of a word table: {key: (English, Simplified Chinese)}.

Three tables use it, each kept beside what it words: the engine's refusals (model/errors.py MESSAGES), the
figures' words (viz/i18n.py WORDS) and the page's own (ui/strings.py PAGE). Pure Python: viz/ and ui/ import it
without loading torch.
"""
from __future__ import annotations

LANGS = ("en", "zh")  # the order of each table's pair


def lang_of(value) -> str:
    """The page's language from a request value: 'zh' or 'en' (anything else)."""
    return value if value in LANGS else "en"


def lookup(table: dict[str, tuple[str, str]], key: str, lang: str, fmt: dict, home: str) -> str:
    """table[key] in `lang` ("en" or "zh", else ValueError), its {placeholders} filled from `fmt`; with no `fmt`
    the text unfilled (a template to fill many times). A missing key is a KeyError saying to add it to `home`."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    if key not in table:
        raise KeyError(f"no string {key!r}: add it to {home}, in English and Chinese")
    text = table[key][LANGS.index(lang)]
    return text.format(**fmt) if fmt else text
