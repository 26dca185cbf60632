"""What one student's page did, kept for their summary (issue 49): the texts they wrote with their settings, the
steps they forced or went back on, the lesson questions they answered (their answer, the right one, and the
engine's reveal record that says why), their score, the charts they kept. No words and no Gradio: viz/summary.py
says and draws a Summary, ui/summary.py keeps one Journal per page in the app's stash.

The journal is told what the page was shown (`saw`, after every render a page handler asks for: App.on_render),
not which button was pressed, so every way a text changes (Next, Force, Back, a click on a chip, a branch switched,
a lesson step, a trace played back) is counted the same way: the text is compared with the one seen last. A text
is its (model, prompt, mode); a prompt started again continues its text (a lesson's steps restart one prompt).
Compared as (token id, forced) per generated token: the common beginning stays; whatever followed it in the text
seen last was gone back on; whatever follows it now is new, and a new forced token is a forced step.

Everything is bounded (MAX_*): a summary is a page a student prints, and a class's journals live in one server.
"""
from __future__ import annotations

import copy
import json
import threading
from dataclasses import asdict, dataclass, field

from model.decoding.records import SETTING_NAMES, StepRecord
from model.errors import SessionError
from model.parse import valid_notes

MAX_TEXTS = 24  # texts a journal keeps (the newest)
MAX_EVENTS = 60  # forced steps, and goings back, kept per text (the newest)
MAX_SETTINGS_RUNS = 20  # changes of the settings listed per text
MAX_ANSWERS = 120  # questions answered (a lesson's and a room's)
MAX_LESSONS = 20  # lessons scored
MAX_KEPT = 6  # charts kept
MAX_CHART_BYTES = 200_000  # one kept chart's JSON, per language (a candidates chart: about 20 KB)
UNDONE_SHOWN = 12  # tokens of a stretch gone back on that the summary lists
TEXT_CHARS = 4_000  # characters of a prompt or a text a journal keeps


@dataclass
class Forced:
    """A step whose token the student picked instead of the draw."""

    step: int  # 1-based, in the text
    token: str  # its display ("␣Paris")
    rank: int  # its rank at T = 1 (1: the model's favourite)
    prob: float  # its probability at T = 1, in [0, 1]


@dataclass
class WentBack:
    """The student went back on steps: the text was at `from_step`, then at `to_step` (< from_step)."""

    from_step: int
    to_step: int
    undone: list[str]  # the first UNDONE_SHOWN tokens undone (displays)


@dataclass
class SettingsRun:
    """Steps first..last (1-based) of a text were taken with these settings (a SamplingConfig)."""

    first: int
    last: int
    config: object

    @property
    def settings(self) -> dict:
        """{SETTING_NAMES: value}."""
        values = asdict(self.config)
        return {name: values[name] for name in SETTING_NAMES}


@dataclass
class Text:
    """One text the student wrote: its prompt and model, what it is now, and what happened along the way."""

    model: str
    prompt: str
    chat: bool
    text: str = ""  # the generated text as last seen
    steps: int = 0
    finished: bool = False
    settings: list[SettingsRun] = field(default_factory=list)
    forced: list[Forced] = field(default_factory=list)
    backs: list[WentBack] = field(default_factory=list)
    seen: list[int] = field(default_factory=list)  # each step's token id as last seen
    displays: list[str] = field(default_factory=list)  # each step's token as last seen ("␣Paris")


@dataclass
class Answer:
    """A question the student answered (or saw revealed without an answer), in a lesson or in a room.

    question and choices per language ({lang: words}, {lang: [(label, value)]}); guess: the value they picked
    (None: no answer); record: the reveal record of their guess (model.classroom.quiz.reveal_record: "right", and
    what the reveal says), or of the right answer when they gave none; right: the right value(s)."""

    key: str
    where: str  # "lesson" or "room"
    title: dict[str, str]  # the lesson's title per language ({} in a room)
    step: int | None  # the lesson's step (0-based); None in a room
    question: dict[str, str]
    choices: dict[str, list[tuple[str, str]]]
    guess: str | None
    record: dict
    right: list[str]


@dataclass
class Scored:
    """A lesson's score: `right` of its `total` questions."""

    lesson: str
    title: dict[str, str]
    right: int
    total: int


@dataclass
class KeptChart:
    """A chart the student kept: the tab it was on (its title's key), the step, the text then, its figure in each
    language of the page ({lang: {"data", "layout"}})."""

    tab_title: str
    step: int
    text: str
    figures: dict[str, dict]


@dataclass
class Summary:
    """Everything one student's summary shows (copies: the journal goes on)."""

    texts: list[Text]
    answers: list[Answer]
    scores: list[Scored]
    notes: str
    charts: list[KeptChart]


class Journal:
    """One page's record of what its student did (module docstring). Safe to call from any request thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self.texts: list[Text] = []  # oldest first
        self.answers: dict[str, Answer] = {}  # by question key, in the order first answered
        self.scores: dict[str, Scored] = {}
        self.charts: list[KeptChart] = []

    # ---- what the page was shown ----------------------------------------------------------------------
    def saw(self, model: str, prompt: str, chat: bool, steps: list[StepRecord], finished: bool) -> None:
        """The page now shows this text: `steps` its step records (never changed: a step appends a new one).

        Called after every render: a render that changed nothing costs a comparison of two lists of ints, a new
        step the work of that step (about 10 us at any length), not of the whole text."""
        now = [s.distribution.chosen.id for s in steps]
        with self._lock:
            entry = self._text(model, prompt[:TEXT_CHARS], chat)
            if now == entry.seen and entry.finished == finished:
                return
            same = len(entry.seen) if now[:len(entry.seen)] == entry.seen else _common(entry.seen, now)
            if same < len(entry.seen):
                entry.backs.append(WentBack(len(entry.seen), same, entry.displays[same:same + UNDONE_SHOWN]))
                del entry.displays[same:]
                _cut_runs(entry.settings, same)
            for s in steps[same:]:
                dist = s.distribution
                if dist.forced:
                    entry.forced.append(Forced(s.step, s.token.display, dist.chosen_rank, dist.chosen_candidate.prob_t1))
                entry.displays.append(s.token.display)
                if entry.settings and entry.settings[-1].config == dist.config and entry.settings[-1].last == s.step - 1:
                    entry.settings[-1].last = s.step
                else:
                    entry.settings.append(SettingsRun(s.step, s.step, dist.config))
            del entry.backs[:-MAX_EVENTS], entry.forced[:-MAX_EVENTS], entry.settings[:-MAX_SETTINGS_RUNS]
            entry.seen, entry.steps, entry.finished = now, len(now), finished
            entry.text = steps[-1].text[:TEXT_CHARS] if steps else ""

    def _text(self, model: str, prompt: str, chat: bool) -> Text:
        """The text of this model, prompt and mode (the newest such), made the newest; a new one past MAX_TEXTS
        lets the oldest go."""
        for i in range(len(self.texts) - 1, -1, -1):
            entry = self.texts[i]
            if (entry.model, entry.prompt, entry.chat) == (model, prompt, chat):
                self.texts.append(self.texts.pop(i))
                return entry
        self.texts.append(Text(model, prompt, chat))
        del self.texts[:-MAX_TEXTS]
        return self.texts[-1]

    # ---- questions, scores, charts ------------------------------------------------------------------------
    def answered(self, answer: Answer) -> None:
        """A question answered (or revealed): a later answer to the same question replaces it."""
        with self._lock:
            self.answers.pop(answer.key, None)
            self.answers[answer.key] = answer
            while len(self.answers) > MAX_ANSWERS:
                self.answers.pop(next(iter(self.answers)))

    def scored(self, score: Scored) -> None:
        with self._lock:
            self.scores.pop(score.lesson, None)
            self.scores[score.lesson] = score
            while len(self.scores) > MAX_LESSONS:
                self.scores.pop(next(iter(self.scores)))

    def keep(self, chart: KeptChart) -> int:
        """Keep a chart; refused past MAX_KEPT ('keep_full') or for a chart larger than MAX_CHART_BYTES
        ('keep_too_large'). Returns how many are kept."""
        size = max(len(json.dumps(fig, separators=(",", ":"))) for fig in chart.figures.values())
        if size > MAX_CHART_BYTES:
            raise SessionError("keep_too_large", size=size, limit=MAX_CHART_BYTES)
        with self._lock:
            if len(self.charts) >= MAX_KEPT:
                raise SessionError("keep_full", limit=MAX_KEPT)
            self.charts.append(chart)
            return len(self.charts)

    def summary(self, notes: str = "") -> Summary:
        """A copy of everything, with the student's notes (valid_notes)."""
        with self._lock:
            return Summary(copy.deepcopy(self.texts), copy.deepcopy(list(self.answers.values())),
                           copy.deepcopy(list(self.scores.values())), valid_notes(notes), list(self.charts))


def _common(before: list[int], after: list[int]) -> int:
    """How many steps two texts share from the start."""
    same = 0
    for a, b in zip(before, after):
        if a != b:
            break
        same += 1
    return same


def _cut_runs(runs: list[SettingsRun], steps: int) -> None:
    """The runs of a text cut back to its first `steps` steps."""
    while runs and runs[-1].first > steps:
        runs.pop()
    if runs:
        runs[-1].last = min(runs[-1].last, steps)


def right_values(record: dict) -> list[str]:
    """The right answer(s) of a question from any of its reveal records (model.classroom.quiz.reveal_record), as
    choice values where the question's choices name them: a measured or searched question's "answer" (none when
    too noisy to say), top-p's "yes" / "no", a cache's bytes; a next-token question's most likely token (its
    display, "␣Paris": the form its choices are labelled in)."""
    kind = record.get("kind")
    if "answer" in record:
        return [] if record["answer"] is None else [str(record["answer"])]
    if kind == "kept_by_top_p":
        return ["yes" if record["kept"] else "no"]
    if kind == "cache_size":
        return [str(record["bytes"])]
    if kind == "next_token":
        return [record["top"]]
    return []
