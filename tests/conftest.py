"""Shared fixtures and the test tiers.

Fixtures: the real default model, loaded once for the whole run (`lm`, `session`, `held_elsewhere`); the app served
on the default model, one server per test module (`url`); one headless Chromium per test module (`chromium`) with a
fresh tab per test (`page`, `new_tab`); the real vLLM engine, one per run (`engine`). Helper functions live in
browser.py, served.py and engine_server.py.

Tiers: every test carries one of TIERS (registered in pytest.ini); collection stops, naming the tests, when one has
none, or when a `unit` test asks for a fixture that loads the model, serves the app, opens Chromium or the engine.
"""
import contextlib
import os
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TIERS = ("unit", "model", "server", "browser", "engine")
# Fixtures a `unit` test may not use, directly or through another fixture (pytest lists both in fixturenames)
HEAVY = {"lm": "model", "url": "browser", "chromium": "browser", "engine": "engine", "kv_engine": "engine",
         "spec_engine": "engine"}


_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session, exitstatus):
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Leave with the session's own status once everything is reported. The step batchers' and the servers' daemon
    threads hold torch thread pools; torn down by the interpreter while one is still parked in them, C++ calls
    std::terminate ("terminate called without an active exception", then SIGABRT), seen twice in about 30 runs
    after every test had passed. That would turn a passed run into exit status 134, so the process exits here,
    after pytest's summary and every other plugin's unconfigure, without the interpreter's teardown."""
    if _EXIT_STATUS:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: every collected test is checked, whichever tier runs
def pytest_collection_modifyitems(config, items):
    untiered = [item.nodeid for item in items if not any(item.get_closest_marker(tier) for tier in TIERS)]
    mismarked = [f"{item.nodeid} (uses {fixture}: {tier})" for item in items if item.get_closest_marker("unit")
                 for fixture, tier in HEAVY.items() if fixture in getattr(item, "fixturenames", ())]
    mismarked += [f"{item.nodeid} (uses {fixture}: not marked {tier})" for item in items
                  for fixture, tier in HEAVY.items() if tier in ("browser", "engine")
                  and fixture in getattr(item, "fixturenames", ()) and not item.get_closest_marker(tier)]
    if untiered or mismarked:
        lines = [f"  {nodeid}: no tier marker" for nodeid in untiered] + [f"  {line}" for line in mismarked]
        raise pytest.UsageError(f"Every test needs a tier marker, one of {', '.join(TIERS)} (pytest.ini): a module's "
                                "`pytestmark = pytest.mark.<tier>` or a decorator on the test.\n" + "\n".join(lines))
    _share_out(items)


# Where each test runs when a run is split over two worker processes (make test SPLIT="$(TWO_WORKERS)"; Makefile):
# a module's tests stay together on one worker, so its set-ups (a served app, a Chromium, a loaded model) are paid
# once as in a single process, and the modules of ENGINE_MODULES are one unit, so one worker starts vLLM. Units are
# handed out in the order collected, the longest first (the layout audit, the lessons, the browser tier, the engine
# tier), so the shorter ones fill in beside them. A run in one process is left in the files' order. (xdist's `loadgroup`
# does not group under pytest 9: it renames item._nodeid, which pytest 9 no longer reads.)
ENGINE_MODULES = {"test_prefill_decode.py", "test_vllm.py", "test_vllm_kv_events.py", "test_vllm_metrics.py",
                  "test_vllm_offline.py", "test_vllm_processed.py", "test_vllm_spec.py", "test_vllm_training.py"}
_FIRST = ("tests/test_browser_layout.py", "tests/test_lessons.py")  # the two longest modules (make test's durations)
_TIER_ORDER = {"browser": 1, "engine": 2, "server": 3, "model": 4, "unit": 5}


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its module, or "engine" for a module of ENGINE_MODULES."""
    path = nodeid.split("::")[0]
    return "engine" if Path(path).name in ENGINE_MODULES else path


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return ByUnit(config, log)


def _share_out(items):
    astray = [item.nodeid for item in items if item.get_closest_marker("engine") and unit_of(item.nodeid) != "engine"]
    if astray:
        raise pytest.UsageError("An engine test outside ENGINE_MODULES (tests/conftest.py) would start a second vLLM "
                                "on the other worker; add its module there:\n  " + "\n  ".join(astray))

    if not os.environ.get("PYTEST_XDIST_WORKER"):  # a run in one process keeps the files' order
        return

    def tier(item):
        return next((_TIER_ORDER[t] for t in TIERS if item.get_closest_marker(t)), len(_TIER_ORDER))

    rank: dict[str, tuple] = {}
    for item in items:
        unit, path = unit_of(item.nodeid), item.nodeid.split("::")[0]
        first = _FIRST.index(path) if path in _FIRST else len(_FIRST)
        rank[unit] = min(rank.get(unit, (first, tier(item))), (first, tier(item)))
    items.sort(key=lambda item: (*rank[unit_of(item.nodeid)], unit_of(item.nodeid)))  # stable: a module's order kept


# ---- the model --------------------------------------------------------------------------------------------------
_LOADED: dict = {}  # name: the model loaded for this run (read-only: a test that changes weights changes a copy)


def _load_once(name: str):
    from model.decoding.loading import load_model

    if name not in _LOADED:
        _LOADED[name] = load_model(name)
    return _LOADED[name]


@pytest.fixture(scope="session")
def lm():
    return _load_once("smollm2")


@pytest.fixture(scope="session")
def load_once(lm):
    """`load_once(name)`: the packaged model `name` (smollm2, gemma3-270m), loaded once for the whole run (a load is
    3-4 s of CPU; a dozen modules ask for Gemma). A test that changes weights does so on a copy (copy.deepcopy)."""
    return _load_once


@pytest.fixture(scope="module")
def lesson_models(lm, load_once):
    """The model each language's lessons run on: SmolLM2 for English, Gemma 3 270M for Chinese (skips, saying why,
    without Gemma)."""
    from model.decoding.loading import available_models

    if "gemma3-270m" not in available_models():
        pytest.skip("Gemma 3 270M is not installed (see model/decoding/loading.py): the Chinese lessons run on it")
    return {"en": lm, "zh": load_once("gemma3-270m")}


@pytest.fixture(scope="module")
def lessons():
    """The built-in lessons (assets/lessons/), checked against every tab of the page: none refused."""
    from model.classroom.lessons import builtin_lessons
    from ui.views import VIEWS

    found, refused = builtin_lessons(tuple(View.tab for View in VIEWS))
    assert not refused, refused
    return found


@pytest.fixture
def session(lm):
    from model.decoding.session import DecodeSession

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


# ---- the page in Chromium -----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def url(lm):
    """The app on the default model, one server for the whole run (the browser modules share it; each test's tab is a
    session of its own, dropped when the tab closes): its URL. A module that needs the app itself, another store or
    other models serves its own (served.served) under this name or another."""
    from served import served

    with served(lm) as (_, address, _demo):
        yield address


class _Browsers:
    """Debian's Chromium, headless, driven by Playwright: launched for the first test that asks for it and kept for the
    tests that follow in a row (the browser tier's modules are next to one another), closed before the first test that
    does not: Playwright's sync API marks an asyncio loop running while it is up, and asyncio.run() refuses to run then
    (tests/test_event_cost.py and others use it)."""

    def __init__(self):
        self.playwright = self.browser = None

    def get(self):
        from browser import CHROMIUM, FLAGS
        from playwright.sync_api import sync_playwright

        if self.browser is not None and not self.browser.is_connected():  # (it crashed: a new one for the next test)
            self.close()
        if self.browser is None:
            self.playwright = sync_playwright().start()
            self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        return self.browser

    def close(self):
        if self.browser is not None and self.browser.is_connected():
            self.browser.close()
        if self.playwright is not None:
            self.playwright.stop()
        self.playwright = self.browser = None


_BROWSERS = _Browsers()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # (the test's tabs closed first)
    if _BROWSERS.browser is not None and (nextitem is None or "chromium" not in getattr(nextitem, "fixturenames", ())):
        _BROWSERS.close()


@pytest.fixture
def chromium():
    """The browser (see _Browsers: one for each row of tests that use it; each tab has its own context)."""
    from browser import CHROMIUM

    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (make test installs it)")
    return _BROWSERS.get()


@pytest.fixture
def new_tab(chromium):
    """`new_tab(url, locale="en-US", size=(1280, 800))`: a fresh tab (its own context: cookies, storage) on `url`,
    recording what goes wrong in `tab.problems` (browser.open_tab); every tab the test opened is closed after it."""
    from browser import open_tab

    tabs = []

    def opened(address: str, locale: str = "en-US", size=(1280, 800)):
        tabs.append(open_tab(chromium, address, locale, size))
        return tabs[-1]

    yield opened
    for tab in tabs:
        tab.close()  # (a page made by browser.new_page closes its own context with it)


@pytest.fixture
def page(url, new_tab):
    """A fresh English tab on the module's server."""
    return new_tab(url)


# ---- the engine -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def engine():
    """A real vLLM server for the whole test run, stopped at the end (tests/engine_server.py; skips, saying why,
    without `make engine`). TBT_TEST_ENGINE="url|folder|pid" uses one already started by
    `python tests/engine_server.py`, to save its minutes of warm-up."""
    from engine_server import running_engine, started_for_the_tests

    spec = os.environ.get("TBT_TEST_ENGINE")
    server = running_engine(spec) if spec else started_for_the_tests()
    try:
        yield server
    finally:
        if not spec:  # one started elsewhere is left running (unless a test stopped it)
            server.stop()


@pytest.fixture(scope="module")
def engine_lm(engine):
    """The engine's model, asked with a test's patience (engine_server.REQUEST_S: it shares the cores of the run)."""
    from engine_server import REQUEST_S
    from model.vllm.client import EngineClient
    from model.vllm.session import load_engine_model

    return load_engine_model(EngineClient(engine.url, engine.model, timeout=REQUEST_S), engine.folder)
