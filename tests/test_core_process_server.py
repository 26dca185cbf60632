"""The page served with its model's core in a process of its own (app.py --model-process): a class's steps run there,
the web process holds no weights, the batching view draws that process's passes, and a killed core process is
started again while the page keeps serving: a click running there when it died is told so in the page's language,
every other click goes on."""
import os
import re
import signal

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

import threading
import time

from model.decoding.backend import CoreBackend
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from model.serving.core_process import ProcessCore
from model.serving.sessions import ModelRegistry, SessionStore
from served import DEFAULTS, served

pytestmark = pytest.mark.server
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def apart():
    models = ModelRegistry("smollm2", processes=True)
    try:
        with served(models, SessionStore(max_sessions=6)) as (page, url, _):
            yield page, url, models
    finally:
        models.stop()


def call(client, api, *leading, **settings):
    return client.predict(*leading, **{**DEFAULTS, "temperature": 0, **settings}, api_name=api)


def step_of(result) -> int:
    return int(re.search(r'id="tbt-marker"[^>]*data-step="(\d+)"', result[0]).group(1))


def test_a_class_steps_on_the_core_process_and_outlives_its_death(apart, lm):
    page, url, models = apart
    reference = DecodeSession(lm)  # this process's own weights (the test's), nothing computed ahead
    reference.start(PROMPT)
    for _ in range(6):
        reference.step(SamplingConfig(temperature=0))
    assert models.get("smollm2").model is None  # the web process holds no copy of the weights
    client, measuring = Client(url, verbose=False), Client(url, verbose=False)
    call(client, "/start", PROMPT, "raw", "smollm2")
    assert [step_of(call(client, "/next_token")) for _ in range(3)] == [1, 2, 3]
    session = page.store.get(client.session_hash)
    assert isinstance(session.backend, CoreBackend) and isinstance(session.backend.core, ProcessCore)
    assert session.ids == reference.ids[: reference.prompt_len + 3]
    core = models.processes()["smollm2"]
    assert core.recent_passes(60)  # the batching view's passes: the core process's own
    call(measuring, "/start", PROMPT * 60, "raw", "smollm2")
    told = []

    def measure():  # a measurement of seconds, running in the core process when it dies
        try:
            measuring.predict("zh", api_name="/measure")
        except AppError as err:
            told.append(str(err))

    running = threading.Thread(target=measure)
    running.start()
    time.sleep(1.5)
    pid = core.process.pid
    os.kill(pid, signal.SIGKILL)
    core.process.join(10)
    running.join(120)
    assert len(told) == 1 and "模型的进程停止了" in told[0]  # in the page's language
    # the other page's next click: its text held again in the new process, the step taken, nothing said
    assert [step_of(call(client, "/next_token")) for _ in range(3)] == [4, 5, 6]
    assert core.process.pid != pid and core.restarts == 1
    assert session.ids == reference.ids
    assert session.steps[-1].kv == reference.steps[-1].kv
