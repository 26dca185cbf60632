"""Readable token display (docs/what-it-teaches.md: Tokens are subwords): visible space and newline marks, bytes of
unfinished characters."""
import pytest

from model.decoding.tokens import display_piece

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "piece, byte_level, shown",
    [
        ("Ġcapital", True, "␣capital"),  # GPT-2 byte-level: Ġ is a leading space
        ("Ċ", True, "↵"),  # and Ċ a newline
        ("ĠðŁ", True, "␣<F0 9F>"),  # a space, then the first bytes of an emoji: not a character yet
        ("ä½", True, "<E4 BD>"),
        ("ï¼Į", True, "，"),  # a whole CJK punctuation mark
        ("▁hello", False, "␣hello"),  # SentencePiece: ▁ is the space
        ("<0xE4>", False, "<E4>"),  # SentencePiece byte fallback
        ("a\x07b", False, "a<07>b"),  # a control character is shown as its byte, never raw
        ("\x1b", False, "<1B>"),
    ],
)
def test_display_piece(piece, byte_level, shown):
    assert display_piece(piece, byte_level) == shown


def test_special_tokens_are_shown_as_they_are():
    assert display_piece("<|im_end|>", True, special=True) == "<|im_end|>"


# ---- byte runs grouped into characters (model.decoding.tokens.token_labels) -------------------------------------------------
from model.decoding.records import TokenInfo  # noqa: E402
from model.decoding.tokens import _byte_decoder, candidate_label, token_bytes, token_labels  # noqa: E402

_ENCODE = {b: ch for ch, b in _byte_decoder().items()}


def byte_token(data: bytes, token_id: int = 0) -> TokenInfo:
    """A byte-level BPE token (SmolLM2's kind) standing for `data`."""
    piece = "".join(_ENCODE[b] for b in data)
    return TokenInfo(token_id, piece, display_piece(piece, True))


def sp_token(piece: str) -> TokenInfo:
    """A SentencePiece token (Gemma's kind)."""
    return TokenInfo(0, piece, display_piece(piece, False))


# 今天天气 as SmolLM2 writes it: <E4 BB><8A><E5 A4><A9><E5 A4><A9><E6><B0><94>
JINTIAN = [bytes.fromhex(h) for h in ("E4BB", "8A", "E5A4", "A9", "E5A4", "A9", "E6", "B0", "94")]


def test_a_run_of_byte_tokens_is_labelled_as_the_character_it_makes():
    labels = token_labels([byte_token(b) for b in JINTIAN])
    assert [(x.text, x.part, x.parts) for x in labels] == [
        ("今", 1, 2), ("今", 2, 2), ("天", 1, 2), ("天", 2, 2), ("天", 1, 2), ("天", 2, 2),
        ("气", 1, 3), ("气", 2, 3), ("气", 3, 3)]
    assert [x.hex for x in labels[:2]] == ["E4 BB", "8A"] and labels[0].display == "<E4 BB>"
    assert labels[0].short == "今 1/2" and all(x.pending is None for x in labels)
    assert b"".join(token_bytes(byte_token(b)) for b in JINTIAN).decode() == "今天天气"


def test_whole_tokens_keep_their_display_and_specials_are_never_grouped():
    tokens = [byte_token(" the".encode()), byte_token("，".encode()), TokenInfo(2, "<|im_end|>", "<|im_end|>"),
              sp_token("<E4>"), sp_token("▁天气")]
    assert [(x.text, x.parts, x.short) for x in token_labels(tokens)] == [
        ("␣the", 1, "␣the"), ("，", 1, "，"), ("<|im_end|>", 1, "<|im_end|>"), ("<E4>", 1, "<E4>"),
        ("␣天气", 1, "␣天气")]


def test_sentencepiece_byte_fallback_is_grouped_too():
    labels = token_labels([sp_token("<0xF0>"), sp_token("<0x9F>"), sp_token("<0x98>"), sp_token("<0x80>")])
    assert {x.text for x in labels} == {"😀"} and [x.part for x in labels] == [1, 2, 3, 4]


def test_a_text_ending_inside_a_character_says_how_far_it_got():
    labels = token_labels([byte_token("今".encode()), byte_token(b"\xe5"), byte_token(b"\xa4")])
    assert labels[0].text == "今" and labels[0].pending is None
    assert labels[1].pending == labels[2].pending == (2, 3) and labels[2].part == 2


def test_a_candidate_is_labelled_after_the_text_so_far():
    context = [byte_token(" x".encode()), byte_token(b"\xe4\xbb")]
    done = candidate_label(context, byte_token(b"\x8a"))
    assert (done.text, done.part, done.parts, done.pending) == ("今", 2, 2, None)
    start = candidate_label([byte_token(" x".encode())], byte_token(b"\xe4"))
    assert start.display == "<E4>" and start.pending == (1, 3) and start.parts == 1
    assert candidate_label([], byte_token(" y".encode())).short == "␣y"


def test_a_token_with_a_character_boundary_inside_it_joins_both_runs():
    labels = token_labels([byte_token(b"\xe4\xbb"), byte_token(b"\x8a\xe5\xa4"), byte_token(b"\xa9")])
    assert {x.text for x in labels} == {"今天"} and [x.parts for x in labels] == [3, 3, 3]
