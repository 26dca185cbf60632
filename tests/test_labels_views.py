"""Bytes become characters in every view that shows tokens, and each token's text is escaped exactly once.

A real SmolLM2 session whose text holds a `<`, a `&`, a character made of byte tokens (今, 气) and, last, the first
byte of a character not finished, goes through every view that names tokens: chips, candidates, temperature,
attention axes, chain rule, training (teacher forcing) and GLTR scoring, branches, the sampler race, the
speculative grid and the offline page. viz/branches.py and viz/race.py escaped twice before (`&lt;` on the page).
"""
import json

import numpy as np
import pytest

import viz
from viz.chain import chain_chart
from viz.speculative import speculative_chart
from model.decoding.branches import repeated_mask
from model.inside.chain import chain_rule
from model.strategies.race import race
from model.decoding.records import SamplingConfig, attention_matrix
from model.speed.speculative import speculative_decode
from model.inside.teacher_forcing import teacher_forcing
from model.decoding.tokens import token_labels
from viz.branches import branch_compare_html, branch_logp_chart
from viz.chain import gltr_html, teacher_chart
from viz.offline import session_record
from viz.race import race_chart, race_html
from viz.style import chart_json

pytestmark = pytest.mark.model
GREEDY = SamplingConfig(temperature=0)


@pytest.fixture(scope="module")
def written(lm):
    """A session: prompt 'a < b & c 今天', then forced `<`, `&`, 气's three bytes and the first byte of 好."""
    from model.decoding.session import DecodeSession

    s = DecodeSession(lm)
    s.start("a < b & c 今天")
    pieces = [lm.tokenizer.encode(x, add_special_tokens=False) for x in ("<", "&", "气")]
    first_of_hao = lm.tokenizer.encode("好", add_special_tokens=False)[0]
    assert len(pieces[2]) > 1  # SmolLM2 spends several byte tokens on 气
    for token in [*pieces[0], *pieces[1], *pieces[2], first_of_hao]:
        s.step(GREEDY, force_token=token)
    return s


def once(out) -> str:
    """Anything a view returns, as text; it must hold `&lt;` (the `<` escaped) and never `&amp;lt;` or `&amp;amp;`."""
    text = out if isinstance(out, str) else json.dumps(json.loads(chart_json(out)), ensure_ascii=False)
    assert "&amp;lt;" not in text and "&amp;amp;" not in text and "&amp;gt;" not in text
    return text


def test_the_labels_group_the_byte_runs_of_the_real_tokenizer(written):
    tokens = [*written.prefill.tokens, *(s.token for s in written.steps)]
    labels = token_labels(tokens)
    assert {"今", "气"} <= {x.text for x in labels if x.grouped}
    assert labels[-1].pending in ((1, 3), (2, 3)) and labels[-1].display.startswith("<")  # 好 started, not finished
    assert viz.token_chips_html(written.prefill.tokens, written.steps).count('class="tbt-cgroup"') >= 2


def test_every_view_that_names_tokens_shows_the_characters_and_escapes_once(written, lm):
    s, cfg = written, SamplingConfig()
    steps, tokens = s.steps, [*s.prefill.tokens, *(st.token for st in s.steps)]
    chips = once(viz.token_chips_html(s.prefill.tokens, steps, "zh"))
    assert "今" in chips and "气" in chips and "&lt;" in chips and "&amp;" in chips and "解码后的文本" in chips
    assert "a &lt; b &amp; c 今天&lt;&amp;气" in chips  # the decoded text, the unfinished 好 held back
    context = lm.tokens.tail(s.ids)
    cand = once(viz.candidate_chart(s.preview(cfg), "en", context=context))
    assert "byte" in cand  # the text ends inside 好: the candidates that finish it are named by it
    once(viz.temperature_chart([s.preview(cfg)], s.sweep(cfg, [0.5, 1.0]), 1.0, "en", context=context))
    full = attention_matrix(s.prefill, steps, 0, None)
    names = [x.short for x in token_labels(tokens)]
    attention = once(viz.attention_chart(full, names, 0, None, lm.info, 0, None, "en"))
    assert "今 1/" in attention and "气 1/3" in attention and "&lt;" in attention
    chain = once(chain_chart(chain_rule(steps, s.prompt_len), "en"))
    assert "气 1/3" in chain and "&lt;" in chain
    tf = teacher_forcing(lm, s.ids, s.prompt_len)
    assert "气 1/3" in once(teacher_chart(tf, "en")) and "气 1/3" in once(gltr_html(tf, "en"))
    rep = repeated_mask(s.ids, s.prompt_len)[s.prompt_len:]
    compare = once(branch_compare_html(1, steps, rep, 2, steps[:3], rep[:3], "en"))
    assert "&lt;" in compare and "气 1/3" in compare
    once(branch_logp_chart(1, steps, 2, steps[:3], "en"))
    run_race = race(lm, s.ids, GREEDY, SamplingConfig(temperature=0.7, seed=3), 3, 512)
    once(race_html(run_race, "en"))
    once(race_chart(run_race, "en"))
    offline = session_record(s.prefill, steps, lm.info, [0], "en")
    assert "今 1/2" in offline["prompt_tokens"] or "今 1/3" in offline["prompt_tokens"]
    assert [st["token"] for st in offline["steps"]][:2] == ["<", "&"]  # plain text: the page's script escapes it


def test_the_speculative_grid_names_drafted_bytes_by_their_character(lm):
    ids = lm.tokenizer.encode("<x&今天> <x&今天> <x&今天> <x&", add_special_tokens=False)
    run = speculative_decode(lm, ids, GREEDY, max_new_tokens=8)
    grid = once(speculative_chart(run, lm.name, "en"))
    drafted = [tok for r in run.rounds for tok in r.drafted]
    if any(x.grouped for x in token_labels(drafted)):
        assert "今 1/" in grid or "天 1/" in grid
    assert np.isfinite([r.accepted for r in run.rounds]).all()
