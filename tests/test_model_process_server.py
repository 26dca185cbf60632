"""The page served with its model in a process of its own (app.py --model-process): a class's steps run there, the
batching view draws that process's passes, and a killed model process is started again while the page keeps
serving, the user told in the page's language."""
import os
import re
import signal

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from model.decoding.backend import LocalBackend
from model.decoding.records import SamplingConfig
from model.decoding.remote import RemoteBackend
from model.decoding.session import DecodeSession
from model.serving.sessions import ModelRegistry, SessionStore
from served import DEFAULTS, served

pytestmark = pytest.mark.server
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def apart():
    models = ModelRegistry("smollm2", apart=True)
    try:
        with served(models, SessionStore(max_sessions=6)) as (page, url, _):
            yield page, url, models
    finally:
        models.stop()


def call(client, api, *leading, **settings):
    return client.predict(*leading, **{**DEFAULTS, "temperature": 0, **settings}, api_name=api)


def step_of(result) -> int:
    return int(re.search(r'id="tbt-marker"[^>]*data-step="(\d+)"', result[0]).group(1))


def test_a_class_steps_on_the_model_process_and_outlives_its_death(apart, lm):
    page, url, models = apart
    reference = DecodeSession(lm)
    reference.backend = LocalBackend(lm)  # this process's own weights
    reference.start(PROMPT)
    for _ in range(6):
        reference.step(SamplingConfig(temperature=0))
    client = Client(url, verbose=False)
    call(client, "/start", PROMPT, "raw", "smollm2")
    assert [step_of(call(client, "/next_token")) for _ in range(3)] == [1, 2, 3]
    session = page.store.get(client.session_hash)
    assert isinstance(session.backend, RemoteBackend)
    assert session.ids == reference.ids[: reference.prompt_len + 3]
    process = models.processes()["smollm2"]
    assert models.batcher("smollm2").recent_passes(60)  # the batching view's passes: the model process's own
    pid = process.process.pid
    os.kill(pid, signal.SIGKILL)
    process.process.join(10)
    with pytest.raises(AppError, match="模型的进程停止了"):
        call(client, "/next_token", lang="zh")
    assert len(session.steps) == 3  # nothing changed but the message
    assert [step_of(call(client, "/next_token")) for _ in range(3)] == [4, 5, 6]
    assert process.process.pid != pid and process.restarts == 1
    assert session.ids == reference.ids
    assert session.steps[-1].kv == reference.steps[-1].kv
