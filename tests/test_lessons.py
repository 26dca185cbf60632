"""Lessons: the built-in files check and agree with the model and what-it-teaches.md; a bad file is refused naming its
field; every step plays through the API in both languages; a predict step sends no candidates before the guess,
and its reveal gives the engine's own probability of the guess."""
import copy
import html
import json
import re

import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from model.classroom.lessons import KINDS, LessonError, check_lesson, read_lesson
from model.classroom.figures import fill, step_figures
from model.classroom.quiz import count_choices, predict_cache_bytes, size_choices
from model.decoding.core import computation
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from model.serving.sessions import SessionStore
from ui.views import VIEWS
from ui.strings import t
from ui.views.lesson import reveal_html
from lesson_truth import started
from named import named
from served import DEFAULTS, served

TABS = tuple(View.tab for View in VIEWS)
PAGE = {name: value for name, value in DEFAULTS.items() if name != "lang"}  # (each call gives its language)
# what a step's answer through the API holds, by name (tests/named.py): the page's elem_ids
PROGRESS, STEP_TEXT, QUESTION, REVEAL, PLOT, PROMPT = ("tbt-lesson-progress", "tbt-lesson-step", "tbt-lesson-question",
                                                       "tbt-lesson-reveal", "tbt-lesson-plot", "tbt-prompt")
TEXT, FIGURE, FORCE = "tbt-text", "tbt-figdata", "tbt-force"
SETTINGS = {"temperature": "tbt-temperature", "top_k": "tbt-top-k", "top_p": "tbt-top-p", "min_p": "tbt-min-p",
            "repetition_penalty": "tbt-repetition-penalty", "order": "tbt-order", "seed": "tbt-seed"}


@pytest.fixture(scope="module")
def server(lm):
    with served(lm, SessionStore(max_sessions=8)) as (page, url, _):
        yield page, url


@pytest.fixture
def client(server):
    c = Client(server[1], verbose=False)
    yield c
    server[0].store.drop(c.session_hash)


def call(client, api, *leading, lang="en") -> dict:
    """The result of an API call, by the name of each output."""
    return named(client, api, client.predict(*leading, **PAGE, lang=lang, api_name=api))


def first_guess(predict, lang="en") -> str:
    return {"next_token": lambda: predict["choices"][lang][0], "kept_by_top_p": lambda: "yes",
            "order": lambda: "same", "step_time": lambda: "grows", "kept_count": lambda: "1",
            "beam_vs_sample": lambda: "beam", "prefill_vs_decode": lambda: "prefill",
            "top_attribution": lambda: predict["choices"][lang][0]}.get(predict["kind"], lambda: None)() or \
        str(size_choices(predict, INFO)[0])


class INFO:  # SmolLM2-135M's shape (docs/what-it-teaches.md: Grouped-query attention), for the cache questions' choices
    layers, kv_heads, head_dim = 30, 3, 64


# ---- the built-in lessons ---------------------------------------------------------------------------------
@pytest.mark.unit
def test_at_least_seven_builtin_lessons_check_against_the_page(lessons):
    assert len(lessons) >= 7
    kinds = {s["predict"]["kind"] for lesson in lessons.values() for s in lesson["steps"] if s["predict"]}
    assert kinds == set(KINDS)  # every kind of question is asked somewhere
    for lesson in lessons.values():
        for step in lesson["steps"]:
            assert step["view"] in TABS
            for lang in ("en", "zh"):
                assert step["text"][lang].strip() and lesson["title"][lang].strip()
            assert re.search(r"[\u4e00-\u9fff]", step["text"]["zh"]), step["text"]["zh"]  # Chinese, not a copy


def predict_steps(lessons, kind):
    return [s for lesson in lessons.values() for s in lesson["steps"] if s["predict"] and s["predict"]["kind"] == kind]


MODELS = {"en": "smollm2", "zh": "gemma3-270m"}  # the model each language's page uses (issues 21 and 23)
ON_SMOLLM2 = {"medusa"}  # lessons whose views need what ships for SmolLM2 only (Medusa's heads): both languages on it


@pytest.mark.unit
def test_every_lesson_names_the_model_each_language_uses(lessons):
    from model.classroom.lessons import lesson_model

    for lesson in lessons.values():
        if lesson["id"] in ON_SMOLLM2:
            assert lesson["models"] == {"en": "smollm2", "zh": "smollm2"}, lesson["id"]
            assert lesson_model(lesson, "zh", MODELS.values()) == "smollm2"
            continue
        assert lesson["models"] == MODELS, lesson["id"]
        assert [lesson_model(lesson, lang, MODELS.values()) for lang in MODELS] == list(MODELS.values())
        assert lesson_model(lesson, "zh", ["smollm2"]) is None  # not offered here: the page's own model


def forward_top(lm, ids) -> int:
    """The most likely next token by one plain forward pass over the whole text (no cache, no session)."""
    import torch

    with torch.no_grad():
        return int(lm.model(torch.tensor([ids])).logits[0, -1].argmax())


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_reveal_is_recomputed_on_the_model_of_its_language(lesson_models, lessons, lang):
    """Each question, asked in `lang` on that language's model: its choices are single tokens, the right answer is
    among them (checked against a plain forward pass), and the reveal's numbers are the engine's."""
    from model.classroom.quiz import reveal_record

    from lesson_truth import lesson_lm

    for lesson in lessons.values():
        lm = lesson_lm(lesson, lang, lesson_models)
        for i, step in enumerate(lesson["steps"]):
            predict, where = step["predict"], (lesson["id"], i, lang)
            if predict is None:
                continue
            session, cfg = started(lm, step, lang), SamplingConfig(**step["settings"])
            answer = reveal_record(session, step, None, cfg, lang)
            if predict["kind"] == "next_token":
                ids = [lm.tokenizer.encode(c, add_special_tokens=False) for c in predict["choices"][lang]]
                assert all(len(i) == 1 for i in ids), (where, predict["choices"][lang], ids)
                assert answer["token_id"] == forward_top(lm, session.ids), where
                assert [answer["token_id"]] in ids, (where, answer["top"], answer["top_prob"])
            elif predict["kind"] == "kept_by_top_p":
                token = lm.tokenizer.encode(predict["token"][lang], add_special_tokens=False)
                assert len(token) == 1 and answer["token_id"] == token[0], where
                ranked = sorted(session.preview(SamplingConfig()).candidates, key=lambda c: c.rank)
                before = 0.0
                for c in ranked:  # an independent nucleus: add until the total reaches p
                    if c.token.id == token[0]:
                        break
                    before += c.prob_t1
                assert answer["kept"] == (before < step["settings"]["top_p"]), where
                said = fill(predict["question"][lang], step_figures(step, lm.info, lm.name, session, lang))
                assert f" {answer['rank']} " in said, (where, answer["rank"], said)  # the question names its rank
            elif predict["kind"] == "order":
                assert answer["last"] > answer["first"], where  # T < 1 sharpens first: temperature last keeps more
                assert answer["last"] == kept_by_transformers(lm, session.ids, step["settings"], temperature_last=True)
                assert answer["first"] == kept_by_transformers(lm, session.ids, step["settings"]), where
            elif predict["kind"] == "step_time":
                check_step_time(answer, predict)
            elif predict["kind"] == "kept_count":
                kept = kept_by_transformers(lm, session.ids, step["settings"])
                assert answer["kept"] == kept and answer["answer"] == str(kept), (where, answer["kept"], kept)
                assert answer["myth"] == round(step["settings"]["top_p"] * lm.info.vocab) != kept, where
                assert {kept, answer["myth"]} <= set(count_choices(session, cfg)), where
                assert len(answer["nucleus"]) == kept, where  # the whole kept set is listed (the lesson's prompts)
                if answer["total"] is not None:  # the smallest set reaching p: its total does, one token fewer does not
                    _, last_prob, total = answer["nucleus"][-1]
                    assert answer["total"] == total >= step["settings"]["top_p"] > total - last_prob, where
            elif predict["kind"] == "beam_vs_sample":
                check_beam_vs_sample(lm, session, answer)
            elif predict["kind"] == "prefill_vs_decode":
                check_prefill_vs_decode(answer, predict)
            elif predict["kind"] == "top_attribution":
                check_top_attribution(lm, session, answer, predict, lang)
            else:
                info = lm.info
                assert answer["bytes"] == 2 * answer["layers"] * answer["kv_heads"] * answer["head_dim"] * \
                    predict["tokens"] * answer["bytes_per"], where
                if predict["model"] == "current":  # the question names the shape of the model it runs on
                    said = fill(predict["question"][lang], step_figures(step, info, lm.name, session, lang))
                    for n in (info.layers, info.kv_heads, info.head_dim, predict["tokens"]):
                        assert f"{n:,}" in said, (where, n)
            assert reveal_html(answer, lang).count('data-right="none"') == 1


def kept_by_transformers(lm, ids, settings, temperature_last=False) -> int:
    """Tokens left after transformers' own TemperatureLogitsWarper and TopPLogitsWarper, on the logits of one plain
    forward pass (no cache, no session); `temperature_last`: top-p on the T = 1 logits, then temperature."""
    import torch
    from transformers import TemperatureLogitsWarper, TopPLogitsWarper

    with torch.no_grad():
        scores = lm.model(torch.tensor([ids])).logits[:, -1].float()  # (1, vocab)
    warpers = [TopPLogitsWarper(settings["top_p"])]
    if settings.get("temperature", 1.0) != 1.0:
        temperature = TemperatureLogitsWarper(settings["temperature"])
        warpers = warpers + [temperature] if temperature_last else [temperature] + warpers
    for warp in warpers:
        scores = warp(torch.tensor([ids]), scores)
    return int(torch.isfinite(scores).sum())


def check_step_time(answer, predict):
    """A step_time reveal: the lengths the question measures, a least-squares line recomputed by numpy from the
    reveal's own times, and the verdict the stated rule gives (recomputed here, not read from the record)."""
    import numpy as np

    from model.classroom.myths import STEP_GROWTH, step_lengths

    assert answer["seq_len"] == step_lengths(predict["tokens"]) and answer["seq_len"][-1] == predict["tokens"]
    assert all(ms > 0 for ms in answer["cached_ms"]) and len(answer["cached_ms"]) == len(answer["seq_len"])
    slope, intercept = np.polyfit(answer["seq_len"], answer["cached_ms"], 1)
    assert answer["slope"] == pytest.approx(slope, rel=1e-6, abs=1e-9)
    assert answer["intercept"] == pytest.approx(intercept, rel=1e-6, abs=1e-6)
    short, long = answer["seq_len"][0], answer["seq_len"][-1]
    rise = (intercept + slope * long) / (intercept + slope * short) - 1
    (_, short_high), (long_low, _) = answer["cached_range"][0], answer["cached_range"][-1]
    apart = min(answer["runs"][0], answer["runs"][-1]) >= 3 and long_low > short_high
    expected = "grows" if rise >= STEP_GROWTH and apart else \
        "same" if rise < STEP_GROWTH and min(answer["runs"][0], answer["runs"][-1]) >= 3 else None
    assert answer["answer"] == expected, (answer["answer"], rise, apart, answer["runs"])


def check_prefill_vs_decode(answer, predict):
    """A prefill_vs_decode reveal: tokens per second from its own runs' times, and the verdict its stated rule gives
    (recomputed here: every run of one side faster than every run of the other, three runs each)."""
    tokens = predict["tokens"]
    assert answer["tokens"] == tokens and len(answer["prefill_runs"]) == len(answer["decode_runs"]) == 3
    assert answer["prefill_tps"] == pytest.approx(1000 * tokens / answer["prefill_ms"])
    assert answer["decode_tps"] == pytest.approx(1000 / answer["decode_ms"])
    expected = "prefill" if min(answer["prefill_runs"]) > max(answer["decode_runs"]) else \
        "decode" if min(answer["decode_runs"]) > max(answer["prefill_runs"]) else None
    assert answer["answer"] == expected, (answer["prefill_runs"], answer["decode_runs"])


def check_top_attribution(lm, session, answer, predict, lang):
    """A top_attribution reveal: the token explained is the step's last (a plain forward pass's argmax after the text
    before it, greedy), each choice one token of that text, the answer the choice of the largest integrated gradient
    and the sum within the completeness the page calls complete (tests/test_attribution.py checks Captum's numbers)."""
    context = session.ids[:-1]
    assert answer["position"] == len(context) and answer["target"] == lm.tokens.info(session.ids[-1]).display
    assert forward_top(lm, context) == session.ids[-1]
    for row, choice in zip(answer["choices"], predict["choices"][lang]):
        (token,) = lm.tokenizer.encode(choice, add_special_tokens=False)
        assert row["position"] is not None and context[row["position"]] == token, (choice, row)
    assert answer["answer"] == max(answer["choices"], key=lambda r: r["ig"])["text"]


def forward_logprob(lm, prompt, tokens) -> float:
    """log P of `tokens` after `prompt` at T = 1 from one plain forward pass (no chunks, no cache, no session)."""
    import torch

    with torch.no_grad():
        logits = lm.model(torch.tensor([list(prompt) + list(tokens)])).logits[0].float()
    rows = torch.log_softmax(logits[len(prompt) - 1:-1], dim=-1)
    return float(sum(rows[i, tok] for i, tok in enumerate(tokens)))


def check_beam_vs_sample(lm, session, answer):
    """Both texts' log P against a plain forward pass; beam search's against its own running total; the right
    answer is the higher of the two; the repeats are model.decoding.branches' count over prompt and text."""
    from model.decoding.branches import repeated_ngrams

    prompt = session.ids[: session.prompt_len]
    logp = {name: forward_logprob(lm, prompt, text["tokens"]) for name, text in answer["texts"].items()}
    for name, text in answer["texts"].items():
        assert text["logprob"] == pytest.approx(logp[name], abs=2e-3), (name, text["logprob"], logp[name])
        assert text["text"] == lm.tokenizer.decode(text["tokens"])
        stretches = repeated_ngrams(prompt + text["tokens"], len(prompt))
        assert text["ngrams"] == len(stretches)
        assert text["repeated"] == len({i for r in stretches for i in range(r.start, r.end)})
        assert len(text["tokens"]) <= answer["new_tokens"]
    assert answer["answer"] == ("same" if answer["texts"]["beam"]["tokens"] == answer["texts"]["sampled"]["tokens"]
                                else max(logp, key=logp.get))


@pytest.mark.model
def test_the_forced_mistake_carries_on_in_both_languages(lesson_models, lessons):
    """Lesson 02's exposure-bias step: after the mistake the model continues from it (its top token follows the
    mistaken one), and the token the mistake skipped is far below, on each language's model."""
    step = lessons["training-vs-generation"]["steps"][1]
    for lang, (skipped, follows) in {"en": (" Wednesday", " Friday"), "zh": ("六", "八")}.items():
        lm = lesson_models[lang]
        session = started(lm, step, lang)
        dist = session.preview(SamplingConfig())
        top = min(dist.candidates, key=lambda c: c.rank)
        assert top.token.id == lm.tokenizer.encode(follows, add_special_tokens=False)[0], (lang, top.token.display)
        gone = lm.tokenizer.encode(skipped, add_special_tokens=False)[0]
        fate = session.preview(SamplingConfig(), force_token=gone).chosen_candidate
        assert fate.prob_t1 < top.prob_t1 / 10, (lang, fate.prob_t1, top.prob_t1)


@pytest.mark.model
def test_the_subword_lesson_compares_the_two_tokenizers(lesson_models, lessons):
    """Lesson 07 says how many tokens each model spends on the same Chinese text: counted by both tokenizers."""
    steps = lessons["subwords"]["steps"]
    count = {lang: {text: len(lesson_models[lang].tokenizer.encode(text, add_special_tokens=False))
                    for text in ("我喜欢猫", "从前有一座山，")} for lang in lesson_models}
    assert count["en"]["我喜欢猫"] > 2 * count["zh"]["我喜欢猫"]  # about three byte tokens a character against one
    for lang in ("en", "zh"):  # each language's text says the count of its own model, filled in by the app
        lm = lesson_models[lang]
        for step, text in ((steps[1], "我喜欢猫"), (steps[2], "从前有一座山，")):
            said = fill(step["text"][lang], step_figures(step, lm.info, lm.name, started(lm, step, lang), lang))
            assert f" {count[lang][text]} " in said, (lang, text, said)
    assert "E7 8C AB" in steps[1]["text"]["en"] and "猫".encode() == bytes([0xE7, 0x8C, 0xAB])
    split = {lang: len(lesson_models[lang].tokenizer.encode(" unbelievable", add_special_tokens=False))
             for lang in lesson_models}
    assert split == {"en": 2, "zh": 1}  # what step 1 says of each tokenizer


@pytest.mark.unit
def test_cache_questions_agree_with_facts(lessons):
    answers = {(s["predict"]["model"], s["predict"]["tokens"], s["predict"]["dtype"]): predict_cache_bytes(s["predict"], INFO)
               for s in predict_steps(lessons, "cache_size")}
    assert answers[("Llama-2-7B", 2048, "float16")] == 1_073_741_824 == 2**30  # 1 GiB exactly
    assert answers[("Llama-3-8B", 8192, "float16")] == 2**30
    assert answers[("current", 100, "float32")] == 100 * 46_080  # 11,520 values per token x 4 bytes
    for step in predict_steps(lessons, "cache_size"):
        choices = size_choices(step["predict"], INFO)
        assert predict_cache_bytes(step["predict"], INFO) in choices and len(set(choices)) == 4
        if "myth_factor" in step["predict"]:  # the wrong answer the lesson tests is offered beside the right one
            assert int(predict_cache_bytes(step["predict"], INFO) * step["predict"]["myth_factor"]) in choices
    myth = next(s["predict"] for s in predict_steps(lessons, "cache_size") if "myth_factor" in s["predict"])
    assert (myth["model"], myth["tokens"], myth["dtype"]) == ("Llama-2-7B", 2048, "float16")
    # 2 x 32 layers x 32 KV heads x 128 x 2,048 tokens x 2 bytes: exactly 1 GiB, and the myth's "about 2 GB" as 2 GiB
    assert size_choices(myth, INFO) == [2**28, 2**30, 2**31, 2**32] and 2 * 32 * 32 * 128 * 2048 * 2 == 1_073_741_824


@pytest.mark.model
def test_the_subword_lesson_shows_a_chinese_character_as_several_byte_tokens(lm, lessons):
    step = next(s for s in lessons["subwords"]["steps"] if "猫" in s["prompt"]["en"])
    session = started(lm, step)
    pieces = [tok.display for tok in session.prefill.tokens]
    cat = lm.tokenizer.encode("猫", add_special_tokens=False)
    assert len(cat) == 3 and session.ids[-3:] == cat  # E7 8C AB: three byte tokens, as the lesson says
    assert "猫" not in "".join(pieces[-3:])  # no one of them is the character on its own
    assert "E7 8C AB" in step["text"]["en"] and "猫".encode() == bytes([0xE7, 0x8C, 0xAB])
    assert [tok.display for tok in session.prefill.tokens][-3:] == [lm.tokens.info(i).display for i in cat]


# ---- malformed files ---------------------------------------------------------------------------------------
GOOD = {"id": "mine", "title": {"en": "Mine", "zh": "我的"}, "steps": [
    {"prompt": "The capital of France is", "view": "candidates", "text": {"en": "Look.", "zh": "看。"},
     "predict": {"kind": "next_token", "question": {"en": "Which?", "zh": "哪个？"}, "choices": [" Paris", " the"]}}]}


def broken(edit):
    lesson = copy.deepcopy(GOOD)
    edit(lesson)
    return lesson


BAD = [
    (lambda d: d["steps"][0]["predict"].update(kind="guess"), "steps[0].predict.kind", "next_token, kept_by_top_p"),
    (lambda d: d["steps"][0].update(view="nowhere"), "steps[0].view", "candidates"),
    (lambda d: d["steps"][0]["text"].pop("zh"), "steps[0].text.zh", None),
    (lambda d: d.pop("title"), "title", None),
    (lambda d: d["steps"][0].update(settings={"top_p": 1.5}), "steps[0].settings", "top_p"),
    (lambda d: d["steps"][0].update(settings={"temperature": "hot"}), "steps[0].settings.temperature", None),
    (lambda d: d["steps"][0].update(colour="red"), "steps[0].colour", None),
    (lambda d: d["steps"][0]["predict"].update(choices=[" Paris"]), "steps[0].predict.choices", None),
    (lambda d: d["steps"][0].update(generate=-1), "steps[0].generate", None),
    (lambda d: d.update(steps=[]), "steps", None),
    (lambda d: d["steps"].append({"prompt": "x", "view": "kv", "text": {"en": "a", "zh": "b"},
                                  "predict": {"kind": "cache_size", "question": {"en": "?", "zh": "？"},
                                              "model": "GPT-9", "tokens": 10}}), "steps[1].predict.model", "Llama-2-7B"),
    (lambda d: d.update(id="Has Spaces"), "id", None),
    (lambda d: d["steps"][0].update(predict={"kind": "step_time", "question": {"en": "?", "zh": "？"}, "tokens": 4096}),
     "steps[0].predict.tokens", "512"),
    (lambda d: d["steps"][0].update(predict={"kind": "step_time", "question": {"en": "?", "zh": "？"}, "token": " a"}),
     "steps[0].predict.token", "tokens"),
    (lambda d: d["steps"][0].update(predict={"kind": "kept_count", "question": {"en": "?", "zh": "？"}, "tokens": 5}),
     "steps[0].predict.tokens", None),
    (lambda d: d["steps"][0].update(predict={"kind": "beam_vs_sample", "question": {"en": "?", "zh": "？"}, "width": 1}),
     "steps[0].predict.width", "8"),
    (lambda d: d["steps"][0].update(predict={"kind": "beam_vs_sample", "question": {"en": "?", "zh": "？"},
                                             "tokens": 33}), "steps[0].predict.tokens", "32"),
    (lambda d: d["steps"][0].update(predict={"kind": "cache_size", "question": {"en": "?", "zh": "？"},
                                             "model": "Llama-2-7B", "tokens": 2048, "myth_factor": 1}),
     "steps[0].predict.myth_factor", None),
    (lambda d: d["steps"][0].update(predict={"kind": "cache_size", "question": {"en": "?", "zh": "？"},
                                             "model": "Llama-2-7B", "tokens": 2048, "myth_factor": "2"}),
     "steps[0].predict.myth_factor", None),
]


@pytest.mark.unit
@pytest.mark.parametrize("edit, field, also", BAD)
def test_a_malformed_lesson_is_refused_naming_its_field(edit, field, also):
    check_lesson(GOOD, TABS)  # the unbroken one passes
    with pytest.raises(LessonError) as err:
        check_lesson(broken(edit), TABS)
    for lang in ("en", "zh"):
        text = err.value.text(lang)
        assert field + ":" in text or field + "：" in text, (lang, text)
        assert also is None or also in text
    assert re.search(r"[\u4e00-\u9fff]", err.value.text("zh"))


@pytest.mark.unit
def test_not_json_and_too_big_are_refused():
    with pytest.raises(LessonError, match="not JSON"):
        read_lesson(b"{nope", TABS)
    with pytest.raises(LessonError, match="at most"):
        read_lesson(b" " * 70_000, TABS)


# ---- through the API ---------------------------------------------------------------------------------------
@pytest.mark.server
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_step_of_every_lesson_plays_through_the_api(client, lessons, lesson_models, lang):
    """Every step of every lesson through the API: its texts filled with the figures of the language's model (read
    from its transformers config, not the app's), and each reveal checked against an independent computation (the
    cache formula, a full forward pass's softmax, transformers' TopPLogitsWarper and its processors in both orders)."""
    from lesson_truth import check_reveal, expected, independent_figures, lesson_lm, raw_lessons

    raw = raw_lessons()
    for lesson_id, lesson in lessons.items():
        lm = lesson_lm(lesson, lang, lesson_models)
        total = len(lesson["steps"])
        result = call(client, "/lesson_open", lesson_id, lang=lang)
        results = {}
        for i, step in enumerate(lesson["steps"]):
            if i:
                result = call(client, "/lesson_next", lang=lang)
            assert result[PROGRESS] == {"id": lesson_id, "step": i, "file": None, "results": results}
            ids = started(lm, step, lang).ids
            figures = independent_figures(lm, raw[lesson_id]["steps"][i], lang, ids)
            said = f"Step {i + 1} of {total}" if lang == "en" else f"第 {i + 1} 步，共 {total} 步"
            assert said in result[STEP_TEXT] and expected(step["text"][lang], figures) in result[STEP_TEXT]
            assert result[PROMPT] == step["prompt"][lang]
            assert result["tbt-model"] == lesson["models"][lang]  # the model the lesson names for this language
            cfg = SamplingConfig(**step["settings"])
            assert [result[knob] for knob in SETTINGS.values()] == [getattr(cfg, n) for n in SETTINGS]  # the sliders
            assert 'data-step="%d"' % step["generate"] in result[TEXT]  # the tokens written before it is shown
            if step["predict"]:
                question = expected(step["predict"]["question"][lang], figures)
                assert question in result[QUESTION] and result[PLOT]["visible"] is False
                guess = first_guess(step["predict"], lang)
                if step["predict"]["kind"] == "cache_size":  # the sizes offered, on the page's own model
                    offered = [value for _, value in result["tbt-lesson-guess"]["choices"]]
                    right = str(predict_cache_bytes(step["predict"], lm.info))
                    assert right in offered and len(set(offered)) == 4, (lesson_id, i, offered)
                    guess = offered[0]
                reveal = call(client, "/lesson_guess", guess, lang=lang)
                assert 'class="tbt-lesson-reveal"' in reveal[REVEAL]
                check_reveal(lm, raw[lesson_id]["steps"][i], lang, ids, guess, reveal[REVEAL])
                assert 'data-right="none"' not in reveal[REVEAL]  # a committed guess is always graded
                results[str(i)] = 'data-right="true"' in reveal[REVEAL]
                assert reveal[PROGRESS]["results"] == results
                if 'data-answer="none"' in reveal[REVEAL]:  # a step_time the machine was too busy to measure
                    assert ("太忙" if lang == "zh" else "too busy") in reveal[REVEAL]
                else:
                    assert ("猜" in reveal[REVEAL] or "KV" in reveal[REVEAL]) if lang == "zh" else \
                        ("Right" in reveal[REVEAL] or "Not" in reveal[REVEAL])
                result = reveal
            assert result[PLOT]["visible"] is (step["view"] not in ("session",)), (lesson_id, i)  # the step's chart
            if result[PLOT]["visible"]:
                assert json.loads(result[PLOT]["value"]["plot"])["data"], (lesson_id, i)  # drawn in the lesson
        back = call(client, "/lesson_back", lang=lang)
        assert back[PROGRESS]["step"] == max(total - 2, 0)


def probabilities_in(result) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?%", json.dumps(result, ensure_ascii=False))


@pytest.mark.server
def test_the_candidates_are_sent_only_after_the_guess(client, lessons, lm):
    lesson = lessons["one-token-at-a-time"]
    before = call(client, "/lesson_open", "one-token-at-a-time")
    sent = json.dumps(list(before.values()))  # what the page receives (the names are the test's own)
    assert "tbt-figdata" not in sent  # no chart carrier at all
    assert before[FORCE]["choices"] == [] and before[REVEAL] == "" and before[PLOT]["visible"] is False
    assert not probabilities_in([v for k, v in before.items() if k != TEXT]), probabilities_in(before)
    assert set(probabilities_in(before[TEXT])) <= {"1.00%", "10.0%", "50.0%", "90.0%"}  # only the chips' legend
    assert "data-prob" not in sent and "logit" not in sent

    reveal = call(client, "/lesson_guess", " London")
    prob = float(re.search(r'data-prob="([^"]+)"', reveal[REVEAL]).group(1))
    token_id = int(re.search(r'data-token-id="(\d+)"', reveal[REVEAL]).group(1))
    step = lesson["steps"][0]
    session = started(lm, step)  # an independent session on the same prompt
    engine = session.preview(SamplingConfig(**step["settings"]), force_token=token_id).chosen_candidate
    assert token_id == lm.tokenizer.encode(" London", add_special_tokens=False)[0]
    assert prob == pytest.approx(engine.prob_t1, abs=1e-7)
    assert 'data-right="false"' in reveal[REVEAL]
    assert "tbt-figdata" in reveal[FIGURE] and reveal[FORCE]["choices"]  # the shared chart and list, only now
    assert probabilities_in(reveal[REVEAL])  # the reveal says the probabilities


@pytest.mark.server
def test_a_typed_guess_is_read_as_the_word_after_the_prompt(client, lm):
    call(client, "/lesson_open", "one-token-at-a-time")
    reveal = call(client, "/lesson_guess", "Paris")[REVEAL]  # typed, without the leading space
    assert 'data-token-id="%d"' % lm.tokenizer.encode(" Paris", add_special_tokens=False)[0] in reveal
    assert 'data-right="true"' in reveal


@pytest.mark.server
def test_a_guess_is_needed_and_a_step_without_a_question_takes_none(client):
    call(client, "/lesson_open", "one-token-at-a-time")
    with pytest.raises(AppError, match="guess first"):
        call(client, "/lesson_guess", "")
    call(client, "/lesson_next")
    with pytest.raises(AppError, match="asks for no guess"):
        call(client, "/lesson_guess", " Paris")


@pytest.mark.server
def test_an_uploaded_lesson_is_checked_and_played(client, tmp_path):
    good = tmp_path / "mine.json"
    good.write_text(json.dumps(GOOD, ensure_ascii=False), encoding="utf-8")
    result = call(client, "/lesson_upload", handle_file(str(good)))
    assert result[PROGRESS]["id"] == "mine" and result[PROGRESS]["file"]["steps"][0]["view"] == "candidates"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken(BAD[0][0])), encoding="utf-8")
    with pytest.raises(AppError, match=re.escape("steps[0].predict.kind")):
        call(client, "/lesson_upload", handle_file(str(bad)))
    with pytest.raises(AppError, match=re.escape("steps[0].predict.kind")):
        call(client, "/lesson_upload", handle_file(str(bad)), lang="zh")


@pytest.mark.server
def test_progress_from_the_browser_resumes_and_is_checked_again(client):
    result = client.predict({"id": "temperature", "step": 2, "file": None}, **PAGE, lang="en", api_name="/lesson_resume")
    result = named(client, "/lesson_resume", result)
    assert result[PROGRESS]["step"] == 2 and "Step 3 of 3" in result[STEP_TEXT]
    tampered = {"id": "mine", "step": 0, "file": broken(BAD[1][0])}  # a view this page does not have
    with pytest.raises(AppError, match="No lesson is open"):
        client.predict(tampered, **PAGE, lang="en", api_name="/lesson_resume")


@pytest.mark.unit
def test_the_reveal_is_said_in_both_languages():
    answer = {"kind": "order", "guess": "same", "right": False, "first": 7, "last": 141}
    assert "141" in reveal_html(answer, "en") and "141" in reveal_html(answer, "zh")
    assert "没猜中" in reveal_html(answer, "zh")


@pytest.mark.unit
def test_the_reveal_escapes_token_texts_and_bolds_the_marked_words():
    """viz.lesson builds the reveal from the page's words: a token's text is escaped, a **marked** part is bold."""
    import functools

    from ui.strings import t
    from viz.lesson import reveal_html as reveal_in

    answer = {"kind": "next_token", "guess": "<b>", "right": False, "token_id": 27, "token": "<b>", "several": True,
              "prob": 0.25, "rank": 2, "vocab": 49152, "top": " &", "top_prob": 0.5, "chosen": " &"}
    for lang in ("en", "zh"):
        out = reveal_in(answer, functools.partial(t, lang=lang))
        assert out == reveal_html(answer, lang)
        assert "<code>&lt;b&gt;</code>" in out and "<code> &amp;</code>" in out and "<b>25.0%</b>" in out
        assert "**" not in out and 'data-token-id="27" data-prob="0.25"' in out


@pytest.mark.server
def test_the_teacher_reveals_without_a_guess(client, lm):
    """Reveal: the answer and the step's chart with no guess committed (no verdict); asked again it is refused."""
    opened = call(client, "/lesson_open", "one-token-at-a-time")
    assert opened[PLOT]["visible"] is False and opened[REVEAL] == ""
    reveal = call(client, "/lesson_reveal")
    paris = lm.tokenizer.encode(" Paris", add_special_tokens=False)[0]
    assert 'data-right="none"' in reveal[REVEAL] and 'data-token-id="%d"' % paris in reveal[REVEAL]
    assert "Right" not in reveal[REVEAL] and "Not this time" not in reveal[REVEAL]
    assert reveal[PLOT]["visible"] is True
    call(client, "/lesson_next")
    with pytest.raises(AppError, match="asks for no guess"):
        call(client, "/lesson_reveal")


# ---- the interview's wrong answers, tested live (assets/lessons/17-interview-myths.json) ----------------------
@pytest.mark.unit
def test_the_measured_questions_are_checked_with_their_defaults():
    def asked(**predict):
        lesson = broken(lambda d: d["steps"][0].update(predict={"question": {"en": "?", "zh": "？"}, **predict}))
        return check_lesson(lesson, TABS)["steps"][0]["predict"]

    assert asked(kind="step_time")["tokens"] == 512 and asked(kind="step_time", tokens=64)["tokens"] == 64
    assert asked(kind="kept_count") == {"kind": "kept_count", "question": {"en": "?", "zh": "？"}}
    assert (asked(kind="beam_vs_sample")["width"], asked(kind="beam_vs_sample")["tokens"]) == (4, 16)
    assert asked(kind="cache_size", model="Llama-2-7B", tokens=2048, myth_factor=2)["myth_factor"] == 2
    assert "myth_factor" not in asked(kind="cache_size", model="Llama-2-7B", tokens=2048)


def timing_of(cached, runs=3, spread=0.01):
    from model.decoding.records import CacheTiming

    return computation(lambda lm, ids, lengths, *a: CacheTiming(
        list(lengths), list(cached), [10 * c for c in cached], [(c * (1 - spread), c * (1 + spread)) for c in cached],
        [(10 * c, 10 * c) for c in cached], [runs] * len(cached)))


@pytest.mark.model
@pytest.mark.parametrize("cached, runs, spread, verdict", [
    ([10.0, 10.2, 11.0, 14.0], 3, 0.01, "grows"),  # fitted +40%, the ends' runs apart
    ([10.0, 10.1, 10.0, 10.3], 3, 0.01, "same"),  # fitted +3%: flat within the rule's 10%
    ([10.0, 10.2, 11.0, 14.0], 3, 0.5, None),  # +40% fitted, but the ends' runs overlap: too busy to say
    ([10.0, 10.1, 10.0, 10.3], 1, 0.01, None),  # one run each: too few to say
    ([89.9, 120.0, 250.0, 530.6], 1, 0.01, None),  # a class's load: sixfold, but one run at 512 fitted the time
])
def test_the_step_time_verdict_follows_its_stated_rule(lm, monkeypatch, cached, runs, spread, verdict):
    """The rule, on measurements made up to sit each side of it; the reveal grades a guess by it, and by the known
    answer (it grows) when the machine was too busy to measure one: a committed guess is always graded."""
    import model.classroom.myths as myths
    from model.classroom.quiz import graded

    monkeypatch.setattr(myths, "measure_cache_timing", timing_of(cached, runs, spread))
    session = DecodeSession(lm)
    session.start("Once upon a time")
    answer = myths.step_time_record(session, {"tokens": 512}, "grows")
    assert answer["answer"] == verdict and answer["cached_ms"] == cached
    check_step_time(answer, {"tokens": 512})
    assert answer["right"] == ((verdict or myths.STEP_KNOWN) == "grows")
    assert graded(answer, "same")["right"] == ((verdict or myths.STEP_KNOWN) == "same")
    assert answer["graded_on"] == ("measured" if verdict else "known")
    assert answer["busy"] == (None if verdict else "few_runs" if runs < 3 else "overlap")
    for lang in ("en", "zh"):  # the reveal says why the machine could not measure, never a verdict against it
        said = html.unescape(reveal_html(answer, lang))
        assert (t("lesson_reveal_step_known", lang).replace("**", "") in said.replace("<b>", "").replace("</b>", "")
                ) is (verdict is None)


@pytest.mark.model
def test_the_step_time_reveal_shows_the_kv_views_own_measurement(lm, monkeypatch):
    """The reveal's times are what model.decoding.timing.measure_cache_timing measured (the KV cache view's Measure),
    on the step's text repeated to the question's length; its chart is that view's chart with the fitted line."""
    import model.classroom.myths as myths
    from model.decoding import timing
    from viz.lesson import answer_figure

    measured = []

    @computation  # run by the model's core, as the function it stands in for
    def spy(lm_, ids, lengths, *args):
        measured.append((list(ids), list(lengths), timing.measure_cache_timing(lm_, ids, lengths, *args)))
        return measured[-1][2]

    monkeypatch.setattr(myths, "measure_cache_timing", spy)
    session = DecodeSession(lm)
    session.start("The capital of France is")
    answer = myths.step_time_record(session, {"tokens": 64}, None)
    (ids, lengths, got), = measured
    assert ids == (session.ids * 64)[:64] and lengths == answer["seq_len"] == myths.step_lengths(64)
    assert answer["cached_ms"] == got.cached_ms and answer["full_ms"] == got.full_ms and answer["runs"] == got.runs
    check_step_time(answer, {"tokens": 64})
    for lang in ("en", "zh"):
        figure = answer_figure(answer, lang)
        fit = [trace for trace in figure.data if trace.meta and trace.meta.get("role") == "fit"]
        assert len(fit) == 1 and list(fit[0].y) == pytest.approx(
            [answer["intercept"] + answer["slope"] * n for n in (lengths[0], lengths[-1])])
        assert [list(trace.y) for trace in figure.data[:2]] == [got.cached_ms, got.full_ms]


@pytest.mark.unit
def test_the_measured_reveals_are_said_in_both_languages():
    step = {"kind": "step_time", "guess": "same", "right": False, "answer": "grows", "tokens": 512,
            "seq_len": [2, 13, 81, 512], "cached_ms": [10.0, 10.5, 11.0, 14.0], "full_ms": [11, 20, 60, 300],
            "cached_range": [[9.9, 10.1]] * 4, "full_range": [[1, 2]] * 4, "runs": [3, 3, 3, 3], "slope": 0.0078,
            "intercept": 10.0, "fit_short": 10.02, "fit_long": 14.0, "separated": True, "growth": 0.1}
    kept = {"kind": "kept_count", "guess": "44237", "right": False, "answer": "10", "kept": 10, "p": 0.9,
            "vocab": 49152, "myth": 44237, "nucleus": [[" Paris", 0.77, 0.77], [" the", 0.06, 0.83]], "total": 0.903}
    beams = {"kind": "beam_vs_sample", "guess": "beam", "right": True, "answer": "beam", "more_repeats": "beam",
             "width": 4, "new_tokens": 16, "texts": {
                 "beam": {"text": " a a a", "tokens": [1, 1, 1], "logprob": -1.5, "repeated": 3, "ngrams": 1},
                 "sampled": {"text": " <b>", "tokens": [2], "logprob": -9.25, "repeated": 0, "ngrams": 0}}}
    for lang in ("en", "zh"):
        said = reveal_html(step, lang)
        assert "14.0" in said and "7.80" in said and 'data-answer="grows"' in said  # ms at the longest; per 1,000
        said = reveal_html(kept, lang)
        assert "<b>10</b>" in said and "44,237" in said and "49,152" in said and "77.0%" in said
        said = reveal_html(beams, lang)
        assert "-1.50" in said and "-9.25" in said and "&lt;b&gt;" in said and "✔" in said
        assert re.search(r"[\u4e00-\u9fff]", reveal_html(beams, lang)) if lang == "zh" else True


@pytest.mark.unit
def test_the_class_is_graded_on_the_one_measurement():
    """A measured question runs once: each of the class's guesses is graded on that run (quiz.graded); a measurement
    the machine was too busy to make grades each guess on the known answer, and says so."""
    from model.classroom.quiz import graded
    from model.classroom.rooms import Split
    from ui.views.room import feedback_html

    searched = {"kind": "beam_vs_sample", "guess": None, "right": None, "answer": "beam"}
    assert [graded(searched, v)["right"] for v in ("beam", "sampled", "same")] == [True, False, False]
    assert graded(searched, None)["right"] is None and graded(searched, "beam")["guess"] == "beam"
    noisy = {"kind": "step_time", "guess": None, "right": None, "answer": None}
    choices = [("the same", "same"), ("it grows", "grows")]
    for lang in ("en", "zh"):
        said = feedback_html(Split({"same": 0, "grows": 1}, "grows", {v: graded(noisy, v) for v in ("same", "grows")},
                                   1), choices, lang)
        assert t("room_feedback_no_verdict", lang) in html.unescape(said)
        assert t("room_feedback_right", lang, guess="it grows") in html.unescape(said)
    assert [graded(noisy, v)["right"] for v in ("same", "grows")] == [False, True]
    assert graded(noisy, "same")["graded_on"] == "known"
