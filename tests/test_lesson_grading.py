"""Lessons correct by construction, that grade themselves (issue 35, items 4 and 5): a lesson text states no number
(the checker refuses one, and an unknown placeholder); the placeholders are filled with the figures of the model the
step runs on, checked against that model's own transformers config; the score counts the guesses committed; a room's
class is counted per question (right / wrong / no answer, no names)."""
import copy
import json
import re

import pytest

from model.classroom.figures import fill, numbers_in, placeholders_in, step_figures
from model.classroom.lessons import LESSON_DIR, LessonError, builtin_lessons, check_lesson
from model.classroom.rooms import Question, Rooms
from model.classroom.scores import ClassResult, class_result, lesson_score, read_results
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from ui.views import VIEWS

TABS = tuple(View.tab for View in VIEWS)
GOOD = {"id": "mine", "title": {"en": "Mine", "zh": "我的"}, "summary": {"en": "A try.", "zh": "试试。"}, "steps": [
    {"prompt": "The capital of France is", "view": "candidates", "text": {"en": "Look.", "zh": "看。"},
     "predict": {"kind": "next_token", "question": {"en": "Which?", "zh": "哪个？"}, "choices": [" Paris", " the"]}}]}
TEXTS = {"title": lambda d: d["title"], "summary": lambda d: d["summary"], "steps[0].text": lambda d: d["steps"][0]["text"],
         "steps[0].predict.question": lambda d: d["steps"][0]["predict"]["question"]}


def with_text(field, lang, text):
    lesson = copy.deepcopy(GOOD)
    TEXTS[field](lesson)[lang] = text
    return lesson


# ---- the numbers rule ------------------------------------------------------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize("field", list(TEXTS))
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("said, number", [("It holds 100 tokens.", "100"), ("About 2,048 of them.", "2,048"),
                                          ("Top-p of 0.9 here.", "0.9"), ("It has 30 layers", "30"),
                                          ("2 × the heads", "2"), ("它有 18 层。", "18"), ("Half: 50% of it.", "50"),
                                          ("Step t−1 first.", "1")])
def test_a_number_in_any_text_a_student_reads_is_refused(field, lang, said, number):
    check_lesson(GOOD, TABS)
    with pytest.raises(LessonError) as err:
        check_lesson(with_text(field, lang, said), TABS)
    for page in ("en", "zh"):
        text = err.value.text(page)
        assert f"{field}.{lang}" in text and number in text, text
    assert err.value.key == "lesson_number" and re.search(r"[\u4e00-\u9fff]", err.value.text("zh"))


@pytest.mark.unit
@pytest.mark.parametrize("said", ["Llama-2-7B caches more.", "Kept in fp16.", "A step is not O(1), it is O(t).",
                                  "Gemma-3-270M and a 7B model.", "top-k and top-p", "E7 8C AB are bytes.",
                                  "P(x₁…x_T) = Π P(x_t | x_<t)", "log₂ of it"])
def test_the_allowed_forms_pass(said):
    for field in TEXTS:
        for lang in ("en", "zh"):
            check_lesson(with_text(field, lang, said), TABS)
    assert numbers_in(said) == []


@pytest.mark.unit
def test_an_unknown_placeholder_is_refused_naming_it():
    with pytest.raises(LessonError) as err:
        check_lesson(with_text("steps[0].text", "en", "It has {layerz} layers."), TABS)
    assert err.value.key == "lesson_placeholder"
    assert "{layerz}" in err.value.text("en") and "{layers}" in err.value.text("en")  # and the known ones
    assert "{layerz}" in err.value.text("zh") and "steps[0].text.en" in err.value.text("zh")
    with pytest.raises(LessonError, match=re.escape("{tokens}")):  # a cache question's, in a next_token step
        check_lesson(with_text("steps[0].predict.question", "zh", "{tokens} 个词元？"), TABS)
    for field in ("title", "summary"):  # the lesson list shows them before any model runs: none there
        with pytest.raises(LessonError) as err:
            check_lesson(with_text(field, "en", "On {model}"), TABS)
        assert err.value.key == "lesson_placeholder_none" and f"{field}.en" in err.value.text("en")
    check_lesson(with_text("steps[0].text", "en", "{model} has {layers} layers and {vocab} tokens; T = {temperature}."),
                 TABS)


@pytest.mark.unit
def test_every_builtin_lesson_passes_and_states_no_number():
    lessons, refused = builtin_lessons(TABS)
    assert not refused, {name: err.text("en") for name, err in refused.items()}
    assert len(lessons) == len(list(LESSON_DIR.glob("*.json")))
    used = set()
    for lesson in lessons.values():
        for lang in ("en", "zh"):
            texts = [lesson["title"][lang], *(s["text"][lang] for s in lesson["steps"]),
                     *(s["predict"]["question"][lang] for s in lesson["steps"] if s["predict"])]
            assert not [numbers_in(x) for x in texts if numbers_in(x)], (lesson["id"], lang)
            used |= {name for x in texts for name in placeholders_in(x)}
    assert {"vocab", "model", "layers", "kv_heads", "head_dim", "dtype", "tokens", "temperature", "top_p",
            "predict_model", "rank", "prompt_tokens"} <= used


# ---- the figures, against the model's own config -------------------------------------------------------------
DISPLAY = {"smollm2": "SmolLM2-135M", "gemma3-270m": "Gemma 3 270M"}
LLAMA = {"Llama-2-7B": (32, 32, 128), "Llama-3-8B": (32, 8, 128), "Llama-2-70B": (80, 8, 128)}  # published configs
PLAIN = {"temperature": 1, "top_k": 0, "top_p": 1, "min_p": 0, "repetition_penalty": 1, "seed": 0}  # README: defaults


def written(value) -> str:
    """A figure as a page writes it: thousands separators, a fraction in its shortest form."""
    return f"{value:g}" if isinstance(value, float) and value != int(value) else f"{int(value):,}"


def independent_figures(lm, raw_step: dict, lang: str, ids: list[int]) -> dict[str, str]:
    """Every figure a step's texts may name, computed without the app: the model's transformers config, the step as
    the JSON file holds it, published model shapes, one plain forward pass for a rank."""
    import torch

    config = lm.model.config
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    out = {"model": DISPLAY[lm.name], "layers": config.num_hidden_layers, "heads": heads, "kv_heads": kv_heads,
           "group": heads // kv_heads, "head_dim": getattr(config, "head_dim", None) or config.hidden_size // heads,
           "dtype": str(next(lm.model.parameters()).dtype).removeprefix("torch."), "vocab": config.vocab_size,
           "generate": raw_step.get("generate", 0), **{**PLAIN, **raw_step.get("settings", {})}}
    out.pop("order", None)
    prompt = raw_step["prompt"] if isinstance(raw_step["prompt"], str) else raw_step["prompt"][lang]
    out["prompt_tokens"] = len(lm.tokenizer.encode(prompt, add_special_tokens=False))
    predict = raw_step.get("predict") or {}
    if predict.get("kind") == "cache_size":
        shape = (out["layers"], kv_heads, out["head_dim"]) if predict["model"] == "current" else LLAMA[predict["model"]]
        out.update(tokens=predict["tokens"], dtype=predict.get("dtype", "float16"),
                   predict_model=out["model"] if predict["model"] == "current" else predict["model"],
                   predict_layers=shape[0], predict_kv_heads=shape[1], predict_head_dim=shape[2])
    if predict.get("kind") == "kept_by_top_p":
        token = predict["token"] if isinstance(predict["token"], str) else predict["token"][lang]
        with torch.no_grad():
            logits = lm.model(torch.tensor([ids])).logits[0, -1]
        order = torch.argsort(logits, descending=True).tolist()
        out["rank"] = order.index(lm.tokenizer.encode(token, add_special_tokens=False)[0]) + 1
    return {name: value if isinstance(value, str) else written(value) for name, value in out.items()}


def expected(text: str, figures: dict[str, str]) -> str:
    for name, value in figures.items():
        text = text.replace("{%s}" % name, value)
    assert "{" not in text, text  # every placeholder a built-in lesson names is one it can fill
    return text


def raw_lessons() -> dict[str, dict]:
    """The built-in lesson files as JSON holds them (not as the checker returns them)."""
    return {d["id"]: d for d in (json.loads(p.read_text(encoding="utf-8")) for p in sorted(LESSON_DIR.glob("*.json")))}


@pytest.fixture(scope="module")
def models(lm):
    from model.decoding.loading import available_models, load_model

    if "gemma3-270m" not in available_models():
        pytest.skip("Gemma 3 270M is not installed: the Chinese lessons run on it")
    return {"en": lm, "zh": load_model("gemma3-270m")}


def started(lm, step, lang) -> DecodeSession:
    session = DecodeSession(lm)
    session.start(step["prompt"][lang], chat=step["mode"] == "chat")
    for _ in range(step["generate"]):
        session.step(SamplingConfig(**step["settings"]))
    return session


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_filled_texts_say_the_figures_of_each_languages_model(models, lang):
    lm, raw = models[lang], raw_lessons()
    lessons, _ = builtin_lessons(TABS)
    filled = 0
    for lesson_id, lesson in lessons.items():
        for i, step in enumerate(lesson["steps"]):
            session = started(lm, step, lang)
            figures = step_figures(step, lm.info, DISPLAY[lm.name], session, lang)
            mine = independent_figures(lm, raw[lesson_id]["steps"][i], lang, session.ids)
            texts = [step["text"][lang]] + ([step["predict"]["question"][lang]] if step["predict"] else [])
            for text in texts:
                assert fill(text, figures) == expected(text, mine), (lesson_id, i, lang)
                filled += bool(placeholders_in(text))
    assert filled >= 12
    kv = lessons["kv-cache"]["steps"][0]
    config = lm.model.config
    said = fill(kv["predict"]["question"][lang], step_figures(kv, lm.info, DISPLAY[lm.name], None, lang))
    assert f"{config.num_hidden_layers} " in said and f"{config.num_key_value_heads} " in said and "float32" in said


# ---- the score --------------------------------------------------------------------------------------------------
@pytest.mark.unit
def test_the_score_counts_the_questions_answered_right():
    lessons, _ = builtin_lessons(TABS)
    lesson = lessons["top-k-top-p-min-p"]  # two questions: steps 2 and 4
    asked = [i for i, s in enumerate(lesson["steps"]) if s["predict"]]
    score = lesson_score(lesson, {str(asked[0]): True})
    assert (score.right, score.total) == (1, len(asked)) and [q.right for q in score.questions] == [True, None]
    score = lesson_score(lesson, {str(asked[0]): False, str(asked[1]): True})
    assert score.right == 1 and [q.step for q in score.questions] == asked
    assert read_results({"1": True, "x": True, "99": False, "2": "yes", "3": False}, 4) == {"1": True, "3": False}
    assert read_results(["1"], 4) == {}


@pytest.mark.unit
def test_the_class_is_counted_per_question_right_wrong_and_no_answer():
    """A few simulated students in a room: three guess (two right), one sends nothing; counted at each reveal."""
    assert class_result({"a": "x", "b": "y"}, {"x": {"right": True}, "y": {"right": False}}, 3) == ClassResult(1, 1, 1)
    rooms = Rooms(clock=lambda: 0.0)
    code = rooms.open("teacher", "10.0.0.1")
    students = [f"s{n}" for n in range(4)]
    for n, student in enumerate(students):
        rooms.join(student, code, f"10.0.1.{n}")
    choices = {lang: [(" Paris", " Paris"), (" the", " the")] for lang in ("en", "zh")}
    rooms.ask("teacher", Question("lesson#0", {"en": "Which?", "zh": "哪个？"}, choices))
    for student, value in zip(students, [" Paris", " Paris", " the"]):
        rooms.guess(student, value)
    assert rooms.results("teacher") == {}  # nothing counted before the reveal
    rooms.reveal("teacher", lambda value: {"right": value == " Paris"})
    assert rooms.results("teacher") == {"lesson#0": ClassResult(right=2, wrong=1, no_answer=1)}
    rooms.ask("teacher", Question("lesson#3", {"en": "Which?", "zh": "哪个？"}, choices))
    rooms.guess("s3", " the")
    rooms.reveal("teacher", lambda value: {"right": value == " the"})
    assert rooms.results("teacher") == {"lesson#0": ClassResult(2, 1, 1), "lesson#3": ClassResult(1, 0, 3)}
    assert rooms.results("nobody") == {}
