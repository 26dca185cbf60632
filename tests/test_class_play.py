"""The class as the sampler and beat the model through the API: a teacher, several students (one gradio Client
each), the real model; every number checked against an independent computation in the test."""
import math
import re
from dataclasses import replace

import pytest
import torch
from gradio_client import Client
from gradio_client.exceptions import AppError

from model.classroom.class_draws import OTHER, DrawRound
from model.decoding.records import SamplingConfig
from model.decoding.sampling import draw_u
from model.serving.sessions import SessionStore
from served import DEFAULTS, served

pytestmark = pytest.mark.server

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def server(lm):
    with served(lm, SessionStore(max_sessions=40)) as (app, url, _):
        yield app, url


@pytest.fixture
def klass(server):
    """A teacher with a text and a room, and four students in it."""
    app, url = server
    teacher = Client(url, verbose=False)
    teacher.predict(PROMPT, "raw", "smollm2", **DEFAULTS, api_name="/start")
    info = teacher.predict(**DEFAULTS, api_name="/open_room")[0]
    code = re.search(r'data-code="([A-Z0-9]+)"', info).group(1)
    students = [Client(url, verbose=False) for _ in range(4)]
    for s in students:
        s.predict(code, "en", api_name="/join_room")
    yield app, teacher, students
    for c in (teacher, *students):
        app.store.drop(c.session_hash)
        app.rooms.close(c.session_hash, "left")


def independent_draw(logits: torch.Tensor, temperature: float, u: float) -> int:
    """Inverse CDF over softmax(z / T) of the full vocabulary, most probable first, ties by id (written here)."""
    p = torch.softmax(logits.double() / temperature, -1)
    vals, order = torch.sort(p, descending=True, stable=True)  # the whole vocabulary; equal p: lower id first
    return int(order[int(torch.searchsorted(torch.cumsum(vals, 0), torch.tensor([u], dtype=torch.float64),
                                             right=True))])


def test_the_histogram_is_the_students_real_draws(klass):
    app, teacher, students = klass
    logits = app.store.get(teacher.session_hash).next_logits
    for api, temperature in (("/class_draw_open", 1.0), ("/class_draw_cold", 0.3), ("/class_draw_hot", 1.5)):
        teacher.predict(**DEFAULTS, api_name=api)
        us = [0.05, 0.41, 0.77, 0.93]
        drawn = []
        for s, u in zip(students, us):
            said = s.predict(u, "en", api_name="/class_draw")
            token = independent_draw(logits, temperature, u)
            display = app.store.get(teacher.session_hash).lm.tokens.info(token).display
            assert display in said and f"u = {u:.4f}" in said
            drawn.append(token)
        rounds = app.class_play.wall(teacher.session_hash)[1]
        record = rounds[-1]
        assert record["temperature"] == temperature and record["n"] == 4
        # the wall's bins: the top tokens' ids (by p at this T), then every other token
        draw_round = app.class_play._plays[app.rooms.room_of(teacher.session_hash)].rounds[-1][0]
        ids = [i for i, _ in draw_round.top] + [OTHER]
        place = {i: k for k, i in enumerate(ids[:-1])}
        expected_counts = [0] * len(ids)
        for token in drawn:
            expected_counts[place.get(token, len(ids) - 1)] += 1
        assert record["counts"] == expected_counts
        p = torch.softmax(logits.double() / temperature, -1)
        assert record["probs"][:-1] == pytest.approx([float(p[i]) for i in ids[:-1]], abs=1e-4)  # float32 softmax
        assert record["expected"] == pytest.approx([4 * q for q in record["probs"]])
    # the student's first draw of a round stays: a second press gives the same token
    again = students[0].predict(0.99, "en", api_name="/class_draw")
    first = independent_draw(logits, 1.5, 0.05)
    assert app.store.get(teacher.session_hash).lm.tokens.info(first).display in again
    assert len(app.class_play.wall(teacher.session_hash)[1]) == 3


def test_draws_refused_plainly(klass):
    app, teacher, students = klass
    with pytest.raises(AppError, match="not asked for a draw"):
        students[0].predict(0.5, "en", api_name="/class_draw")
    teacher.predict(**DEFAULTS, api_name="/class_draw_open")
    for bad in (1.0, -0.5, 7):
        with pytest.raises(AppError, match="random number from 0"):
            students[1].predict(bad, "en", api_name="/class_draw")
    with pytest.raises(AppError, match="房间"):
        Client(teacher.src, verbose=False).predict(**{**DEFAULTS, "lang": "zh"}, api_name="/class_draw_hot")
    # a student's page that sent no u gets one from the server
    assert "u = " in students[2].predict(None, "en", api_name="/class_draw")


def test_a_round_draws_as_a_step_of_the_app_draws(lm):
    """The round's draw with u = draw_u(seed, position) is the token session.preview draws with that seed."""
    from model.decoding.session import DecodeSession
    session = DecodeSession(lm)
    session.start(PROMPT)
    cfg = SamplingConfig(temperature=1.3, top_k=30, top_p=0.95)
    draw_round = DrawRound.open(session.next_logits, list(session.ids), cfg, limit=10_000)
    for seed in range(60):
        u = draw_u(seed, len(session.ids))
        assert draw_round.draw(f"s{seed}", u) == session.preview(replace(cfg, seed=seed)).chosen.id


def test_two_thousand_draws_fit_the_models_p(lm):
    """2,000 simulated students (u from the app's draw_u with their own seeds) through a round at T = 1.5 on the
    model's real distribution: Pearson's chi-square goodness of fit on bins of expected >= 5."""
    from model.classroom.class_draws import chi2_sf
    from model.decoding.session import DecodeSession
    session = DecodeSession(lm)
    session.start("My favourite colour is")
    draw_round = DrawRound.open(session.next_logits, list(session.ids), SamplingConfig(), 1.5, bins=8, limit=2000)
    for seed in range(2000):
        draw_round.draw(f"s{seed}", draw_u(seed, 10_000 + seed))
    tab = draw_round.tally()
    assert min(tab.expected) >= 5, tab.expected
    assert chi2_sf(tab.chi2, tab.dof) > 0.001 and tab.p_value > 0.001, (tab.counts, tab.expected)


def test_the_game_scores_against_a_full_forward_pass(server, klass):
    app, teacher, students = klass
    text = "The capital of France is| Paris, and the capital of Italy is Rome."
    teacher.predict(text, "en", api_name="/game_start")
    guesses = [["Paris", "paris", "Lyon", None], [",", None, ".", ","], ["and", "and", "And", "but"]]
    for step in guesses:
        for s, g in zip(students, step):
            if g is not None:
                s.predict(g, "en", api_name="/game_guess")
        teacher.predict("en", api_name="/game_reveal")
    revision, _, score, game = app.class_play.wall(teacher.session_hash)
    # independent: the same ids through the model once, log_softmax over the full vocabulary
    tok = app.store.get(teacher.session_hash).lm.tokenizer
    ids = tok(PROMPT)["input_ids"] + tok(" Paris, and the capital of Italy is Rome.", add_special_tokens=False)["input_ids"]
    assert game.ids == ids
    with torch.no_grad():
        logp = torch.log_softmax(app.models.get().model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
    opening = len(tok(PROMPT)["input_ids"])
    bits = [-float(logp[t - 1, ids[t]]) / math.log(2) for t in range(opening, len(ids))]
    assert score["model_bits"] == pytest.approx(bits[:3], abs=1e-3)
    assert score["text_cross_entropy"] == pytest.approx(sum(bits) / len(bits), abs=1e-3)
    assert score["tokens"] == ["␣Paris", ",", "␣and"]
    rights = [2, 2, 3]
    answered = [3, 3, 4]
    assert score["right"] == rights and score["answered"] == answered
    assert score["class_bits"] == pytest.approx([-math.log2((k + 1) / (n + 2)) for k, n in zip(rights, answered)])
    assert score["class_total"] == pytest.approx(sum(score["class_bits"]))
    # a student's box after the reveal: their guess, the class's split, the model's p
    state = app.class_play.seen_by(students[0].session_hash)["game"]
    assert state["last"]["guess"] == "and" and state["last"]["mine_right"] and state["last"]["answered"] == 4
    assert state["text"] == "The capital of France is Paris, and"


def test_game_bounds(klass):
    app, teacher, students = klass
    with pytest.raises(AppError, match="at most 200"):
        teacher.predict("x " * 150, "en", api_name="/game_start")
    with pytest.raises(AppError, match="at most 16"):
        teacher.predict("Count:| one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                        "fifteen sixteen seventeen", "en",
                        api_name="/game_start")
    with pytest.raises(AppError, match="No game"):
        students[0].predict("x", "en", api_name="/game_guess")
    teacher.predict("Hello| world", "en", api_name="/game_start")
    with pytest.raises(AppError, match="at most 40"):
        students[0].predict("y" * 41, "en", api_name="/game_guess")
    teacher.predict("en", api_name="/game_reveal")
    with pytest.raises(AppError, match="game is over"):
        teacher.predict("en", api_name="/game_reveal")
