"""An engine's model with more of its vocabulary, and its session exported as a web page, against a real vLLM.

The engine (tests/engine_server.py) runs with `--max-logprobs 100`: the client asks for 100 top log-probabilities
(model/vllm/client.py TOP_N), which equal the local model's top 100 (log_softmax of a full forward pass), and a
cut that was approximate with vLLM's default 20 (a top-k of 50) is exact. A client asking for more than the engine
allows adopts its limit. The session's web page (viz/offline.py) has every step's candidates with the engine's
numbers and its note, no attention panel, and says why in the page's language; exporting asks the engine nothing.
"""
import json
import math
import re
from dataclasses import replace

import httpx
import pytest
import torch

from engine_server import MAX_LOGPROBS, REQUEST_S, free_port
from model.vllm.client import TOP_N, EngineClient
from model.vllm.session import tail_independent
from model.decoding.records import SamplingConfig
from model.decoding.sampling import derive
from model.decoding.session import DecodeSession
from model.errors import SessionError
from served import DEFAULTS, served
from viz.candidates import engine_note
from viz.i18n import t

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, a little", "1, 2, 3, 4,",
           "我们今天学习"]
TOLERANCE = 1e-3
PAGE_RECORD = re.compile(r'<script type="application/json" id="session">(.*?)</script>', re.S)


def local_logprobs(lm, ids: list[int]) -> torch.Tensor:
    """(V,) float64: log_softmax of a full forward pass of the local model over `ids`, at the last position."""
    with torch.no_grad():
        return torch.log_softmax(lm.model(input_ids=torch.tensor([ids])).logits[0, -1].double(), -1)


# ---- more of the vocabulary ------------------------------------------------------------------------------------
@pytest.mark.engine
def test_the_engine_sends_its_top_100_equal_to_the_local_models_top_100(engine_lm, lm):
    assert TOP_N == MAX_LOGPROBS == 100  # what the app asks for is what the tests' engine allows (and the docs say)
    largest, boundary_ties = 0.0, 0
    for prompt in PROMPTS:
        ids = lm.tokenizer(prompt)["input_ids"]
        top = engine_lm.client.next_token(ids)
        assert engine_lm.client.top_n == 100 and len(top.ids) == 100, (prompt, len(top.ids))
        local = local_logprobs(lm, ids)
        mine = torch.tensor([float(local[i]) for i in top.ids], dtype=torch.float64)
        theirs = torch.tensor(top.logprobs, dtype=torch.float64)
        ranked = torch.topk(local, 100)
        # the same numbers, token by token and rank by rank (the 100th place may hold a near-tie)
        diff = max(float((mine - theirs).abs().max()), float((ranked.values - theirs).abs().max()))
        largest = max(largest, diff)
        assert diff < TOLERANCE, (prompt, diff)
        missing = set(ranked.indices.tolist()) - set(top.ids)
        boundary_ties += len(missing)
        assert all(abs(float(local[i]) - top.logprobs[-1]) < TOLERANCE for i in missing), (prompt, missing)
        assert top.tail_mass == pytest.approx(1 - float(mine.exp().sum()), abs=TOLERANCE)
    print(f"\nlargest |engine - local| log-probability over {len(PROMPTS)} prompts x 100 tokens: {largest:.2e}; "
          f"tokens swapped at the 100th place (ties within 1e-3): {boundary_ties}")


@pytest.mark.engine
def test_a_top_k_of_50_is_exact_with_100_where_it_was_approximate_with_20(engine_lm, lm, engine):
    prompt = "The best way to learn is"
    cfg = SamplingConfig(top_k=50, seed=3)
    twenty = replace(engine_lm, client=EngineClient(engine.url, engine.model, timeout=REQUEST_S, top_n=20))
    sessions = {}
    for n, model in ((100, engine_lm), (20, twenty)):
        sessions[n] = DecodeSession(model)
        sessions[n].start(prompt)
    hundred, at_twenty = sessions[100].preview(cfg), sessions[20].preview(cfg)
    assert (hundred.top_n, at_twenty.top_n) == (100, 20)
    assert not hundred.approximate and at_twenty.approximate

    # exact: the same as the cut on the full vocabulary (the local model's logits through transformers' warper)
    ids = sessions[100].ids
    with torch.no_grad():
        logits = lm.model(input_ids=torch.tensor([ids])).logits[0, -1]
    full = derive(logits, torch.tensor([ids]), cfg, len(ids), lm.tokens)
    local_final = {c.token.id: c.final_prob for c in full.candidates}
    engine_final = {c.token.id: c.final_prob for c in hundred.candidates}
    common = set(local_final) & set(engine_final)
    assert len(common) >= 18
    worst = max(abs(local_final[i] - engine_final[i]) for i in common)
    assert worst < TOLERANCE and hundred.chosen.id == full.chosen.id
    assert hundred.stages[-1].kept == full.stages[-1].kept == 50  # top-k kept 50, all of them known

    # Over a grid of cuts and prompts: what was exact with 20 is exact with 100, and fewer are approximate
    grid = [SamplingConfig(top_k=k) for k in (10, 20, 30, 50, 80, 100)] + \
           [SamplingConfig(min_p=m) for m in (0.005, 0.01, 0.02, 0.05, 0.1)] + [SamplingConfig(temperature=0)]
    approximate = {20: 0, 100: 0}
    for text in PROMPTS:
        text_ids = lm.tokenizer(text)["input_ids"]
        tops = {100: engine_lm.client.next_token(text_ids), 20: twenty.client.next_token(text_ids)}
        assert tops[20].ids == tops[100].ids[:20]
        for setting in grid:
            exact = {n: tail_independent(top, setting) for n, top in tops.items()}
            assert exact[100] or not exact[20], (text, setting)
            approximate[20] += not exact[20]
            approximate[100] += not exact[100]
    cuts = len(grid) * len(PROMPTS)
    print(f"\napproximate cuts (top-k, min-p, greedy) over {len(PROMPTS)} prompts: {approximate[20]}/{cuts} with the "
          f"top 20, {approximate[100]}/{cuts} with the top 100")
    assert approximate[100] < approximate[20]


@pytest.mark.engine
def test_a_client_asking_for_more_than_the_engine_allows_adopts_its_limit(engine, lm):
    ids = lm.tokenizer(PROMPTS[0])["input_ids"]
    # vLLM's own refusal, which the client reads (vllm/sampling_params.py _validate_logprobs)
    refused = httpx.post(engine.url + "/completions", json={"model": engine.model, "prompt": ids, "max_tokens": 1,
                                                            "logprobs": MAX_LOGPROBS + 50}, timeout=REQUEST_S,
                         trust_env=False)
    assert refused.status_code == 400 and f"max allowed: {MAX_LOGPROBS}" in refused.text, refused.text
    client = EngineClient(engine.url, engine.model, timeout=REQUEST_S, top_n=MAX_LOGPROBS + 50)
    top = client.next_token(ids)
    assert client.top_n == MAX_LOGPROBS and len(top.ids) == MAX_LOGPROBS
    assert len(client.next_token(ids + [top.ids[0]]).ids) == MAX_LOGPROBS  # no back-off left behind


@pytest.mark.unit
def test_a_client_adopts_the_default_20_of_an_engine_started_without_max_logprobs():
    """The answer vLLM gives a request for 100 when started without --max-logprobs (its sentence as in
    vllm/sampling_params.py, its body as the test above reads it from the real engine): the client asks again for 20."""
    asked = []

    def engine_at_20(request: httpx.Request) -> httpx.Response:
        n = json.loads(request.content)["logprobs"]
        asked.append(n)
        if n > 20:
            return httpx.Response(400, json={"error": {"message": f"Requested sample logprobs of {n}, which is greater "
                                                                  "than max allowed: 20", "type": "BadRequestError",
                                                       "code": 400}})
        top = {f"token_id:{i}": -1.0 - i for i in range(n)}
        return httpx.Response(200, json={"choices": [{"logprobs": {"top_logprobs": [top]}}]})

    client = EngineClient("http://engine/v1", "m", transport=httpx.MockTransport(engine_at_20))
    top = client.next_token([1, 2])
    assert asked == [TOP_N, 20] and client.top_n == 20 and len(top.ids) == 20
    client.next_token([1, 2, 3])
    assert asked == [TOP_N, 20, 20]  # asked for 20 from then on


# ---- the session as a web page on the engine model --------------------------------------------------------------
STEPS = [  # (settings, forced: a token from outside the top 100): exact and approximate cuts both
    ({}, False), ({"top_k": 50}, False), ({"top_p": 0.9}, False), ({"temperature": 0.0}, False), ({}, True),
    ({"min_p": 0.05}, False),
]


def page_record(html: str) -> dict:
    return json.loads(PAGE_RECORD.search(html).group(1))


@pytest.fixture(scope="module")
def engine_export(engine_lm, lm):
    """The app on both models; a session on the engine's model of len(STEPS) steps; its page in each language.
    Yields (App, Client, session, {lang: html}, the page of a local model's session of 2 steps)."""
    from gradio_client import Client

    from model.serving.sessions import ModelRegistry, SessionStore

    models = ModelRegistry("smollm2", {"smollm2": lm})
    models.add_engine(engine_lm)
    with served(models, SessionStore(max_sessions=8)) as (app, url, demo):
        client = Client(url, verbose=False)
        client.predict("The best way to learn is", "raw", engine_lm.name, **{**DEFAULTS, "seed": 5}, api_name="/start")
        session = app.store.get(client.session_hash)
        for settings, forced in STEPS:
            page = {**DEFAULTS, "seed": 5, **settings}
            if forced:
                outside = next(i for i in range(1000, 3000) if i not in session.backend.top.ids)
                client.predict(str(outside), **page, api_name="/force")
            else:
                client.predict(**page, api_name="/next_token")
        asked, real = [], engine_lm.client.next_token
        engine_lm.client.next_token = lambda *a, **k: asked.append(a) or real(*a, **k)
        try:
            pages = {lang: open(client.predict(lang, 3, api_name="/export_page"), encoding="utf-8").read()
                     for lang in ("en", "zh")}
        finally:
            engine_lm.client.next_token = real
        assert asked == []  # the page is made from the session's records: the engine is asked nothing
        local = Client(url, verbose=False)  # and a local model's page from the same app, as before
        local.predict("The best way to learn is", "raw", "smollm2", **DEFAULTS, api_name="/start")
        for _ in range(2):
            local.predict(**DEFAULTS, api_name="/next_token")
        local_page = open(local.predict("en", 3, api_name="/export_page"), encoding="utf-8").read()
        yield app, client, session, pages, local_page
        app.store.drop(client.session_hash)
        app.store.drop(local.session_hash)


@pytest.mark.engine
def test_the_engine_sessions_page_has_every_steps_candidates_with_the_engines_numbers(engine_export, engine_lm, lm):
    app, client, session, pages, _ = engine_export
    assert len(session.steps) == len(STEPS) and session.steps[4].distribution.forced
    for lang, html in pages.items():
        record = page_record(html)
        assert record["model"] == engine_lm.name and len(record["steps"]) == len(STEPS)
        for n, (shown, step) in enumerate(zip(record["steps"], session.steps)):
            dist = step.distribution
            assert shown["id"] == step.token.id and shown["rank"] == dist.chosen_rank
            ranked = sorted(dist.candidates, key=lambda c: c.rank)
            assert [c[0] for c in shown["candidates"]] == [c.token.display for c in ranked]
            assert [c[3] for c in shown["candidates"]] == [c.fate for c in ranked]
            assert dist.top_n == 100 and shown["note"] == engine_note(dist, lang)
            assert shown["note"].startswith({"en": "From the engine: its top 100 tokens", "zh": "来自推理引擎：它给出的前 100 个"}[lang])
            assert (t("cand_engine_approximate", lang) in shown["note"]) == dist.approximate
        assert [s["note"].endswith(t("cand_engine_approximate", lang)) for s in record["steps"]] == \
            [True, False, True, False, True, False]  # T = 1 and top-p need the tail; top-k 50, greedy, min-p do not

    # The page's probabilities against the engine's own answer and the local model's full forward pass
    record, largest_engine, largest_local = page_record(pages["en"]), 0.0, 0.0
    for n, shown in enumerate(record["steps"]):
        ids = session.ids[: session.prompt_len + n]
        top = engine_lm.client.next_token(ids)
        answer = dict(zip(top.ids, top.logprobs))
        local = local_logprobs(lm, ids)
        by_display = {c.token.display: c for c in session.steps[n].distribution.candidates}
        for display, p, final, fate in shown["candidates"]:
            token = by_display[display].token.id
            if token in answer:
                largest_engine = max(largest_engine, abs(p - math.exp(answer[token])))
            largest_local = max(largest_local, abs(p - math.exp(float(local[token]))))
        chosen = session.steps[n].token.id
        assert shown["p"] == pytest.approx(math.exp(float(local[chosen])), abs=TOLERANCE)
    print(f"\nthe page's T = 1 probabilities: largest |page - engine| {largest_engine:.1e}, "
          f"|page - local forward| {largest_local:.1e}")
    assert largest_engine < 1e-5 and largest_local < TOLERANCE  # (6 significant digits kept by the page)


@pytest.mark.engine
def test_the_engine_sessions_page_has_no_attention_panel_and_says_why(engine_export, engine_lm):
    app, client, session, pages, local_page = engine_export
    for lang, html in pages.items():
        record = page_record(html)
        why = t("engine_attention_reason", lang, model=engine_lm.name)
        assert record["no_attention"] == why and why in html
        assert ('<html lang="zh-Hans">' in html) == (lang == "zh")
        assert 'id="att-plot"' not in html and 'id="att-none"' in html
        assert record["layers"] == [] and record["prompt_attention"] == {}
        assert all(s["attention"] == {} for s in record["steps"])
        # the cache: the formula's bytes, nothing measured here
        assert record["kv_measured"] is False
        assert [s["kv"] for s in record["steps"]] == [[s.kv.tokens, 0, s.kv.formula] for s in session.steps]
    assert "不提供注意力权重" in pages["zh"] and "sends no attention weights" in pages["en"]
    local = page_record(local_page)  # a local model's page, from the same app: as before
    assert local["no_attention"] is None and local["kv_measured"] is True and 'id="att-plot"' in local_page
    assert local["layers"] and all(s["note"] == "" and s["attention"] for s in local["steps"])


@pytest.mark.engine
def test_a_fault_around_the_export_leaves_the_session_as_it_was(engine_export, engine_lm):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    app, client, session, pages, _ = engine_export
    state = lambda: (list(session.ids), len(session.steps), list(session.backend.tops))
    before = state()
    with pytest.raises(AppError, match="must be a whole number, got 1.5"):  # a layer of 1.5: refused, named
        client.predict("en", 1.5, api_name="/export_page")
    assert state() == before

    # The engine down: the next step is refused, the session kept; its page still exports, the same as before
    down = replace(engine_lm, client=EngineClient(f"http://127.0.0.1:{free_port()}/v1", engine_lm.client.model,
                                                  timeout=5))
    session.backend.lm = down
    try:
        with pytest.raises(AppError, match="does not answer"):
            client.predict(**DEFAULTS, api_name="/next_token")
        assert state() == before
        again = open(client.predict("zh", 3, api_name="/export_page"), encoding="utf-8").read()
    finally:
        session.backend.lm = engine_lm
    assert page_record(again) == page_record(pages["zh"]) and state() == before

    fresh = Client(client.src, verbose=False)  # no session yet: nothing to export
    with pytest.raises(AppError):
        fresh.predict("en", 0, api_name="/export_page")
    with pytest.raises(SessionError):
        app.store.get(fresh.session_hash)


@pytest.mark.engine
@pytest.mark.browser
def test_the_engine_sessions_page_in_chromium(engine_export, chromium, tmp_path):
    """The exported page opened offline: each step's candidates and the engine's note, no attention panel but the
    sentence saying why, the formula's cache line; English and Chinese (screenshots engine_offline_<lang>). A local
    model's page from the same app still draws its attention and measured cache."""
    from browser import open_offline, screenshot, settle

    from viz.style import format_prob

    app, client, session, pages, local_page = engine_export
    for lang, html in pages.items():
        record = page_record(html)
        tab = open_offline(chromium, html, tmp_path / f"engine-{lang}.html", lang)
        try:
            assert tab.locator("#att-plot").count() == 0 and tab.locator("#layer").count() == 0
            assert tab.locator("#att-none .why").inner_text() == record["no_attention"]
            for n, step in enumerate(session.steps, start=1):
                tab.click("#btn-next")
                tab.wait_for_function(f"() => document.body.dataset.shown === '{n}'")
                assert tab.locator("#cand-note").inner_text() == record["steps"][n - 1]["note"]
                assert int(tab.locator("#token").get_attribute("data-id")) == step.token.id
                rows = tab.locator("#cands tr").all()[1:]
                ranked = sorted(step.distribution.candidates, key=lambda c: c.rank)
                assert [r.locator(".p").inner_text() for r in rows] == [format_prob(c.prob_t1) for c in ranked]
                assert tab.locator("#kv-plot .scatterlayer .trace").count() == 1  # the formula's line only
                assert tab.locator("#kv-plot .barlayer .trace").count() == 0
            tab.click("#btn-first")
            tab.click("#btn-next")  # step 1: T = 1, approximate
            tab.wait_for_function("() => document.body.dataset.shown === '1'")
            settle(tab, quiet_ms=100, frames=2)  # (plotly's draw of the step, for the picture)
            screenshot(tab, f"engine_offline_{lang}")
            assert tab.requests == [] and tab.problems == []
        finally:
            tab.close()

    # A local model's page keeps its attention panel, its measured cache and no engine note
    tab = open_offline(chromium, local_page, tmp_path / "local.html", "en")
    try:
        assert page_record(local_page)["no_attention"] is None and tab.locator("#att-none").count() == 0
        tab.click("#btn-last")
        tab.wait_for_function("() => document.body.dataset.shown === '2'")
        assert tab.locator("#att-plot .hm, #att-plot .heatmaplayer").count() >= 1 and tab.locator("#layer").count() == 1
        assert tab.locator("#kv-plot .barlayer .trace").count() == 1 and tab.locator("#cand-note").inner_text() == ""
        assert tab.locator("#cands tr").count() > 1
        assert tab.requests == [] and tab.problems == []
    finally:
        tab.close()
