"""Readable token display: vocabulary pieces with visible space and newline marks, bytes shown as hex."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .records import TokenInfo

VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}
_SP_BYTE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")  # SentencePiece byte-fallback piece


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's reversible map from the 256 printable stand-in characters back to bytes."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def piece_bytes(piece: str, byte_level: bool) -> bytes:
    """The bytes a vocabulary piece stands for."""
    if byte_level:
        decoder = _byte_decoder()
        if all(ch in decoder for ch in piece):
            return bytes(decoder[ch] for ch in piece)
        return piece.encode("utf-8")
    m = _SP_BYTE.match(piece)
    if m:
        return bytes([int(m.group(1), 16)])
    return piece.replace("▁", " ").encode("utf-8")


def display_piece(piece: str, byte_level: bool, special: bool = False) -> str:
    """A piece as the page shows it: '␣the', '↵', and '<E4 B8>' for bytes that are not a whole character."""
    if special:
        return piece
    raw = piece_bytes(piece, byte_level)
    if not raw:
        return "∅"
    parts = []
    while raw:  # whole characters as text, the bytes of an unfinished one as hex
        try:
            parts.append(_visible(raw.decode("utf-8")))
            break
        except UnicodeDecodeError as err:
            parts.append(_visible(raw[: err.start].decode("utf-8")))
            parts.append("<" + " ".join(f"{b:02X}" for b in raw[err.start : err.end]) + ">")
            raw = raw[err.end :]
    return "".join(parts)


def _visible(text: str) -> str:
    """Spaces and newlines as marks; other control characters (BEL, NUL, ESC, ...) as their bytes."""
    return "".join(
        VISIBLE.get(ch) or (f"<{ord(ch):02X}>" if unicodedata.category(ch) == "Cc" else ch) for ch in text
    )


class TokenDisplay:
    """Turns ids into TokenInfo for one tokenizer (memoised, the vocabulary does not change)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        decoder = getattr(getattr(tokenizer, "backend_tokenizer", None), "decoder", None)
        self.byte_level = "ByteLevel" in repr(decoder)
        self.special_ids = set(tokenizer.all_special_ids)
        self._cache: dict[int, TokenInfo] = {}

    def info(self, token_id: int) -> TokenInfo:
        token_id = int(token_id)
        if token_id not in self._cache:
            piece = self.tokenizer.convert_ids_to_tokens(token_id)
            self._cache[token_id] = TokenInfo(
                token_id, piece, display_piece(piece, self.byte_level, token_id in self.special_ids)
            )
        return self._cache[token_id]

    def text(self, ids: list[int]) -> str:
        """Decoded text; an unfinished multi-byte character at the end is held back, not shown as '�'."""
        return self.tokenizer.decode(ids, skip_special_tokens=False).rstrip("\ufffd")
