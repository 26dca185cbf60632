"""One DecodeSession over a backend that declares what it can do: no session subclass, no attribute probes.

The engine's model once had its own session, a subclass of DecodeSession that overrode fourteen of its methods
(seven private) with copies of their checks, and the views asked `getattr(session, "has_attention", True)`. These
tests hold the shape that replaced it; the behaviour on each backend is tested in test_engine.py, test_prefetch.py,
test_branches.py (local) and test_vllm.py (the real engine).
"""
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
import torch

from cores import sequence
from model.decoding.backend import Capabilities, CoreBackend
from model.vllm.session import EngineBackend
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession

ROOT = Path(__file__).resolve().parents[1]
GREEDY = SamplingConfig(temperature=0)
SAMPLED = SamplingConfig(temperature=0.9, top_k=40, seed=3)


def _every_subclass(cls) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_every_subclass(sub)]
    return out


@pytest.mark.unit
def test_no_subclass_of_the_session_overrides_its_methods():
    import model
    import ui

    for package in (model, ui):  # every module that could define a session of its own
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name != "model.__main__":
                importlib.import_module(info.name)
    own = {name for name in vars(DecodeSession) if not (name.startswith("__") and name.endswith("__"))}
    for sub in _every_subclass(DecodeSession):
        overridden = own & set(vars(sub))
        assert not overridden, f"{sub.__qualname__} overrides {sorted(overridden)}: give its backend a capability"


@pytest.mark.unit
def test_views_read_declared_capabilities_not_attribute_probes():
    probes = re.compile(r"has_attention|has_cache|getattr\(session")
    for path in [*ROOT.glob("ui/**/*.py"), *ROOT.glob("model/**/*.py"), ROOT / "app.py"]:
        found = [line for line in path.read_text(encoding="utf-8").splitlines() if probes.search(line)]
        assert not found, (path.relative_to(ROOT), found)


@pytest.mark.unit
def test_an_engine_declares_that_it_gives_only_the_logits():
    assert EngineBackend.capabilities == Capabilities(attention=False, cache_tensors=False, runs_locally=False,
                                                      prefetch=False)


@pytest.mark.model
def test_a_local_model_declares_its_weights_cache_and_attention_and_computes_ahead_for_a_server(lm):
    from model.decoding.core import core_of

    alone, shared = DecodeSession(lm), DecodeSession(lm, ahead=True)
    assert isinstance(alone.backend, CoreBackend) and alone.lm is lm and alone.backend.core is core_of(lm)
    assert alone.capabilities == Capabilities(attention=True, cache_tensors=True, runs_locally=True, prefetch=True)
    assert shared.computes_ahead and not alone.computes_ahead
    assert shared.backend.core is alone.backend.core and shared.backend.key != alone.backend.key  # one core
    alone.start("The capital of France is")
    assert not alone.prefetch(GREEDY) and alone.preview_ahead(GREEDY) is None  # not a server's session
    assert alone.prefill.attention is not None and alone.prefill.kv.measured == alone.prefill.kv.formula


@pytest.mark.model
def test_an_engine_model_gets_the_engine_backend_from_the_one_session(lm):
    """No engine runs here: its backend is chosen, says what it cannot do, and a refusal changes nothing."""
    from engine_server import free_port

    from model.vllm.client import EngineClient
    from model.vllm.session import load_engine_model
    from model.errors import SessionError
    from model.decoding.loading import resolve
    from model.serving.sessions import ModelRegistry

    down = load_engine_model(EngineClient(f"http://127.0.0.1:{free_port()}/v1", "smollm2"), resolve("smollm2")[1])
    models = ModelRegistry("smollm2", {"smollm2": lm})
    models.add_engine(down)
    session = models.new_session(down.name)
    assert type(session) is DecodeSession and isinstance(session.backend, EngineBackend) and session.lm is down
    assert session.capabilities == EngineBackend.capabilities and models.core(down.name) is None
    with pytest.raises(SessionError) as err:
        session.start("Hello")
    assert err.value.key == "engine_down" and not session.started
    assert not session.prefetch(GREEDY) and session.prefetched is None and session.preview_ahead(GREEDY) is None
    assert session.eos_ids() == down.eos_ids and session.sibling().backend is not session.backend


@pytest.mark.model
def test_records_made_elsewhere_are_taken_with_one_prefill_and_go_on_as_their_own(lm):
    """take_records (a room's Explore): the teacher's records, the cache and both kept logits made at once."""
    teacher = DecodeSession(lm)
    teacher.start("Once upon a time")
    for _ in range(5):
        teacher.step(SAMPLED)
    follower = DecodeSession(lm)
    follower.take_records(teacher.prefill, teacher.steps, teacher.ids)
    assert follower.ids == teacher.ids and follower.steps == teacher.steps and follower.ids is not teacher.ids
    assert sequence(follower).cache.get_seq_length() == len(teacher.ids)
    assert torch.allclose(follower.next_logits, teacher.next_logits, atol=1e-4, rtol=1e-4)
    assert torch.allclose(follower._prefill_logits, teacher._prefill_logits, atol=1e-4, rtol=1e-4)
    follower.back(2)
    teacher.back(2)
    assert [follower.step(SAMPLED).token.id for _ in range(3)] == [teacher.step(SAMPLED).token.id for _ in range(3)]
    follower.reset()
    assert torch.equal(follower.next_logits, follower._prefill_logits)
