"""Lessons: the built-in files check and agree with the model and what-it-teaches.md; a bad file is refused naming its
field; every step plays through the API in both languages; a predict step sends no candidates before the guess,
and its reveal gives the engine's own probability of the guess."""
import copy
import json
import re

import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from model.quiz import predict_cache_bytes, size_choices
from model.records import SamplingConfig
from model.session import DecodeSession
from model.sessions import SessionStore
from ui.lessons import KINDS, LessonError, builtin_lessons, check_lesson, read_lesson
from ui.views import VIEWS
from ui.views.lesson import reveal_html
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
def lessons():
    found, refused = builtin_lessons(TABS)
    assert not refused, refused
    return found


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


def first_guess(predict) -> str:
    return {"next_token": lambda: predict["choices"][0], "kept_by_top_p": lambda: "yes",
            "order": lambda: "same"}.get(predict["kind"], lambda: None)() or str(size_choices(predict, INFO)[0])


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


def started(lm, step) -> DecodeSession:
    session = DecodeSession(lm)
    session.start(step["prompt"]["en"], chat=step["mode"] == "chat")
    cfg = SamplingConfig(**step["settings"])
    for _ in range(step["generate"]):
        session.step(cfg)
    return session


@pytest.mark.model
def test_every_next_token_question_has_the_model_s_top_token_among_its_choices(lm, lessons):
    """A right answer exists, and every choice is one SmolLM2 token (its probability is that token's)."""
    for step in predict_steps(lessons, "next_token"):
        dist = started(lm, step).preview(SamplingConfig(**step["settings"]))
        top = min(dist.candidates, key=lambda c: c.rank)
        ids = [lm.tokenizer.encode(c, add_special_tokens=False) for c in step["predict"]["choices"]]
        assert all(len(i) == 1 for i in ids), step["predict"]["choices"]
        assert [top.token.id] in ids, (step["prompt"], top.token.display)


@pytest.mark.model
def test_the_sampling_lesson_agrees_with_the_model(lm, lessons):
    (order,) = predict_steps(lessons, "order")
    session, cfg = started(lm, order), SamplingConfig(**order["settings"])
    first = session.preview(cfg).stages[-1].kept
    from dataclasses import replace
    last = session.preview(replace(cfg, order="temperature_last")).stages[-1].kept
    assert last > first  # T = 0.5 < 1 sharpens before the cut: temperature last keeps more (what-it-teaches.md)
    for step in predict_steps(lessons, "kept_by_top_p"):
        session = started(lm, step)
        probs = session.preview(SamplingConfig()).candidates  # T = 1: the cut is on these, sorted by rank
        token = lm.tokenizer.encode(step["predict"]["token"], add_special_tokens=False)[0]
        p = step["settings"]["top_p"]
        before = 0.0
        for c in sorted(probs, key=lambda c: c.rank):  # an independent nucleus: add until the total reaches p
            if c.token.id == token:
                break
            before += c.prob_t1
        kept = before < p
        fate = session.preview(SamplingConfig(**step["settings"]), force_token=token).chosen_candidate
        assert (fate.stage_probs["top_p"] > 0) == kept


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
def test_every_step_of_every_lesson_plays_through_the_api(client, lessons, lang):
    for lesson_id, lesson in lessons.items():
        total = len(lesson["steps"])
        result = call(client, "/lesson_open", lesson_id, lang=lang)
        for i, step in enumerate(lesson["steps"]):
            if i:
                result = call(client, "/lesson_next", lang=lang)
            assert result[PROGRESS] == {"id": lesson_id, "step": i, "file": None}
            said = f"Step {i + 1} of {total}" if lang == "en" else f"第 {i + 1} 步，共 {total} 步"
            assert said in result[STEP_TEXT] and step["text"][lang] in result[STEP_TEXT]
            assert result[PROMPT] == step["prompt"][lang]
            cfg = SamplingConfig(**step["settings"])
            assert [result[knob] for knob in SETTINGS.values()] == [getattr(cfg, n) for n in SETTINGS]  # the sliders
            assert 'data-step="%d"' % step["generate"] in result[TEXT]  # the tokens written before it is shown
            if step["predict"]:
                assert step["predict"]["question"][lang] in result[QUESTION]
                reveal = call(client, "/lesson_guess", first_guess(step["predict"]), lang=lang)[REVEAL]
                assert 'class="tbt-lesson-reveal"' in reveal
                assert ("猜" in reveal or "KV" in reveal) if lang == "zh" else ("Right" in reveal or "Not" in reveal)
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
