"""Before and after the sampler, from the engine: vLLM's processed log-probabilities beside the app's post-sampler
distribution (model/vllm/processed.py, the candidates chart's diamonds and sentence).

The first tests need no engine: the comparison on hand-made records, and the table of which stages commute (the
reason "order" rests on it) proved with transformers' own processors on random scores. The rest start ONE vLLM of
their own with `--logprobs-mode processed_logprobs` (tests/engine_server.py processed_flags(); the shared `engine`
returns raw ones) and compare it with the local model on the same token ids, and with transformers' processors run
on the local model's full forward in vLLM's order. TBT_TEST_PROCESSED_ENGINE="url|folder|pid" uses one started
elsewhere with those flags.

Ties at a cut: transformers and vLLM both cut top-k at `score < k-th score` and min-p at `p < min_p * p_max`, so a
token tied with the boundary is kept by both; top-p's tie at the boundary depends on each side's sort. The settings
below are checked clear of any boundary (moving the cut by 1e-3 keeps the same set), and the comparison counts a
token kept by one side only as a disagreement: a tie would show, not hide.
"""
import math
import random
import time
from dataclasses import replace

import pytest
import torch
from transformers.generation.logits_process import (MinPLogitsWarper, RepetitionPenaltyLogitsProcessor,
                                                    TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper)

from engine_server import REQUEST_S, free_port, own_engine, processed_flags
from model.vllm.client import EngineClient, EngineProcessed, parse_processed, processed_settings
from model.vllm.processed import (COMMUTE, ENGINE_ORDER, compare_processed, engine_settings,
                                             processed_beside, why_different)
from model.vllm.session import load_engine_model
from model.decoding.records import Candidate, Distribution, SamplingConfig, StageSummary, TokenInfo
from model.decoding.sampling import run_stages, still_drawable
from model.decoding.session import DecodeSession
from ui.handlers import View
from ui.strings import t
from ui.views.candidates import CandidatesView, engine_sampler

PROMPT = "The cat sat on the mat. The cat sat on the"  # repeats: a repetition penalty has tokens to act on


# ---- no engine: the comparison on hand-made records -------------------------------------------------------------
def record(final: dict[int, float], kept: int, cfg: SamplingConfig = SamplingConfig(temperature=0.7),
           **extra) -> Distribution:
    """A Distribution whose candidates have the given final probabilities (0: cut by top-k), `kept` tokens left."""
    candidates = [Candidate(TokenInfo(i, f"t{i}", f"t{i}"), 0.0, p, {}, p, "kept" if p > 0 else "top_k", r + 1)
                  for r, (i, p) in enumerate(final.items())]
    chosen = candidates[0].token
    fields = dict(position=3, config=cfg, candidates=candidates, stages=[StageSummary("top_k", True, kept, 0, 1.0)],
                  tail_mass_t1=0.0, tail_mass_final=0.0, entropy_t1_bits=1.0, entropy_final_bits=1.0, u=0.5,
                  chosen=chosen, chosen_rank=1, chosen_logprob_t1=0.0, chosen_final_prob=final[chosen.id])
    dist = Distribution(**fields)
    for name, value in extra.items():
        setattr(dist, name, value)
    return dist


def answer(kept: dict[int, float], cut=(), asked=4, length=3) -> EngineProcessed:
    return EngineProcessed(length, tuple(kept), tuple(math.log(p) for p in kept.values()), tuple(cut), asked, {})


@pytest.mark.unit
def test_the_same_distribution_agrees_and_a_moved_one_says_by_how_much():
    same = compare_processed(record({1: 0.6, 2: 0.3, 3: 0.1, 4: 0.0}, 3), answer({1: 0.6, 2: 0.3, 3: 0.1}, cut=(4,)))
    assert same.agree and same.max_diff < 1e-12 and same.engine_kept == 3 and same.app_kept == 3
    assert [i for i, _, _ in same.tokens] == [1, 2, 3, 4] and same.engine_probs()[4] == 0.0

    moved = compare_processed(record({1: 0.6, 2: 0.3, 3: 0.1, 4: 0.0}, 3), answer({1: 0.5, 2: 0.3, 3: 0.2}, cut=(4,)))
    assert not moved.agree and moved.kept_agree and moved.max_diff == pytest.approx(0.1)
    assert moved.reason is None


@pytest.mark.unit
def test_kept_sets_that_differ_are_named_token_by_token():
    app = record({1: 0.5, 2: 0.3, 3: 0.2, 4: 0.0}, 3)
    engine = answer({1: 0.5, 2: 0.3, 4: 0.2}, cut=(3,))
    result = compare_processed(app, engine)
    assert result.only_app == (3,) and result.only_engine == (4,) and not result.kept_agree and not result.agree
    # the engine kept more than it sent (its set not complete): only its top is known; the app kept fewer than that
    fewer = compare_processed(record({1: 0.7, 2: 0.3, 3: 0.0, 4: 0.0}, 2), answer({1: 0.6, 2: 0.2, 3: 0.1, 4: 0.1}))
    assert fewer.engine_kept is None and not fewer.kept_agree


@pytest.mark.unit
def test_tokens_the_engine_did_not_tell_about_are_left_out_unless_its_set_is_complete():
    app = record({1: 0.4, 2: 0.3, 3: 0.2, 9: 0.1}, 40)
    top = answer({1: 0.4, 2: 0.3, 3: 0.2, 5: 0.05}, asked=4)  # four asked, four kept: more may be kept
    result = compare_processed(app, top)
    assert [i for i, _, _ in result.tokens] == [1, 2, 3] and result.engine_kept is None and result.kept_agree
    whole = compare_processed(record({1: 0.5, 2: 0.5, 9: 0.0}, 2), answer({1: 0.5, 2: 0.5}, asked=4))
    assert [i for i, _, _ in whole.tokens] == [1, 2, 9] and whole.agree  # complete: 9 is known to be cut


@pytest.mark.unit
def test_the_reasons_they_cannot_mean_the_same():
    assert why_different(SamplingConfig(temperature=0)) == "greedy"
    assert why_different(SamplingConfig(temperature=5e-6)) == "greedy"  # vLLM's greedy path below 1e-5
    assert why_different(SamplingConfig(temperature=0.7)) is None
    assert why_different(SamplingConfig(temperature=0.7, top_k=40, top_p=0.9, repetition_penalty=1.2)) is None
    assert why_different(SamplingConfig(temperature=0.7, min_p=0.05, top_k=40)) is None  # they commute
    assert why_different(SamplingConfig(top_p=0.9, min_p=0.05)) == "order"  # vLLM: min-p first
    assert why_different(SamplingConfig(temperature=1.5, top_p=0.9, order="temperature_last")) == "order"
    assert why_different(SamplingConfig(temperature=1.5, top_k=9, order="temperature_last")) is None
    assert why_different(SamplingConfig(temperature=1.0, top_p=0.9, order="temperature_last")) is None  # T = 1: off
    assert why_different(SamplingConfig(temperature=0.7), approximate=True) == "approximate"
    result = compare_processed(record({1: 1.0, 2: 0.0}, 1, SamplingConfig(temperature=0)), answer({1: 0.7, 2: 0.3}))
    assert result.reason == "greedy" and not result.agree


def stage(name: str, value):
    return {"temperature": lambda: TemperatureLogitsWarper(value), "top_k": lambda: TopKLogitsWarper(value),
            "top_p": lambda: TopPLogitsWarper(value), "min_p": lambda: MinPLogitsWarper(value)}[name]()


@pytest.mark.unit
def test_the_pairs_said_to_commute_do_and_the_others_do_not():
    """COMMUTE, proved with transformers' processors on random scores: a pair in it gives the same distribution in
    either order on every trial; every other pair of stages vLLM orders gives a different one on some trial."""
    values = {"temperature": [0.4, 0.7, 1.6], "top_k": [2, 5, 12], "top_p": [0.5, 0.8, 0.95], "min_p": [0.05, 0.2, 0.4]}
    ids = torch.zeros((1, 1), dtype=torch.long)
    rng = random.Random(0)
    names = [n for n in ENGINE_ORDER if n != "repetition_penalty"]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            differ = 0.0
            for trial in range(60):
                torch.manual_seed(trial)
                scores = torch.randn(1, 40) * 2.5
                sa, sb = stage(a, rng.choice(values[a])), stage(b, rng.choice(values[b]))
                one = torch.softmax(sb(ids, sa(ids, scores.clone())), -1)
                other = torch.softmax(sa(ids, sb(ids, scores.clone())), -1)
                differ = max(differ, float((one - other).abs().max()))
            if frozenset((a, b)) in COMMUTE:
                assert differ < 1e-6, (a, b, differ)
            else:
                assert differ > 1e-2, (a, b, differ)


@pytest.mark.unit
def test_a_processed_answer_is_read_with_cut_tokens_apart():
    body = {"choices": [{"logprobs": {"top_logprobs": [{"token_id:260": -1.19, "token_id:253": -0.51,
                                                         "token_id:441": -2.28, "token_id:3": -9999.0,
                                                         "token_id:1": -9999.0}]}}]}
    got = parse_processed(body, [5, 6, 7], 5, processed_settings(0.7, 3, 1.0, 0.0, 1.0))
    assert got.ids == (253, 260, 441) and got.cut == (1, 3) and got.complete and got.length == 3
    assert got.settings == {"temperature": 0.7, "top_k": 3, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0}


@pytest.mark.unit
def test_nothing_is_asked_without_a_processed_engine():
    class NoEngine:
        processed = None

    assert processed_beside(NoEngine(), [1, 2, 3], record({1: 1.0}, 1)) is None


# ---- the real engine ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def processed_engine():
    """A vLLM returning processed log-probabilities, for this module (or one started elsewhere)."""
    yield from own_engine("TBT_TEST_PROCESSED_ENGINE", processed_flags(), "vllm-processed")


@pytest.fixture(scope="module")
def client(processed_engine):
    return EngineClient(processed_engine.url, processed_engine.model, timeout=REQUEST_S)


@pytest.fixture(scope="module")
def local(lm):
    """A local session on PROMPT and the local model's full forward after it (T = 1 logits, (V,) float32)."""
    session = DecodeSession(lm)
    session.start(PROMPT)
    with torch.no_grad():
        logits = lm.model(torch.tensor([session.ids])).logits[0, -1].float()
    return session, logits


def vllm_order(logits: torch.Tensor, ids: list[int], cfg: SamplingConfig) -> torch.Tensor:
    """transformers' processors in vLLM's order (penalty, temperature, min-p, top-k, top-p) on the full forward:
    the engine's processed distribution computed independently of the app's pipeline. (V,) probabilities."""
    context, scores = torch.tensor([ids]), logits.reshape(1, -1).clone()
    if cfg.repetition_penalty != 1.0:
        scores = RepetitionPenaltyLogitsProcessor(cfg.repetition_penalty)(context, scores)
    scores = TemperatureLogitsWarper(cfg.temperature)(context, scores)
    for name, on, value in (("min_p", cfg.min_p > 0, cfg.min_p), ("top_k", cfg.top_k > 0, cfg.top_k),
                            ("top_p", cfg.top_p < 1, cfg.top_p)):
        if on:
            scores = stage(name, value)(context, scores)
    return torch.softmax(scores, -1).reshape(-1)


def clear_of_ties(logits: torch.Tensor, ids: list[int], cfg: SamplingConfig) -> int:
    """The app's kept count, asserted unchanged when top-p moves by 1e-4 or min-p by 0.1 % (and the k-th score is
    1e-3 clear of the next): no boundary within the two runs' float differences (their probabilities agree to about
    1e-5, their log-probabilities to about 1e-4)."""
    kept = lambda c: still_drawable(run_stages(logits, torch.tensor([ids]), c)[-1][2])  # noqa: E731
    n = kept(cfg)
    for sign in (-1, 1):
        if cfg.top_p < 1:
            assert kept(replace(cfg, top_p=min(1.0, cfg.top_p + sign * 1e-4))) == n, ("top_p boundary", cfg)
        if cfg.min_p > 0:
            assert kept(replace(cfg, min_p=cfg.min_p * (1 + sign * 1e-3))) == n, ("min_p boundary", cfg)
    if cfg.top_k:
        top = torch.topk(logits, cfg.top_k + 1).values
        assert float(top[-2] - top[-1]) > 1e-3, ("top_k boundary", cfg)
    return n


SAME = [SamplingConfig(temperature=0.7), SamplingConfig(temperature=0.7, top_k=5),
        SamplingConfig(temperature=0.8, top_p=0.9), SamplingConfig(temperature=0.9, min_p=0.05),
        SamplingConfig(temperature=0.8, top_k=10, top_p=0.85), SamplingConfig(temperature=1.0, min_p=0.1, top_k=8),
        SamplingConfig(temperature=0.8, top_k=10, repetition_penalty=1.3),
        SamplingConfig(temperature=1.2, top_k=20, order="temperature_last")]


def asked_both(cfg, client, local):
    """The engine's processed answer for cfg, its comparison with the app's record, transformers' processors in
    vLLM's order on the local full forward, and the engine's largest difference from those."""
    session, logits = local
    engine = client.processed_next(session.ids, engine_settings(cfg))
    result = compare_processed(session.preview(cfg), engine)
    independent = vllm_order(logits, session.ids, cfg)
    own = max(abs(math.exp(lp) - float(independent[i])) for i, lp in zip(engine.ids, engine.logprobs))
    return engine, result, independent, own


@pytest.mark.engine
@pytest.mark.parametrize("cfg", SAME, ids=lambda c: repr({k: v for k, v in vars(c).items()
                                                          if v != getattr(SamplingConfig(), k)}))
def test_where_the_settings_mean_the_same_the_engine_sampler_is_the_apps(cfg, client, local):
    engine, result, independent, own = asked_both(cfg, client, local)
    kept = clear_of_ties(local[1], local[0].ids, cfg)
    print(f"\n{cfg}: largest |app - engine| {result.max_diff:.2e} over {len(result.tokens)} tokens, "
          f"|engine - transformers in vLLM's order| {own:.2e}; kept {result.app_kept} / {result.engine_kept}")
    assert result.reason is None and result.kept_agree and result.max_diff < 1e-3 and result.agree
    assert own < 1e-3 and len(result.tokens) >= 20
    assert result.app_kept == kept
    if engine.complete:  # the engine's whole kept set: the same tokens as the app's and transformers'
        assert set(engine.ids) == set(torch.nonzero(independent > 0).reshape(-1).tolist())


@pytest.mark.engine
@pytest.mark.parametrize("cfg", [SamplingConfig(temperature=1.0, top_p=0.5, min_p=0.1),
                                 SamplingConfig(temperature=1.5, top_p=0.8, order="temperature_last")],
                         ids=["min-p after top-p", "temperature last"])
def test_where_the_order_differs_the_comparison_says_so(cfg, client, local):
    engine, result, independent, own = asked_both(cfg, client, local)
    print(f"\n{cfg}: reason {result.reason}, largest |app - engine| {result.max_diff:.2e}, "
          f"|engine - transformers in vLLM's order| {own:.2e}")
    assert result.reason == "order" and not result.agree
    assert result.max_diff > 1e-2  # they really differ here, and the engine is vLLM's order, not the app's
    assert own < 1e-3


@pytest.mark.engine
def test_at_temperature_0_the_engine_sends_the_raw_distribution_and_the_reason_is_greedy(client, local):
    session, logits = local
    cfg = SamplingConfig(temperature=0)
    engine = client.processed_next(session.ids, engine_settings(cfg))
    result = compare_processed(session.preview(cfg), engine)
    raw = torch.softmax(logits, -1)
    worst = max(abs(math.exp(lp) - float(raw[i])) for i, lp in zip(engine.ids, engine.logprobs))
    print(f"\nT = 0: engine vs the full forward's T = 1 softmax {worst:.2e}; reason {result.reason}")
    assert result.reason == "greedy" and not result.agree and worst < 1e-3
    assert len(engine.ids) == client.top_n or len(engine.ids) == client.top_n + 1  # nothing cut


@pytest.mark.engine
def test_a_processed_engine_answers_the_steps_too(processed_engine, lm):
    """A step asks T = 0 with no penalty, where vLLM's processed numbers are its raw ones: one engine in processed
    mode can be both --engine-url and --engine-processed-url."""
    engine_lm = load_engine_model(EngineClient(processed_engine.url, processed_engine.model, timeout=REQUEST_S),
                                  processed_engine.folder)
    session = DecodeSession(lm)
    session.start(PROMPT)
    top = engine_lm.client.next_token(session.ids)
    with torch.no_grad():
        full = torch.log_softmax(lm.model(torch.tensor([session.ids])).logits[0, -1].float(), -1)
    worst = max(abs(lp - float(full[i])) for i, lp in zip(top.ids, top.logprobs))
    print(f"\nprocessed engine's step answer vs the full forward: {worst:.2e}")
    assert worst < 1e-3 and len(top.ids) == engine_lm.client.top_n


def engine_model(server, processed: EngineClient | None):
    lm = load_engine_model(EngineClient(server.url, server.model, timeout=REQUEST_S), server.folder)
    return replace(lm, processed=processed)


@pytest.mark.engine
def test_the_chart_on_an_engine_model_carries_the_engine_sampler(processed_engine, client):
    lm = engine_model(processed_engine, client)
    session = DecodeSession(lm)
    session.start(PROMPT)
    view = CandidatesView(None)
    exact = SamplingConfig(temperature=0.7, top_k=5)  # the app's cut on the engine's top N is exact here
    figure = view.figure(session, exact, View())
    diamonds = [tr for tr in figure["data"] if (tr.get("meta") or {}).get("role") == "engine_sampler"]
    subtitle = figure["layout"]["title"]["subtitle"]["text"]
    assert len(diamonds) == 1 and len(diamonds[0]["x"]) >= 5 and "agrees with this chart" in subtitle
    kept = sorted(diamonds[0]["x"], reverse=True)[:5]
    assert sum(kept) == pytest.approx(1.0, abs=1e-4)
    approximate = view.figure(session, SamplingConfig(temperature=0.7), View(lang="zh"))
    assert t("processed_why_approximate", "zh").split("：")[0] in approximate["layout"]["title"]["subtitle"]["text"]
    print("\n" + subtitle.split("<br>")[-1])

    plain = engine_model(processed_engine, None)  # no processed engine: no diamonds, no sentence, nothing asked
    other = DecodeSession(plain)
    other.start(PROMPT)
    figure = view.figure(other, exact, View())
    assert not [tr for tr in figure["data"] if (tr.get("meta") or {}).get("role") == "engine_sampler"]
    assert "engine's own sampler" not in figure["layout"]["title"]["subtitle"]["text"]


@pytest.mark.engine
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_fault_is_one_keyed_sentence_and_the_session_is_unchanged(processed_engine, lang):
    lm = engine_model(processed_engine, None)
    session = DecodeSession(lm)
    session.start(PROMPT)
    session.step(SamplingConfig(temperature=0))
    cfg = SamplingConfig(temperature=0.7, top_k=5)
    state = (list(session.ids), len(session.steps), session.backend.top, session.preview(cfg).candidates)
    faults = {"engine_down": EngineClient(f"http://127.0.0.1:{free_port()}/v1", processed_engine.model, timeout=5),
              "engine_model_unknown": EngineClient(processed_engine.url, "no-such-model", timeout=REQUEST_S)}
    for key, broken in faults.items():
        session.lm = replace(lm, processed=broken)
        t0 = time.perf_counter()
        beside = engine_sampler(session, session.preview(cfg), lang)
        params = {"model": "no-such-model"} if key == "engine_model_unknown" else {}
        assert beside == {"note": t("processed_fault", lang, why=t(key, lang, **params))}, beside
        figure = CandidatesView(None).figure(session, cfg, View(lang=lang))  # the chart is still drawn, with it
        assert beside["note"] in figure["layout"]["title"]["subtitle"]["text"]
        print(f"\n{key} ({time.perf_counter() - t0:.1f} s): {beside['note']}")
    session.lm = lm
    assert (list(session.ids), len(session.steps), session.backend.top, session.preview(cfg).candidates) == state


@pytest.mark.engine
def test_through_the_api_the_chart_carries_the_engine_sampler(processed_engine, client, lm):
    """The served page (gradio_client): Start, a step and a setting moved on the engine model; each chart shown
    carries the engine's diamonds and sentence, and a step's record is unchanged by them."""
    from gradio_client import Client

    from model.serving.sessions import ModelRegistry, SessionStore
    from served import DEFAULTS, served
    from ui.protocol import carried_figure

    engine_lm = engine_model(processed_engine, client)
    models = ModelRegistry("smollm2", {"smollm2": lm})
    models.add_engine(engine_lm)
    with served(models, SessionStore(max_sessions=4)) as (page, url, demo):
        api = Client(demo.local_url, verbose=False)
        settings = {**DEFAULTS, "temperature": 0.7, "top_k": 5}
        api.predict(PROMPT, "raw", engine_lm.name, **settings, api_name="/start")
        stepped = api.predict(**settings, api_name="/next_token")
        session = page.store.get(api.session_hash)
        figure = carried_figure(stepped[1])
        assert any((tr.get("meta") or {}).get("role") == "engine_sampler" for tr in figure["data"])
        assert "agrees with this chart" in figure["layout"]["title"]["subtitle"]["text"]
        moved = {**settings, "top_k": 0, "top_p": 0.8, "min_p": 0.1}  # min-p with top-p: vLLM's order differs
        result = api.predict(**moved, api_name="/rederive")
        subtitle = carried_figure(result[0])["layout"]["title"]["subtitle"]["text"]
        assert t("processed_why_order", "en", diff="X").split(" (")[0] in subtitle, subtitle
        assert len(session.steps) == 1
