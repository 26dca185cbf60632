"""The Interview questions tab (ui/views/interview.py): every card points at a lesson or tab the page has, every text
is in both languages, every figure an answer states is the KV formula's (worked out here by hand, not by the app's
code) and none is typed into a string; through the API a card opens its lesson exactly as the Lesson tab's Start
does, and an unknown question is refused in the page's language with nothing changed."""
import re
import string

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from bench.layout_audit import TABS as AUDITED
from model.classroom.lessons import builtin_lessons
from model.decoding.records import ModelInfo
from model.serving.sessions import SessionStore
from ui.strings import PAGE, t
from ui.views import VIEWS, InterviewView, LessonView
from ui.views.interview import BY_ID, QUESTIONS, answer_figures, answer_text, marks_of, with_mark
from named import named
from served import DEFAULTS, served

TABS = tuple(View.tab for View in VIEWS)
CJK = re.compile(r"[\u4e00-\u9fff]")
# SmolLM2-135M's shape (docs/what-it-teaches.md): only the calculator's comparison row uses it, no answer states it
SMOLLM2 = ModelInfo("SmolLM2-135M", 30, 9, 3, 64, 576, 49152, 4, "float32", 8192)


def texts(q):
    return [key for key in (q.question, q.answer, q.myth) if key]


# ---- the cards ------------------------------------------------------------------------------------------------
@pytest.mark.unit
def test_every_card_points_at_a_lesson_and_a_tab_the_page_has():
    lessons, refused = builtin_lessons(TABS)
    assert not refused
    assert len(QUESTIONS) == 15 and len(BY_ID) == 15  # the twelve questions of issue 35 and three of 48, each id once
    for q in QUESTIONS:
        assert q.tabs and set(q.tabs) <= set(TABS), (q.id, q.tabs)
        assert set(q.lessons) <= set(lessons), (q.id, q.lessons)
        assert re.fullmatch(r"[a-z][a-z-]+", q.id)
    assert {q.id: q.lessons[0] for q in QUESTIONS} == {  # every question has a lesson that answers it
        "token-by-token": "one-token-at-a-time", "autoregressive": "training-vs-generation", "kv-cache-size": "kv-cache",
        "parallel-training": "training-vs-generation", "exposure-bias": "branches-exposure-bias",
        "non-autoregressive": "why-not-non-autoregressive", "sampling": "top-k-top-p-min-p",
        "speculative": "speculative-decoding", "medusa": "medusa", "mqa-gqa": "mha-gqa-mqa",
        "serving": "class-batched-paged", "beam-search": "beam-search", "subwords": "subwords",
        "prefill-decode": "prefill-vs-decode", "attribution": "why-this-token"}
    # the lessons not on the path answer no interview question of issue 35
    assert set(lessons) - {lesson for q in QUESTIONS for lesson in q.lessons} == {"logit-lens", "constrained-decoding"}
    assert BY_ID["serving"].tabs == ("batching", "paged")
    # the four common wrong answers (docs/what-it-teaches.md), each on its question's card
    assert {q.id for q in QUESTIONS if q.myth} == {"autoregressive", "kv-cache-size", "sampling", "beam-search"}
    # and each is tested live in the lesson of wrong answers (assets/lessons/17-interview-myths.json)
    assert {q.id for q in QUESTIONS if "interview-myths" in q.lessons} == {q.id for q in QUESTIONS if q.myth}


@pytest.mark.unit
def test_the_tab_sits_just_before_the_lesson_tab_and_is_audited():
    assert VIEWS.index(InterviewView) == VIEWS.index(LessonView) - 1
    keys = [key for key, _ in AUDITED]
    assert ("interview", None) in AUDITED and keys.index("interview") == keys.index("lesson") - 1
    assert (t("tab_interview", "en"), t("tab_interview", "zh")) == ("Interview questions", "面试问题")


@pytest.mark.unit
def test_every_text_is_in_both_languages_and_every_answer_fills():
    figures = answer_figures(SMOLLM2)
    for q in QUESTIONS:
        for key in texts(q):
            en, zh = PAGE[key]
            assert en.strip() and CJK.search(zh), key  # Chinese, not a copy of the English
        for lang in ("en", "zh"):
            said = answer_text(q, lang, figures)
            assert "{" not in said and "}" not in said, (q.id, lang)
            size = len(said.split()) if lang == "en" else len(said)  # words; characters
            assert (50 <= size <= 110) if lang == "en" else (100 <= size <= 300), (q.id, lang, size)  # 30 seconds


def fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


@pytest.mark.unit
def test_no_answer_types_a_figure():
    """Every number an answer says comes from a placeholder: no digit at all in any answer's text, in either
    language (the formula's two K and V are written as a word), and the cache answers name their figures."""
    for q in QUESTIONS:
        for lang_text in PAGE[q.answer]:
            assert not re.search(r"\d", lang_text), (q.answer, re.findall(r"\d+", lang_text))
    for key in ("ia_kv_cache_size",):
        assert {"layers", "kv_heads", "head_dim", "tokens", "bytes", "size", "gqa_tokens", "gqa_size"} <= fields(PAGE[key][0])
        assert "GiB" not in PAGE[key][0] and "1,073" not in PAGE[key][0]
    assert {"mha_size", "gqa_size", "mqa_size", "heads", "kv_heads", "tokens"} <= fields(PAGE["ia_mqa_gqa"][0])
    assert "block" in fields(PAGE["ia_serving"][0])
    assert "tokens" in fields(PAGE["im_kv_cache_size"][0])  # the wrong answer's length is the question's too


def kv(layers, kv_heads, head_dim, tokens, bytes_per_value):
    """The KV cache in bytes, written out here rather than imported from the app."""
    return 2 * layers * kv_heads * head_dim * tokens * bytes_per_value


@pytest.mark.unit
def test_the_cache_answers_are_the_formula():
    figures = answer_figures(SMOLLM2)
    llama2 = kv(32, 32, 128, 2048, 2)  # Llama-2-7B: 32 layers, 32 KV heads of 128; fp16
    assert llama2 == 1_073_741_824 == 1024 ** 3  # exactly 1 GiB
    llama3 = kv(32, 8, 128, 8192, 2)  # Llama-3-8B: 8 KV heads
    assert llama3 == llama2
    for lang in ("en", "zh"):
        said = answer_text(BY_ID["kv-cache-size"], lang, figures)
        for figure in ("Llama-2-7B", "32", "128", "2,048", "float16", f"{llama2:,}", "1.00 GiB", "Llama-3-8B", "8,192"):
            assert figure in said, (lang, figure)
        assert "2 GB" not in said
        assert re.findall(r"\d[\d,.]*", said) == ["2", "7", "32", "32", "128", "2,048", "16", "2", "1,073,741,824",
                                                  "1.00", "3", "8", "8", "8,192", "1.00"], said
        myth = t("interview_myth", lang, myth=t("im_kv_cache_size", lang, **figures["kv-cache-size"]))
        assert "2,048" in myth and "2 GB" in myth
    mha, gqa, mqa = kv(32, 32, 128, 8192, 2), kv(32, 8, 128, 8192, 2), kv(32, 1, 128, 8192, 2)
    assert (mha, gqa, mqa) == (4 * 1024 ** 3, 1024 ** 3, 128 * 1024 ** 2)
    for lang in ("en", "zh"):
        said = answer_text(BY_ID["mqa-gqa"], lang, figures)
        sizes = re.findall(r"\d[\d.]* [KMG]iB", said)
        assert sizes == ["1.00 GiB", "4.00 GiB", "128 MiB"], said  # GQA, MHA, MQA, in the answer's order
        assert "32" in said and "8,192" in said and "Llama-3-8B" in said
    for lang, said in (("en", "blocks of 16 tokens"), ("zh", "每块 16 个词元")):
        assert said in answer_text(BY_ID["serving"], lang, figures)  # vLLM's default block size


@pytest.mark.unit
def test_the_browsers_progress_is_read_with_care():
    assert marks_of(None) == {"revealed": set(), "opened": set()}
    sent = {"revealed": ["kv-cache-size", "nope", 3, ["x"]], "opened": "sampling", "other": [1]}
    assert marks_of(sent) == {"revealed": {"kv-cache-size"}, "opened": set()}
    assert with_mark(sent, "sampling", "opened") == {"revealed": ["kv-cache-size"], "opened": ["sampling"]}
    assert with_mark(with_mark({}, "subwords", "revealed"), "subwords", "revealed") == {"revealed": ["subwords"],
                                                                                        "opened": []}


# ---- through the API ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(lm):
    with served(lm, SessionStore(max_sessions=8)) as (app, url, _):
        yield app, url


@pytest.fixture
def client(server):
    c = Client(server[1], verbose=False)
    yield c
    server[0].store.drop(c.session_hash)


PAGE_IN = {name: value for name, value in DEFAULTS.items() if name != "lang"}
PROGRESS = "tbt-interview-progress"


def call(client, api, *leading, lang="en") -> dict:
    return named(client, api, client.predict(*leading, **PAGE_IN, lang=lang, api_name=api))


def prompt_of(session) -> str:
    return session.lm.tokens.text(session.ids[: session.prompt_len])


@pytest.mark.server
def test_a_card_opens_its_lesson_as_start_does(server, client):
    app, url = server
    lessons, _ = builtin_lessons(TABS)
    first = lessons["training-vs-generation"]["steps"][0]
    opened = call(client, "/interview_open", "parallel-training", {"revealed": ["sampling"]})
    assert prompt_of(app.store.get(client.session_hash)) == first["prompt"]["en"]  # the lesson's first step, started
    assert opened["tbt-prompt"] == first["prompt"]["en"]
    assert opened["tbt-lesson-progress"] == {"id": "training-vs-generation", "step": 0, "file": None, "results": {}}
    assert opened[PROGRESS] == {"revealed": ["sampling"], "opened": ["parallel-training"]}
    assert opened["tbt-interview-head-parallel-training"].startswith("### ✔ 4. ")
    assert f"2 of {len(QUESTIONS)}" in opened["tbt-interview-summary"]
    start = Client(url, verbose=False)  # the Lesson tab's Start on the same lesson: the same step, the same settings
    try:
        started = call(start, "/lesson_open", "training-vs-generation")
        for name, value in started.items():
            if name not in ("tbt-text", "tbt-figdata"):  # (the text panel and chart carry each session's own ids)
                assert opened[name] == value, name
    finally:
        app.store.drop(start.session_hash)


@pytest.mark.server
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_unknown_question_is_refused_in_the_pages_language_and_changes_nothing(server, client, lang):
    app, _ = server
    client.predict("Hello there, my friend", "raw", "smollm2", **PAGE_IN, lang=lang, api_name="/start")
    session = app.store.get(client.session_hash)
    before = (list(session.ids), session.prompt_len)
    said = {"en": "There is no interview question", "zh": "没有编号为"}[lang]
    for bad in ("nope", "", "kv-cache"):  # ("kv-cache" is a lesson's id, not a question's)
        with pytest.raises(AppError, match=said):
            client.predict(bad, {}, **PAGE_IN, lang=lang, api_name="/interview_open")
        with pytest.raises(AppError, match=said):
            client.predict(bad, {}, lang, api_name="/interview_reveal")
    assert app.store.get(client.session_hash) is session
    assert (list(session.ids), session.prompt_len) == before


@pytest.mark.server
def test_a_question_on_a_page_without_lessons_opens_its_tab_and_a_reveal_shows_its_answer(lm):
    """Every card has a lesson; a page built without the Lesson tab opens the card's tab instead, and the session is
    untouched."""
    with served(lm, SessionStore(max_sessions=4), views=[V for V in VIEWS if V is not LessonView]) as (app, url, _):
        client = Client(url, verbose=False)
        _open_tab_and_reveal(app, client)


def _open_tab_and_reveal(app, client):
    client.predict("Hello there", "raw", "smollm2", **PAGE_IN, lang="en", api_name="/start")
    before = list(app.store.get(client.session_hash).ids)
    opened = call(client, "/interview_open", "serving", {})
    assert opened[PROGRESS] == {"revealed": [], "opened": ["serving"]}
    assert f"1 of {len(QUESTIONS)}" in opened["tbt-interview-summary"] and "opened" in opened["tbt-interview-head-serving"]
    assert list(app.store.get(client.session_hash).ids) == before  # a tab opened: the session is untouched
    shown = named(client, "/interview_reveal", client.predict("kv-cache-size", opened[PROGRESS], "zh",
                                                               api_name="/interview_reveal"))
    answer = shown["tbt-interview-answer-kv-cache-size"]
    assert answer["visible"] is True
    assert shown[PROGRESS] == {"revealed": ["kv-cache-size"], "opened": ["serving"]}
    assert "已看答案" in shown["tbt-interview-head-kv-cache-size"]
    assert "1,073,741,824" in t("ia_kv_cache_size", "zh", **answer_figures(app.models.get().info)["kv-cache-size"])
