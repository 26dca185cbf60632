"""Lessons correct by construction, that grade themselves (issue 35, items 4 and 5): a lesson text states no number
(the checker refuses one, and an unknown placeholder); the placeholders are filled with the figures of the model the
step runs on, checked against that model's own transformers config; the score counts the guesses committed; a room's
class is counted per question (right / wrong / no answer, no names)."""
import copy
import re

import pytest

from model.classroom.figures import fill, numbers_in, placeholders_in, step_figures
from model.classroom.lessons import LESSON_DIR, LessonError, builtin_lessons, check_lesson
from model.classroom.rooms import Question, Rooms
from model.classroom.scores import ClassResult, class_result, lesson_score, read_results
from ui.views import VIEWS
from lesson_truth import DISPLAY, expected, independent_figures, lesson_lm, raw_lessons, started

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
@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_filled_texts_say_the_figures_of_each_languages_model(lesson_models, lang):
    raw = raw_lessons()
    lessons, _ = builtin_lessons(TABS)
    filled = 0
    for lesson_id, lesson in lessons.items():
        lm = lesson_lm(lesson, lang, lesson_models)
        for i, step in enumerate(lesson["steps"]):
            session = started(lm, step, lang)
            figures = step_figures(step, lm.info, DISPLAY[lm.name], session, lang)
            mine = independent_figures(lm, raw[lesson_id]["steps"][i], lang, session.ids)
            texts = [step["text"][lang]] + ([step["predict"]["question"][lang]] if step["predict"] else [])
            for text in texts:
                assert fill(text, figures) == expected(text, mine), (lesson_id, i, lang)
                filled += bool(placeholders_in(text))
    assert filled >= 12
    kv, lm = lessons["kv-cache"]["steps"][0], lesson_models[lang]
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
    assert read_results({"9" * 5000: True, "١": True, "01": True, "-1": False, "0": True}, 4) == {"0": True}


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


# ---- through the API: the score, and the class's per question ---------------------------------------------------
SCORE, PROGRESS, REVEAL = "tbt-lesson-score", "tbt-lesson-progress", "tbt-lesson-reveal"


@pytest.fixture(scope="module")
def server(lm):
    from model.serving.sessions import SessionStore
    from served import served

    with served(lm, SessionStore(max_sessions=16)) as (app, url, _):
        yield app, url


def call(client, api, *leading, lang="en"):
    from named import named
    from served import DEFAULTS

    return named(client, api, client.predict(*leading, **{**DEFAULTS, "lang": lang}, api_name=api))


@pytest.mark.server
def test_the_score_counts_right_and_wrong_guesses_and_not_the_teachers_reveal(server, lm):
    from gradio_client import Client

    client = Client(server[1], verbose=False)
    raw = raw_lessons()["kv-cache"]["steps"]  # two cache questions, then a step without one
    config = lm.model.config
    per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * (
        getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)
    assert raw[0]["predict"]["model"] == "current" and raw[0]["predict"]["dtype"] == "float32"
    right_size = per_token * raw[0]["predict"]["tokens"] * 4  # the formula over the model's own config
    opened = call(client, "/lesson_open", "kv-cache")
    assert opened[SCORE] == "" and opened[PROGRESS]["results"] == {}  # the score waits for the last step
    reveal = call(client, "/lesson_guess", str(right_size))
    assert 'data-right="true"' in reveal[REVEAL] and reveal[PROGRESS]["results"] == {"0": True}
    offered = [value for _, value in call(client, "/lesson_next")["tbt-lesson-guess"]["choices"]]
    llama = str(2 * 32 * 32 * 128 * raw[1]["predict"]["tokens"] * 2)  # Llama-2-7B in fp16, from its published shape
    reveal = call(client, "/lesson_guess", next(v for v in offered if v != llama))
    assert 'data-right="false"' in reveal[REVEAL] and reveal[PROGRESS]["results"] == {"0": True, "1": False}
    last = call(client, "/lesson_next")
    assert "Your score: 1 of 2" in last[SCORE] and "Step 1: ✔ right" in last[SCORE] and "Step 2: ✘ wrong" in last[SCORE]
    assert call(client, "/lesson_back", lang="zh")[SCORE] == ""  # not the last step
    zh = call(client, "/lesson_next", lang="zh")
    assert "你的得分：2 题中答对 1 题" in zh[SCORE] and "第 2 步：✘ 答错" in zh[SCORE]
    # the browser's copy after a reload: resumed at the last step, the same score
    resumed = named_resume(client, last[PROGRESS])
    assert "Your score: 1 of 2" in resumed[SCORE]
    # a reveal without a guess (the teacher's) does not count
    call(client, "/lesson_open", "one-token-at-a-time")
    assert call(client, "/lesson_reveal")[PROGRESS]["results"] == {}
    call(client, "/lesson_next")
    last = call(client, "/lesson_next")
    assert "Your score: 0 of 1" in last[SCORE] and "Step 1: not answered" in last[SCORE]
    server[0].store.drop(client.session_hash)


def named_resume(client, progress):
    from named import named
    from served import DEFAULTS

    return named(client, "/lesson_resume", client.predict(progress, **DEFAULTS, api_name="/lesson_resume"))


@pytest.mark.server
def test_the_teacher_sees_the_class_right_wrong_and_silent_per_question(server):
    """Four students in a room: two guess the model's top token, one another, one nothing; the teacher reveals
    without a guess of their own. At the last step the teacher's Lesson tab counts them (no names)."""
    from gradio_client import Client
    from served import DEFAULTS

    app, url = server
    teacher = Client(url, verbose=False)
    students = [Client(url, verbose=False) for _ in range(4)]
    teacher.predict("The capital of France is", "raw", "smollm2", **DEFAULTS, api_name="/start")
    info = teacher.predict(**DEFAULTS, api_name="/open_room")[0]
    code = re.search(r'data-code="([A-Z0-9]+)"', info).group(1)
    for student in students:
        student.predict(code, "en", api_name="/join_room")
    call(teacher, "/lesson_open", "one-token-at-a-time")  # step 1 asks: " Paris" is the model's top token
    for student, guess in zip(students, [" Paris", " Paris", " London"]):
        student.predict("en", api_name="/room_state")
        student.predict(guess, "en", api_name="/room_guess")
    students[3].predict("en", api_name="/room_state")  # looks, sends nothing
    call(teacher, "/lesson_reveal")
    call(teacher, "/lesson_next")
    last = call(teacher, "/lesson_next")
    assert "Your score: 0 of 1" in last[SCORE]  # the teacher's reveal: no guess, not scored
    assert "Step 1: 2 right, 1 wrong, 1 no answer" in last[SCORE], last[SCORE]
    assert all(name not in last[SCORE] for name in (s.session_hash for s in students))  # counts, no names
    # the question a student's phone shows is filled with the teacher's model's figures
    call(teacher, "/lesson_open", "kv-cache")
    words = students[0].predict("en", api_name="/room_state")[4]
    config = app.models.get("smollm2").model.config
    assert f"SmolLM2-135M: {config.num_hidden_layers} layers, {config.num_key_value_heads} KV heads of " in words
    tokens = raw_lessons()["kv-cache"]["steps"][0]["predict"]["tokens"]
    assert "{" not in words and f"{tokens:,} tokens" in words, words
    for client in (teacher, *students):
        app.store.drop(client.session_hash)
    app.rooms.close(teacher.session_hash, "left")
