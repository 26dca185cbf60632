"""Issue 49, without a model: a student's journal (model/classroom/journal.py) lists exactly what the page did, and a
room's class report (model/classroom/report.py) counts exactly the room's votes, lapsed and late seats included, names
students only by the seat names they typed, and is gone when the room closes. The rooms' clock is injected: no
sleeping. The summary's and the report's pages are checked as HTML here; they are printed in
tests/test_browser_report.py."""
import csv
import io
import threading
from types import SimpleNamespace

import pytest
import torch

from model.classroom.class_draws import DrawRound
from model.classroom.class_play import ClassPlay
from model.classroom.guess_game import Game, GameToken
from model.classroom.journal import MAX_KEPT, Answer, Journal, KeptChart, Scored, right_values
from model.classroom.report import CSV_COLUMNS, class_report, most_common_wrong, report_csv
from model.classroom.rooms import Question, Rooms, seat_name
from model.classroom.scores import ClassResult
from model.decoding.records import SamplingConfig
from model.errors import SessionError
from viz.report import report_page
from viz.summary import summary_page

pytestmark = pytest.mark.unit


# ---- a student's journal --------------------------------------------------------------------------------------
def step(n: int, token: int, forced: bool = False, cfg: SamplingConfig = SamplingConfig(), rank: int = 1,
         prob: float = 0.5):
    """A StepRecord as the journal reads it (its token, how it was chosen, its settings)."""
    chosen = SimpleNamespace(id=token, display=f"␣w{token}")
    dist = SimpleNamespace(forced=forced, config=cfg, chosen=chosen, chosen_rank=rank,
                           chosen_candidate=SimpleNamespace(prob_t1=prob))
    return SimpleNamespace(step=n, token=chosen, distribution=dist)


def text_of(steps):
    return "".join(s.token.display for s in steps)


def test_the_journal_lists_each_forced_step_and_each_going_back_once():
    journal = Journal()
    hot = SamplingConfig(temperature=1.5, seed=4)
    def see(steps, prompt="The capital of France is", finished=False):
        if steps:
            steps[-1].text = text_of(steps)  # (a StepRecord's text: the generated text so far)
        journal.saw("smollm2", prompt, False, steps, finished)

    a, b = step(1, 10), step(2, 11)
    c = step(3, 12, forced=True, rank=7, prob=0.01)
    see([])
    see([a])
    see([a, b])
    see([a, b, c])
    see([a, b, c])  # the same page drawn again (a tab, the language): nothing new
    see([a])  # back two steps
    d = step(2, 13, cfg=hot)
    see([a, d])
    see([a, d, step(3, 14, forced=True, cfg=hot)])
    see([step(1, 10)], prompt="Once upon a time")  # another text
    see([a, d], finished=True)  # the first text again (a lesson's step restarts its prompt)
    summary = journal.summary("my notes")
    first, second = summary.texts
    assert (first.prompt, second.prompt) == ("Once upon a time", "The capital of France is")  # the newest last
    assert [(f.step, f.token, f.rank) for f in second.forced] == [(3, "␣w12", 7), (3, "␣w14", 1)]
    assert [(b.from_step, b.to_step, b.undone) for b in second.backs] == [(3, 1, ["␣w11", "␣w12"]),
                                                                         (3, 2, ["␣w14"])]
    assert second.steps == 2 and second.finished and second.text == "␣w10␣w13"
    assert [(r.first, r.last, r.settings["temperature"]) for r in second.settings] == [(1, 1, 1.0), (2, 2, 1.5)]
    assert first.forced == [] and first.backs == [] and summary.notes == "my notes"


def test_notes_kept_charts_and_answers_are_bounded():
    journal = Journal()
    with pytest.raises(SessionError) as err:
        journal.summary("x" * 4001)
    assert err.value.key == "notes_too_long"
    with pytest.raises(SessionError) as err:
        journal.summary("bad \ud800 text")
    assert err.value.key == "notes_invalid_text"
    small = {"en": {"data": [], "layout": {}}, "zh": {"data": [], "layout": {}}}
    for n in range(MAX_KEPT):
        assert journal.keep(KeptChart("tab_candidates", n, "text", small)) == n + 1
    with pytest.raises(SessionError) as err:
        journal.keep(KeptChart("tab_candidates", 9, "text", small))
    assert err.value.key == "keep_full"
    huge = {"en": {"data": [{"y": list(range(60_000))}], "layout": {}}}
    with pytest.raises(SessionError) as err:
        Journal().keep(KeptChart("tab_candidates", 1, "text", huge))
    assert err.value.key == "keep_too_large"
    record = {"kind": "order", "guess": "transformers", "right": False, "answer": "temperature_last"}
    journal.answered(Answer("l#1", "lesson", {"en": "T"}, 1, {"en": "Q?"}, {"en": []}, "transformers", record, []))
    journal.answered(Answer("l#1", "lesson", {"en": "T"}, 1, {"en": "Q?"}, {"en": []}, "same", record, []))
    assert [a.guess for a in journal.summary().answers] == ["same"]  # the same question answered again


def test_the_right_answer_is_read_from_any_reveal_record():
    assert right_values({"kind": "order", "answer": "same"}) == ["same"]
    assert right_values({"kind": "step_time", "answer": None}) == []  # too noisy to say
    assert right_values({"kind": "kept_by_top_p", "kept": False}) == ["no"]
    assert right_values({"kind": "cache_size", "bytes": 1024}) == ["1024"]
    assert right_values({"kind": "next_token", "top": "␣Paris"}) == ["␣Paris"]


def test_the_summary_page_says_what_the_journal_holds_in_each_language():
    journal = Journal()
    a, b = step(1, 10), step(2, 11, forced=True, rank=3, prob=0.125)
    a.text, b.text = "␣w10", "␣w10␣w11"
    journal.saw("smollm2", "The <b>capital</b>", False, [a, b], False)
    journal.saw("smollm2", "The <b>capital</b>", False, [a], False)
    record = {"kind": "order", "guess": "transformers", "right": False, "first": 3, "last": 5,
              "answer": "temperature_last"}
    choices = {"en": [("Temperature first", "transformers"), ("Temperature last", "temperature_last")],
               "zh": [("先温度", "transformers"), ("温度最后", "temperature_last")]}
    journal.answered(Answer("temperature#2", "lesson", {"en": "Temperature", "zh": "温度"}, 2,
                            {"en": "**Which keeps more?**", "zh": "**哪个保留更多？**"}, choices, "transformers", record,
                            right_values(record)))
    journal.scored(Scored("temperature", {"en": "Temperature", "zh": "温度"}, 0, 1))
    say = lambda key, lang, **fmt: f"[{key}]"  # noqa: E731  (the page's words: their keys are enough here)
    for lang, right in (("en", "Temperature last"), ("zh", "温度最后")):
        page = summary_page(journal.summary("line one\n<script>x</script>"), lang, say, "2030-01-01 10:00")
        assert '<div class="box text" data-steps="1" data-forced="1" data-backs="1">' in page
        assert "The &lt;b&gt;capital&lt;/b&gt;" in page and "<script>x</script>" not in page
        assert f"<code>{right}</code>" in page and 'data-right="false"' in page and "[lesson_reveal_order]" in page
        assert 'data-right="0" data-total="1"' in page and "Plotly" not in page  # no chart kept: no plotly.js


# ---- a room's class report ------------------------------------------------------------------------------------
CHOICES = {lang: [(" Paris", " Paris"), (" London", " London"), (" the", " the")] for lang in ("en", "zh")}


def question(key: str) -> Question:
    return Question(key, {"en": "**Which comes next?**", "zh": "**下一个是哪个？**"}, CHOICES)


def test_the_report_counts_the_rooms_votes_with_lapsed_and_late_seats():
    """Five seats: one lapses after voting (its vote set aside, as the room does), one joins after the question was
    asked and votes; one never votes. The report's counts are the room's own (ClassResult, Rooms.tally)."""
    now = [0.0]
    rooms = Rooms(clock=lambda: now[0], follower_stale_s=30.0)
    code = rooms.open("teacher", "10.0.0.1")
    for n, (who, name) in enumerate([("s1", "Ana"), ("s2", None), ("s3", " ana "), ("s4", "=cmd()")]):
        rooms.join(who, code, f"10.0.1.{n}", name)
    rooms.ask("teacher", question("lesson#0"))
    for who, value in (("s1", " Paris"), ("s2", " the"), ("s3", " the")):
        rooms.guess(who, value)
    now[0] = 40.0  # s2's page stopped ticking; the others tick
    for who in ("s1", "s3", "s4"):
        rooms.state(who, "10.0.1.9")
    now[0] = 60.0
    rooms.join("late", code, "10.0.2.1", "Late")  # joins after the question was asked
    rooms.guess("late", " London")
    question_now, tally, seated = rooms.tally("teacher")
    rooms.reveal("teacher", lambda value: {"right": value == " Paris"})
    report = class_report(rooms.report("teacher"), [], [])
    q = report.questions[0]
    assert q.counts == tally == {" Paris": 1, " London": 1, " the": 1} and seated == 4
    assert rooms.results("teacher")["lesson#0"] == ClassResult(right=1, wrong=2, no_answer=1) == \
        ClassResult(q.counts[" Paris"], q.answered - q.counts[" Paris"], q.seated - q.answered)
    assert q.lapsed == 1 and q.right == [" Paris"] and q.revealed
    assert q.most_wrong == " London"  # a tie with " the": the first in the choices' order
    assert q.votes == [(1, " Paris"), (3, " the"), (5, " London")]  # by seat number: no session id
    assert report.seats[0][:2] == (1, "Ana") and report.seats[2][:2] == (3, "ana (3)")  # the name taken: numbered
    assert report.seats[1][1] == "" and report.seats[4][:2] == (5, "Late") and report.seats[4][2] == 60.0
    # a question asked and left unrevealed for the next: counted, marked so
    rooms.ask("teacher", question("lesson#1"))
    rooms.guess("s1", " the")
    rooms.ask("teacher", question("lesson#2"))
    report = class_report(rooms.report("teacher"), [], [])
    assert [(q.key, q.revealed, q.answered) for q in report.questions] == [("lesson#0", True, 3),
                                                                           ("lesson#1", False, 1),
                                                                           ("lesson#2", False, 0)]
    rows = list(csv.DictReader(io.StringIO(report_csv(report, "en", "(other)"))))
    assert tuple(rows[0]) == CSV_COLUMNS
    first = [r for r in rows if r["section"] == "question" and r["item"] == "1"]
    assert [(r["answer"], r["count"], r["is_right"]) for r in first] == [(" Paris", "1", "yes"), (" London", "1", "no"),
                                                                       (" the", "1", "no")]
    votes = [(r["seat_no"], r["seat_name"], r["answer"]) for r in rows if r["section"] == "vote" and r["item"] == "1"]
    assert votes == [("1", "Ana", " Paris"), ("3", "ana (3)", " the"), ("5", "Late", " London")]
    assert [r["seat_name"] for r in rows if r["section"] == "seat"] == ["Ana", "", "ana (3)", "'=cmd()", "Late"]
    for made in (report_csv(report, "zh", "其他"), report_page(report, "zh", "now"), report_page(report, "en", "now")):
        assert not any(secret in made for secret in ("s1", "s2", "teacher", "10.0."))  # no session id, no address
    page = report_page(report, "en", "now")
    assert 'data-key="lesson#0" data-answered="3" data-right="1" data-lapsed="1" data-most-wrong=" London"' in page
    assert "Not revealed: 1 of 4 seats had answered." in page and "<svg" in page


def test_seat_names_are_checked():
    assert seat_name(None) == "" and seat_name("  Ana   Li ") == "Ana Li"
    for bad, key in (("x" * 25, "room_name_too_long"), ("a\nb", "room_name_invalid"), (5, "room_name_invalid"),
                     ("\ud800", "room_name_invalid_text")):
        with pytest.raises(SessionError) as err:
            seat_name(bad)
        assert err.value.key == key
    assert most_common_wrong({"a": 3, "b": 0}, ["a"]) is None and most_common_wrong({"a": 1, "b": 2}, []) is None


class _Tokens:
    def info(self, token_id):
        return SimpleNamespace(display=f"t{token_id}")


def test_the_rooms_draws_and_games_are_reported_and_go_when_it_closes():
    rooms = Rooms(clock=lambda: 0.0)
    play = ClassPlay(rooms)
    code = rooms.open("teacher", "10.0.0.1")
    for n in range(3):
        rooms.join(f"s{n}", code, f"10.0.1.{n}")
    logits = torch.tensor([3.0, 2.5, 2.0, 1.0, 0.5, 0.0, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0])
    play.open_round("teacher", DrawRound.open(logits, [1, 2, 3], SamplingConfig()), _Tokens())
    for n, u in enumerate((0.1, 0.5, 0.97)):
        play.draw(f"s{n}", u)
    toks = [GameToken(1, " Paris", "␣Paris", 0.5, 1.0), GameToken(2, ".", ".", 0.25, 2.0)]
    play.start_game("teacher", Game("The capital of France is", [9, 9, 1, 2], 2, toks, ["A", "A Paris", "A Paris."]))
    play.guess("s0", "Paris")
    play.reveal("teacher")
    rounds, games = play.results("teacher")
    _, wall_rounds, score, _ = play.wall("teacher")
    assert [{k: v for k, v in r.items() if k != "no"} for r in rounds] == wall_rounds and rounds[0]["no"] == 1
    assert games == [(1, "A Paris.", score)] and score["right"] == [1]
    report = class_report(rooms.report("teacher"), rounds, games)
    rows = list(csv.DictReader(io.StringIO(report_csv(report, "en", "(other)"))))
    draws = [r for r in rows if r["section"] == "draws"]
    assert sum(int(r["count"]) for r in draws[:-1]) == 3 and f"chi2={rounds[0]['chi2']:.6g}" in draws[-1]["detail"]
    assert [r["answer"] for r in rows if r["section"] == "game"] == ["␣Paris", ""]
    page = report_page(report, "zh", "now")
    assert 'class="box round" data-n="3"' in page and "第 1 局：A Paris." in page
    gone = threading.Event()
    rooms.on_close.append(lambda closed: gone.set())  # (the hooks run in order: ClassPlay's forget first)
    rooms.close("teacher")
    assert gone.wait(10)
    assert code not in play._plays  # its rounds and games let go with the room
    with pytest.raises(SessionError) as err:
        rooms.report("teacher")
    assert err.value.key == "report_no_room"


def test_a_trace_written_before_notes_still_reads_and_has_none():
    """tests/data/trace-before-notes.json was written by the code before issue 49 (commit d11be03)."""
    from pathlib import Path

    from model.decoding.trace import parse_trace, read_trace, trace_notes

    trace = read_trace((Path(__file__).parent / "data" / "trace-before-notes.json").read_bytes())
    prompt, chat, steps = parse_trace(trace)
    assert prompt == "The capital of France is" and not chat and len(steps) == 3
    assert trace_notes(trace) is None and trace_notes({**trace, "notes": "mine"}) == "mine"
    with pytest.raises(SessionError) as err:
        trace_notes({**trace, "notes": ["not", "text"]})
    assert err.value.key == "notes_not_text"
