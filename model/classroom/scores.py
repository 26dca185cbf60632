"""A lesson's score: which questions a student answered right, and how a room's class answered each question.

Pure records, no gradio and no words (ui/views/lesson.py says them). A student's results are kept by the page per
lesson as {step index (str): right (bool)}: only a committed guess counts (a teacher's Reveal without a guess
does not). A room's class is counted at each reveal from the guesses the room already holds (counts, no names).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClassResult:
    """How a room's class answered one question at its reveal: followers seated then, by outcome (no names)."""

    right: int
    wrong: int
    no_answer: int  # seated, no guess sent


@dataclass(frozen=True)
class QuestionScore:
    """One question of a lesson: its step (0-based) and the student's result (None: not answered with a guess)."""

    step: int
    right: bool | None


@dataclass(frozen=True)
class LessonScore:
    """A student's score on a lesson: `right` of `total` questions, and each question's result in step order."""

    right: int
    total: int
    questions: tuple[QuestionScore, ...]


def class_result(guesses: dict[str, str], scores: dict[str, dict], seated: int) -> ClassResult:
    """The class's result on a question: `guesses` (follower -> the value picked), `scores` (value -> its reveal
    record, model.classroom.quiz.reveal_record, "right" a bool), `seated` (followers holding a seat). A guess whose
    value has no record (a text with no token) counts as wrong: it is not the answer."""
    right = sum(1 for value in guesses.values() if scores.get(value, {}).get("right") is True)
    return ClassResult(right=right, wrong=len(guesses) - right, no_answer=max(seated - len(guesses), 0))


def read_results(results, steps: int) -> dict[str, bool]:
    """A lesson's results as the browser sent them back ({step index as text: right}), the malformed parts left
    out: a key that is no step of a lesson of `steps` steps, a value that is not a bool."""
    if not isinstance(results, dict):
        return {}
    keys = {str(i) for i in range(steps)}
    return {key: value for key, value in results.items() if key in keys and isinstance(value, bool)}


def lesson_score(lesson: dict, results: dict[str, bool]) -> LessonScore:
    """The score on `lesson` (a checked lesson) from `results` ({step index as text: right}): every question of
    the lesson counted, right or wrong or not answered."""
    questions = tuple(QuestionScore(i, results.get(str(i))) for i, step in enumerate(lesson["steps"])
                      if step["predict"] is not None)
    return LessonScore(right=sum(1 for q in questions if q.right is True), total=len(questions), questions=questions)
