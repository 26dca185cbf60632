"""The app served for a test: built over a model registry and a session store, on a free loopback port; and the
page's default settings, as a test sends them with each call.

    with served(lm, SessionStore(max_sessions=10)) as (app, url, demo): ...
    client.predict(**{**DEFAULTS, "temperature": 0}, api_name="/next_token")
"""
import asyncio
import contextlib
from types import MappingProxyType

import app as app_module
from model.classroom.rooms import Rooms
from model.serving.sessions import ModelRegistry, SessionStore

# The settings every event sends (the sampling knobs, then the page's language and the attention view's choice), at
# the page's defaults. A test changes what it needs in a copy: {**DEFAULTS, "seed": 4} (read-only: shared by all).
DEFAULTS = MappingProxyType(dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0,
                                 order="transformers", seed=0, lang="en", layer=0, head="mean"))


@contextlib.contextmanager
def served(models, store: SessionStore | None = None, default: str = "smollm2", host: str = "127.0.0.1",
           views=None):
    """(its App, its URL, its Blocks) for the block. `models`: a ModelRegistry, or the loaded default model; `host`:
    where it listens (0.0.0.0: every interface, as a class's server; the URL is then the loopback one); `views`: the
    page's views (default: all of ui.views.VIEWS)."""
    if not isinstance(models, ModelRegistry):
        models = ModelRegistry("smollm2", {"smollm2": models})
    app = app_module.App(models, store or SessionStore(), Rooms())
    demo = app_module.build(app, default, *([views] if views is not None else []))
    app_module.launch(demo, host, None, prevent_thread_lock=True, quiet=True)  # None: the first free port
    try:
        yield app, demo.local_url.replace("://0.0.0.0:", "://127.0.0.1:"), demo
    finally:
        close(demo)


def close(demo) -> None:
    """Close a launched page. Gradio's close() sets its asyncio stop event from this thread, while the server's loop
    may be adding or removing a heartbeat's waiter on it ("deque mutated during iteration", seen once in CI): the
    event is set on the server's own loop first, so close()'s set() finds it set and touches nothing."""
    servers = getattr(demo.server, "servers", None) or []
    if servers and demo.is_running:
        async def stop():
            demo.app.stop_event.set()
        asyncio.run_coroutine_threadsafe(stop(), servers[0].get_loop()).result(timeout=10)
    demo.close()
