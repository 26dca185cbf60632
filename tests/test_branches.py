"""Branches on the real default model: going back and stepping differently keeps the old text; choosing a branch
gives back exactly what it showed; traces with branches; repeated n-grams; the Branches tab through the API."""
import json

import numpy as np
import pytest

import viz
from cores import sequence
from model.decoding.sequence import Sequence
from model.decoding.branches import MAX_BRANCHES, Repeat, repeated_mask, repeated_ngrams
from model.decoding.records import SamplingConfig, attention_matrix
from model.decoding.session import DecodeSession, SessionError
from model.decoding.trace import parse_trace, read_trace, replay, to_trace
from served import served

SAMPLED = SamplingConfig(temperature=0.9, top_k=40, top_p=0.95, repetition_penalty=1.3, seed=7)
PROMPT = "The capital of France is"


def views_of(session, cfg=SAMPLED):
    """Everything the candidates, attention and KV tabs draw for this text, as comparable JSON."""
    charts = [viz.candidate_chart(session.preview(cfg), "en")]
    for layer, head in ((0, None), (17, 4)):
        charts.append(attention_matrix(session.prefill, session.steps, layer, head).tolist())
    charts.append(viz.kv_growth_chart([session.prefill.kv] + [s.kv for s in session.steps], session.prompt_len,
                                      session.lm.info, "en"))
    return json.dumps(charts, sort_keys=True, default=str)


def unlikely(session, cfg=SAMPLED):
    """A real but unlikely next token: the last of the shown candidates."""
    return session.preview(cfg).candidates[-1].token.id


@pytest.fixture
def forked(session):
    """Six sampled steps (branch 0), back to step 2, a forced unlikely token and three more (branch 1)."""
    return make_forked(session)


def make_forked(session):
    session.start(PROMPT)
    for _ in range(6):
        session.step(SAMPLED)
    session.back(4)
    session.step(SAMPLED, force_token=unlikely(session))
    for _ in range(3):
        session.step(SAMPLED)
    return session


@pytest.fixture(scope="module")
def forked_trace(lm):
    """The `forked` session's trace as JSON text, made once for the tests that only read it."""
    s = DecodeSession(lm)
    return json.dumps(to_trace(make_forked(s)))


@pytest.mark.model
def test_going_back_and_stepping_differently_keeps_the_old_text(session):
    session.start(PROMPT)
    for _ in range(6):
        session.step(SAMPLED)
    old_ids, old_steps = list(session.ids), list(session.steps)
    session.back(4)
    assert session.branches.kept == {}  # going back alone keeps nothing yet
    session.step(SAMPLED, force_token=unlikely(session))
    kept = session.branches.kept[0]
    assert kept.ids == old_ids and kept.steps == old_steps and all(a is b for a, b in zip(kept.steps, old_steps))
    assert (kept.parent, kept.fork) == (None, 0)
    assert (session.branches.current_id, session.branches.current_parent, session.branches.current_fork) == (1, 0, 2)


@pytest.mark.model
def test_stepping_the_same_way_again_makes_no_branch(session):
    session.start(PROMPT)
    for _ in range(5):
        session.step(SAMPLED)
    ids = list(session.ids)
    session.back(3)
    for _ in range(3):
        session.step(SAMPLED)  # the same seed and settings draw the same tokens: the same text
    assert session.ids == ids and session.branches.kept == {} and session.branches.pending is None
    session.back(2)
    session.step(SamplingConfig(temperature=0.9, top_k=40, seed=8))  # other settings: a branch, even for one token
    assert list(session.branches.kept) == [0] and session.branches.current_fork == 3


@pytest.mark.model
def test_switching_back_and_forth_shows_exactly_what_each_branch_showed(forked):
    s = forked
    new_views, new_ids = views_of(s), list(s.ids)
    s.switch_branch(0)
    assert s.branches.current_id == 0 and len(s.steps) == 6 and s.ids != new_ids
    old_views = views_of(s)
    s.switch_branch(1)
    assert s.ids == new_ids and views_of(s) == new_views
    s.switch_branch(0)
    assert views_of(s) == old_views
    assert views_of(s) != new_views  # the comparison can tell the two apart
    s.step(SAMPLED)  # the recomputed cache goes on like any other
    assert len(s.steps) == 7 and sequence(s).cache.get_seq_length() == len(s.ids)


@pytest.mark.model
def test_a_switched_branch_steps_on_as_it_would_have(lm, forked):
    """The prefilled cache of a chosen branch goes on as the stepwise one would: same logits within float noise."""
    s = forked
    s.switch_branch(0)
    s.switch_branch(1)
    s.step(SAMPLED)
    again = DecodeSession(lm)
    again.start(PROMPT)
    for st in s.steps:
        again.step(st.distribution.config, force_token=st.token.id, forced=st.distribution.forced)
    assert again.ids == s.ids
    assert np.allclose(again.next_logits.numpy(), s.next_logits.numpy(), atol=2e-3)
    assert again.steps[-1].distribution.chosen_logprob_t1 == pytest.approx(s.steps[-1].distribution.chosen_logprob_t1,
                                                                            abs=1e-3)


@pytest.mark.model
def test_tree_logprob_is_the_sum_of_each_branch_tokens(forked):
    s = forked
    tree = {b.id: b for b in s.branch_tree()}
    assert set(tree) == {0, 1} and tree[1].current and not tree[0].current
    for bid, summary in tree.items():
        steps = s.branch_record(bid).steps
        logp = 0.0
        for st in steps:  # independent: log of the chosen token's T = 1 probability from its own candidates
            cand = next(c for c in st.distribution.candidates if c.token.id == st.token.id)
            logp += np.log(cand.prob_t1)
        assert summary.logprob_t1 == pytest.approx(logp, abs=1e-3)
        assert summary.length == len(steps)
    assert tree[1].fork == 2 and tree[1].parent == 0
    assert s.branch_memory() > 0 and tree[0].own_bytes > 0


@pytest.mark.model
def test_missing_branch_is_refused_and_changes_nothing(forked):
    s = forked
    before = (list(s.ids), len(s.steps), s.branches.current_id)
    for bad in (7, -1, "0", None, True, 1):  # 1 is the current text, not a kept branch
        with pytest.raises(SessionError, match="no branch"):
            s.switch_branch(bad)
    assert (list(s.ids), len(s.steps), s.branches.current_id) == before
    s.delete_branch(0)
    with pytest.raises(SessionError, match="no branch"):
        s.switch_branch(0)
    assert s.branches.current_parent is None


@pytest.mark.model
def test_the_branch_cap(session):
    session.start(PROMPT)
    session.step(SAMPLED)
    session.step(SAMPLED)
    candidates = [c.token.id for c in session.preview(SAMPLED).candidates]
    session.back(1)
    for token in candidates[: MAX_BRANCHES - 1]:
        session.step(SAMPLED, force_token=token if token != session.branches.pending.steps[1].token.id else None)
        session.back(1)
    assert session.branches.count == MAX_BRANCHES
    before = (list(session.ids), len(session.steps))
    with pytest.raises(SessionError, match=f"{MAX_BRANCHES} branches"):
        session.step(SAMPLED, force_token=candidates[MAX_BRANCHES])
    assert (list(session.ids), len(session.steps)) == before
    with pytest.raises(SessionError) as err:
        session.step(SAMPLED, force_token=candidates[MAX_BRANCHES])
    assert f"{MAX_BRANCHES} 个分支" in err.value.text("zh")
    session.delete_branch(3)  # room again
    session.step(SAMPLED, force_token=candidates[MAX_BRANCHES])
    assert session.branches.count == MAX_BRANCHES


@pytest.mark.model
def test_a_trace_with_branches_round_trips(lm, forked):
    s = forked
    s.back(1)  # a pending tail too
    trace = json.loads(json.dumps(to_trace(s)))
    assert trace["version"] == 2 and len(trace["branches"]) == 1 and len(trace["branch"]["tail"]) == 1
    other = DecodeSession(lm)
    replay(other, trace)
    assert other.ids == s.ids and other.branches.current_id == 1
    for bid in (0, 1):
        mine, theirs = s.branch_record(bid), other.branch_record(bid)
        assert (theirs.ids, theirs.parent, theirs.fork) == (mine.ids, mine.parent, mine.fork)
        assert theirs.logprob_t1 == pytest.approx(mine.logprob_t1, abs=1e-3)
    again = json.loads(json.dumps(to_trace(other)))
    strip = lambda t: [(b["id"], b["parent"], b["fork"], [x["distribution"]["chosen"]["id"] for x in b["steps"]])
                       for b in t["branches"]]
    assert strip(again) == strip(trace) and again["branch"]["id"] == 1
    other.switch_branch(0)
    assert other.ids == s.branch_record(0).ids


@pytest.mark.model
def test_a_version_1_trace_still_imports(lm, session):
    session.start(PROMPT)
    for _ in range(3):
        session.step(SAMPLED)
    trace = json.loads(json.dumps(to_trace(session)))
    v1 = {k: v for k, v in trace.items() if k not in ("branch", "branches")} | {"version": 1}
    other = DecodeSession(lm)
    assert replay(other, v1) == 3 and other.ids == session.ids and other.branches.kept == {}
    assert parse_trace(read_trace(json.dumps(v1).encode()))[0] == PROMPT


@pytest.mark.model
@pytest.mark.parametrize("mangle", [
    lambda t: t["branches"][0].update(parent=5),  # a parent that is not there
    lambda t: t["branches"][0].update(id=1),  # the current text's number
    lambda t: t["branches"][0].update(fork=99),  # past its parent's end
    lambda t: t["branches"][0].update(steps=[]),
    lambda t: t["branches"][0].update(steps=[{"distribution": {"config": {"temperature": -1}}}]),
    lambda t: t["branches"][0]["steps"][0]["distribution"]["chosen"].update(id=10 ** 9),
    lambda t: t.update(branches=t["branches"] * MAX_BRANCHES),
    lambda t: t.update(branch="x"),
    lambda t: t["branch"].update(parent=1),  # itself
])
def test_a_bad_branch_is_refused_before_any_pass(lm, forked_trace, mangle, monkeypatch):
    trace = json.loads(forked_trace)
    mangle(trace)
    other = DecodeSession(lm)
    other.start("Unrelated")
    monkeypatch.setattr(Sequence, "_prefill", lambda *a, **k: pytest.fail("a pass ran"))
    monkeypatch.setattr(Sequence, "advance", lambda *a, **k: pytest.fail("a pass ran"))
    monkeypatch.setattr(Sequence, "follow", lambda *a, **k: pytest.fail("a pass ran"))
    with pytest.raises(SessionError, match="damaged|branches"):
        replay(other, trace)
    assert other.prefill.prompt == "Unrelated"


# ---- repeated n-grams --------------------------------------------------------------------------------------
@pytest.mark.unit
def test_repeated_ngrams_finds_the_loops():
    ids = [1, 2, 3, 4, 9, 1, 2, 3, 4, 5, 6, 7, 5, 6, 7, 5]
    assert repeated_ngrams(ids) == [Repeat(5, 9, 0, 3), Repeat(12, 16, 9, 3)]
    assert repeated_ngrams(ids, start=10) == [Repeat(12, 16, 9, 3)]
    assert repeated_ngrams([7, 7, 7, 7]) == [Repeat(1, 4, 0, 3)]  # overlapping: "a a a a"
    assert repeated_ngrams([1, 2, 1, 2]) == []  # no 3-gram twice
    assert repeated_mask(ids, 10).tolist() == [False] * 12 + [True] * 4
    with pytest.raises(ValueError):
        repeated_ngrams(ids, n=2)


@pytest.mark.unit
def test_brute_force_agrees_on_random_texts():
    rng = np.random.default_rng(0)
    for _ in range(200):
        ids = rng.integers(0, 3, rng.integers(0, 25)).tolist()
        mask = repeated_mask(ids)
        brute = np.zeros(len(ids), bool)
        for i in range(len(ids) - 2):
            if any(ids[j : j + 3] == ids[i : i + 3] for j in range(i)):
                brute[i : i + 3] = True
        assert mask.tolist() == brute.tolist()


# ---- the Branches tab through the API ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(lm):
    from model.serving.sessions import SessionStore

    with served(lm, SessionStore(max_sessions=4)) as (page, url, _):
        yield page, url


API = dict(temperature=0.9, top_k=40, top_p=0.95, min_p=0.0, repetition_penalty=1.3, order="transformers", seed=7,
           layer=0, head="mean")


@pytest.mark.server
@pytest.mark.parametrize("lang, split_words, missing_words", [
    ("en", "They split at step 2", "There is no branch 99"),
    ("zh", "它们在第 2 步分开", "没有可选择的分支 99"),
])
def test_branches_through_the_api(server, lang, split_words, missing_words):
    from gradio_client import Client
    from gradio_client.exceptions import AppError
    from ui.protocol import carried_figure

    client = Client(server[1], verbose=False)
    call = lambda api, *lead, **kw: client.predict(*lead, **{**API, "lang": lang, **kw}, api_name=api)
    try:
        client.predict(PROMPT, "raw", "smollm2", **{**API, "lang": lang}, api_name="/start")
        for _ in range(4):
            old = call("/next_token")
        old_chart = carried_figure(old[1])
        back = call("/go_to", 1)
        unlikely_id = back[2]["choices"][-1][1]
        call("/force", unlikely_id)
        new = call("/next_token")
        lists = call("/branch_choices")
        labels = [label for label, _ in lists[0]["choices"]]
        assert len(labels) == 2 and labels[0].startswith("#0") and "log P" in labels[0]
        compared = call("/compare_branches", None, None)
        assert split_words in compared[0] and 'data-split="1"' in compared[0]
        switched = call("/switch_branch", 0)
        assert carried_figure(switched[1]) == old_chart  # the candidates chart it showed before
        again = call("/switch_branch", 1)
        assert carried_figure(again[1]) == carried_figure(new[1])
        with pytest.raises(AppError, match=missing_words):
            call("/switch_branch", 99)
        assert carried_figure(call("/rederive")[0]) == carried_figure(new[1])  # unchanged by the refusal
    finally:
        server[0].store.drop(client.session_hash)


@pytest.mark.model
def test_the_hover_shows_a_repeated_candidates_penalized_logit(session):
    """Checked against the text itself: exactly the candidates already in it get the line, with z/θ or z·θ."""
    from viz.candidates import _hover, _penalized_logit

    session.start("red green blue red green blue red green")
    dist = session.preview(SAMPLED)
    seen = set(session.ids)
    repeated = [c for c in dist.candidates if c.token.id in seen]
    assert repeated and len(repeated) < len(dist.candidates)
    for c in dist.candidates:
        got = _penalized_logit(c, dist)
        if c.token.id in seen:
            assert got == pytest.approx(c.logit / 1.3 if c.logit > 0 else c.logit * 1.3, abs=1e-4)
            assert "logit after the repetition penalty" in _hover(c, dist, "en")
            assert "重复惩罚后的 logit" in _hover(c, dist, "zh")
        else:
            assert got is None and "logit after the repetition penalty" not in _hover(c, dist, "en")
    plain = session.preview(SamplingConfig(temperature=0.9, seed=7))  # penalty off: no such line
    assert all("logit after the repetition penalty" not in _hover(c, plain, "en") for c in plain.candidates)
