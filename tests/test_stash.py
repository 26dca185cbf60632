"""The views' one per-user stash (ui/stash.py): each user sees only their own values, a page that leaves takes all of
its values with it (their cleanups run), and what no page unloads is bounded like the sessions. No model."""
import pytest

from ui.stash import Stash

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_each_user_sees_only_their_own_values():
    stash = Stash()
    stash.put("ann", "beams", "ann's search")
    stash.put("bob", "beams", "bob's search")
    stash.put("ann", "constraints", "ann's run")
    assert stash.get("ann", "beams") == "ann's search" and stash.get("bob", "beams") == "bob's search"
    assert stash.get("bob", "constraints") is None and stash.get("bob", "constraints", "none") == "none"
    assert stash.get("cy", "beams") is None and len(stash) == 2  # asking keeps nothing for a user with nothing


def test_leaving_drops_every_value_of_the_user_and_runs_their_cleanups():
    stash, cleaned = Stash(), []
    stash.put("ann", "beams", 1)
    stash.put("ann", "session", "folder", cleanup=lambda: cleaned.append("ann's folder"))
    stash.put("bob", "session", "folder", cleanup=lambda: cleaned.append("bob's folder"))
    stash.leave("ann")
    assert stash.get("ann", "beams") is None and stash.get("ann", "session") is None
    assert cleaned == ["ann's folder"] and stash.get("bob", "session") == "folder"
    stash.leave("ann")  # a second unload, or one of a user who kept nothing: nothing to do
    assert len(stash) == 1


def test_a_replaced_or_forgotten_value_is_cleaned_up_and_a_taken_one_is_not():
    stash, cleaned = Stash(), []
    stash.put("ann", "session", "old", cleanup=lambda: cleaned.append("old"))
    stash.put("ann", "session", "new", cleanup=lambda: cleaned.append("new"))
    assert cleaned == ["old"]
    stash.forget("ann", "session", only="old")  # no longer the user's: left as it is
    assert stash.get("ann", "session") == "new" and cleaned == ["old"]
    stash.forget("ann", "session", only="new")
    assert stash.get("ann", "session") is None and cleaned == ["old", "new"] and len(stash) == 0
    stash.put("ann", "speculative", "run", cleanup=lambda: cleaned.append("run"))
    assert stash.take("ann", "speculative") == "run" and stash.take("ann", "speculative") is None
    assert cleaned == ["old", "new"] and len(stash) == 0  # taken: the caller has it, nothing was cleaned up


def test_a_user_idle_as_long_as_a_session_lives_is_dropped():
    clock, cleaned = Clock(), []
    stash = Stash(idle_seconds=60, clock=clock)
    stash.put("gone", "session", "folder", cleanup=lambda: cleaned.append("gone"))
    stash.put("here", "beams", 1)
    clock.now = 50
    assert stash.get("here", "beams") == 1  # a read keeps a user
    clock.now = 70
    stash.put("new", "beams", 2)  # every put drops who was idle too long
    assert stash.get("gone", "session") is None and cleaned == ["gone"]
    assert stash.get("here", "beams") == 1 and len(stash) == 2


def test_past_the_cap_the_least_recently_used_user_is_dropped():
    clock = Clock()
    stash = Stash(max_users=2, clock=clock)
    for at, user in enumerate(["a", "b"]):
        clock.now = at
        stash.put(user, "beams", user)
    clock.now = 2
    stash.get("a", "beams")  # "a" used again: "b" is now the least recently used
    clock.now = 3
    stash.put("c", "beams", "c")
    assert [stash.get(u, "beams") for u in "abc"] == ["a", None, "c"] and len(stash) == 2
