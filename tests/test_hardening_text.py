"""Issue 32, items 3, 4, 9, 11 and 12: odd text never breaks a page, every refusal is said in the page's language,
and an event that exists only in the page's script is refused like an unknown one.

A lone surrogate ("\\ud800", which a JSON client can send and no str can encode) in any text a page sends is refused
by the one check (model.parse.valid_text) under the input's own key, before anything is stored: a lesson file's
question never reaches a room's students. The unit tests call the model's checks; the server tests send the same
text through the API, as a script posting its own JSON would (test_bad_input's raw_json).
"""
import ast
import copy
import json
import re
from pathlib import Path

import gradio as gr
import httpx
import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from model.classroom.guess_game import split_text, valid_guess
from model.classroom.lessons import LessonError, check_lesson, read_lesson
from model.classroom.rooms import Rooms, seat_name
from model.errors import SessionError, message
from model.parse import valid_notes
from model.inside.tokenizers import compare
from model.serving.sessions import SessionStore
from model.strategies.constrain import Constraint
from served import DEFAULTS, served
from test_bad_input import raw_json  # noqa: F401  (a fixture: lone surrogates sent as a script sends them)
from ui.strings import t

ROOT = Path(__file__).resolve().parents[1]
LONE = "\ud800"
TABS = ("candidates", "lesson")
BUG = re.compile(r"Something went wrong|出了点问题|Traceback|surrogates not allowed|not valid UTF-8")

LESSON = {"id": "odd", "title": {"en": "Odd", "zh": "怪"}, "steps": [
    {"prompt": "The capital of France is", "view": "candidates", "text": {"en": "Look.", "zh": "看。"},
     "predict": {"kind": "next_token", "question": {"en": "Which?", "zh": "哪个？"}, "choices": [" Paris", " the"]}}]}


def lesson_with(edit) -> dict:
    lesson = copy.deepcopy(LESSON)
    edit(lesson)
    return lesson


def said_plainly(text: str) -> None:
    """A refusal the page can show: encodable (no surrogate in it) and not a bug's fallback."""
    text.encode("utf-8")
    assert not BUG.search(text), text


# ---- 4. every text a page sends: one check, its own key ------------------------------------------------------
MODEL_INPUTS = [
    ("constraint words", lambda: Constraint("words", f"yes\nn{LONE}o").grammar(), "constrain_invalid_text"),
    ("constraint regex", lambda: Constraint("regex", f"a{LONE}+").grammar(), "constrain_invalid_text"),
    ("constraint schema", lambda: Constraint("json", f'{{"type": "string", "title": "{LONE}"}}').grammar(),
     "constrain_invalid_text"),
    ("too-long word", lambda: Constraint("words", "w" * 60 + LONE).grammar(), "constrain_invalid_text"),
    ("tokenizers' text", lambda: compare(f"tea {LONE} time"), "tokenizers_invalid_text"),
    ("game text", lambda: split_text(f"The cat | sat {LONE}"), "game_invalid_text"),
    ("game opening", lambda: split_text(f"The {LONE} | sat"), "game_invalid_text"),
    ("game guess", lambda: valid_guess(f"sat{LONE}"), "game_guess_invalid_text"),
    ("room code", lambda: Rooms().join("student", f"ABCD{LONE}EFG"), "room_code_invalid_text"),
    ("seat name", lambda: seat_name(f"Ana{LONE}"), "room_name_invalid_text"),
    ("notes", lambda: valid_notes(f"my notes {LONE}"), "notes_invalid_text"),
    ("lesson file", lambda: read_lesson(json.dumps(lesson_with(
        lambda d: d["steps"][0]["predict"]["question"].update(en=f"Which{LONE}?"))), TABS), "lesson_invalid_text"),
]


@pytest.mark.unit
@pytest.mark.parametrize("what, send, key", MODEL_INPUTS, ids=[case[0] for case in MODEL_INPUTS])
def test_a_lone_surrogate_in_each_text_input_is_refused_by_its_key(what, send, key):
    """Before: llguidance's or the tokenizer's UnicodeEncodeError (the bug fallback), a refusal quoting the
    surrogate (too-long word, room code: unserialisable), or the text stored (game guess, lesson question)."""
    with pytest.raises(SessionError) as refused:
        send()
    assert refused.value.key == key
    english, chinese = refused.value.text("en"), refused.value.text("zh")
    assert "lone surrogate" in english and "孤立的代理项" in chinese and english != chinese
    for text in (english, chinese, str(refused.value)):
        said_plainly(text)


@pytest.mark.unit
def test_the_one_check_passes_text_and_leaves_other_types_to_its_caller():
    from model.parse import valid_text

    for fine in ("", "plain", "中文 ✓ 😀", "\U0001F600", None, 3, ["\ud800"]):
        assert valid_text(fine, "prompt_invalid_text") is fine
    for odd in ("\ud800", "a\udfffb", "\udbff\udc00\udc00"):
        with pytest.raises(SessionError, match="lone surrogate"):
            valid_text(odd, "prompt_invalid_text")


@pytest.mark.unit
def test_no_other_check_of_text_is_written():
    """Every text a page sends goes through model.parse.valid_text: no other `except UnicodeEncodeError`."""
    found = []
    for path in [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "model").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and "UnicodeEncodeError" in ast.unparse(node.type or ast.Tuple([])):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert [where.split(":")[0] for where in found] == ["model/parse.py"], found


# ---- 3. a lesson file with a lone surrogate anywhere ---------------------------------------------------------
ANYWHERE = [
    (lambda d: d["steps"][0]["predict"]["question"].update(zh=f"哪{LONE}个？"), "steps[0].predict.question.zh"),
    (lambda d: d["title"].update(en=LONE), "title.en"),
    (lambda d: d["steps"][0]["predict"].update(choices=[" Paris", f" {LONE}"]), "steps[0].predict.choices[1]"),
    (lambda d: d["steps"][0].update(settings={"order": LONE}), "steps[0].settings.order"),
    (lambda d: d["steps"][0].update({f"note{LONE}": "x"}), "steps[0]"),  # a name: said where it is
    (lambda d: d["steps"][0].update(colour=[{"deep": [LONE]}]), "steps[0].colour[0].deep[0]"),  # unknown, unread
    (lambda d: d.update(id=f"odd{LONE}"), "id"),
]


@pytest.mark.unit
@pytest.mark.parametrize("edit, field", ANYWHERE, ids=[case[1] for case in ANYWHERE])
def test_a_lesson_file_with_a_lone_surrogate_anywhere_is_refused_naming_where(edit, field):
    lesson = lesson_with(edit)
    for read in (lambda: read_lesson(json.dumps(lesson), TABS),  # an upload (JSON escapes \ud800 as text)
                 lambda: check_lesson(lesson, TABS)):  # the browser's copy of an uploaded lesson, sent back
        with pytest.raises(LessonError) as refused:
            read()
        assert refused.value.key == "lesson_invalid_text" and refused.value.params["field"] == field
        for lang in ("en", "zh"):
            said_plainly(refused.value.text(lang))
        assert field in refused.value.text("zh") and "孤立的代理项" in refused.value.text("zh")
    assert check_lesson(LESSON, TABS)["id"] == "odd"  # the same lesson without it is fine


# ---- 11. the unknown code is shown as text ------------------------------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize("typed", ["<img src=x onerror=alert(1)>", "<b>AB</b>CD", "A&B<i>"])
def test_an_unknown_code_is_escaped_in_its_refusal(typed):
    with pytest.raises(SessionError) as refused:
        Rooms().join("student", typed)
    assert refused.value.key == "room_unknown"
    for lang in ("en", "zh"):
        text = refused.value.text(lang)
        assert "<" not in text and ">" not in text, text
        assert "&lt;" in text and text == message("room_unknown", lang, code=refused.value.params["code"])


# ---- 9. a number out of its slider's range, in the page's language --------------------------------------------
@pytest.mark.unit
def test_a_named_range_is_refused_in_the_events_language():
    """The range check runs in the component's preprocess, which knows no language; plain_preprocess_data says
    it in the language of the event's inputs (before: Gradio's English, after the label)."""
    import asyncio
    import types

    from ui.guard import plain_preprocess_data
    from ui.handlers import named_range
    from ui.strings import LANG_INPUT

    width = named_range(gr.Slider(1, 8, 4, step=1, label="Beam width", elem_id="tbt-test-width"), "beams_width")
    lang = gr.Radio(["en", "zh"], elem_id=LANG_INPUT)
    block_fn = types.SimpleNamespace(inputs=[width, lang], api_name="beams_search")

    async def gradios(block_fn, inputs, *args, **kwargs):  # Gradio's preprocess_data: each input's preprocess
        return [block.preprocess(value) for block, value in zip(block_fn.inputs, inputs)]

    check = plain_preprocess_data(None, gradios)
    for value, words in ((99, {"en": "greater than maximum value 8", "zh": "大于最大值 8"}),
                         (0, {"en": "less than minimum value 1", "zh": "小于最小值 1"})):
        for page_lang in ("en", "zh"):
            with pytest.raises(gr.Error) as refused:
                asyncio.run(check(block_fn, [value, page_lang]))
            text = refused.value.message
            assert text.startswith(t("beams_width", page_lang)) and words[page_lang] in text, text
            assert (page_lang == "zh") == ("Value" not in text), text
    assert asyncio.run(check(block_fn, [3, "zh"])) == [3, "zh"]


# ---- the server ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(lm):
    with served(lm, SessionStore(max_sessions=40)) as (app, url, demo):
        yield app, url, demo


@pytest.fixture
def clients(server):
    made = []

    def new():
        made.append(Client(server[1], verbose=False, analytics_enabled=False))
        return made[-1]

    yield new
    for c in made:
        server[0].store.drop(c.session_hash)
        server[0].rooms.close(c.session_hash, "left")


def call(client, api, *leading, lang="en", **settings):
    return client.predict(*leading, **{**DEFAULTS, **settings, "lang": lang}, api_name=api)


def refusal(send) -> str:
    with pytest.raises(AppError) as err:
        send()
    text = str(err.value)
    said_plainly(text)
    return text


def a_room(server, clients, students=1):
    """A teacher with a text and a room, and `students` following it: (teacher, [students], code)."""
    teacher = clients()
    call(teacher, "/start", "The capital of France is", "raw", "smollm2")
    info = call(teacher, "/open_room")[0]
    code = re.search(r'data-code="([A-Z0-9]+)"', info).group(1)
    followers = [clients() for _ in range(students)]
    for s in followers:
        s.predict(code, "en", api_name="/join_room")
    return teacher, followers, code


# 9: each number of the new views out of its range, through the API, in Chinese and in English
RANGES = [
    ("/beams_search", lambda v: (v, 1.0, 8), "beams_width", 8),
    ("/beams_search", lambda v: (2, 1.0, v), "beams_tokens", 32),
    ("/sampler_race", lambda v: (0.7, 0, 0.9, 0.0, "transformers", v), "race_steps", 64),
    ("/consistency", lambda v: (v, 8), "sc_samples", 16),
    ("/consistency", lambda v: (4, v), "sc_tokens", 48),
    ("/constrain", lambda v: ("words", "yes\nno", v), "constrain_tokens", 48),
    ("/speculative", lambda v: (v, 8), "spec_draft_len", 8),
    ("/speculative", lambda v: (4, v), "spec_new_tokens", 48),
    ("/medusa", lambda v: (v, 12), "medusa_new_tokens", 64),
    ("/medusa", lambda v: (16, v), "medusa_tree", 32),
]


@pytest.mark.server
@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("api, leading, key, high", RANGES, ids=[case[2] for case in RANGES])
def test_a_number_out_of_range_is_refused_in_the_pages_language(server, clients, api, leading, key, high, lang):
    client = clients()
    for value, words in ((high + 1, {"en": f"greater than maximum value {high}", "zh": f"大于最大值 {high}"}),
                         (0, {"en": "less than minimum value 1", "zh": "小于最小值 1"})):
        text = refusal(lambda: call(client, api, *leading(value), lang=lang))
        assert t(key, lang) in text and words[lang] in text, text
        assert (lang == "zh") == ("Value" not in text), text


@pytest.mark.server
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_lens_window_and_the_constraint_step_out_of_range_in_the_pages_language(server, clients, lang):
    client = clients()
    for api, key, high in (("/logit_lens", "lens_window", 48), ("/constrain_step", "constrain_step", 48)):
        text = refusal(lambda: client.predict(high + 1, lang, api_name=api))
        assert t(key, lang) in text and t("range_above", lang, name=t(key, lang), value=high + 1, high=high) in text


# 4: each new text input with a lone surrogate, through the server, in both languages
@pytest.mark.server
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_lone_surrogate_in_each_new_text_input_through_the_server(server, clients, raw_json, lang):  # noqa: F811
    app = server[0]
    teacher, (student,), code = a_room(server, clients)
    cases = [
        (lambda: call(teacher, "/constrain", "words", f"yes\nn{LONE}o", 4, lang=lang), "constrain_invalid_text"),
        (lambda: call(teacher, "/constrain", "regex", f"(yes|no){LONE}", 4, lang=lang), "constrain_invalid_text"),
        (lambda: call(teacher, "/constrain", "json", f'{{"type": "string", "title": "{LONE}"}}', 4, lang=lang),
         "constrain_invalid_text"),
        (lambda: call(teacher, "/constrain", "words", "w" * 60 + LONE, 4, lang=lang), "constrain_invalid_text"),
        (lambda: teacher.predict(f"tea {LONE} time", lang, api_name="/compare_tokenizers"), "tokenizers_invalid_text"),
        (lambda: teacher.predict(f"The cat | sat {LONE}", lang, api_name="/game_start"), "game_invalid_text"),
        (lambda: clients().predict(f"{code[:4]}{LONE}{code[4:]}", lang, api_name="/join_room"),
         "room_code_invalid_text"),
    ]
    for send, key in cases:
        assert message(key, lang) in refusal(send)
    teacher.predict("The cat| sat on the mat", lang, api_name="/game_start")
    assert message("game_guess_invalid_text", lang) in refusal(
        lambda: student.predict(f"sat{LONE}", lang, api_name="/game_guess"))
    student.predict(" sat", lang, api_name="/game_guess")  # the game goes on
    assert student.predict(lang, api_name="/class_play_state")  # and the student's page still ticks
    call(teacher, "/lesson_open", "one-token-at-a-time", lang=lang)
    assert message("lesson_guess_invalid_text", lang) in refusal(
        lambda: call(teacher, "/lesson_guess", f"Par{LONE}is", lang=lang))
    assert app.store.get(teacher.session_hash).prefill.prompt  # the teacher's session is still there


# 3: a lesson question with a lone surrogate never reaches the room
@pytest.mark.server
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_lesson_with_a_lone_surrogate_is_refused_at_upload_and_the_room_is_untouched(server, clients, tmp_path,
                                                                                        lang):
    """Before: the question was stored in the room first (rooms.ask), the teacher's answer failed in Gradio's
    serialisation, and so did every follower's next tick."""
    app = server[0]
    teacher, (student,), _ = a_room(server, clients)
    odd = tmp_path / "odd.json"  # (JSON escapes it: \ud800 in the file's text)
    odd.write_text(json.dumps(lesson_with(lambda d: d["steps"][0]["predict"]["question"].update(
        en=f"Which{LONE}?", zh=f"哪{LONE}个？"))), encoding="utf-8")
    text = refusal(lambda: call(teacher, "/lesson_upload", handle_file(str(odd)), lang=lang))
    assert message("lesson_invalid_text", lang, field="steps[0].predict.question.en") in text, text
    assert app.rooms.tally(teacher.session_hash)[0] is None  # nothing asked
    tick = student.predict(lang, api_name="/room_state")  # the follower's page ticks as before, no question
    assert tick[4] == "", tick[4]
    fine = tmp_path / "fine.json"
    fine.write_text(json.dumps(LESSON, ensure_ascii=False), encoding="utf-8")
    call(teacher, "/lesson_upload", handle_file(str(fine)), lang=lang)  # the same lesson without it reaches the room
    assert app.rooms.tally(teacher.session_hash)[0].words["en"] == "**Which?**"
    assert {"en": "Which?", "zh": "哪个？"}[lang] in student.predict(lang, api_name="/room_state")[4]


# 11: the unknown code in the toast is text
@pytest.mark.server
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_an_unknown_code_is_shown_as_text_through_the_server(server, clients, lang):
    text = refusal(lambda: clients().predict("<img src=x onerror=alert(1)>", lang, api_name="/join_room"))
    assert "&lt;IMG" in text and "<IMG" not in text and "<img" not in text, text


# 12: an event that runs only in the page's script, called as a script would
@pytest.mark.server
def test_a_browser_only_event_is_refused_like_an_unknown_name_on_every_route(server, capfd, caplog):
    caplog.set_level("INFO", logger="token-by-token")
    url, demo = server[1], server[2]
    browser_only = [(i, fn.api_name) for i, fn in demo.fns.items() if fn.fn is None]
    assert browser_only
    unknown = httpx.post(f"{url}gradio_api/call/no_such_event", json={"data": []}, timeout=30)
    assert unknown.status_code == 404
    sentence = unknown.json()["detail"]
    assert sentence == f'{t("no_such_event", "en")} {t("no_such_event", "zh")}'
    for index, name in browser_only:
        for route in ("call", "call/v2", "run", "api"):
            answer = httpx.post(f"{url}gradio_api/{route}/{name}", json={"data": []}, timeout=30)
            assert (answer.status_code, answer.json().get("detail")) == (404, sentence), (route, name, answer.text)
        for route in ("run", "api"):  # Gradio's direct route by number
            answer = httpx.post(f"{url}gradio_api/{route}/predict", timeout=30,
                                json={"data": [], "fn_index": index, "session_hash": "probe-js"})
            assert (answer.status_code, answer.json().get("detail")) == (404, sentence), (route, index, answer.text)
        answer = httpx.post(f"{url}gradio_api/queue/join", timeout=30,
                            json={"data": [], "fn_index": index, "session_hash": "probe-js"})
        assert (answer.status_code, answer.json().get("detail")) == (422, sentence), (index, answer.text)
    for route in ("run", "api"):  # a made-up name on the direct routes: the same, not Gradio's 500
        answer = httpx.post(f"{url}gradio_api/{route}/no_such_event", json={"data": []}, timeout=30)
        assert (answer.status_code, answer.json().get("detail")) == (404, sentence), (route, answer.text)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "function has no backend method" not in err
    assert not [r for r in caplog.records if r.exc_info]
