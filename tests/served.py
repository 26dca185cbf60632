"""The app served for a test: built over a model registry and a session store, on a free loopback port.

    with served(lm, SessionStore(max_sessions=10)) as (app, url, demo): ...
"""
import contextlib

import app as app_module
from model.sessions import ModelRegistry, SessionStore


@contextlib.contextmanager
def served(models, store: SessionStore | None = None, default: str = "smollm2"):
    """(its App, its URL, its Blocks) for the block. `models`: a ModelRegistry, or the loaded default model."""
    if not isinstance(models, ModelRegistry):
        models = ModelRegistry("smollm2", {"smollm2": models})
    app = app_module.App(models, store or SessionStore())
    demo = app_module.build(app, default)
    app_module.launch(demo, "127.0.0.1", None, prevent_thread_lock=True, quiet=True)  # None: the first free port
    try:
        yield app, demo.local_url, demo
    finally:
        demo.close()
