"""ModelRegistry: a model loading for one user holds up no one on a loaded model, and loads once; load errors
reach the page without a server path."""
import threading

import pytest

import model.serving.sessions as sessions
from model.errors import SessionError
from model.decoding.loading import ModelLoadError, resolve
from model.serving.sessions import ModelRegistry


@pytest.fixture
def slow_load(lm, monkeypatch):
    """load_model("slow") waits for `release` (a first load's tens of seconds); returns (release, loads started)."""
    release, calls = threading.Event(), []

    def load(name, weights=True):
        calls.append(name)
        assert release.wait(30), "the test never released the load"
        return lm

    monkeypatch.setattr(sessions, "available_models", lambda: ["smollm2", "slow"])
    monkeypatch.setattr(sessions, "load_model", load)
    yield release, calls
    release.set()


def in_thread(fn) -> tuple[threading.Thread, list]:
    out = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


@pytest.mark.model
def test_a_loaded_model_is_served_while_another_loads_and_that_one_loads_once(lm, slow_load):
    release, calls = slow_load
    registry = ModelRegistry("smollm2", preloaded={"smollm2": lm})
    first, first_out = in_thread(lambda: registry.get("slow"))
    second, second_out = in_thread(lambda: registry.new_session("slow"))
    while not calls:
        threading.Event().wait(0.01)
    # The default model's users start at once, though "slow" is loading
    served, served_out = in_thread(lambda: (registry.get(), registry.new_session()))
    served.join(5)
    assert not served.is_alive(), "get() / new_session() of a loaded model waited for another model's load"
    assert served_out[0][0] is lm and served_out[0][1].lm is lm
    assert first.is_alive() and second.is_alive()  # the users of "slow" do wait for it
    release.set()
    first.join(10), second.join(10)
    assert calls == ["slow"]  # loaded once, for both
    assert first_out == [lm] and second_out[0].lm is lm


@pytest.mark.model
def test_a_failed_load_is_told_without_the_server_path_and_can_be_tried_again(lm, slow_load, monkeypatch, caplog):
    release, _ = slow_load
    failures = []

    def broken(name, weights=True):
        failures.append(name)
        raise ModelLoadError("model_load_failed", "Could not load the model from /srv/models/slow: damaged", name=name)

    monkeypatch.setattr(sessions, "load_model", broken)
    registry = ModelRegistry("smollm2", preloaded={"smollm2": lm})
    for _ in range(2):
        with pytest.raises(SessionError) as err:
            registry.get("slow")
        assert err.value.key == "model_load_failed" and "/srv" not in str(err.value) + err.value.text("zh")
    assert failures == ["slow", "slow"]
    assert "/srv/models/slow" in caplog.text  # the log has it


@pytest.mark.unit
def test_a_folder_that_is_no_model_names_its_path_in_the_log_text_only(tmp_path):
    with pytest.raises(ModelLoadError) as err:
        resolve(str(tmp_path))
    assert str(tmp_path) in str(err.value)  # the command line and the log
    shown = SessionError(err.value.key, **err.value.params)
    assert str(tmp_path) not in str(shown) and str(tmp_path) not in shown.text("zh")
    assert tmp_path.name in str(shown)


@pytest.mark.model
def test_an_unknown_model_is_refused_with_the_choices(lm):
    registry = ModelRegistry("smollm2", preloaded={"smollm2": lm})
    with pytest.raises(SessionError, match="Unknown model 'nope': choose one of"):
        registry.get("nope")
