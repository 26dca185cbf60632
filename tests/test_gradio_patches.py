"""Gradio's code changed at run time (ui/gradio_patches.py): every patch is in the table, written against the
pinned Gradio, and for each a test that fails when Gradio changes under it: the code it relies on (a fingerprint
of its syntax), the attribute it replaces, and where it is cheap, what it does."""
from __future__ import annotations

import ast
import asyncio
import inspect
import re
import threading
import types
from pathlib import Path

import anyio
import gradio as gr
import pytest
from gradio import blocks, queueing, route_utils, utils
from gradio.exceptions import ComponentProcessingError

from ui import gradio_patches
from ui.gradio_patches import GRADIO, PATCHES, REPLACED, fingerprint

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
PATCH = {patch.name: patch for patch in PATCHES}


def test_every_patch_is_written_for_the_pinned_gradio():
    pinned = re.search(r"^gradio==(\S+)", (ROOT / "requirements.txt").read_text(encoding="utf-8"), re.M).group(1)
    assert gr.__version__ == pinned == GRADIO, "a new Gradio: check every patch of ui/gradio_patches.py against it"
    assert {patch.written_for for patch in PATCHES} == {GRADIO}
    assert len(PATCH) == len(PATCHES) and all(patch.relies_on for patch in PATCHES)
    assert {patch.scope for patch in PATCHES} <= {"process", "app", "class"}


RELIED = [(patch, where, recorded) for patch in PATCHES for where, recorded in patch.relies_on]


@pytest.mark.parametrize("patch, where, recorded", RELIED, ids=[f"{p.name}:{w.split(':')[1]}" for p, w, _ in RELIED])
def test_the_code_each_patch_relies_on_is_unchanged(patch, where, recorded):
    now = fingerprint(where)
    assert now == recorded, (
        f"Gradio's {where} is not the code the {patch.name} patch was written against (Gradio {patch.written_for}). "
        f"What the patch is for: {patch.why} Check that it still does that against the new code, then record "
        f"{now!r} for it in ui/gradio_patches.py.")


def test_a_fingerprint_ignores_comments_and_place_but_not_code():
    source = "    def f(self, x):\n        return x + 1\n"
    moved = "\n\n    def f(self, x):  # the same\n\n        return x + 1\n"
    parse = lambda text: ast.unparse(ast.parse("if 1:\n" + text.lstrip("\n")).body[0].body[0])  # noqa: E731
    assert parse(source) == parse(moved) != parse(source.replace("+ 1", "+ 2"))


def a_page():
    """A queued Blocks with a slider feeding a text box, and an event whose handler fails (a bug)."""
    def boom(x):
        raise KeyError(x)

    with gr.Blocks() as demo:
        knob = gr.Slider(0, 2, 1.0, label="t")
        out = gr.Textbox()
        button = gr.Button()
        button.click(lambda x: str(x), [knob], [out])
        button.click(boom, [knob], [out])
    demo.queue()
    return demo, knob


def on_thread(name, owner=None):
    """A callable named `name` (bound to `owner`, as a component's method is) that answers its thread's id."""
    def call(*_args):
        return threading.get_ident()

    call.__name__ = name
    return types.MethodType(call, owner) if owner is not None else call


# queue_analytics


def test_queue_analytics_sets_attributes_gradio_has(monkeypatch):
    monkeypatch.delenv("GRADIO_ANALYTICS_MAX_EVENTS", raising=False)
    monkeypatch.delenv("GRADIO_ANALYTICS_CACHE_FREQUENCY", raising=False)
    demo, _ = a_page()
    queue = demo._queue
    assert (queue.ANAYLTICS_CACHE_FREQUENCY, queue.ANALYTICS_MAX_EVENTS) == (1, 10_000)  # Gradio's, before
    PATCH["queue_analytics"].apply(demo)
    assert (queue.ANAYLTICS_CACHE_FREQUENCY, queue.ANALYTICS_MAX_EVENTS) == (10**9, gradio_patches.ANALYTICS_EVENTS)
    queue.events_recorded = 500
    records = [{"time": 0.0, "status": "success", "process_time": 0.1, "function": "f", "session_hash": "s"}] * 3
    assert queue.compute_analytics_summary(records) is queue.cached_event_analytics_summary  # not computed again


# no_matplotlib_switch


def test_no_matplotlib_switch_replaces_what_each_event_enters():
    gradio_patches.patch_app(a_page()[0])
    original = REPLACED.get("gradio.utils.MatplotlibBackendMananger", utils.MatplotlibBackendMananger)
    assert original.__module__ == "gradio.utils" and {"__enter__", "__exit__"} <= set(vars(original))
    # looked up on the module at every event, so the module's attribute is the one to replace
    assert "with utils.MatplotlibBackendMananger():" in inspect.getsource(route_utils.call_process_api)
    if gradio_patches.importlib.util.find_spec("matplotlib") is None:
        assert utils.MatplotlibBackendMananger is gradio_patches._NoBackendSwitch
        with utils.MatplotlibBackendMananger():
            pass


# inline_component_values


def test_inline_component_values_runs_a_small_value_in_place():
    demo, knob = a_page()
    gradio_patches.patch_app(demo)
    assert REPLACED["gradio.blocks.anyio"] is anyio  # what it wraps: the module, looked up as `anyio.to_thread`
    for method in (blocks.Blocks.preprocess_data, blocks.Blocks.postprocess_data):
        assert "await anyio.to_thread.run_sync(" in inspect.getsource(method)
    run_sync = blocks.anyio.to_thread.run_sync

    async def main():
        here = threading.get_ident()
        assert await run_sync(on_thread("preprocess", knob), 1.0) == here
        assert await run_sync(on_thread("postprocess", gr.File()), 1.0) != here  # a file: a worker thread
        assert await run_sync(on_thread("handler"), 1.0) != here
        with pytest.raises(gr.Error):
            await run_sync(knob.preprocess, 5)  # over the maximum: Gradio's refusal, as before

    anyio.run(main)


# inline_analytics_summary


def test_inline_analytics_summary_runs_the_cached_summary_in_place():
    demo, _ = a_page()
    gradio_patches.patch_app(demo)
    assert REPLACED["gradio.queueing.run_sync"] is anyio.to_thread.run_sync
    calls = r"await run_sync\(\s*self\.compute_analytics_summary,"
    assert re.search(calls, inspect.getsource(queueing.Queue.process_events))

    async def main():
        here = threading.get_ident()
        assert await queueing.run_sync(on_thread("compute_analytics_summary", demo._queue), []) == here
        assert await queueing.run_sync(on_thread("handler"), []) != here

    anyio.run(main)


# named_range


def refusal(call, *args) -> str:
    with pytest.raises(gr.Error) as refused:
        call(*args)
    return refused.value.message


def test_named_range_names_the_setting_in_gradios_range_check():
    from ui.guard import UnsaidRefusal
    from ui.handlers import named_range

    for cls in (gr.Slider, gr.Number):
        original = inspect.unwrap(cls.preprocess)
        assert list(inspect.signature(original).parameters) == ["self", "payload"]
        plain = cls(minimum=0, maximum=2, label="plain")
        gradios = "Value 5 is greater than maximum value 2."
        assert refusal(original, plain, 5) == gradios
        named = named_range(cls(minimum=0, maximum=2, label="Top-k", elem_id=f"tbt-test-{cls.__name__}"), "top_k")
        assert inspect.signature(cls.preprocess) == inspect.signature(original)  # Gradio reads the type from it
        with pytest.raises(UnsaidRefusal) as refused:  # said in the event's language by plain_preprocess_data
            named.preprocess(5)
        assert refused.value.refusal.text("en") == f"Top-k (0 = off): {gradios}"
        assert refused.value.refusal.text("zh") == "Top-k（0 = 关闭）：数值 5 大于最大值 2。"
        with pytest.raises(UnsaidRefusal) as refused:
            named.preprocess(-1)
        assert refused.value.refusal.text("en") == "Top-k (0 = off): Value -1 is less than minimum value 0."
        assert refusal(plain.preprocess, 5) == gradios  # not named: Gradio's words
        assert named.preprocess(1) == 1
    # why on the class: an updated component is a new instance of its class, kept for the session
    assert "block.__class__(**kwargs)" in inspect.getsource(blocks.Blocks.postprocess_data)


# fair_queue


def test_fair_queue_refuses_a_made_up_event_before_gradios_push():
    demo, _ = a_page()
    assert list(inspect.signature(queueing.Queue.push).parameters) == ["self", "body", "request", "username"]
    gradio_patches.patch_app(demo)
    body = types.SimpleNamespace(fn_index=999, data=[], session_hash="s")
    request = types.SimpleNamespace(client=types.SimpleNamespace(host="127.0.0.1"))
    success, message, kind = asyncio.run(demo._queue.push(body, request, None))
    assert (success, kind) == (False, "validator_error") and message


# plain_input_check


def test_plain_input_check_says_how_many_inputs():
    demo, _ = a_page()
    fn = demo.fns[0]
    with pytest.raises(ValueError, match="didn't receive enough input values"):
        demo.validate_inputs(fn, [])  # Gradio's, before: a ValueError listing component objects
    gradio_patches.patch_app(demo)
    with pytest.raises(gr.Error) as refused:
        demo.validate_inputs(fn, [])
    assert "1" in refused.value.message and "0" in refused.value.message and "Slider" not in refused.value.message


# plain_preprocess


def test_plain_preprocess_turns_gradios_processing_error_into_a_message():
    demo, _ = a_page()
    fn = demo.fns[0]
    with pytest.raises(ComponentProcessingError):
        asyncio.run(demo.preprocess_data(fn, ["abc"], None))  # Gradio's, before
    gradio_patches.patch_app(demo)
    with pytest.raises(gr.Error) as refused:  # the app's words, naming the input; no language known: each
        asyncio.run(demo.preprocess_data(fn, ["abc"], None))
    text = refused.value.message
    assert text == "Input 1 must be a number, got 'abc'. 第 1 个输入必须是数字，收到的是 'abc'。", text


# one_line_refusals


def test_one_line_refusals_tells_the_page_only_a_bugs_kind():
    demo, _ = a_page()
    buggy = demo.fns[1]
    with pytest.raises(KeyError):
        asyncio.run(demo.process_api(buggy, [1.0], None))  # Gradio's, before: the exception itself
    gradio_patches.patch_app(demo)
    with pytest.raises(gr.Error) as refused:
        asyncio.run(demo.process_api(buggy, [1.0], None))
    assert "KeyError" in refused.value.message and "1.0" not in refused.value.message
    assert asyncio.run(demo.process_api(demo.fns[0], [1.0], None))["data"] == ["1.0"]


# no patch outside the table

# Gradio's names that an assignment outside ui/gradio_patches.py must not replace: the attributes of the Blocks,
# its queue, its components and the modules the patches touch (a function's own __name__ is not Gradio's).
GRADIO_NAMES = {name for owner in (gr.Blocks, queueing.Queue, gr.components.Component, gr.Slider, blocks, queueing,
                                   utils, route_utils, gr) for name in dir(owner)}


def assignments_to_gradio_names(path: Path) -> list[str]:
    """`x.name = ...` in a file, where name is one of GRADIO_NAMES and x is not self (the file's own objects)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if (isinstance(target, ast.Attribute) and target.attr in GRADIO_NAMES and not target.attr.startswith("__")
                    and not (isinstance(target.value, ast.Name) and target.value.id == "self")):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(target)}")
    return found


def test_no_patch_of_gradio_outside_the_table():
    files = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py"))]
    found = [line for file in files if file.name != "gradio_patches.py" for line in assignments_to_gradio_names(file)]
    assert not found, "patch Gradio in ui/gradio_patches.py, with its row in PATCHES: " + "; ".join(found)
    inside = assignments_to_gradio_names(ROOT / "ui" / "gradio_patches.py")
    assert any("push" in line for line in inside)  # (the check sees a patch where there is one)
