"""Constrained decoding on the real model: the grammar stage against transformers' PrefixConstrainedLogitsProcessor,
the greedy text against generate(prefix_allowed_tokens_fn=...), the regex masks against the `regex` package's
partial matching over the whole vocabulary, every mask where the grammar forces bytes against an acceptor written out,
and the stage a no-op without a constraint."""
import math

import pytest
import regex
import torch
from transformers.generation.logits_process import PrefixConstrainedLogitsProcessor

from model.strategies.constrain import (MAX_NEW_TOKENS, MAX_REGEX_CHARS, MAX_WORDS, Constraint, Grammar, allowed_words,
                             constrained_decode, prefix_allowed_tokens_fn, words_regex)
from model.errors import SessionError
from model.decoding.records import SamplingConfig
from model.decoding.sampling import derive
from model.decoding.tokens import token_bytes

pytestmark = pytest.mark.model

QUESTION = "Is the sky blue? Answer yes or no."
JSON_SCHEMA = ('{"type": "object", "properties": {"colour": {"type": "string"}, "sure": {"type": "boolean"}}, '
               '"required": ["colour", "sure"], "additionalProperties": false}')
CONSTRAINTS = [Constraint("words", "yes\nno\nmaybe"), Constraint("regex", r"[0-9]{1,2} (apples|pears)"),
               Constraint("json", JSON_SCHEMA)]


def chat_ids(lm, text):
    ids = lm.tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


@pytest.fixture(scope="module")
def greedy_runs(lm):
    prompt = chat_ids(lm, QUESTION)
    return prompt, [constrained_decode(lm, prompt, c, SamplingConfig(temperature=0), 24) for c in CONSTRAINTS]


def test_greedy_constrained_text_is_generate_with_prefix_allowed_tokens_fn(lm, greedy_runs):
    prompt, runs = greedy_runs
    for constraint, run in zip(CONSTRAINTS, runs):
        fn = prefix_allowed_tokens_fn(lm, constraint, len(prompt))
        out = lm.model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=24, top_k=None, top_p=None,
                                prefix_allowed_tokens_fn=fn, pad_token_id=lm.tokenizer.eos_token_id)
        assert run.generated == out[0, len(prompt):].tolist(), constraint.kind
    words, numbers, shaped = runs
    assert words.stopped == "eos" and words.text.strip() in {"yes", "no", "maybe"}
    assert regex.fullmatch(r"[0-9]{1,2} (apples|pears)", numbers.text)
    import json
    value = json.loads(shaped.text)
    assert set(value) == {"colour", "sure"} and isinstance(value["sure"], bool)


def test_grammar_stage_keeps_what_prefix_constrained_logits_processor_keeps(lm, greedy_runs):
    """At every step: the tokens the grammar stage leaves are the processor's finite scores, given the same allowed
    ids; the mass it removed is the T = 1 probability of the rest; the chosen token is allowed."""
    prompt, runs = greedy_runs
    checked = 0
    for constraint, run in zip(CONSTRAINTS, runs):
        processor = PrefixConstrainedLogitsProcessor(prefix_allowed_tokens_fn(lm, constraint, len(prompt)), num_beams=1)
        ids = list(prompt)
        for step, token in zip(run.steps, run.generated):
            logits = lm.model(torch.tensor([ids])).logits[0, -1]  # a full forward pass: no cache shared with the run
            reference = processor(torch.tensor([ids]), logits.reshape(1, -1).clone())[0]
            kept = torch.isfinite(reference)
            dist = derive(logits, torch.tensor([ids]), SamplingConfig(temperature=0), len(ids), lm.tokens,
                          allowed=kept)
            summary = next(s for s in dist.stages if s.name == "grammar")
            assert summary.kept == int(kept.sum()) == step.allowed
            assert summary.removed == lm.info.vocab - step.allowed
            assert step.removed_mass == pytest.approx(float(1 - torch.softmax(logits.double(), -1)[kept].sum()), abs=1e-5)  # cached vs full pass
            for c in step.distribution.candidates:
                assert (c.fate == "grammar") == (not bool(kept[c.token.id])), (constraint.kind, c)
            assert bool(kept[token]) and dist.chosen.id == token
            ids.append(token)
            checked += 1
    assert checked >= 8


def test_regex_mask_is_partial_matching_over_the_vocabulary(lm):
    """llguidance's mask against an independent reference: token t is allowed iff the text with t is a prefix of
    some match (the `regex` package's partial fullmatch); the end of text iff the text already matches."""
    pattern = r"[0-9]{1,2} (apples|pears)"
    grammar = Grammar(lm, Constraint("regex", pattern))
    tok, eos = lm.tokenizer, lm.tokenizer.eos_token_id
    special = set(tok.all_special_ids) | {i for i in tok.added_tokens_decoder}
    pieces = tok.batch_decode([[i] for i in range(lm.info.vocab)])
    text, steps = "", tok("12 pears", add_special_tokens=False)["input_ids"]  # 1, 2, ␣pears
    assert len(steps) >= 3
    for token in steps:
        mask = grammar.allowed()
        expected = torch.zeros(lm.info.vocab, dtype=torch.bool)
        for i, piece in enumerate(pieces):
            if i not in special:
                expected[i] = regex.fullmatch(pattern, text + piece, partial=True) is not None
        expected[eos] = regex.fullmatch(pattern, text) is not None
        assert torch.equal(mask, expected), (text, (mask != expected).nonzero().flatten().tolist()[:10])
        grammar.consume(token)
        text += tok.decode([token])
    assert regex.fullmatch(pattern, text) and grammar.allowed()[eos]


def viable_mask(lm, text: bytes, is_viable, complete: bool) -> torch.Tensor:
    """The hand-written acceptor's mask: token t (not special) is allowed iff is_viable(text + t's bytes); the end
    of text iff the text is `complete`."""
    special = set(lm.tokenizer.all_special_ids) | set(lm.tokenizer.added_tokens_decoder)
    expected = torch.zeros(lm.info.vocab, dtype=torch.bool)
    for i in range(lm.info.vocab):
        if i not in special:
            expected[i] = is_viable(text + token_bytes(lm.tokens.info(i)))
    expected[lm.tokenizer.eos_token_id] = complete
    return expected


def one_token(lm, piece: str) -> int:
    (token,) = lm.tokenizer(piece, add_special_tokens=False)["input_ids"]
    return token


def test_the_mask_is_every_viable_token_where_the_grammar_forces_bytes(lm):
    """Issue 32, item 7: where the grammar forces the next bytes (after " may" in a word list only "be" can follow),
    llguidance allowed only the first token of their canonical tokenization ("be", not "b"), so the page drew "b"
    as cut by the grammar. The stage says it removes the tokens that cannot continue a valid text: checked here
    against an acceptor written out, in forced states and free ones."""
    words = ["maybe", "blue", "no"]
    texts = [prefix + w.encode() for w in words for prefix in (b"", b" ")]  # words_regex: an optional space first
    for path in ([], [" may"], [" may", "b"], [" b"], [" b", "l"], ["no"], ["may"]):
        grammar, text = Grammar(lm, Constraint("words", "\n".join(words))), b""
        for piece in path:
            grammar.consume(one_token(lm, piece))
            text += piece.encode()
        expected = viable_mask(lm, text, lambda t: any(w.startswith(t) for w in texts), text in texts)
        mask = grammar.allowed()
        assert torch.equal(mask, expected), (path, [lm.tokens.info(i).display
                                                    for i in (mask != expected).nonzero().flatten().tolist()[:10]])
    grammar = Grammar(lm, Constraint("words", "\n".join(words)))
    grammar.consume(one_token(lm, " may"))
    assert grammar.allowed()[one_token(lm, "b")] and grammar.allowed()[one_token(lm, "be")]
    # a regular expression's forced bytes: after "12 p" only "ears" can follow
    pattern = r"[0-9]{1,2} (apples|pears)"
    grammar = Grammar(lm, Constraint("regex", pattern))
    for piece in ("1", "2", " p"):
        grammar.consume(one_token(lm, piece))
    expected = viable_mask(lm, b"12 p", lambda t: b"12 pears".startswith(t), False)
    assert torch.equal(grammar.allowed(), expected)
    # a JSON object's first bytes are forced ('{"colour":"', its keys in order, no whitespace): "{" as well as '{"'
    grammar = Grammar(lm, Constraint("json", JSON_SCHEMA))
    expected = viable_mask(lm, b"", lambda t: b'{"colour":"'.startswith(t), False)
    assert torch.equal(grammar.allowed(), expected) and expected[one_token(lm, "{")] and int(expected.sum()) >= 2


def test_no_constraint_is_no_stage(lm):
    """allowed=None: the same record as before the stage existed; allowing everything: nothing cut by it."""
    ids = list(lm.tokenizer("The capital of France is")["input_ids"])
    logits = lm.model(torch.tensor([ids])).logits[0, -1]
    cfg = SamplingConfig(temperature=0.8, top_k=20, top_p=0.9, seed=3)
    plain = derive(logits, torch.tensor([ids]), cfg, len(ids), lm.tokens)
    assert [s.name for s in plain.stages] == list(cfg.stages)
    assert all("grammar" not in c.stage_probs and c.fate != "grammar" for c in plain.candidates)
    everything = derive(logits, torch.tensor([ids]), cfg, len(ids), lm.tokens,
                        allowed=torch.ones(lm.info.vocab, dtype=torch.bool))
    assert everything.chosen == plain.chosen and [c.fate for c in everything.candidates] == [c.fate for c in plain.candidates]
    assert [c.final_prob for c in everything.candidates] == [c.final_prob for c in plain.candidates]


def test_sampled_run_draws_only_allowed_tokens_with_the_plain_u(lm):
    prompt = chat_ids(lm, "Pick a number.")
    cfg = SamplingConfig(temperature=1.2, top_p=0.95, seed=11)
    run = constrained_decode(lm, prompt, Constraint("regex", r"[0-9]{1,3}"), cfg, 8)
    assert regex.fullmatch(r"[0-9]{1,3}", run.text)
    from model.decoding.sampling import draw_u
    for k, step in enumerate(run.steps):
        assert step.distribution.u == draw_u(11, len(prompt) + k)
        assert 0 < step.removed_mass <= 1 and math.isfinite(step.distribution.chosen_logprob_t1)


def test_refusals_are_bounded_and_plain(lm):
    with pytest.raises(SessionError) as err:
        Constraint("regex", "a" * (MAX_REGEX_CHARS + 1)).grammar()
    assert err.value.key == "constrain_regex_too_long"
    with pytest.raises(SessionError) as err:
        Grammar(lm, Constraint("regex", "(ab"))
    assert err.value.key == "constrain_invalid" and "unclosed group" in err.value.text("en")
    for kind, text, key in [("json", "[1, 2]", "constrain_schema_not_object"), ("json", "{", "constrain_schema_not_json"),
                            ("words", " , \n", "constrain_empty"), ("dance", "x", "constrain_kind_unknown"),
                            ("words", ",".join(f"w{i}" for i in range(MAX_WORDS + 1)), "constrain_too_many_words")]:
        with pytest.raises(SessionError) as err:
            Constraint(kind, text).grammar()
        assert err.value.key == key and err.value.text("zh")
    with pytest.raises(SessionError) as err:
        constrained_decode(lm, [1, 2], Constraint("regex", "a"), SamplingConfig(), MAX_NEW_TOKENS + 1)
    assert err.value.key == "constrain_tokens_range"
    assert allowed_words("yes, no\nyes\n maybe ") == ["yes", "no", "maybe"]
    assert words_regex(["a.b", "c|d", "e f"]) == r" ?(a\.b|c\|d|e f)"


@pytest.mark.parametrize("kind", ["regex", "json"])
def test_the_tabs_examples_end_within_their_token_budget(lm, kind):
    """Issue 33, item 8: the Constraints tab's JSON example stopped unfinished (a 60-character reason, 24 tokens).
    Each example, on the page's first text at T = 1, ends (eos) within the budget the kind sets, for several seeds;
    what it wrote is read back by json / the regex package, not by the grammar that wrote it."""
    import json

    from ui.views.constraints import EXAMPLE_TOKENS, EXAMPLES

    ids = lm.tokenizer("The capital of France is")["input_ids"]
    for seed in range(4):
        run = constrained_decode(lm, ids, Constraint(kind, EXAMPLES[kind]), SamplingConfig(seed=seed),
                                 EXAMPLE_TOKENS[kind])
        assert run.stopped == "eos" and len(run.generated) <= EXAMPLE_TOKENS[kind], (seed, run.text)
        if kind == "json":
            said = json.loads(run.text)
            assert said["answer"] in ("yes", "no") and regex.fullmatch(r"[a-z ]{1,16}", said["reason"]), run.text
        else:
            assert regex.fullmatch(EXAMPLES["regex"], run.text), run.text
