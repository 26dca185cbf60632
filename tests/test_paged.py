"""The model of vLLM's paged allocator: blocks, bytes and shared prefixes against hand computations."""
from dataclasses import asdict

import pytest

from model.errors import SessionError
from model.speed.paged import BLOCK_SIZE, block_hashes, bytes_per_token, paged_layout
from model.decoding.records import ModelInfo

pytestmark = pytest.mark.unit

SMOLLM2 = ModelInfo(name="smollm2", layers=30, heads=9, kv_heads=3, head_dim=64, hidden=576, vocab=49152,
                    bytes_per_value=4, dtype="float32", context=8192)
PER_TOKEN = 2 * 30 * 3 * 64 * 4  # 46,080 B (docs/what-it-teaches.md: Its size)
BLOCK = 16 * PER_TOKEN
MAX = 512

PROMPT = list(range(100, 140))  # 40 tokens: two full blocks and 8 tokens of a third
OTHER = list(range(500, 520))  # 20 tokens


def test_bytes_per_token_is_the_kv_formula():
    assert bytes_per_token(SMOLLM2) == PER_TOKEN == 46_080
    assert BLOCK_SIZE == 16


def test_three_sessions_two_sharing_a_40_token_prompt():
    layout = paged_layout([("a", 50, PROMPT), ("b", 45, PROMPT), ("c", 20, OTHER)], SMOLLM2, MAX)
    a, b, c = layout.sessions
    assert [s.blocks for s in (a, b, c)] == [4, 3, 2]  # ceil(50/16), ceil(45/16), ceil(20/16)
    assert [s.used_bytes for s in (a, b, c)] == [50 * PER_TOKEN, 45 * PER_TOKEN, 20 * PER_TOKEN]
    assert [s.allocated_bytes for s in (a, b, c)] == [4 * BLOCK, 3 * BLOCK, 2 * BLOCK]
    assert [s.waste_bytes for s in (a, b, c)] == [14 * PER_TOKEN, 3 * PER_TOKEN, 12 * PER_TOKEN]
    assert [s.last_block_fill for s in (a, b, c)] == [2, 13, 4]
    assert a.shared == [True, True, False, False]  # the 2 full prompt blocks; the third holds 8 prompt tokens only
    assert b.shared == [True, True, False]
    assert c.shared == [False, False]
    assert layout.table_blocks == 9
    assert layout.physical_blocks == 7  # the 2 shared blocks are held once
    assert layout.shared_saving_bytes == 2 * BLOCK == 1_474_560
    assert layout.allocated_bytes == 7 * BLOCK and layout.unshared_bytes == 9 * BLOCK
    assert layout.used_bytes == 115 * PER_TOKEN
    assert layout.held_bytes == (115 - 32) * PER_TOKEN  # the 32 shared prompt tokens held once
    assert layout.waste_bytes == 29 * PER_TOKEN
    assert layout.reserved_bytes == 3 * 512 * PER_TOKEN  # contiguous: max_tokens for each session
    assert a.reserved_bytes == 512 * PER_TOKEN


def test_sharing_needs_every_token_before_the_block_to_agree():
    changed_late = PROMPT[:20] + [9] + PROMPT[21:]  # differs inside block 1: block 0 still shared
    changed_early = [9] + PROMPT[1:]  # differs in block 0: block 1's tokens agree but its prefix does not
    layout = paged_layout([("a", 40, PROMPT), ("b", 40, changed_late), ("c", 40, changed_early)], SMOLLM2, MAX)
    a, b, c = layout.sessions
    assert a.shared == [True, False, False] and b.shared == [True, False, False]
    assert c.shared == [False, False, False]
    assert layout.shared_saving_bytes == BLOCK
    same_block_elsewhere = list(range(16)) + list(range(16))  # the same 16 ids at block 0 and block 1
    assert len(set(block_hashes(same_block_elsewhere))) == 2  # different positions, different blocks


def test_only_known_full_blocks_are_shared_and_without_sharing_nothing_is():
    layout = paged_layout([("a", 64, PROMPT[:16]), ("b", 64, PROMPT[:16])], SMOLLM2, MAX)
    assert [s.shared for s in layout.sessions] == [[True, False, False, False]] * 2  # later tokens unknown: own blocks
    off = paged_layout([("a", 64, PROMPT), ("b", 64, PROMPT)], SMOLLM2, MAX, share_prefixes=False)
    assert off.shared_saving_bytes == 0 and off.physical_blocks == off.table_blocks == 8


def test_the_record_holds_no_token_ids():
    layout = paged_layout([("a", 50, PROMPT), ("b", 45, PROMPT)], SMOLLM2, MAX)
    def walk(value):
        if isinstance(value, dict):
            return [x for v in value.values() for x in walk(v)]
        if isinstance(value, list):
            assert all(isinstance(v, (bool, dict)) for v in value), value  # no list of ids: flags and rows only
            return [x for v in value for x in walk(v)]
        return [value]

    scalars = walk(asdict(layout))
    assert all(isinstance(v, (int, str)) for v in scalars)
    assert {v for v in scalars if isinstance(v, str)} == {"a", "b"}  # the labels given, no text


def test_empty_and_invalid_sessions():
    layout = paged_layout([("a", 0, [])], SMOLLM2, MAX)
    assert layout.sessions[0].blocks == 0 and layout.allocated_bytes == 0
    with pytest.raises(SessionError) as err:
        paged_layout([("a", 10, PROMPT)], SMOLLM2, MAX)  # fewer tokens than known ids
    assert err.value.key == "paged_length_invalid"
    with pytest.raises(SessionError) as err:
        paged_layout([("a", 600, [])], SMOLLM2, MAX)
    assert err.value.key == "paged_length_invalid"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_block_table_figure_marks_the_shared_blocks(lang):
    import plotly.graph_objects as go

    from viz.i18n import t
    from viz.paged import paged_chart

    layout = paged_layout([("", 50, PROMPT), ("", 45, PROMPT), ("", 20, OTHER)], SMOLLM2, MAX)
    spec = paged_chart(layout, lang)
    go.Figure(**spec)  # validated: every property is one plotly knows
    by_role = {tr.get("meta", {}).get("role"): tr for tr in spec["data"]}
    assert len(by_role["shared"]["x"]) == 4  # 2 shared blocks in each of 2 rows
    assert len(by_role["private"]["x"]) == 9 - 4
    assert len(by_role["waste"]["x"]) == 3  # every session's last block is partly filled
    assert spec["layout"]["yaxis"]["ticktext"] == [t("paged_session", lang, n=n) for n in (1, 2, 3)]
    assert by_role["totals"]["x"][2] * 1024**2 == pytest.approx(layout.allocated_bytes)  # MiB


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_title_counts_one_session_and_one_block_in_the_singular(lang):
    """'1 live sessions in 1 blocks' read wrong (issue 22): English says 1 session, 1 block, 2 sessions; Chinese has
    no plural and reads the same either way."""
    from viz.paged import paged_chart

    one = paged_chart(paged_layout([("", 10, OTHER[:10])], SMOLLM2, MAX), lang)["layout"]["title"]["text"]
    two = paged_chart(paged_layout([("", 20, OTHER), ("", 45, PROMPT)], SMOLLM2, MAX), lang)["layout"]["title"]["text"]
    more = paged_chart(paged_layout([("", 10, OTHER[:10])] * 2, SMOLLM2, MAX), lang, max_rows=1)["layout"]["annotations"]
    if lang == "en":
        assert "1 session in 1 block of 16 tokens" in one
        assert "2 sessions in 5 blocks of 16 tokens" in two  # ceil(20/16) + ceil(45/16)
        assert any("+ 1 more session," in a["text"] for a in more)
    else:
        assert "1 个会话占用 1 个块" in one and "2 个会话占用 5 个块" in two
        assert any("另有 1 个会话" in a["text"] for a in more)
