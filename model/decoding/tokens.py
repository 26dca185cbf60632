"""Readable token display: vocabulary pieces with visible space and newline marks, bytes shown as hex."""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from model.decoding.records import TokenInfo

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
    return display_bytes(raw)


def _visible(text: str) -> str:
    """Spaces and newlines as marks; other control characters (BEL, NUL, ESC, ...) as their bytes."""
    return "".join(
        VISIBLE.get(ch) or (f"<{ord(ch):02X}>" if unicodedata.category(ch) == "Cc" else ch) for ch in text
    )


# (id, piece) of every special token of every tokenizer read (<bos>, <|im_start|>, ...): the decoded text leaves them
# out, as tokenizer.decode(skip_special_tokens=True) does; a chip still shows each. Id and piece together: a normal
# token of another vocabulary with the same id has another piece.
SPECIAL_TOKENS: set[tuple[int, str]] = set()


class TokenDisplay:
    """Turns ids into TokenInfo for one tokenizer (memoised, the vocabulary does not change)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        decoder = getattr(getattr(tokenizer, "backend_tokenizer", None), "decoder", None)
        self.byte_level = "ByteLevel" in repr(decoder)
        self.special_ids = set(tokenizer.all_special_ids)
        special = sorted(self.special_ids)
        SPECIAL_TOKENS.update(zip(special, tokenizer.convert_ids_to_tokens(special)))
        self._cache: dict[int, TokenInfo] = {}

    def info(self, token_id: int) -> TokenInfo:
        token_id = int(token_id)
        if token_id not in self._cache:
            piece = self.tokenizer.convert_ids_to_tokens(token_id)
            self._cache[token_id] = TokenInfo(
                token_id, piece, display_piece(piece, self.byte_level, token_id in self.special_ids)
            )
        return self._cache[token_id]

    def tail(self, ids: list[int], n: int = 3) -> list[TokenInfo]:
        """The last n tokens of a text: the context a next token's label needs (model.decoding.tokens.candidate_label)."""
        return [self.info(i) for i in ids[-n:]]

    def text(self, ids: list[int]) -> str:
        """Decoded text; an unfinished multi-byte character at the end is held back, not shown as '�'."""
        return self.tokenizer.decode(ids, skip_special_tokens=False).rstrip("\ufffd")


# ---- one label per token, byte runs grouped into the characters they make ----------------------------------------
_HEX_RUN = re.compile(r"<([0-9A-F]{2}(?: [0-9A-F]{2})*)>")


@lru_cache(maxsize=65536)
def _bytes_of(piece: str, display: str) -> bytes:
    """The bytes behind a token's display: found by asking which reading of its piece (byte-level BPE or
    SentencePiece) gives that display. A special token, or an engine's token with no such reading, is its text."""
    for byte_level in (True, False):
        if display_piece(piece, byte_level) == display:
            return piece_bytes(piece, byte_level)
    return display.replace("␣", " ").replace("↵", "\n").encode("utf-8")


def token_bytes(token: TokenInfo) -> bytes:
    """The bytes a token stands for (memoised by its piece and display)."""
    return _bytes_of(token.piece, token.display)


def utf8_length(lead: int) -> int:
    """How many bytes the UTF-8 character that starts with byte `lead` has (1 for a byte that starts none)."""
    return 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF8 else 1


@dataclass(frozen=True)
class TokenLabel:
    """How a view shows one token of a text, its byte run grouped into the characters it makes.

    display: the token on its own (TokenInfo.display, '<E4 BB>'); text: the characters of the run of byte tokens
    it belongs to ('今'), or its display when it is whole characters by itself; part / parts: its place in that run
    (1 / 1 outside a run); hex: its bytes ('E4 BB'); pending: (bytes held, bytes needed) when the text ends inside a
    character this token starts (or continues), else None.
    """

    display: str
    text: str
    part: int = 1
    parts: int = 1
    hex: str = ""
    pending: tuple[int, int] | None = None

    @property
    def grouped(self) -> bool:
        """True when the token is one of several that together make a character."""
        return self.parts > 1

    @property
    def short(self) -> str:
        """One line for an axis tick or a bar: '今 1/2' for a part of a run, else the display."""
        return f"{self.text} {self.part}/{self.parts}" if self.grouped else self.display


def token_labels(tokens: list[TokenInfo]) -> list[TokenLabel]:
    """Per token of a text (in order), its label: a run of tokens joined by a character whose bytes straddle their
    boundaries is one group, shown as the characters it makes, each token keeping its place (part of parts) and
    its own bytes. Tokens that are whole characters by themselves keep their display. The one labelling every view
    uses (chips, axes, hovers, the offline page)."""
    raws = [token_bytes(tok) for tok in tokens]
    labels: list[TokenLabel | None] = [None] * len(tokens)
    i = 0
    while i < len(tokens):
        if not _HEX_RUN.search(tokens[i].display) or tokens[i].display == tokens[i].piece:
            labels[i] = TokenLabel(tokens[i].display, tokens[i].display, hex=_hex(raws[i]))
            i += 1
            continue
        j, data = i + 1, raws[i]  # grow the run until its bytes end on a character boundary
        while _open_tail(data) and j < len(tokens) and _HEX_RUN.search(tokens[j].display):
            data += raws[j]
            j += 1
        needed = _open_tail(data)
        text = display_bytes(data)
        for k in range(i, j):
            pending = needed if needed and k >= _owner(raws, i, j, len(data) - needed[0]) else None
            labels[k] = TokenLabel(tokens[k].display, text if j - i > 1 else tokens[k].display, k - i + 1, j - i,
                                   _hex(raws[k]), pending)
        i = j
    return labels


def _owner(raws: list[bytes], i: int, j: int, offset: int) -> int:
    """The index of the token among raws[i:j] that holds byte `offset` of their joined bytes."""
    for k in range(i, j):
        if offset < len(raws[k]):
            return k
        offset -= len(raws[k])
    return j - 1


def _open_tail(data: bytes) -> tuple[int, int] | None:
    """(bytes held, bytes needed) of an unfinished UTF-8 character at the end of `data`, or None."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII): the last character starts here
            need = utf8_length(byte)
            return (back, need) if need > back else None
    return None


def display_bytes(data: bytes) -> str:
    """Bytes as the page shows text: whole characters with visible marks, the bytes of an unfinished one as hex."""
    parts = []
    while data:
        try:
            parts.append(_visible(data.decode("utf-8")))
            break
        except UnicodeDecodeError as err:
            parts.append(_visible(data[: err.start].decode("utf-8")))
            parts.append("<" + " ".join(f"{b:02X}" for b in data[err.start : err.end]) + ">")
            data = data[err.end :]
    return "".join(parts)


def _hex(data: bytes) -> str:
    return " ".join(f"{b:02X}" for b in data)


def candidate_label(context: list[TokenInfo], token: TokenInfo) -> TokenLabel:
    """The label of `token` as the next token after `context` (the text so far): a byte that completes the
    character the text ends inside shows that character; the start of a character says it is one."""
    tail = context[-3:]  # a UTF-8 character is at most 4 bytes: 3 tokens before it can hold the rest of it
    return token_labels([*tail, token])[-1]


def decoded_text(tokens: list[TokenInfo]) -> str:
    """The text the tokens make, as the page shows text (spaces, tabs and newlines as they are, any other control
    character as its byte, <07> for BEL, as the chips show it), special tokens (<bos>) left out; the bytes of a
    character not finished yet are held back."""
    data = b"".join(token_bytes(tok) for tok in tokens if (tok.id, tok.piece) not in SPECIAL_TOKENS)
    held = _open_tail(data)
    text = (data[: len(data) - held[0]] if held else data).decode("utf-8", errors="replace")
    return "".join(f"<{ord(ch):02X}>" if ch not in "\t\n\r" and unicodedata.category(ch) == "Cc" else ch
                   for ch in text)
