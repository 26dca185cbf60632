"""Shared fixtures: the real default model, loaded once for the whole test run."""
import sys
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
