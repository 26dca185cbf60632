"""The rooms registry: each room's code, teacher and followers, the teacher's last page, the class's guesses.

A room mirrors a teacher's page, read-only, on the students' pages. No model passes: a room keeps only what
the teacher's page was last shown (its records and rendered chart), handed over by App.render's hook. No words
and no Gradio here: a refusal is a SessionError whose key is in model/errors.py; ui/views/room.py shows it all.

Only the teacher's session id writes a room; a student's page reads it by a code that is random (secrets) and
long enough not to be guessed. While the teacher's lesson asks a question, the room holds it and each follower's
guess (one per follower, counted, never named) until the teacher reveals the answer. A room closes when its
teacher's page unloads, when the teacher closes it, or after ROOM_IDLE_S without a teacher's render; rooms and
followers are bounded.

A seat is held by a page that looks at the room: the follower's tick (ui/views/room.py, every POLL_S) is its
heartbeat, and a follower not seen for FOLLOWER_STALE_S loses its seat and its vote (its next tick takes a seat
again, and its vote back if the question is still open). A script that joins and never ticks holds a seat for that
long; joins are metered per client address (a class's burst, then one every JOIN_EVERY_S), so one address cannot
keep a room full of silent followers. A room is opened only by a page with a started session, at most
ROOMS_PER_ADDRESS per address, and lives while the teacher's wall ticks (its joined count, every few seconds): a
room whose wall has not ticked for TEACHER_STALE_S closes. What stays possible: a student with the code and a script
that ticks for every fake follower can still fill free seats and vote many times; the teacher sees the joined count
on the wall and `renew` closes the room and opens it under a new code, every follower out.
"""
from __future__ import annotations

import html
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from model.classroom.quiz import NoToken
from model.classroom.scores import ClassResult, class_result
from model.decoding.records import PrefillRecord, StepRecord
from model.errors import SessionError
from model.parse import valid_text
from model.words import LANGS

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # 32 symbols, none read as another (no I/1, O/0)
CODE_LENGTH = 8  # 32**8 = 2**40 codes: at 20 open rooms, a guess finds one once in 5e10
MAX_ROOMS = 20
MAX_FOLLOWERS = 80  # per room: a large class
ROOM_IDLE_S = 45 * 60.0  # a room whose teacher has not moved for this long closes
ROOMS_PER_ADDRESS = 4  # rooms open at once from one client address (a school's NAT: a few teachers)
FOLLOWER_STALE_S = 30.0  # a follower whose page has not ticked for this long loses its seat and its vote
TEACHER_STALE_S = 120.0  # a room whose teacher's wall has not ticked (every few seconds) for this long closes
JOIN_BURST = 120  # joins one address may make at once: a class of 80 and their reloads
JOIN_EVERY_S = 1.0  # then one more join per this many seconds
AWAY_KEPT = 2 * MAX_FOLLOWERS  # votes of followers away for a while, kept per room to give back on their return
CLOSED_KEPT = 500  # closed rooms remembered, so their followers are told it closed (not "no such room")
RESULTS_KEPT = 200  # questions whose class results a room keeps (a few lessons' worth)
SEATS_KEPT = 4 * MAX_FOLLOWERS  # seats a room's report remembers (who joined when, under which name)
MAX_NAME_CHARS = 24  # a seat's name, as a student types it


@dataclass
class Snapshot:
    """What the teacher's page shows: the records of its text (shared, never changed: a step appends a new
    record) and the open tab's chart as the page received it."""

    revision: int
    model: str
    prefill: PrefillRecord
    steps: list[StepRecord]
    ids: list[int]
    tab: str
    charts: dict[str, str]  # the teacher's open tab's chart (its figure carrier) in each language of the page
    finished: bool


@dataclass
class Question:
    """A lesson's predict-then-reveal question, as the followers see it: its words and its choices (label, value)
    in each language. A new key is a new question (its guesses start from none)."""

    key: str
    words: dict[str, str]
    choices: dict[str, list[tuple[str, str]]]
    open: bool = True  # False once the teacher revealed the answer
    scores: dict[str, dict] = field(default_factory=dict)  # at the reveal: each value's reveal record (quiz)

    def values(self) -> list[str]:
        return [value for _, value in next(iter(self.choices.values()))]


@dataclass
class Asked:
    """A question as the room asked it, for the class report: its words and choices, each seat's vote when it
    closed (revealed, or left unrevealed for the next question), the right values (at the reveal; none if never
    revealed), the seats then, and the votes set aside from seats that had lapsed (not counted, as the room did not
    count them)."""

    key: str
    words: dict[str, str]
    choices: dict[str, list[tuple[str, str]]]
    votes: dict  # follower -> the value picked (in a RoomRecord: seat number -> the value)
    counts: dict[str, int]  # each value -> the votes it got (every value, zeros too)
    right: list[str]
    revealed: bool
    seated: int
    lapsed: int


@dataclass(frozen=True)
class Split:
    """How a room's class answered its question, as one follower may see it: counts only, no names.

    counts: each value of the question -> how many picked it (every value, zeros too); mine: this follower's pick
    (None: no guess); scores: each value's reveal record (model.classroom.quiz.reveal_record: "right", and for a token
    "prob" in [0, 1] at T = 1 and "rank", 1 the most probable), empty before the reveal; followers: seats held."""

    counts: dict[str, int]
    mine: str | None
    scores: dict[str, dict]
    followers: int


@dataclass
class Room:
    code: str
    teacher: str  # the teacher's session id: the only one that writes this room
    opened: float
    touched: float
    snapshot: Snapshot | None = None
    followers: dict[str, float] = field(default_factory=dict)  # follower -> when its page last ticked
    question: Question | None = None
    guesses: dict[str, str] = field(default_factory=dict)  # follower -> the value they picked
    away: OrderedDict[str, str] = field(default_factory=OrderedDict)  # dropped follower -> its vote, given back
    address: str | None = None  # the teacher's client address (rooms are bounded per address)
    wall: float = 0.0  # when the teacher's wall last ticked
    results: OrderedDict[str, ClassResult] = field(default_factory=OrderedDict)  # question key -> the class's result
    asked: OrderedDict[str, Asked] = field(default_factory=OrderedDict)  # question key -> as it closed (the report)
    seats: OrderedDict[str, tuple[int, str, float]] = field(default_factory=OrderedDict)  # follower -> (its number
    #   in join order, the name it chose or "", when it first sat: clock s), at most SEATS_KEPT
    peak: int = 0  # the most seats held at once


class Rooms:
    """Every open room by code; who follows which. All of it under one lock, each call a few dict operations."""

    def __init__(self, clock=time.monotonic, max_rooms: int = MAX_ROOMS, max_followers: int = MAX_FOLLOWERS,
                 idle_s: float = ROOM_IDLE_S, langs=LANGS, per_address: int = ROOMS_PER_ADDRESS,
                 follower_stale_s: float = FOLLOWER_STALE_S, teacher_stale_s: float = TEACHER_STALE_S,
                 join_burst: int = JOIN_BURST, join_every_s: float = JOIN_EVERY_S):
        self.clock, self.max_rooms, self.max_followers, self.idle_s = clock, max_rooms, max_followers, idle_s
        self.langs, self.per_address = langs, per_address
        self.follower_stale_s, self.teacher_stale_s = follower_stale_s, teacher_stale_s
        self.join_burst, self.join_every_s = join_burst, join_every_s
        self._joins: dict[str, tuple[float, float]] = {}  # address -> (joins left, when counted): a token bucket
        self._rooms: dict[str, Room] = {}
        self._by_teacher: dict[str, str] = {}
        self._following: dict[str, str] = {}  # follower's session id -> code
        self._closed: OrderedDict[str, str] = OrderedDict()  # code -> why ("left", "closed", "idle")
        self._lock = threading.Lock()
        self._revision = 0
        self.on_close: list = []  # hook(code) after a room closes, run in order on a thread of their own (they may
        #                           take other locks): ClassPlay forgets the room's rounds and games

    # ---- the teacher ---------------------------------------------------------------------------------
    def open(self, teacher: str, address: str | None = None) -> str:
        """The teacher's room (a new one, or the one already open), by its code; at most per_address rooms open
        from one client address."""
        with self._lock:
            self._expire()
            if teacher in self._by_teacher:
                return self._by_teacher[teacher]
            if len(self._rooms) >= self.max_rooms:
                raise SessionError("room_full", limit=self.max_rooms)
            if address is not None and sum(r.address == address for r in self._rooms.values()) >= self.per_address:
                raise SessionError("room_too_many_here", limit=self.per_address)
            code = new_code()
            while code in self._rooms or code in self._closed:
                code = new_code()
            now = self.clock()
            self._rooms[code] = Room(code, teacher, now, now, address=address, wall=now)
            self._by_teacher[teacher] = code
            return code

    def renew(self, teacher: str, address: str | None = None) -> str:
        """The teacher's room closed and opened again under a new code: every follower is out (told the room has a
        new code) and joins again with the code on the wall; refused ('room_guess_no_room') without a room."""
        with self._lock:
            code = self._by_teacher.get(teacher)
            if code is None:
                raise SessionError("room_guess_no_room")
            self._close(code, "renewed")
        return self.open(teacher, address)

    def wall(self, teacher: str) -> tuple[str, int]:
        """The teacher's wall ticked (its heartbeat): (the room's code, the followers whose page is there)."""
        with self._lock:
            self._expire()
            room = self._rooms.get(self._by_teacher.get(teacher))
            if room is None:
                raise SessionError("room_guess_no_room")
            room.wall = self.clock()
            self._sweep(room)
            return room.code, len(room.followers)

    def close(self, teacher: str, why: str = "closed") -> None:
        """The teacher's room closes (why: 'closed' by the button, 'left' when the page unloads)."""
        with self._lock:
            code = self._by_teacher.get(teacher)
            if code is not None:
                self._close(code, why)

    def room_of(self, teacher: str) -> str | None:
        with self._lock:
            return self._by_teacher.get(teacher)

    def on_render(self, user: str, session, view, outputs: list, draw) -> None:
        """App.render's hook (ui/state.py): a teacher's page was just shown `outputs`; keep them for the followers,
        with the chart drawn again (`draw(lang)`, no model pass) in the page's other languages. Plain values only:
        `view` has .tab and .lang; outputs[0] is the text panel (None: only the chart was drawn again), outputs[1]
        the open tab's chart carrier (an HTML string)."""
        code = self._by_teacher.get(user)  # (a dict read: every user's render passes here)
        if code is None or not session.started:
            return
        charts = {view.lang: outputs[1], **{lang: draw(lang) for lang in self.langs if lang != view.lang}}
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                return
            if outputs[0] is None and room.snapshot is not None:  # only the chart was drawn again (a tab, a knob)
                steps, ids, prefill = room.snapshot.steps, room.snapshot.ids, room.snapshot.prefill
            else:
                steps, ids, prefill = list(session.steps), list(session.ids), session.prefill
            self._revision += 1
            room.snapshot = Snapshot(self._revision, session.lm.name, prefill, steps, ids, view.tab, charts,
                                     bool(steps) and session.finished)
            room.touched = self.clock()

    def ask(self, teacher: str, question: Question | None) -> None:
        """The teacher's lesson shows `question` (None: a step without one); its followers may guess until the
        reveal. The same question asked again keeps its guesses (the teacher went back to it)."""
        with self._lock:
            room = self._rooms.get(self._by_teacher.get(teacher))
            if room is None:
                return
            if question is None or room.question is None or room.question.key != question.key:
                if room.question is not None and room.question.open and room.guesses:  # asked, never revealed
                    self._keep_asked(room, room.question, revealed=False)
                room.guesses, room.away = {}, OrderedDict()
            room.question = question
            room.touched = self.clock()

    def reveal(self, teacher: str, score=None) -> None:
        """The teacher revealed the answer: no more guesses. `score(value)`: the reveal record of one of the
        question's values (model.classroom.quiz.reveal_record, no model pass), kept so each follower sees how its
        own guess did; it runs outside the lock, once per value, before the question closes."""
        with self._lock:
            room = self._rooms.get(self._by_teacher.get(teacher))
            question = room.question if room is not None else None
        if question is None:
            return
        scores = {}
        for value in question.values() if score is not None else ():
            try:
                scores[value] = score(value)
            except NoToken:  # a value the record cannot say (a text with no token): it shows no figure
                continue
        with self._lock:
            question.scores, question.open = scores, False
            if score is not None and room.question is question:  # the class's result, counted as it closes
                room.results.pop(question.key, None)
                room.results[question.key] = class_result(room.guesses, scores, len(room.followers))
                while len(room.results) > RESULTS_KEPT:
                    room.results.popitem(last=False)
                self._keep_asked(room, question, revealed=True)

    def results(self, teacher: str) -> dict[str, ClassResult]:
        """The class's result of each question the teacher's room revealed, by question key (counts, no names);
        {} without a room."""
        with self._lock:
            room = self._rooms.get(self._by_teacher.get(teacher))
            return dict(room.results) if room is not None else {}

    def tally(self, teacher: str) -> tuple[Question | None, dict[str, int], int]:
        """The question of the teacher's room, the count of each of its values (every value, zeros too) and the
        number of followers; refused ('room_guess_no_room') without a room."""
        with self._lock:
            room = self._rooms.get(self._by_teacher.get(teacher))
            if room is None:
                raise SessionError("room_guess_no_room")
            question = room.question
            if question is None:
                return None, {}, len(room.followers)
            counts = {value: 0 for value in room.question.values()}
            for value in room.guesses.values():
                counts[value] += 1
            return room.question, counts, len(room.followers)

    # ---- a follower ----------------------------------------------------------------------------------
    def join(self, follower: str, code, address: str | None = None, name=None) -> str:
        """Follow the room of `code` (typed by a student: case and spaces forgiven) from a page at `address`, under
        the seat name `name` the student typed (optional: none, the seat is known by its number); a refusal naming
        why not. The page's ticks (state) keep the seat."""
        code = normal_code(valid_text(code, "room_code_invalid_text"))
        name = seat_name(name)
        with self._lock:
            self._expire()
            if code in self._closed:
                raise closed_refusal(self._closed[code])
            room = self._rooms.get(code)
            if room is None:
                # the code as typed, shown as text: the page renders a refusal as (sanitised) HTML
                raise SessionError("room_unknown", code=html.escape(code) or "—")
            if room.teacher == follower:
                raise SessionError("room_own")
            self._take_seat(room, follower, address)
            self._name_seat(room, follower, name)
            return code

    def guess(self, follower: str, value) -> str:
        """A follower's guess at the teacher's question (a later one replaces it); a refusal when there is no open
        question or `value` is not one of its choices."""
        with self._lock:
            room = self._seated(follower)
            question = room.question
            if question is None:
                raise SessionError("room_guess_no_question")
            if not question.open:
                raise SessionError("room_guess_revealed")
            if value not in question.values():
                raise SessionError("room_guess_unknown")
            room.guesses[follower] = value
            room.followers[follower] = self.clock()
            return value

    def leave(self, follower: str) -> None:
        with self._lock:
            self._leave(follower)

    def state(self, follower: str, address: str | None = None) -> tuple[str, Snapshot | None, Question | None, str | None]:
        """The follower's tick, its heartbeat: (code, the teacher's last snapshot, the question asked, this
        follower's guess at it) of the room `follower` follows. A follower whose seat lapsed takes one again (as a
        join from `address`). Refused ('room_closed') once it closed, ('room_not_following') if they follow none."""
        with self._lock:
            self._expire()
            code = self._following.get(follower)
            if code is None:
                raise SessionError("room_not_following")
            room = self._rooms.get(code)
            if room is None:
                self._following.pop(follower, None)
                raise closed_refusal(self._closed.get(code, "closed"))
            self._sweep(room)
            if follower in room.followers:
                room.followers[follower] = self.clock()
            else:
                self._take_seat(room, follower, address)
            return code, room.snapshot, room.question, room.guesses.get(follower)

    def code_of(self, follower: str) -> str:
        """The code of the open room `follower` follows, without a tick: no heartbeat, and the notice that the room
        closed is left for the room's own view (state) to give. Refused ('room_closed', 'room_not_following')."""
        with self._lock:
            code = self._following.get(follower)
            if code is None:
                raise SessionError("room_not_following")
            if code not in self._rooms:
                raise closed_refusal(self._closed.get(code, "closed"))
            return code

    def seat_of(self, follower: str) -> str:
        """The code of the open room where `follower` holds a seat, without a tick (the page's tick is the heartbeat).
        Every vote asks it (a lesson's guess, a class draw, a game's guess), so only a seated follower votes and the
        seats' cap bounds the voters. Refused as code_of, and ('room_seat_lapsed') when the follower's page has not
        ticked for follower_stale_s: its next tick takes the seat back (state), then it may vote again."""
        with self._lock:
            return self._seated(follower).code

    def split(self, follower: str) -> Split:
        """How the class of `follower`'s room answered, and this follower's own pick (see Split)."""
        with self._lock:
            room = self._rooms.get(self._following.get(follower))
            if room is None or room.question is None:
                raise SessionError("room_guess_no_question")
            return Split(counted(room), room.guesses.get(follower), dict(room.question.scores), len(room.followers))

    def followers(self, code: str) -> int:
        """The seats of room `code` held by a page that ticked lately."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                return 0
            self._sweep(room)
            return len(room.followers)

    def __len__(self) -> int:
        return len(self._rooms)

    def report(self, teacher: str) -> "RoomRecord":
        """What the class report of the teacher's room says, copied (no session ids: each seat by its number and
        the name its student chose); refused ('report_no_room') without a room. The open question is counted as it
        stands."""
        with self._lock:
            room = self._rooms.get(self._by_teacher.get(teacher))
            if room is None:
                raise SessionError("report_no_room")
            self._sweep(room)
            asked = list(room.asked.values())
            question = room.question
            if question is not None and question.key not in room.asked and (question.open or room.guesses):
                asked.append(self._asked(room, question, revealed=not question.open))
            number = {follower: seat[0] for follower, seat in room.seats.items()}
            questions = [replace(a, votes={number[f]: v for f, v in a.votes.items() if f in number}) for a in asked]
            seats = [(no, name, at - room.opened) for no, name, at in room.seats.values()]
            return RoomRecord(room.code, self.clock() - room.opened, len(room.followers), room.peak, seats, questions)

    # ---- inside the lock -----------------------------------------------------------------------------
    def _asked(self, room: Room, question: Question, revealed: bool) -> Asked:
        right = [value for value, record in question.scores.items() if record.get("right") is True]
        lapsed = sum(1 for follower in room.away if follower not in room.guesses)
        counts = {value: 0 for value in question.values()}
        for value in room.guesses.values():
            counts[value] += 1
        return Asked(question.key, dict(question.words), dict(question.choices), dict(room.guesses), counts, right,
                     revealed, len(room.followers), lapsed)

    def _keep_asked(self, room: Room, question: Question, revealed: bool) -> None:
        room.asked.pop(question.key, None)
        room.asked[question.key] = self._asked(room, question, revealed)
        while len(room.asked) > RESULTS_KEPT:
            room.asked.popitem(last=False)

    def _name_seat(self, room: Room, follower: str, name: str) -> None:
        """The seat's name as its student chose it (a name another seat holds gets its seat number after it)."""
        seat = room.seats.get(follower)
        if seat is None or not name:
            return
        taken = {other[1].casefold() for f, other in room.seats.items() if f != follower}
        room.seats[follower] = (seat[0], name if name.casefold() not in taken else f"{name} ({seat[0]})", seat[2])

    def _seated(self, follower: str) -> Room:
        """The open room where `follower` holds a seat (see seat_of); a closed room is told, not forgotten."""
        code = self._following.get(follower)
        if code is None:
            raise SessionError("room_not_following")
        room = self._rooms.get(code)
        if room is None:
            raise closed_refusal(self._closed.get(code, "closed"))
        self._sweep(room)
        if follower not in room.followers:
            raise SessionError("room_seat_lapsed", seconds=round(self.follower_stale_s))
        return room

    def _leave(self, follower: str) -> None:
        code = self._following.pop(follower, None)
        if code in self._rooms:
            self._rooms[code].followers.pop(follower, None)
            self._rooms[code].guesses.pop(follower, None)
            self._rooms[code].away.pop(follower, None)

    def _take_seat(self, room: Room, follower: str, address: str | None) -> None:
        """`follower` sits in `room` (seen now), leaving any other; its vote back if it was away; refused when the
        room is full or `address` joins faster than the meter allows."""
        self._sweep(room)
        if follower not in room.followers:
            if len(room.followers) >= self.max_followers:
                raise SessionError("room_no_seats", limit=self.max_followers)
            self._meter(address)
        if self._following.get(follower) != room.code:
            self._leave(follower)
        room.followers[follower] = self.clock()
        self._following[follower] = room.code
        if follower not in room.seats and len(room.seats) < SEATS_KEPT:
            room.seats[follower] = (len(room.seats) + 1, "", self.clock())
        room.peak = max(room.peak, len(room.followers))
        vote = room.away.pop(follower, None)
        if vote is not None and room.question is not None and room.question.open:
            room.guesses[follower] = vote

    def _meter(self, address: str | None) -> None:
        """One join from `address`: a bucket of join_burst, refilled by one every join_every_s."""
        if address is None:
            return
        now = self.clock()
        left, then = self._joins.get(address, (float(self.join_burst), now))
        left = min(float(self.join_burst), left + (now - then) / self.join_every_s)
        if left < 1:
            raise SessionError("room_join_rate", seconds=max(1, round((1 - left) * self.join_every_s)))
        self._joins[address] = (left - 1, now)
        if len(self._joins) > 10_000:  # addresses long quiet: their buckets are full again
            full = [a for a, (n, t) in self._joins.items() if n + (now - t) / self.join_every_s >= self.join_burst]
            for a in full:
                del self._joins[a]

    def _sweep(self, room: Room) -> None:
        """Followers whose page has not ticked for follower_stale_s lose their seat; their vote is kept aside."""
        now = self.clock()
        for follower in [f for f, seen in room.followers.items() if now - seen > self.follower_stale_s]:
            del room.followers[follower]
            vote = room.guesses.pop(follower, None)
            if vote is not None:
                room.away[follower] = vote
                while len(room.away) > AWAY_KEPT:
                    room.away.popitem(last=False)

    def _close(self, code: str, why: str) -> None:
        room = self._rooms.pop(code)
        self._by_teacher.pop(room.teacher, None)
        self._closed[code] = why
        while len(self._closed) > CLOSED_KEPT:
            self._closed.popitem(last=False)
        # its followers keep their entry in _following: their next look at the room tells them it closed
        if self.on_close:  # (outside this lock: a hook's own lock may be held by a caller of ours), in their order
            threading.Thread(target=lambda: [hook(code) for hook in list(self.on_close)], daemon=True).start()

    def _expire(self) -> None:
        now = self.clock()
        for code in [c for c, r in self._rooms.items() if now - r.touched > self.idle_s]:
            self._close(code, "idle")
        for code in [c for c, r in self._rooms.items() if now - r.wall > self.teacher_stale_s]:
            self._close(code, "left")


@dataclass
class RoomRecord:
    """A room as its class report says it: its code, minutes open, seats now and at most, every seat (number, the
    name its student chose or "", when it first sat: s after the room opened) and every question asked (Asked, its
    votes by seat number)."""

    code: str
    open_s: float
    seated: int
    peak: int
    seats: list[tuple[int, str, float]]
    questions: list[Asked]


def seat_name(name) -> str:
    """A seat's name as a student typed it: spaces trimmed and runs of them made one, at most MAX_NAME_CHARS; ''
    for none. Refused ('room_name_invalid', 'room_name_invalid_text', 'room_name_too_long') otherwise."""
    if name is None:
        return ""
    if not isinstance(name, str) or any(ord(c) < 32 or 0x7f <= ord(c) < 0xa0 for c in name):
        raise SessionError("room_name_invalid")
    name = " ".join(valid_text(name, "room_name_invalid_text").split())
    if len(name) > MAX_NAME_CHARS:
        raise SessionError("room_name_too_long", limit=MAX_NAME_CHARS)
    return name


def counted(room: Room) -> dict[str, int]:
    """How many of the room's seated followers picked each value of its question (every value, zeros too)."""
    counts = {value: 0 for value in room.question.values()}
    for value in room.guesses.values():
        counts[value] += 1
    return counts


def closed_refusal(why: str) -> SessionError:
    """What a follower of a closed room is told: a new code (renewed) or closed."""
    return SessionError("room_renewed") if why == "renewed" else SessionError("room_closed")


def new_code() -> str:
    """CODE_LENGTH symbols of CODE_ALPHABET, each from secrets (not random: a room's code is its only key)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(code) -> str:
    """A typed code as the registry keys it: upper case, without spaces or dashes; '' if it is not text."""
    return re.sub(r"[\s\-]", "", code).upper()[:64] if isinstance(code, str) else ""
