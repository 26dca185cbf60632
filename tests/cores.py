"""Helpers of the tests that look inside the model's core (model/decoding/core.py): a session's sequence there, and
the model's one scheduler with the settings a test needs, its counters fresh."""
import contextlib

from model.decoding.scheduler import scheduler_of


def sequence(session):
    """The session's Sequence in its core (a core in this process): its cache, its pass ahead, its hit counts."""
    return session.backend.core._sequence(session.backend.key)


def computed_ahead(session, cfg) -> bool:
    """Whether the pass of the token `cfg` draws next is computed ahead: started now by prefetch(), or by the core
    already, with the change before (a session made with ahead=True)."""
    return session.prefetch(cfg) or session.prefetched == session.preview(cfg).chosen.id


SETTINGS = ("max_batch", "gather_s", "gather_after", "recent_s")


@contextlib.contextmanager
def scheduling(lm, **settings):
    """The model's scheduler for the block, with these settings (max_batch, gather_s, gather_after, recent_s; the
    others as they are), its batch sizes and its record of who submitted lately from empty; every setting put back
    after, and the worker woken (a pass that gathered under the test's settings goes)."""
    scheduler = scheduler_of(lm.model)
    before = {name: getattr(scheduler, name) for name in SETTINGS}
    assert set(settings) <= set(SETTINGS), settings
    with scheduler._cond:
        for name, value in settings.items():
            setattr(scheduler, name, value)
        scheduler.batch_sizes.clear()
        scheduler._submitted.clear()
    try:
        yield scheduler
    finally:
        with scheduler._cond:
            for name, value in before.items():
                setattr(scheduler, name, value)
            scheduler._cond.notify_all()


def settle_ahead(session) -> None:
    """The pass the core computes ahead for `session` taken back (or waited for if it runs), as the session's next
    change would; the session then knows nothing is asked ahead."""
    sequence(session).settle()
    session._asked_ahead = None
