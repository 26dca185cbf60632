"""The class as the sampler and beat the model, without a model: the statistics, the draw, the game's scores."""
import math

import numpy as np
import pytest
import torch

from model.classroom.class_draws import (OTHER, DrawRound, chi2_sf, chi_square, fresh_u, simulated_p_value, tally,
                               total_variation, valid_u)
from model.errors import SessionError
from model.classroom.guess_game import Game, GameToken, class_bits, matches, split_text
from model.decoding.records import SamplingConfig
from model.decoding.sampling import draw_u

pytestmark = pytest.mark.unit

LOGITS = torch.tensor([3.0, 2.5, 2.0, 1.0, 0.5, 0.0, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0])  # 12 tokens


def test_chi_square_and_tv_by_hand():
    assert chi_square([6, 4], [0.5, 0.5]) == pytest.approx((1 ** 2 + 1 ** 2) / 5)
    assert total_variation([6, 4], [0.5, 0.5]) == pytest.approx(0.1)
    assert total_variation([0, 10], [1.0, 0.0]) == pytest.approx(1.0)
    assert chi_square([1, 1], [1.0, 0.0]) == math.inf  # a draw where p is 0 cannot come from p
    assert chi_square([], []) == 0.0 and total_variation([0, 0], [0.5, 0.5]) == 0.0


def test_chi2_sf_against_the_table():
    # the 95th and 99th percentiles of chi-square (any statistics table)
    assert chi2_sf(3.841, 1) == pytest.approx(0.05, abs=2e-4)
    assert chi2_sf(18.307, 10) == pytest.approx(0.05, abs=2e-4)
    assert chi2_sf(20.090, 8) == pytest.approx(0.01, abs=1e-4)
    assert chi2_sf(0.0, 3) == 1.0 and chi2_sf(5.0, 0) == 1.0


def test_simulated_p_value_agrees_with_the_chi_square_law_for_a_large_class():
    probs = [0.4, 0.3, 0.2, 0.1]
    counts = [420, 300, 180, 100]  # n = 1000
    x = chi_square(counts, probs)
    assert simulated_p_value(counts, probs, classes=4000) == pytest.approx(chi2_sf(x, 3), abs=0.03)
    assert simulated_p_value([40, 0, 0, 0], probs) < 0.001  # everyone drew the top token: not p
    assert simulated_p_value([0, 0, 0, 0], probs) == 1.0


def test_a_round_draws_by_the_cumulative_sum_of_its_p():
    cfg = SamplingConfig(temperature=1.0, top_k=6)
    r = DrawRound.open(LOGITS, [1, 2, 3], cfg, temperature=0.7)
    assert r.temperature == 0.7 and r.position == 3
    p = torch.softmax(torch.topk(LOGITS, 6).values / 0.7, -1).double().numpy()  # independent: top-6 then T
    assert [pp for _, pp in r.top][:6] == pytest.approx(list(p), abs=1e-6)
    cum = np.cumsum(p)
    for k, u in enumerate([0.0, 0.3, 0.6, 0.95, 0.999999]):
        expected = int(np.searchsorted(cum, u, side="right"))  # tokens are ids 0..5 in p order here
        assert r.draw(f"s{k}", u) == expected
    assert r.draw("s0", 0.99) == 0  # a student draws once a round: the first token stays
    r.close()
    with pytest.raises(SessionError):
        r.draw("late", 0.5)
    assert r.tally().n == 5  # the tally outlives the distribution


def test_two_thousand_draws_fit_p():
    """2,000 simulated students, each u from its own seed (the app's draw_u), through the round's draw:
    Pearson's chi-square goodness of fit on the bins (expected >= 5 each) does not reject p."""
    r = DrawRound.open(LOGITS, [0], SamplingConfig(), temperature=1.5, bins=6, limit=2000)
    for seed in range(2000):
        r.draw(f"student{seed}", draw_u(seed, r.position))
    tab = r.tally()
    assert tab.n == 2000 and sum(tab.counts) == 2000 and tab.ids[-1] == OTHER
    assert min(tab.expected) >= 5
    assert sum(tab.probs) == pytest.approx(1.0)
    assert chi2_sf(tab.chi2, tab.dof) > 0.001, (tab.counts, tab.expected)
    assert tab.p_value > 0.001 and tab.tv < 0.05
    # each bin within 4.5 binomial standard deviations of n p (a bound that fails ~1e-5 of the time)
    for c, e, p in zip(tab.counts, tab.expected, tab.probs):
        assert abs(c - e) <= 4.5 * math.sqrt(2000 * p * (1 - p)) + 1


def test_t_zero_draws_only_the_argmax_and_u_is_checked():
    r = DrawRound.open(LOGITS, [0], SamplingConfig(), temperature=0)
    assert {r.draw(str(k), fresh_u()) for k in range(20)} == {0}
    for bad in (1.0, -0.1, math.nan, math.inf, "0.5", None, True):
        with pytest.raises(SessionError):
            valid_u(bad)
    assert 0 <= fresh_u() < 1


def test_tally_bins_other_tokens_together():
    tab = tally([5, 5, 7, 99, 0], [(5, 0.5), (7, 0.25)])
    assert tab.ids == [5, 7, OTHER] and tab.counts == [2, 1, 2] and tab.probs == [0.5, 0.25, 0.25]
    assert tab.expected == [2.5, 1.25, 1.25] and tab.dof == 2


def test_class_bits_and_matching():
    assert class_bits(0, 0) == pytest.approx(1.0)
    assert class_bits(30, 30) == pytest.approx(math.log2(32 / 31))
    assert class_bits(0, 30) == pytest.approx(math.log2(32))
    assert matches("paris", " Paris") and matches(" 巴黎 ", "巴黎") and not matches("Pari", " Paris")


def test_split_text():
    assert split_text("The capital of France is Paris") == ("The", " capital of France is Paris")
    assert split_text("The capital of France is| Paris") == ("The capital of France is", " Paris")
    assert split_text("法国的首都是巴黎") == ("法", "国的首都是巴黎")
    for bad in ("", "   ", "Paris|", "|Paris", "x" * 201, None, 5):
        with pytest.raises(SessionError):
            split_text(bad)


def test_a_game_scores_each_revealed_token():
    toks = [GameToken(1, " Paris", "␣Paris", 0.5, 1.0), GameToken(2, ".", ".", 0.25, 2.0)]
    game = Game("The capital of France is", [9, 9, 1, 2], 2, toks, ["A", "A Paris", "A Paris."])
    for s, g in {"a": "paris", "b": "Paris", "c": "Lyon"}.items():
        game.guess(s, g)
    game.guess("c", "London")  # a later guess replaces theirs
    assert game.reveal().id == 1 and game.shown() == "A Paris"
    game.guess("a", "!")
    game.reveal()
    assert game.over
    with pytest.raises(SessionError):
        game.guess("a", "x")
    score = game.score()
    assert score.right == [2, 0] and score.answered == [3, 1]
    assert score.class_bits == pytest.approx([-math.log2(3 / 5), -math.log2(1 / 3)])
    assert score.model_total == 3.0 and score.model_cross_entropy == 1.5 and score.text_cross_entropy == 1.5
    for bad in ("", "  ", "x" * 41, None):
        with pytest.raises(SessionError):
            Game("A", [1, 2], 1, toks[:1], ["A", "A Paris"]).guess("s", bad)


def test_the_wall_figures_are_valid_plotly_in_both_languages():
    import plotly.graph_objects as go
    from viz.class_sampler import draws_chart, game_chart
    r = {"labels": ["␣Paris", "␣the", "<b>"], "probs": [0.7, 0.1, 0.2], "counts": [20, 4, 6],
         "expected": [21.0, 3.0, 6.0], "n": 30, "temperature": 0.3}
    score = {"tokens": ["␣Paris", ","], "model_bits": [0.4, 2.4], "class_bits": [0.4, 1.0], "right": [2, 1],
             "answered": [3, 2], "model_total": 2.8, "class_total": 1.4}
    for lang in ("en", "zh"):
        for spec in (draws_chart([r, r, r, r], lang), draws_chart([], lang), game_chart(score, lang)):
            go.Figure(**spec)  # validated
        assert len(draws_chart([r] * 4, lang)["data"]) == 6  # the last three rounds, two traces each
        assert "&lt;b&gt;" in draws_chart([r], lang)["data"][0]["y"][2]


class _Tokens:
    """What a round's wall asks of the model's tokens: each id's display."""

    def info(self, token_id):
        return type("Info", (), {"display": f"t{token_id}"})()


def test_a_lapsed_seat_neither_draws_nor_guesses_until_its_page_ticks_again():
    """Issue 32, item 5: a student whose page stopped ticking (the wall counts 0 joined) had a draw and a game's
    guess counted, so the seats' cap did not bound the voters. Only a seated follower votes; the page's next tick
    (Rooms.state) seats it again. The rooms' clock is injected: no sleeping."""
    from model.classroom.class_play import ClassPlay
    from model.classroom.rooms import Rooms

    now = [0.0]
    rooms = Rooms(clock=lambda: now[0], follower_stale_s=30.0)
    play = ClassPlay(rooms)
    code = rooms.open("teacher", "10.0.0.1")
    rooms.join("late", code, "10.0.0.2")
    rooms.join("here", code, "10.0.0.3")
    play.open_round("teacher", DrawRound.open(LOGITS, [1, 2, 3], SamplingConfig()), _Tokens())
    toks = [GameToken(1, " Paris", "␣Paris", 0.5, 1.0)]
    play.start_game("teacher", Game("The capital of France is", [9, 9, 1], 2, toks, ["A", "A Paris"]))
    now[0] = 31.0  # "late" has not ticked for 31 s; "here" ticks
    rooms.state("here", "10.0.0.3")
    assert rooms.wall("teacher") == (code, 1)
    for vote in (lambda: play.draw("late", 0.5), lambda: play.guess("late", "Paris")):
        with pytest.raises(SessionError) as err:
            vote()
        assert err.value.key == "room_seat_lapsed" and err.value.params == {"seconds": 30}
    play.draw("here", 0.5)
    play.guess("here", "Paris")
    _, rounds, score, game = play.wall("teacher")
    assert rounds[-1]["n"] == 1 and len(game.guesses[game.at]) == 1  # only the seated student counted
    rooms.state("late", "10.0.0.2")  # the page came back: its tick takes the seat again
    play.draw("late", 0.5)
    play.guess("late", "Paris")
    _, rounds, _, game = play.wall("teacher")
    assert rounds[-1]["n"] == 2 and len(game.guesses[game.at]) == 2
    rooms.close("teacher")
    with pytest.raises(SessionError) as err:  # a closed room is still told as closed
        play.draw("late", 0.5)
    assert err.value.key == "room_closed"
