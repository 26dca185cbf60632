"""The class report of a room (issue 49): per question asked, the class's answers counted against the right one and
the most common wrong answer; the class's draws against the model's distribution (chi-squared, as the wall computes
them); the games' results; how many joined and when. Plain records and a CSV, no words but the class's own (its
questions' and choices' labels, its seat names): viz/report.py says and draws them.

A report names no student but by the seat name the student typed when joining (or its seat number), never an
address or a session id. It is made when the teacher asks for it, from what the room holds (model/classroom/rooms.py:
RoomRecord) and what its plays hold (model/classroom/class_play.py); the server keeps no report: a room's records go
when it closes.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from model.classroom.rooms import RoomRecord

CSV_COLUMNS = ("section", "item", "question", "answer", "is_right", "count", "seat_no", "seat_name", "detail")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet would read a cell starting so as a formula


@dataclass
class QuestionResult:
    """One question asked in the room: its words and choices ({lang: ...}), each value's votes (`counts`, every
    value), the right values (none if never revealed), the votes counted (`answered`), the seats when it closed,
    the votes set aside from lapsed seats, and each seat's vote ([(seat number, value)])."""

    no: int
    key: str
    words: dict[str, str]
    choices: dict[str, list[tuple[str, str]]]
    counts: dict[str, int]
    right: list[str]
    revealed: bool
    answered: int
    seated: int
    lapsed: int
    most_wrong: str | None  # the wrong value most voted for (the first in the choices' order on a tie); None: none
    votes: list[tuple[int, str]]


@dataclass
class ClassReport:
    """A room's class report. seats: (number, the name its student typed or "", s after the room opened when it
    first sat); rounds: model.classroom.class_play.round_record's records with "no"; games: (number, text, score
    as guess_game.GameScore's fields)."""

    code: str
    open_s: float
    seated: int
    peak: int
    seats: list[tuple[int, str, float]]
    questions: list[QuestionResult]
    rounds: list[dict]
    games: list[tuple[int, str, dict]]

    def seat_name(self, no: int) -> str:
        return next((name for n, name, _ in self.seats if n == no), "")


def most_common_wrong(counts: dict[str, int], right: list[str]) -> str | None:
    """The wrong value with the most votes (the first in `counts`' order on a tie); None when no wrong value got a
    vote, or the right one is not known (a question never revealed)."""
    if not right:
        return None
    wrong = [(n, -i, value) for i, (value, n) in enumerate(counts.items()) if value not in right and n > 0]
    return max(wrong)[2] if wrong else None


def class_report(room: RoomRecord, rounds: list[dict], games: list[tuple[int, str, dict]]) -> ClassReport:
    """The report of a room (Rooms.report) and its plays (ClassPlay.results)."""
    questions = [QuestionResult(no, q.key, q.words, q.choices, dict(q.counts), list(q.right), q.revealed,
                                sum(q.counts.values()), q.seated, q.lapsed, most_common_wrong(q.counts, q.right),
                                sorted(q.votes.items()))
                 for no, q in enumerate(room.questions, 1)]
    return ClassReport(room.code, room.open_s, room.seated, room.peak, list(room.seats), questions, rounds, games)


def label_of(question: QuestionResult, value: str, lang: str) -> str:
    """A choice's label in `lang` (another language's, or the value itself, where `lang` has none)."""
    for labels in (question.choices.get(lang, []), *question.choices.values()):
        for label, choice in labels:
            if choice == value:
                return label
    return value


def words_of(question: QuestionResult, lang: str) -> str:
    """The question's words in `lang`, without the page's **bold** marks."""
    return (question.words.get(lang) or next(iter(question.words.values()), "")).replace("**", "").strip()


def report_csv(report: ClassReport, lang: str, other: str) -> str:
    """The report as CSV (CSV_COLUMNS), the class's labels in `lang`; `other`: the name of the draws' bin of every
    other token. Sections: "question" (one row per question and answer: its votes, whether it is right), "vote" (one
    row per question and seat: the seat's answer), "draws" (one row per round and bin, then the round's statistics),
    "game" (one row per revealed token), "seat" (one row per seat: when it joined). A text cell that a spreadsheet
    would read as a formula starts with an apostrophe."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    row = lambda *cells: writer.writerow([safe(c) for c in cells])  # noqa: E731
    for q in report.questions:
        words = words_of(q, lang)
        for value, n in q.counts.items():
            row("question", q.no, words, label_of(q, value, lang), _right(q, value), n, "", "",
                f"answered={q.answered}; seated={q.seated}; lapsed={q.lapsed}"
                + ("; most_common_wrong" if value == q.most_wrong else "") + ("" if q.revealed else "; not_revealed"))
        for seat, value in q.votes:
            row("vote", q.no, words, label_of(q, value, lang), _right(q, value), 1, seat, report.seat_name(seat), "")
    for r in report.rounds:
        item = f"T={r['temperature']:g}"
        for label, p, n, expected in zip(r["labels"], r["probs"], r["counts"], r["expected"]):
            row("draws", r["no"], item, other if label is None else label, "", n, "", "",
                f"p={p:.6g}; expected={expected:.4g}")
        row("draws", r["no"], item, "", "", r["n"], "", "",
            f"chi2={r['chi2']:.6g}; dof={r['dof']}; p_value={r['p_value']:.4g}; tv={r['tv']:.4g}")
    for no, text, score in report.games:
        for token, right, answered, klass, model in zip(score["tokens"], score["right"], score["answered"],
                                                        score["class_bits"], score["model_bits"]):
            row("game", no, text, token, "", right, "", "",
                f"answered={answered}; class_bits={klass:.4g}; model_bits={model:.4g}")
        row("game", no, text, "", "", len(score["tokens"]), "", "",
            f"class_total={score['class_total']:.4g}; model_total={score['model_total']:.4g}")
    for no, name, at in report.seats:
        row("seat", "", "", "", "", "", no, name, f"joined_min={at / 60:.1f}")
    return out.getvalue()


def _right(question: QuestionResult, value: str) -> str:
    return "" if not question.revealed else "yes" if value in question.right else "no"


def safe(cell) -> str:
    """A cell's text, an apostrophe before a start a spreadsheet would take for a formula (numbers as they are)."""
    if isinstance(cell, (int, float)):
        return str(cell)
    text = str(cell)
    return "'" + text if text.startswith(FORMULA_START) else text
