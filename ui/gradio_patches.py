"""Every change this app makes to Gradio's own code at run time, in one table (PATCHES), applied from here only.

Each row says what it replaces, why, and the Gradio it was written against: the version (GRADIO, as pinned in
requirements.txt) and a fingerprint of each piece of Gradio's code the patch relies on (the replaced function and
the code that calls it). tests/test_gradio_patches.py fails when a new Gradio changes any of them: read the row's
`why`, check the patch still does that against the new code, then record the new fingerprint.

Scopes: "process" patches replace a module's attribute, once per process (a test may launch many servers);
"app" patches replace an attribute of one app (its queue, its Blocks), at launch, before the first request;
"class" patches replace a component class's method, the first time `patch_class` is asked for that class.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import importlib.util
import inspect
from dataclasses import dataclass
from typing import Any, Callable

import gradio as gr

from ui import guard
from ui.strings import Refusal

GRADIO = "6.31.0"  # the Gradio every patch below was written against (requirements.txt pins it)
ANALYTICS_EVENTS = 200  # events Gradio's queue keeps for its monitoring summary (its default: 10,000)

REPLACED: dict[str, Any] = {}  # "module.attribute" -> what a process patch replaced (its fingerprint reads this)


@dataclass(frozen=True)
class Patch:
    """One run-time change to Gradio: what it replaces, why, and the code of Gradio it was written against."""

    name: str  # how the tests and the docs name it
    replaces: str  # the attribute replaced, as Gradio names it
    scope: str  # "process", "app" or "class" (module docstring)
    why: str  # what it buys, and the issue or page that measured it
    apply: Callable[[Any], None]  # does it: given nothing ("process"), the gr.Blocks ("app") or the class ("class")
    relies_on: tuple[tuple[str, str], ...]  # ("module:Qual.name", its fingerprint in `written_for`) for each piece
    written_for: str = GRADIO


def fingerprint(where: str) -> str:
    """The first 12 hex digits of the sha256 of the syntax of Gradio's code at `where`, "module:Qual.name" (a
    nested function: "module:Qual.name.<locals>.inner"). Comments, blank lines and its place in the file do not
    count; a docstring does. What a process patch replaced is read as it was (REPLACED), a wrapped method
    (functools.wraps) unwrapped."""
    module, _, qualname = where.partition(":")
    outer, _, inner = qualname.partition(".<locals>.")
    obj = REPLACED.get(f"{module}.{outer}")
    if obj is None:
        obj = importlib.import_module(module)
        for name in outer.split("."):
            obj = getattr(obj, name)
    source = inspect.getsource(inspect.unwrap(obj))
    # a method's source is indented; under `if 1:` it parses as it is (dedent would break on a string that is not)
    node = ast.parse("if 1:\n" + source).body[0].body[0] if source[:1].isspace() else ast.parse(source).body[0]
    if inner:
        node = next(n for n in ast.walk(node)
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == inner)
    return hashlib.sha256(ast.unparse(node).encode()).hexdigest()[:12]


# --- process: what Gradio does for every event that this app never uses (issue 25's profile) ---


class _NoBackendSwitch:
    """gradio.utils.MatplotlibBackendMananger's stand-in where matplotlib is not installed: nothing to switch."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _no_matplotlib_switch(_=None) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        from gradio import utils

        if utils.MatplotlibBackendMananger is not _NoBackendSwitch:
            REPLACED["gradio.utils.MatplotlibBackendMananger"] = utils.MatplotlibBackendMananger
        utils.MatplotlibBackendMananger = _NoBackendSwitch


# Components whose preprocess / postprocess only check or pass on a small value (a number, a choice, a string):
# run in the event loop instead of a worker thread. Not files, images or data frames.
INLINE_COMPONENTS = (gr.Slider, gr.Number, gr.Radio, gr.Dropdown, gr.Checkbox, gr.Textbox, gr.HTML, gr.Markdown,
                     gr.Button, gr.State)


def _inline(func) -> bool:
    """True for a call Gradio would send to a worker thread that is cheaper run where it is: a component of
    INLINE_COMPONENTS preprocessing or postprocessing its value, or the queue's monitoring summary (now a cached
    answer, the queue_analytics patch)."""
    owner, name = getattr(func, "__self__", None), getattr(func, "__name__", "")
    if name in ("preprocess", "postprocess"):
        return isinstance(owner, INLINE_COMPONENTS)
    return name == "compute_analytics_summary"


def _inline_or(run_sync):
    """anyio.to_thread.run_sync, but a call `_inline` names runs at once, in the caller's thread."""
    async def run(func, *args, **kwargs):
        if _inline(func):
            return func(*args)
        return await run_sync(func, *args, **kwargs)

    run.tbt_inline = True
    return run


class _InlineAnyio:
    """gradio.blocks' `anyio`, whose `to_thread.run_sync` is `_inline_or` the real one; everything else anyio's."""

    def __init__(self, real):
        self._real = real
        self.to_thread = _InlineToThread(real.to_thread)

    def __getattr__(self, name):
        return getattr(self._real, name)


class _InlineToThread:
    def __init__(self, real):
        self._real = real
        self.run_sync = _inline_or(real.run_sync)

    def __getattr__(self, name):
        return getattr(self._real, name)


def _inline_component_values(_=None) -> None:
    from gradio import blocks

    if not isinstance(blocks.anyio, _InlineAnyio):
        REPLACED["gradio.blocks.anyio"] = blocks.anyio
        blocks.anyio = _InlineAnyio(blocks.anyio)


def _inline_analytics_summary(_=None) -> None:
    from gradio import queueing

    if not getattr(queueing.run_sync, "tbt_inline", False):
        REPLACED["gradio.queueing.run_sync"] = queueing.run_sync
        queueing.run_sync = _inline_or(queueing.run_sync)


# --- app: the queue's summary, and the guard (ui/guard.py) in front of the queue and the Blocks ---


def _queue_analytics(demo: gr.Blocks) -> None:
    queue = demo._queue
    queue.ANAYLTICS_CACHE_FREQUENCY = 10**9  # (Gradio's spelling)
    queue.ANALYTICS_MAX_EVENTS = ANALYTICS_EVENTS


def _fair_queue(demo: gr.Blocks) -> None:
    demo._queue.push = guard.fair_push(demo, demo._queue.push)


def _plain_input_check(demo: gr.Blocks) -> None:
    demo.validate_inputs = guard.plain_validate_inputs(demo.validate_inputs)


def _plain_preprocess(demo: gr.Blocks) -> None:
    demo.preprocess_data = guard.plain_preprocess_data(demo, demo.preprocess_data)


def _one_line_refusals(demo: gr.Blocks) -> None:
    demo.process_api = guard.one_line_process_api(demo, demo.process_api)


# --- class: a range check that names its setting (ui/handlers.py named_range) ---

NAMED_RANGES: dict[str, str] = {}  # elem_id of a slider or number box whose range check names it -> its label's key


def _named_range(cls) -> None:
    """Wrap cls.preprocess (once) so that the range refusal of a component whose elem_id is in `NAMED_RANGES`
    names it, in the page's language: a keyed refusal (range_below, range_above) that ui/guard.py
    plain_preprocess_data says in the language of the event's inputs (a preprocess does not know it)."""
    if getattr(cls.preprocess, "names_the_setting", False):
        return
    check = cls.preprocess

    @functools.wraps(check)  # Gradio checks the value's type by this signature
    def preprocess(self, payload):
        try:
            return check(self, payload)
        except gr.Error:
            name_key = NAMED_RANGES.get(self.elem_id)
            if name_key is None:
                raise
            below = self.minimum is not None and payload < self.minimum  # (Gradio's own test, in its order)
            raise guard.UnsaidRefusal(Refusal("range_below" if below else "range_above", name_key=name_key,
                                              value=payload, low=self.minimum, high=self.maximum)) from None

    preprocess.names_the_setting = True
    cls.preprocess = preprocess


PATCHES = (
    Patch("queue_analytics", "gradio.queueing.Queue: ANAYLTICS_CACHE_FREQUENCY, ANALYTICS_MAX_EVENTS", "app",
          "The queue's monitoring summary (a pandas DataFrame of up to the last 10,000 events, grouped and "
          "percentiled after every event) is read only by Gradio's /monitoring page, which this app never opens: "
          "computed at most once per 10**9 events, over the last ANALYTICS_EVENTS. At 10,000 events it cost "
          "milliseconds per event (issue 25).",
          _queue_analytics,
          (("gradio.queueing:Queue.__init__", "b71c27082f02"),
           ("gradio.queueing:Queue.compute_analytics_summary", "c27a40af1b91"),
           ("gradio.queueing:Queue.push", "dfa0a562fae7"))),
    Patch("no_matplotlib_switch", "gradio.utils.MatplotlibBackendMananger", "process",
          "Gradio imports matplotlib twice per event (around each call, to switch its backend); where it is not "
          "installed, each is a failed search of the whole import path. Replaced only where it is not installed.",
          _no_matplotlib_switch,
          (("gradio.utils:MatplotlibBackendMananger", "ad40753d9089"),
           ("gradio.route_utils:call_process_api", "4b4f9c74f9a9"))),
    Patch("inline_component_values", "gradio.blocks.anyio (its to_thread.run_sync)", "process",
          "Gradio sends each input's preprocess and each output's postprocess to a worker thread (a step: 11 "
          "inputs and 3 outputs), about 0.1 ms of CPU each on an idle machine, more under load, for functions that "
          "check a number or pass a string on. Those of INLINE_COMPONENTS run in the event loop (issue 25).",
          _inline_component_values,
          (("gradio.blocks:Blocks.preprocess_data", "181d6f681ec9"),
           ("gradio.blocks:Blocks.postprocess_data", "5a12f2d5bdb1"))),
    Patch("inline_analytics_summary", "gradio.queueing.run_sync", "process",
          "The queue computes its monitoring summary in a worker thread after every event; with queue_analytics it "
          "is a cached answer, run where it is (issue 25).",
          _inline_analytics_summary,
          (("gradio.queueing:Queue.process_events", "24a58a15f71f"),)),
    Patch("named_range", "preprocess of each class given to ui/handlers.py named_range (gr.Slider, gr.Number)",
          "class",
          "Gradio's range check says only 'Value 5 is greater than maximum value 2.', in English; for the "
          "components named_range names, it names the setting, in the page's language (said by plain_preprocess, "
          "which knows the event's inputs). On the class, not the instance: an update of a component (a "
          "new label in another language, a model's layer count) makes Gradio keep a new instance of its class for "
          "that session (Blocks.postprocess_data, `state[block._id] = block.__class__(**kwargs)`), which an "
          "instance's own wrapper would not reach. (A subclass would do it too, but Gradio writes a .pyi file beside "
          "the module of every component class.)",
          _named_range,
          (("gradio.components.slider:Slider.preprocess", "8bf7ba8a58ee"),
           ("gradio.components.number:Number.preprocess", "9e35e19371c2"),
           ("gradio.components.number:Number.raise_if_out_of_bounds", "d40c4209a281"),
           ("gradio.blocks:Blocks.postprocess_data", "5a12f2d5bdb1"))),
    Patch("fair_queue", "gradio.queueing.Queue.push (the app's queue)", "app",
          "Gradio's queue has one size for everybody: without this one session could fill it. Refuses, before it "
          "is queued, an event that does not exist (422), a script's call with more or fewer values than the API "
          "takes (Gradio lines them up with the inputs only when they are exactly the API's: "
          "prepare_simple_api_data), and one beyond its session's, address's or kind's share (503, with the "
          "reason): ui/guard.py fair_push.",
          _fair_queue,
          (("gradio.queueing:Queue.push", "dfa0a562fae7"),
           ("gradio.routes:App.create_app.<locals>.queue_join_helper", "b40f3385bd10"),
           ("gradio.routes:App.create_app.<locals>.prepare_simple_api_data", "c1d324295765"))),
    Patch("plain_input_check", "gradio.blocks.Blocks.validate_inputs (the app's)", "app",
          "Too few inputs: say how many, not Gradio's list of component objects (their reprs name classes and "
          "memory addresses): ui/guard.py plain_validate_inputs.",
          _plain_input_check,
          (("gradio.blocks:Blocks.validate_inputs", "64b3894febfe"),
           ("gradio.blocks:Blocks.preprocess_data", "181d6f681ec9"))),
    Patch("plain_preprocess", "gradio.blocks.Blocks.preprocess_data (the app's)", "app",
          "An input Gradio cannot read answers in the page's words, in the event's language, naming the control "
          "and no path on the server, never with Gradio's text: ui/guard.py plain_preprocess_data. To find the "
          "input, it runs again the preprocess of the components whose preprocess only checks a value (a slider, a "
          "number box, a radio, a dropdown, a checkbox group, a checkbox, a text box): each fingerprinted here.",
          _plain_preprocess,
          (("gradio.blocks:Blocks.preprocess_data", "181d6f681ec9"),
           ("gradio.blocks:Blocks.process_api", "44c8f42cca5c"),
           ("gradio.components.slider:Slider.preprocess", "8bf7ba8a58ee"),
           ("gradio.components.number:Number.preprocess", "9e35e19371c2"),
           ("gradio.components.radio:Radio.preprocess", "d2bab678b0bc"),
           ("gradio.components.dropdown:Dropdown.preprocess", "e6f3bb063692"),
           ("gradio.components.checkboxgroup:CheckboxGroup.preprocess", "ef5834f930a9"),
           ("gradio.components.checkbox:Checkbox.preprocess", "a8fc94640485"),
           ("gradio.components.textbox:Textbox.preprocess", "14d4863abc39"))),
    Patch("one_line_refusals", "gradio.blocks.Blocks.process_api (the app's)", "app",
          "Every refused input writes one line to the log, not Gradio's traceback, and a bug tells the page only "
          "its kind, in its language (Gradio would send the exception's own text): ui/guard.py "
          "one_line_process_api.",
          _one_line_refusals,
          (("gradio.blocks:Blocks.process_api", "44c8f42cca5c"),
           ("gradio.route_utils:call_process_api", "4b4f9c74f9a9"))),
)


def patch_app(demo: gr.Blocks) -> None:
    """Apply the process patches (once per process) and the app patches to `demo`, queued, before it serves."""
    for patch in PATCHES:
        if patch.scope == "process":
            patch.apply(None)
    for patch in PATCHES:
        if patch.scope == "app":
            patch.apply(demo)


def patch_class(cls) -> None:
    """Apply the class patches to a component class (once per class)."""
    for patch in PATCHES:
        if patch.scope == "class":
            patch.apply(cls)
