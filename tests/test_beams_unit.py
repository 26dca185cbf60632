"""Beam search without the real model: agreement with transformers' generate on tiny random models (one end token and
two: K = 2B and 3B, beams that end early), the bounds refused by name in both languages, and the figures."""
import itertools

import plotly.graph_objects as go
import pytest
import torch

from model.strategies.beams import (BeamCandidate, BeamStep, Hypothesis, TextSummary, beam_search, check_bounds)
from model.errors import SessionError
from viz.beams import beam_texts_html, beam_tree_chart, path_of

pytestmark = pytest.mark.unit


def _tokenizer():
    from transformers import AutoTokenizer

    from model.decoding.loading import cache_root

    folder = cache_root() / "smollm2-v1"
    if not (folder / "tokenizer.json").exists():
        pytest.skip("the SmolLM2 tokenizer is not converted yet (the first model load does it)")
    return AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def tokenizer():
    return _tokenizer()


def tiny(tokenizer, eos, seed):
    """A random 2-layer Llama over 64 tokens, peaked enough (init 0.5) that no two beams tie within float error;
    with so few tokens the end token comes often, so beams finish at every step."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from model.decoding.loading import LoadedModel, model_info
    from model.decoding.tokens import TokenDisplay

    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, eos_token_id=eos, bos_token_id=1,
                         pad_token_id=0, initializer_range=0.5, attn_implementation="eager")
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval().requires_grad_(False)
    model.generation_config.eos_token_id, model.generation_config.pad_token_id = eos, 0
    return LoadedModel("tiny", model, tokenizer, model_info("tiny", config), TokenDisplay(tokenizer))


@pytest.mark.parametrize("eos", [2, [2, 5]])
def test_tiny_models_agree_with_generate(tokenizer, eos):
    ended_early = 0
    for seed in range(2):
        lm = tiny(tokenizer, eos, seed)
        for width, penalty, new_tokens, prompt in itertools.product((2, 3, 8), (1.0, 0.0, -1.5, 2.0), (6, 12),
                                                                     ([1, 7, 9], [1, 30, 31, 40, 3])):
            run = beam_search(lm, prompt, width, penalty, new_tokens)
            assert run.eos_ids == ([eos] if isinstance(eos, int) else eos)
            assert all(len(s.candidates) == (2 if isinstance(eos, int) else 3) * width for s in run.steps)
            out = lm.model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                                    num_beams=width, num_return_sequences=width, do_sample=False,
                                    length_penalty=penalty, max_new_tokens=new_tokens, output_scores=True,
                                    return_dict_in_generate=True)
            lengths = (out.beam_indices != -1).sum(1).tolist()
            case = (eos, seed, width, penalty, new_tokens, prompt)
            assert [h.tokens for h in run.finished] == [
                out.sequences[i, len(prompt): len(prompt) + n].tolist() for i, n in enumerate(lengths)], case
            assert [h.score for h in run.finished] == pytest.approx(out.sequences_scores.tolist(), rel=1e-5, abs=1e-4), case
            ended_early += any(h.length < new_tokens for h in run.finished)
    assert ended_early > 0  # some beams ended on an end token: the finished list was exercised


@pytest.mark.parametrize("width,penalty,tokens,key", [
    (0, 1.0, 8, "beams_width_range"), (9, 1.0, 8, "beams_width_range"), (2.5, 1.0, 8, "beams_width_range"),
    (2, 1.0, 0, "beams_tokens_range"), (2, 1.0, 33, "beams_tokens_range"), (2, float("nan"), 8, "beams_penalty_range"),
    (2, 3.5, 8, "beams_penalty_range"), (2, "1", 8, "beams_penalty_range"), (True, 1.0, 8, "beams_width_range")])
def test_bounds_are_refused_by_name(width, penalty, tokens, key):
    with pytest.raises(SessionError) as err:
        check_bounds(width, penalty, tokens)
    assert err.value.key == key
    assert err.value.text("zh") != err.value.text("en") and err.value.text("zh").strip()


def test_bounds_at_the_edges_are_taken():
    assert check_bounds(8, -3, 32) == (8, -3.0, 32)
    assert check_bounds(1, 3.0, 1) == (1, 3.0, 1)


def _search():
    """A hand-made search: B = 2, two steps; step 1 extends the prompt, step 2 the two kept beams."""
    def cand(rank, parent, token, logprob, score, fate, slot=None, ended=False):
        return BeamCandidate(rank, parent, token, logprob, score, ended, fate, slot, f"t{token}")

    s1 = BeamStep(1, [([], 0.0)], [cand(0, 0, 10, -0.5, -0.5, "kept", 0), cand(1, 0, 11, -1.0, -1.0, "kept", 1),
                                   cand(2, 0, 2, -2.0, -2.0, "pruned", ended=True), cand(3, 0, 12, -3.0, -3.0, "pruned")],
                  [])
    h = Hypothesis([11, 2], -1.2, -0.6, 2, 0)
    s2 = BeamStep(2, [([10], -0.5), ([11], -1.0)],
                  [cand(0, 1, 2, -0.2, -1.2, "finished", ended=True), cand(1, 0, 13, -0.9, -1.4, "kept", 0),
                   cand(2, 0, 14, -1.0, -1.5, "kept", 1), cand(3, 1, 15, -0.6, -1.6, "pruned")], [h])
    return [s1, s2], h


def test_tree_draws_each_fate_and_the_best_path():
    steps, best = _search()
    for lang in ("en", "zh"):
        spec = beam_tree_chart(steps, 2, 2, 1.0, lang, best=(best.step, best.rank))
        go.Figure(spec)  # validates every key
        points = {tr["meta"]["fate"]: list(zip(tr["x"], tr["y"])) for tr in spec["data"]
                  if isinstance(tr.get("meta"), dict) and "fate" in tr["meta"]}
        assert points == {"kept": [(1, 0), (1, 1), (2, 1), (2, 2)], "finished": [(2, 0)],
                          "pruned": [(1, 2), (1, 3), (2, 3)]}
        path = next(tr for tr in spec["data"] if tr.get("meta") == {"role": "best"})
        assert list(zip(path["x"], path["y"])) == [(0, 0), (1, 1), (2, 0)]  # prompt -> t11 (slot 1) -> end
    assert "束搜索" in beam_tree_chart(steps, 1, 2, 1.0, "zh")["layout"]["title"]["text"]
    one = beam_tree_chart(steps, 1, 2, 1.0, "en")  # the first step only: the tree grows with Next
    assert max(x for tr in one["data"] for x in tr["x"] if x is not None) == 1


def test_path_of_follows_parents():
    steps, _ = _search()
    assert path_of(steps, 2, 3) == [(0, 0), (1, 1), (2, 3)]  # t15 extends slot 1, which is rank 1 of step 1
    assert path_of(steps, 2, 2) == [(0, 0), (1, 0), (2, 2)]


def test_texts_table_sets_beams_beside_greedy_and_sampled():
    rows = [TextSummary("beam", 1, [5, 6, 5, 6], -2.0, -0.5, [False, False, True, True], ["a", "b", "a", "b"], "abab"),
            TextSummary("greedy", 0, [5, 7], -1.5, None, [False, False], ["a", "<c>"], "a<c>"),
            TextSummary("sampled", 0, [8, 9, 10], -6.0, None, [False] * 3, ["x", "y", "z"], "xyz")]
    for lang, words in (("en", ("beam 1", "greedy (B = 1)", "sampled (your settings)")),
                        ("zh", ("束 1", "贪心（B = 1）", "采样（你的设置）"))):
        page = beam_texts_html(rows, lang)
        assert all(w in page for w in words)
        assert page.count('class="tbt-beam-rep"') == 2  # the two repeated tokens are boxed
        assert "&lt;c&gt;" in page and "<c>" not in page  # token text is escaped
        assert "2 / 4" in page and "-2.00" in page and "-0.500" in page
