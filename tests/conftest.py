"""Shared fixtures: the real default model, loaded once for the whole test run."""
import contextlib
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.fixture(scope="session")
def lm():
    from model.loading import load_model

    return load_model("smollm2")


@pytest.fixture
def session(lm):
    from model.session import DecodeSession

    return DecodeSession(lm)


@contextlib.contextmanager
def _held_elsewhere(session):
    """For the block, `session` is held by another request thread, as by a step in progress there."""
    holding, release = threading.Event(), threading.Event()

    def hold():
        with session._locked():
            holding.set()
            release.wait(10)

    worker = threading.Thread(target=hold)
    worker.start()
    holding.wait(10)
    try:
        yield
    finally:
        release.set()
        worker.join()


@pytest.fixture
def held_elsewhere():
    """`with held_elsewhere(session):` a step of that session is under way on another thread."""
    return _held_elsewhere
