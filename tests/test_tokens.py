"""Readable token display (docs/what-it-teaches.md: Tokens are subwords): visible space and newline marks, bytes of
unfinished characters."""
import pytest

from model.tokens import display_piece

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
