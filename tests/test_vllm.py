"""A model served by a real engine (vLLM, from .venv-vllm, started by tests/engine_server.py), against the same
model loaded here: the same top log-probabilities, the same greedy text, the page's API on it, and its faults.

The first tests need no engine (how answers are read, which cuts are exact); the rest skip, saying why, when
`make engine` could not install vLLM. The last test starts an engine of its own and stops it (the run's shared
engine serves the engine test files after this one).
"""
import math
import os
import signal
import time
from dataclasses import replace

import pytest
import torch

from engine_server import REQUEST_S
from model.vllm.client import EngineClient, EngineTop, fault, parse_top
from model.vllm.session import EngineBackend, load_engine_model, tail_independent
from model.errors import SessionError
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from served import DEFAULTS, served

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, a little", "1, 2, 3, 4,",
           "我们今天学习"]
TOLERANCE = 1e-3


# ---- no engine needed --------------------------------------------------------------------------------
def answer(top: dict[int, float], prompt_last: tuple[int, float, int] | None = None) -> dict:
    choice = {"logprobs": {"top_logprobs": [{f"token_id:{i}": lp for i, lp in top.items()}]}}
    if prompt_last:
        i, lp, rank = prompt_last
        choice["prompt_logprobs"] = [None, {str(i): {"logprob": lp, "rank": rank, "decoded_token": "x"}}]
    return {"choices": [choice]}


@pytest.mark.unit
def test_an_answer_is_read_by_token_id_most_probable_first():
    top = parse_top(answer({7: -3.0, 3: -1.0, 9: -2.0}, (42, -6.5, 300)), [1, 42], last_logprob=True)
    assert top.ids == (3, 9, 7) and top.logprobs == (-1.0, -2.0, -3.0)
    assert top.tail_mass == pytest.approx(1 - math.exp(-1) - math.exp(-2) - math.exp(-3))
    assert (top.last_logprob, top.last_rank) == (-6.5, 300)
    with pytest.raises(SessionError) as err:
        parse_top({"choices": [{"text": "x"}]}, [1])
    assert err.value.key == "engine_bad_answer"


@pytest.mark.unit
def test_each_engine_error_is_one_keyed_sentence():
    assert fault(400, "This model's maximum context length is 256 tokens. However, ...", "m").key == "engine_context"
    assert fault(404, "The model `m` does not exist.", "m").key == "engine_model_unknown"
    assert fault(429, "slow down", "m").key == "engine_rate_limited"
    assert fault(503, "overloaded", "m").key == "engine_error"
    assert fault(400, "bad", "m").key == "engine_refused"


@pytest.mark.unit
def test_a_cut_is_exact_only_when_the_unknown_tail_cannot_matter():
    top = EngineTop(5, (1, 2, 3), (math.log(0.5), math.log(0.3), math.log(0.1)), 0.1)
    cfg = SamplingConfig()
    assert not tail_independent(top, cfg)  # T = 1, no cut: the draw could land in the 0.1 not sent
    assert tail_independent(top, replace(cfg, temperature=0))  # greedy: the top token is known
    assert tail_independent(top, replace(cfg, top_k=3)) and not tail_independent(top, replace(cfg, top_k=4))
    assert not tail_independent(top, replace(cfg, top_p=0.7))  # the nucleus renormalised over 3 is not the real one
    assert tail_independent(top, replace(cfg, min_p=0.25))  # 0.1 / 0.5 = 0.2 < 0.25: every tail token is cut
    assert not tail_independent(top, replace(cfg, min_p=0.15))
    assert not tail_independent(top, replace(cfg, min_p=0.25, temperature=2.0))  # (0.2)^(1/2) = 0.45 > 0.25
    assert not tail_independent(top, replace(cfg, top_k=2, repetition_penalty=1.3))
    assert tail_independent(replace(top, tail_mass=0.0), cfg)


@pytest.mark.unit
def test_a_failing_engine_is_not_hammered():
    client = EngineClient(f"http://127.0.0.1:{_closed_port()}/v1", "m", timeout=2)
    with pytest.raises(SessionError) as first:
        client.next_token([1, 2])
    assert first.value.key == "engine_down"
    client._http.close()  # a second call that reached the network would now fail differently
    t0 = time.perf_counter()
    with pytest.raises(SessionError) as again:
        client.next_token([1, 2])
    assert again.value is first.value and time.perf_counter() - t0 < 0.05  # the back-off answered


def _closed_port() -> int:
    from engine_server import free_port

    return free_port()  # bound and released: nothing listens there


# ---- the real engine -------------------------------------------------------------------------------------
def local_logprobs(lm, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return torch.log_softmax(lm.model(input_ids=torch.tensor([ids])).logits[0, -1].double(), -1)


@pytest.mark.engine
def test_engine_top_logprobs_equal_the_local_models(engine_lm, lm, engine):
    print(f"\nvLLM answered /v1/models {engine.started_s:.0f} s after launch; top N = {engine_lm.client.top_n}")
    largest, positions = 0.0, 0
    for prompt in PROMPTS:
        ids = lm.tokenizer(prompt)["input_ids"]
        for extra in range(3):  # the prompt, then two greedy tokens further
            top = engine_lm.client.next_token(ids)
            local = local_logprobs(lm, ids)
            here = torch.tensor([float(local[i]) for i in top.ids])
            diff = float((here - torch.tensor(top.logprobs, dtype=torch.float64)).abs().max())
            largest, positions = max(largest, diff), positions + 1
            assert diff < TOLERANCE, (prompt, extra, diff)
            local_top = torch.topk(local, len(top.ids)).indices.tolist()
            assert top.ids[:5] == tuple(local_top[:5]), (prompt, top.ids[:5], local_top[:5])
            assert top.tail_mass == pytest.approx(1 - float(local[list(top.ids)].exp().sum()), abs=TOLERANCE)
            ids = ids + [top.ids[0]]
    print(f"largest |engine - local| log-probability over {positions} positions x {len(top.ids)} tokens: {largest:.2e}")


@pytest.mark.engine
def test_greedy_continuations_are_identical(engine_lm, lm):
    greedy = SamplingConfig(temperature=0)
    for prompt in PROMPTS[:3]:
        ids = lm.tokenizer(prompt)["input_ids"]
        local = lm.model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                  max_new_tokens=20, do_sample=False)[0, len(ids):].tolist()
        session = DecodeSession(engine_lm)
        session.start(prompt)
        for _ in range(len(local)):
            if session.finished:
                break
            session.step(greedy)
        assert session.ids[session.prompt_len:] == local[:len(session.steps)], prompt
        assert len(session.steps) == len(local) or session.finished


@pytest.mark.engine
def test_a_seed_reproduces_an_engine_session_and_back_asks_nothing(engine_lm):
    cfg = SamplingConfig(temperature=1.0, top_k=10, seed=7)
    runs = []
    for _ in range(2):
        session = DecodeSession(engine_lm)
        session.start("The weather today is")
        runs.append([session.step(cfg).token.id for _ in range(6)])
    assert runs[0] == runs[1]
    before = session.preview(cfg)
    calls = []
    session.lm.client.next_token, real = (lambda *a, **k: calls.append(a) or real(*a, **k)), session.lm.client.next_token
    try:
        session.back(3)
        assert calls == [] and len(session.steps) == 3
        session.step(cfg)
        session.step(cfg)
        session.step(cfg)
    finally:
        session.lm.client.next_token = real
    assert session.preview(cfg).candidates == before.candidates  # the same text, the same engine answer
    assert [s.token.id for s in session.steps] == runs[0]


@pytest.mark.engine
def test_a_token_forced_from_outside_the_top_n_gets_the_engines_own_log_probability(engine_lm, lm):
    session = DecodeSession(engine_lm)
    session.start("The capital of France is")
    outside = next(i for i in range(1000, 2000) if i not in session.backend.top.ids)
    record = session.step(SamplingConfig(), force_token=outside)
    local = local_logprobs(lm, session.ids[:-1])
    assert record.distribution.forced and record.token.id == outside
    assert abs(record.distribution.chosen_logprob_t1 - float(local[outside])) < TOLERANCE
    assert record.distribution.chosen_rank == int((local > local[outside]).sum()) + 1
    assert session.logprob_t1() == pytest.approx(float(local[outside]), abs=TOLERANCE)


@pytest.mark.engine
def test_the_candidate_record_shows_the_engines_numbers_and_says_when_it_is_approximate(engine_lm, lm):
    session = DecodeSession(engine_lm)
    session.start("The capital of France is")
    plain = session.preview(SamplingConfig())
    local = local_logprobs(lm, session.ids).exp()
    for c in plain.candidates:
        assert abs(c.prob_t1 - float(local[c.token.id])) < TOLERANCE
    # the record's tail is what its candidates leave out, as a local model's (the full forward says how much); what
    # the engine did not send is 1 - known_mass (with the top 100 known, more than the record's 20 candidates)
    shown = [c.token.id for c in plain.candidates]
    assert plain.tail_mass_t1 == pytest.approx(1 - sum(c.prob_t1 for c in plain.candidates), abs=1e-9)
    assert plain.tail_mass_t1 == pytest.approx(1 - float(local[shown].sum()), abs=TOLERANCE)
    assert 1 - plain.known_mass == pytest.approx(session.backend.top.tail_mass, abs=1e-9)
    assert 0 < session.backend.top.tail_mass <= plain.tail_mass_t1
    assert plain.approximate and not session.preview(SamplingConfig(top_k=5)).approximate
    # the draw is over the N the engine sent: at T = 1, no cut, each known token's share of their mass
    for c in plain.candidates:
        assert c.final_prob == pytest.approx(c.prob_t1 / plain.known_mass, rel=1e-4)
    assert sum(c.final_prob for c in plain.candidates) + plain.tail_mass_final == pytest.approx(1.0)


@pytest.mark.engine
def test_engine_faults_leave_the_session_as_it_was(engine_lm, engine):
    session = DecodeSession(engine_lm)
    session.start("Hello")
    session.step(SamplingConfig(temperature=0))
    state = (list(session.ids), len(session.steps), session.backend.top)

    unknown = replace(engine_lm, client=EngineClient(engine.url, "no-such-model", timeout=REQUEST_S))
    other = DecodeSession(unknown)
    with pytest.raises(SessionError) as err:
        other.start("Hello")
    assert err.value.key == "engine_model_unknown" and not other.started
    print("\nunknown model:", err.value)

    # Over the engine's context (vLLM's own refusal: the app is told a larger context than the engine has)
    blind = replace(engine_lm, info=replace(engine_lm.info, context=10**6))
    long = DecodeSession(blind)
    long.lm = blind
    long_prompt = " ".join(["word"] * 300)
    session.lm = blind
    try:
        with pytest.raises(SessionError) as err:
            session.start(long_prompt)
    finally:
        session.lm = engine_lm
    assert err.value.key == "engine_context", err.value
    print("over the context:", err.value)
    assert (session.ids, len(session.steps), session.backend.top) == state

    # A slow engine: frozen (SIGSTOP) for longer than the client's time-out
    slow = replace(engine_lm, client=EngineClient(engine.url, engine.model, timeout=3))
    session.lm = slow
    os.killpg(engine.process.pid, signal.SIGSTOP)
    try:
        with pytest.raises(SessionError) as err:
            session.step(SamplingConfig(temperature=0))
    finally:
        os.killpg(engine.process.pid, signal.SIGCONT)
        session.lm = engine_lm
    assert err.value.key == "engine_slow"
    print("slow:", err.value)
    assert (session.ids, len(session.steps), session.backend.top) == state


@pytest.mark.engine
def test_through_the_api_on_the_engine_model(engine_lm, lm):
    from gradio_client import Client

    from model.serving.sessions import ModelRegistry, SessionStore
    from ui.protocol import carried_figure

    models = ModelRegistry("smollm2", {"smollm2": lm})
    models.add_engine(engine_lm)
    with served(models, SessionStore(max_sessions=4)) as (page, url, demo):
        client = Client(demo.local_url, verbose=False)
        settings = {**DEFAULTS, "temperature": 0.0}
        assert engine_lm.name in models.names()
        client.predict("The capital of France is", "raw", engine_lm.name, **settings, api_name="/start")
        session = page.store.get(client.session_hash)
        assert isinstance(session.backend, EngineBackend)
        for _ in range(3):
            result = client.predict(**settings, api_name="/next_token")
        assert len(session.steps) == 3
        figure = carried_figure(result[1])
        assert "From the engine" in figure["layout"]["title"]["subtitle"]["text"]
        # Speculative decoding asks the engine; this one was started without speculation: the flags that turn it on
        before = list(session.ids)
        summary, plot, marked, numbers = client.predict(4, 8, **settings, api_name="/speculative")
        assert "--speculative-config" in summary and plot is None and not numbers["speculating"]
        assert len(numbers["generated"]) == 8 and numbers["drafted_per_step"] is None
        assert session.ids == before and len(session.steps) == 3
        client.predict(1, **settings, api_name="/back")
        assert len(session.steps) == 2
        forced = session.backend.top.ids[3]
        client.predict(forced, **settings, api_name="/force")
        assert session.steps[-1].token.id == forced and session.steps[-1].distribution.forced
        opened = client.predict(**settings, api_name="/tab_attention")  # the tab's state is not sent back
        attention = carried_figure(opened if isinstance(opened, str) else opened[-1])
        assert "sends no attention weights" in attention["layout"]["annotations"][0]["text"]
        path = client.predict("en", api_name="/export")
        import json

        trace = json.loads(open(path).read())
        assert trace["model"] == engine_lm.name
        assert [s["distribution"]["chosen"]["id"] for s in trace["steps"]] == session.ids[session.prompt_len:]
        # Views that run the model themselves say why they cannot, in the page's language, and change nothing
        from gradio_client.exceptions import AppError

        before = list(session.ids)
        # (the web page exports: test_vllm_offline.py)
        with pytest.raises(AppError, match="runs the model itself|需要在本机运行模型"):
            client.predict(4, 1.0, 8, **settings, api_name="/beams_search")
        assert session.ids == before



@pytest.mark.engine
@pytest.mark.browser
def test_the_page_on_the_engine_model(engine_lm, lm, new_tab):
    """Headless Chromium: steps, a forced token, the candidate chart with its tail line, attention saying why not."""
    from browser import plot_drawn, screenshot, start_text, wait_for_step

    from model.serving.sessions import ModelRegistry, SessionStore

    models = ModelRegistry(engine_lm.name, {"smollm2": lm})  # the engine's model is the page's default here
    models.add_engine(engine_lm)
    with served(models, SessionStore(), engine_lm.name) as (page_state, url, demo):
        page = new_tab(demo.local_url)
        start_text(page, "The best way to learn is")  # after the load's own session: a Next never races it
        for n in (1, 2):
            page.locator("#tbt-next").click()
            wait_for_step(page, n)
        session = next(s for _, s in page_state.store.live())
        forced = session.backend.top.ids[2]
        session_before = len(session.steps)
        page.locator("#tbt-force input").click()  # the force list, most probable first: its third entry
        page.get_by_role("option").nth(2).click()
        page.locator("#tbt-force-btn").click()
        wait_for_step(page, 3)
        assert session.steps[-1].distribution.forced and session.steps[-1].token.id == forced
        plot_drawn(page, "tbt-plot-candidates")
        text = page.locator("#tbt-plot-candidates").inner_text()
        assert "From the engine" in text and "approximate" in text
        screenshot(page, "engine_candidates_en")
        page.get_by_role("tab", name="Attention").click()
        page.wait_for_function("() => document.querySelector('#tbt-plot-attention')?.innerText"
                               ".includes('sends no attention weights')", timeout=30_000)
        screenshot(page, "engine_attention_en")
        page.get_by_label("中文").check()
        page.wait_for_function("() => document.querySelector('#tbt-plot-attention')?.innerText"
                               ".includes('不提供注意力权重')", timeout=30_000)
        screenshot(page, "engine_attention_zh")
        page.get_by_role("tab", name="候选词元").click()
        page.wait_for_function("() => document.querySelector('#tbt-plot-candidates')?.innerText"
                               ".includes('来自推理引擎')", timeout=30_000)
        screenshot(page, "engine_candidates_zh")
        assert session_before == 2 and page.problems == []


# ---- branches and a trace on the engine model (the session stays the engine's) --------------------------------
BRANCHING = dict(temperature=0.9, top_k=40, top_p=0.95, min_p=0.0, repetition_penalty=1.0, order="transformers",
                 seed=7)
PAGE = {**DEFAULTS, **BRANCHING}


@pytest.fixture(scope="module")
def engine_app(engine_lm, lm):
    """The app on both models, launched once for the branch and trace tests: (its App, its URL)."""
    from model.serving.sessions import ModelRegistry, SessionStore

    models = ModelRegistry("smollm2", {"smollm2": lm})
    models.add_engine(engine_lm)
    with served(models, SessionStore(max_sessions=8)) as (page, url, demo):
        yield page, demo.local_url


def branch_on_the_engine(client, engine_lm) -> list:
    """On the engine model: 4 tokens, back to step 1, its least likely candidate forced, one step more. Two texts:
    #0 (the 4 tokens) and #1 (shown now). Returns the page's answer after the 4th token."""
    call = lambda api, *lead: client.predict(*lead, **PAGE, api_name=api)
    client.predict("The capital of France is", "raw", engine_lm.name, **PAGE, api_name="/start")
    for _ in range(4):
        after_four = call("/next_token")
    back = call("/go_to", 1)
    call("/force", back[2]["choices"][-1][1])
    call("/next_token")
    return after_four


def next_probs(session) -> list[float]:
    """The T = 1 probabilities of the next token's candidates, as the candidate chart shows them."""
    return [c.prob_t1 for c in session.preview(SamplingConfig(**BRANCHING)).candidates]


@pytest.mark.engine
def test_a_branch_switch_on_the_engine_model_gives_back_its_chips_and_candidates(engine_app, engine_lm):
    from gradio_client import Client

    import viz
    from ui.protocol import carried_figure

    page, url = engine_app
    client = Client(url, verbose=False)
    call = lambda api, *lead: client.predict(*lead, **PAGE, api_name=api)
    try:
        after_four = branch_on_the_engine(client, engine_lm)
        session = page.store.get(client.session_hash)
        assert isinstance(session.backend, EngineBackend) and session.lm is engine_lm
        first = session.branch_record(0)
        chips = viz.token_chips_html(session.prefill.tokens, first.steps, "en")
        assert len(first.steps) == 4 and chips in after_four[0]
        labels = [label for label, _ in call("/branch_choices")[0]["choices"]]
        assert len(labels) == 2 and labels[0].startswith("#0 · 4 tokens") and "shown now" in labels[1]
        assert "They split at step 2" in call("/compare_branches", None, None)[0]
        second_probs = next_probs(session)

        asked, real = [], engine_lm.client.next_token
        engine_lm.client.next_token = lambda *a, **k: asked.append(a) or real(*a, **k)
        try:
            switched = call("/switch_branch", 0)
            assert page.store.get(client.session_hash) is session and session.lm is engine_lm
            assert chips in switched[0] and carried_figure(switched[1]) == carried_figure(after_four[1])
            assert [s.token.id for s in session.steps] == [s.token.id for s in first.steps]
            session.back(1)  # the branch's own answer after step 3: step 4's candidates as they were
            assert next_probs(session) == [c.prob_t1 for c in first.steps[-1].distribution.candidates]
            call("/switch_branch", 1)
            assert len(session.steps) == 3 and next_probs(session) == second_probs
            assert asked == []  # every text kept the engine's answers along it
        finally:
            engine_lm.client.next_token = real
    finally:
        page.store.drop(client.session_hash)


@pytest.mark.engine
def test_a_trace_exported_on_the_engine_model_imports_onto_it(engine_app, engine_lm):
    import json

    from gradio_client import Client, handle_file

    page, url = engine_app
    author, reader = Client(url, verbose=False), Client(url, verbose=False)
    try:
        branch_on_the_engine(author, engine_lm)
        path = author.predict("en", api_name="/export")
        trace = json.loads(open(path, encoding="utf-8").read())
        original = page.store.get(author.session_hash)
        assert trace["model"] == engine_lm.name and len(trace["branches"]) == 1

        loaded = reader.predict(handle_file(path), **PAGE, api_name="/import_trace")
        session = page.store.get(reader.session_hash)
        assert isinstance(session.backend, EngineBackend) and session.lm is engine_lm
        assert "3 recorded steps left" in loaded[0]
        for _ in range(3):
            reader.predict(**{**PAGE, "temperature": 0.1, "seed": 99}, api_name="/next_token")  # the trace's knobs
        recorded = [(s["distribution"]["chosen"]["id"], s["distribution"]["forced"]) for s in trace["steps"]]
        assert [(s.token.id, s.distribution.forced) for s in session.steps] == recorded
        for mine, theirs in zip(session.steps, trace["steps"]):
            assert mine.distribution.chosen_logprob_t1 == pytest.approx(
                theirs["distribution"]["chosen_logprob_t1"], abs=TOLERANCE)
        shape = lambda s: [(r.id, r.parent, r.fork, r.length) for r in s.branch_tree()]
        assert shape(session) == shape(original)
        session.switch_branch(0)  # the imported branch, made on the engine too
        assert [s.token.id for s in session.steps] == [s.token.id for s in original.branch_record(0).steps]
    finally:
        page.store.drop(author.session_hash)
        page.store.drop(reader.session_hash)


def stopped_mid_session(engine_lm, engine):
    """The engine stopped mid-session: the next step is refused as engine_down and the session is as it was (run by
    tests/test_vllm_spec.py at the end of its module, on the engine it started: stopping one costs no start)."""
    session = DecodeSession(engine_lm)
    session.start("Hello there")
    session.step(SamplingConfig(temperature=0))
    state = (list(session.ids), len(session.steps), session.backend.top)
    engine.stop()
    with pytest.raises(SessionError) as err:
        session.step(SamplingConfig(temperature=0))
    assert err.value.key == "engine_down"
    print("\nstopped:", err.value)
    assert (session.ids, len(session.steps), session.backend.top) == state
    session.back(1)  # what is kept still works without the engine
    assert len(session.steps) == 0
