"""Whether the app runs its models' cores in processes of their own (app.py --model-process): a class's server does (one
that listens beyond this machine), one person's page on 127.0.0.1 does not, unless the operator says."""
import pytest

import app as app_module

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("choice, host, env_host, expected", [
    ("auto", None, None, False),  # python app.py: this machine only
    ("auto", "127.0.0.1", None, False),
    ("auto", "localhost", None, False),
    ("auto", "0.0.0.0", None, True),  # make run ARGS="--host 0.0.0.0": a class's server
    ("auto", None, "0.0.0.0", True),  # the same through Gradio's own variable
    ("auto", "192.168.1.20", None, True),
    ("on", None, None, True),
    ("off", "0.0.0.0", None, False),
])
def test_a_class_server_runs_its_cores_of_their_own(choice, host, env_host, expected, monkeypatch):
    if env_host is None:
        monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    else:
        monkeypatch.setenv("GRADIO_SERVER_NAME", env_host)
    assert app_module.cores_of_their_own(choice, host) is expected
