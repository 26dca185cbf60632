"""What the page says must be what happened (issue 20 items 4, 8, 9): a kept speculative token is recorded with what
chose it, a trace's claimed draw is drawn again on import, and a trace's total work is bounded before any pass."""
from __future__ import annotations

import copy

import pytest

from model.errors import SessionError
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from model.speed.speculative import SPEED_TEXTS, SpeculativeDecoder, kept_choices
from model.decoding.trace import marked_steps, replay, to_trace
from viz.candidates import candidate_chart
from viz.chips import chosen_how, token_chips_html
from viz.i18n import t

pytestmark = pytest.mark.model

PROMPT = SPEED_TEXTS["repeating"]  # code that repeats itself: at T = 1, seed 3 drafts are kept and rejected


def kept_session(lm, cfg, n=12):
    """A session whose text is a speculative run kept as the view keeps it: (session, run)."""
    session = DecodeSession(lm)
    session.start(PROMPT)
    run = SpeculativeDecoder(lm, list(session.ids), cfg, draft_len=4, max_new_tokens=n).run()
    for token, choice in zip(run.generated, kept_choices(run)):
        session.step(run.config, force_token=token, forced=choice)
    return session, run


def lands_on(dist) -> bool:
    """A plain draw with this step's u picks its chosen token (its stretch of the running total holds u)."""
    return dist.draw_cum_before is not None and dist.draw_cum_before <= dist.u < dist.draw_cum_before + dist.chosen_final_prob


# ---- item 8: Keep this continuation ------------------------------------------------------------------------------
def test_kept_speculative_steps_say_what_chose_them_with_the_runs_numbers(lm):
    cfg = SamplingConfig(temperature=1.0, seed=3)
    session, run = kept_session(lm, cfg)
    choices = kept_choices(run)
    assert [s.token.id for s in session.steps] == run.generated
    kinds = [c.kind for c in choices]
    assert "accepted" in kinds and "residual" in kinds  # this run takes both branches
    for step, choice in zip(session.steps, choices):
        dist = step.distribution
        assert not dist.forced and not dist.marked_forced and dist.speculative is not None
        spec = dist.speculative
        assert spec.kind == choice.kind and spec.u == choice.u and spec.rejected == choice.rejected
        assert spec.p == pytest.approx(choice.p, abs=1e-4)  # the step's own pass against the run's (k + 1)-token one
        if spec.kind == "accepted":
            assert spec.u < spec.p
        if spec.kind == "residual":
            assert spec.rejected_u >= spec.rejected_p and spec.rejected != dist.chosen.id
        for lang in ("en", "zh"):
            title = candidate_chart(dist, lang)["layout"]["title"]["text"]
            says_draw = t("cand_title", lang, position=dist.position, token="\0").split("\0")[0] in title
            if spec.kind != "bonus":
                assert chosen_how(dist, lang) and f"{spec.u:.3f}" in chosen_how(dist, lang)
            # no kept step claims "the draw picks X" with a u that lands elsewhere
            assert not says_draw or lands_on(dist), (step.step, spec.kind, title)
    html = token_chips_html(session.prefill.tokens, session.steps, "en")
    assert html.count("tbt-spec") == len(kinds)  # every kept chip says it came from the run, and how
    # the trace carries it, and a replay checks it again to the same numbers
    again = DecodeSession(lm)
    replay(again, copy.deepcopy(to_trace(session)))
    for a, b in zip([s.distribution.speculative for s in again.steps], [s.distribution.speculative for s in session.steps],
                    strict=True):  # the replay runs the text in chunks: its probabilities are the steps' to rounding
        assert (a.kind, a.u, a.rejected, a.rejected_u) == (b.kind, b.u, b.rejected, b.rejected_u)
        assert a.p == pytest.approx(b.p, abs=1e-5) and (a.rejected_p is None) == (b.rejected_p is None)
        assert a.rejected_p is None or a.rejected_p == pytest.approx(b.rejected_p, abs=1e-5)
    assert marked_steps(again) == []
    # the same trace as written before this (no "speculative" entry): it still imports; what no draw makes is forced
    old = copy.deepcopy(to_trace(session))
    for s in old["steps"]:
        s["distribution"].pop("speculative")
        s["distribution"].pop("marked_forced")
    replay(again, old)
    assert [s.token.id for s in again.steps] == run.generated
    assert all(s.distribution.forced == (not lands_on(s.distribution)) for s in again.steps)
    assert marked_steps(again) == [s.step for s in again.steps if s.distribution.forced]


# ---- item 9: a trace's claimed draw ----------------------------------------------------------------------------
def test_a_trace_claiming_a_draw_the_model_never_made_imports_it_as_forced(lm):
    session = DecodeSession(lm)
    session.start(PROMPT)
    greedy = SamplingConfig(temperature=0.0)
    session.step(greedy)
    trace = to_trace(session)
    step = trace["steps"][0]["distribution"]
    assert step["config"]["temperature"] == 0 and step["forced"] is False
    step["chosen"]["id"] = 29299  # the probe's token: rank 20,443 here, never a greedy choice
    fresh = DecodeSession(lm)
    replay(fresh, trace)
    dist = fresh.steps[0].distribution
    assert dist.chosen.id == 29299 and dist.forced and dist.marked_forced and dist.chosen_rank > 1000
    assert marked_steps(fresh) == [1]
    for lang in ("en", "zh"):
        assert t("chips_marked_forced", lang) in token_chips_html(fresh.prefill.tokens, fresh.steps, lang)
        title = candidate_chart(dist, lang)["layout"]["title"]["text"]
        assert title.startswith(t("cand_title_marked", lang, position=dist.position, token="\0").split("\0")[0])


def test_an_honest_sampled_trace_imports_with_no_step_marked(lm):
    session = DecodeSession(lm)
    session.start(PROMPT)
    for seed in (5, 6, 7, 8, 9, 10):
        session.step(SamplingConfig(temperature=0.9, top_k=50, seed=seed))
    session.step(SamplingConfig(temperature=0.9), force_token=29299)  # forced by the user: stays forced, unmarked
    fresh = DecodeSession(lm)
    replay(fresh, to_trace(session))
    assert [s.distribution.forced for s in fresh.steps] == [False] * 6 + [True]
    assert marked_steps(fresh) == []


# ---- item 4: the work a trace may ask for --------------------------------------------------------------------------
def test_a_trace_over_the_work_bound_is_refused_before_any_forward_pass(lm, monkeypatch):
    from model.decoding.trace import MAX_TRACE_STEPS

    session = DecodeSession(lm)
    session.start("One two three")
    for _ in range(3):
        session.step(SamplingConfig(temperature=0.0))
    trace = to_trace(session)
    per_branch = MAX_TRACE_STEPS // 15 + 1  # 15 branches of 69 steps: 1,035 + 3 > 1,024, each text within its room
    step = trace["steps"][0]
    trace["branches"] = [{"id": i, "parent": None, "fork": 0, "steps": [step] * per_branch} for i in range(1, 16)]
    passes = []
    forward = lm.model.forward
    monkeypatch.setattr(lm.model, "forward", lambda *a, **k: passes.append(1) or forward(*a, **k))
    fresh = DecodeSession(lm)
    with pytest.raises(SessionError) as err:
        replay(fresh, trace)
    assert err.value.key == "trace_too_much_work" and passes == [] and not fresh.started
    assert "1,038" in str(err.value) and "1,038" in err.value.text("zh") and err.value.text("zh") != str(err.value)
    trace["branches"] = trace["branches"][:1]  # within the bound it replays (and runs passes)
    trace["branches"][0]["steps"] = [step]
    replay(fresh, trace)
    assert passes and len(fresh.steps) == 3


def test_a_lesson_upload_has_a_lane_of_its_own_not_behind_a_trace_import(lm):
    import app as app_module
    from model.classroom.rooms import Rooms
    from model.serving.sessions import ModelRegistry, SessionStore
    from ui.lanes import SLOW_LANES

    demo = app_module.build(app_module.App(ModelRegistry("smollm2", {"smollm2": lm}), SessionStore(), Rooms()),
                            "smollm2")
    lane = {fn.api_name: fn.concurrency_id for fn in demo.fns.values()}
    assert lane["import_trace"] == "import" and lane["lesson_upload"] == "lesson"
    assert [name for name, cid in lane.items() if cid == "lesson"] == ["lesson_upload"]
    assert "lesson" in SLOW_LANES  # one waiting per session, as for the other slow kinds
