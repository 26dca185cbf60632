"""Issue 49 through the API (one gradio Client per page, the real model behind one served app): notes go into a
trace and come back from it (a trace without them still loads) and into a saved page; a student's summary lists
exactly what their session did and nothing of another's; a lesson played alone ends with the same summary; the
class report's counts are the room's own votes, with a lapsed and a late seat, and its students appear only under
the names they typed."""
import csv
import html
import io
import json
import re
import time
from pathlib import Path

import pytest
from gradio_client import Client, handle_file

from model.classroom.journal import MAX_KEPT
from model.decoding.records import SamplingConfig
from model.serving.sessions import SessionStore
from served import DEFAULTS, served
from viz.i18n import t
from viz.style import format_prob

pytestmark = pytest.mark.server
NOTES = "Step 4: I forced a rare token.\n<b>not bold</b> & 中文笔记"
OLD_TRACE = Path(__file__).parent / "data" / "trace-before-notes.json"


@pytest.fixture(scope="module")
def server(lm):
    with served(lm, SessionStore(max_sessions=30)) as (app, url, _):
        yield app, url


def call(client, api, *leading, **settings):
    return client.predict(*leading, **{**DEFAULTS, **settings}, api_name=api)


def read(path) -> str:
    return Path(path).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def stepped(server):
    """A student's page: three steps, a forced one, back one, one more at T = 0.5, the candidates chart kept."""
    app, url = server
    client = Client(url, verbose=False)
    call(client, "/start", "The capital of France is", "raw", "smollm2")
    for _ in range(3):
        call(client, "/next_token")
    session = app.store.get(client.session_hash)
    forced = sorted(session.preview(SamplingConfig()).candidates, key=lambda c: c.rank)[4]
    call(client, "/force", str(forced.token.id))
    undone = session.steps[-1]
    call(client, "/back", 1)
    call(client, "/next_token", temperature=0.5)
    kept = call(client, "/keep_candidates")
    return client, session, undone, kept


def test_notes_go_into_a_trace_and_a_saved_page_and_come_back(server, stepped):
    app, url = server
    client, session, _, _ = stepped
    trace_path = client.predict("en", NOTES, api_name="/export")
    trace = json.loads(read(trace_path))
    assert trace["notes"] == NOTES and trace["version"] == 2
    other = Client(url, verbose=False)
    loaded = call(other, "/import_trace", handle_file(trace_path))
    assert loaded[-1] == NOTES  # the notes box holds them again
    assert app.store.get(other.session_hash).replay_left == len(session.steps)
    # a trace written by the code before notes (d11be03: a step forced, gone back on, stepped again)
    old = json.loads(OLD_TRACE.read_text(encoding="utf-8"))
    assert "notes" not in old
    loaded = call(other, "/import_trace", handle_file(str(OLD_TRACE)))
    assert app.store.get(other.session_hash).replay_left == len(old["steps"])  # it still loads
    assert loaded[-1] == {"__type__": "update"}  # and leaves the notes box as it was (gr.skip())
    for lang in ("en", "zh"):
        page = read(client.predict(lang, 0, NOTES, api_name="/export_page"))
        assert f'<div class="notes">{html.escape(NOTES)}</div>' in page and t("offline_notes", lang) in page
    assert "<section id=\"notes\">" not in read(client.predict("en", 0, "", api_name="/export_page"))
    with pytest.raises(Exception, match="at most 4000"):
        client.predict("en", "x" * 4001, api_name="/export")


def test_the_summary_lists_exactly_what_the_session_did(server, stepped):
    app, url = server
    client, session, undone, kept = stepped
    assert f'data-kept="1"' in kept and f"1 of {MAX_KEPT}" in kept
    bystander = Client(url, verbose=False)
    call(bystander, "/start", "Someone else's secret prompt", "raw", "smollm2")
    call(bystander, "/next_token")
    page = read(client.predict("en", NOTES, api_name="/my_summary"))
    steps = session.steps
    assert re.findall(r'<div class="box text" data-steps="(\d+)" data-forced="(\d+)" data-backs="(\d+)">', page) == \
        [(str(len(steps)), "1", "1")]
    forced = undone.distribution
    item = t("summary_forced_item", "en", step=4, token=undone.token.display, rank=forced.chosen_rank,
             prob=format_prob(forced.chosen_candidate.prob_t1))
    assert f'<li data-step="4">{html.escape(item)}</li>' in page
    back = t("summary_back_item", "en", frm=4, to=3, n=1, tokens=undone.token.display)
    assert f'<li data-from="4" data-to="3">{html.escape(back)}</li>' in page
    assert html.escape(session.text) in page and "The capital of France is" in page
    assert "steps 1–3" in page and "step 4" in page and "T 0.5 ·" in page  # its settings, changed at step 4
    assert html.escape(NOTES) in page
    assert "Candidates, step 4" in page and "Plotly" in page  # the kept chart, drawn by plotly.js inlined
    assert "secret prompt" not in page  # nothing of another page
    zh = read(client.predict("zh", NOTES, api_name="/my_summary"))
    assert "我写的文本" in zh and '<html lang="zh-Hans">' in zh and "候选" in zh


def test_a_lesson_played_alone_ends_with_its_summary(server):
    from named import named

    app, url = server
    client = Client(url, verbose=False)
    opened = named(client, "/lesson_open", call(client, "/lesson_open", "kv-cache"))
    offered = [value for _, value in opened["tbt-lesson-guess"]["choices"]]
    session = app.store.get(client.session_hash)
    info = session.lm.info
    first = app.all_views["lesson"].lessons["kv-cache"]["steps"][0]["predict"]
    right = str(2 * info.layers * info.kv_heads * info.head_dim * first["tokens"] * 4)  # the formula, float32
    call(client, "/lesson_guess", right)
    second = named(client, "/lesson_next", call(client, "/lesson_next"))
    wrong = [v for _, v in second["tbt-lesson-guess"]["choices"]][0]
    reveal = named(client, "/lesson_guess", call(client, "/lesson_guess", wrong))
    assert 'data-right="false"' in reveal["tbt-lesson-reveal"]
    call(client, "/lesson_next")  # the last step: the summary's button is there
    page = read(client.predict("en", "", api_name="/lesson_summary"))
    assert right in offered
    assert len(re.findall(r'<div class="box answer" data-key="kv-cache#\d" data-right="(true|false)">', page)) == 2
    assert 'data-key="kv-cache#0" data-right="true"' in page and 'data-key="kv-cache#1" data-right="false"' in page
    assert re.search(r'data-lesson="kv-cache" data-right="1" data-total="2"', page)
    assert "The right answer:" in page and "Why:" in page


def test_the_class_report_counts_the_rooms_votes_with_a_lapsed_and_a_late_seat(server):
    app, url = server
    rooms = app.rooms
    now = [time.monotonic()]
    real_clock, rooms.clock = rooms.clock, lambda: now[0]  # the seats' time, moved by the test: no sleeping
    try:
        teacher = Client(url, verbose=False)
        call(teacher, "/start", "The capital of France is", "raw", "smollm2")
        info = call(teacher, "/open_room")[0]
        code = re.search(r'data-code="([A-Z0-9]+)"', info).group(1)
        students = {name: Client(url, verbose=False) for name in ("Ana", "", "=Bo", "Cy")}
        for name, student in students.items():
            student.predict(code, "en", name, api_name="/join_room")
        call(teacher, "/lesson_open", "one-token-at-a-time")  # asks which token comes next
        for name, guess in (("Ana", " Paris"), ("", " London"), ("=Bo", " London")):
            students[name].predict("en", api_name="/room_state")
            students[name].predict(guess, "en", api_name="/room_guess")
        now[0] += 40  # the nameless seat's page stops ticking: its seat lapses, its vote set aside
        for name in ("Ana", "=Bo", "Cy"):
            students[name].predict("en", api_name="/room_state")
        teacher.predict("en", api_name="/room_wall")
        late = Client(url, verbose=False)
        late.predict(code, "en", "Late", api_name="/join_room")  # after the question was asked
        late.predict("en", api_name="/room_state")  # (its page shows the question: its choices)
        late.predict(" the", "en", api_name="/room_guess")
        _, tally, seated = rooms.tally(teacher.session_hash)
        call(teacher, "/lesson_guess", " Paris")  # the teacher reveals
        result = rooms.results(teacher.session_hash)
        files, shown = teacher.predict("en", api_name="/class_report")
        csv_path = next(f for f in files if f.endswith(".csv"))
        rows = list(csv.DictReader(io.StringIO(read(csv_path))))
        counted = {r["answer"]: int(r["count"]) for r in rows if r["section"] == "question"}
        assert counted == {"␣Paris": 1, "␣the": 1, "␣London": 1, "␣a": 0}  # the labels of the room's own tally
        assert list(counted.values()) == list(tally.values()) and seated == 4
        (key, res), = result.items()
        right = [r for r in rows if r["section"] == "question" and r["is_right"] == "yes"]
        assert [r["answer"] for r in right] == ["␣Paris"] and res.right == 1 and res.wrong == 2 and res.no_answer == 1
        assert all("lapsed=1" in r["detail"] for r in rows if r["section"] == "question")
        votes = {(r["seat_no"], r["seat_name"], r["answer"]) for r in rows if r["section"] == "vote"}
        assert votes == {("1", "Ana", "␣Paris"), ("3", "'=Bo", "␣London"), ("5", "Late", "␣the")}
        seats = [(r["seat_no"], r["seat_name"]) for r in rows if r["section"] == "seat"]
        assert seats == [("1", "Ana"), ("2", ""), ("3", "'=Bo"), ("4", "Cy"), ("5", "Late")]
        page = read(next(f for f in files if f.endswith(".html")))
        for made in (page, shown, read(csv_path)):
            for secret in (teacher.session_hash, *(s.session_hash for s in students.values()), "127.0.0.1"):
                assert secret not in made  # no session id, no address
        assert 'data-answered="3" data-right="1" data-lapsed="1" data-most-wrong=" the"' in page  # (a tie: the first)
        # each student's summary: their own answer, the right one, no one else's
        students["=Bo"].predict("en", api_name="/room_state")  # the tick that shows the reveal
        mine = read(students["=Bo"].predict("en", "", api_name="/my_summary"))
        assert re.search(r'data-key="room:[A-Z0-9]+#one-token-at-a-time#0" data-right="false"', mine)
        assert "<code>␣London</code>" in mine and "<code>␣Paris</code>" in mine
        assert "Ana" not in mine and "Late" not in mine and "In the room: 0 of 1 right" in mine
        teacher.predict("en", api_name="/close_room")
        with pytest.raises(Exception, match="Open a room first"):
            teacher.predict("en", api_name="/class_report")
    finally:
        rooms.clock = real_clock
