"""The layers keep to their rooms (STYLE.md): ui/ is thin Gradio over model/ and viz/. It imports no torch, reaches
into no object's private state, no view imports another, and a handler with many outputs names them
({component: value}) rather than returning a long list a caller must count. model/ never imports gradio, plotly,
ui/ or viz/; viz/ never torch or gradio. The classroom (rooms, the class's plays, lesson checks) is model/'s.

A scan of the source (ast), no model: it fails naming the file and line."""
import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
MOST_BY_POSITION = 5  # outputs a handler may return as a list; more are a {component: value} dict
WIRING = ("events", "shown_outputs")  # the wiring table's rows, and a list of components an event writes (not values)
# Private attributes ui/ may touch, each with its reason: (file, "name._attr").
ALLOWED_PRIVATE = {
    ("ui/guard.py", "demo._queue"): "Gradio's own queue (no public hook to bound one session's share); not a session",
    ("ui/gradio_patches.py", "demo._queue"): "Gradio's own queue (its push and its monitoring summary's size: no public "
                                             "setting)",
    ("ui/guard.py", "block._id"): "Gradio keeps a session's copy of a component under the component's _id (its "
                                  "SessionState): a refused input is checked as that session holds it",
}


def sources(folder: str):
    for path in sorted((ROOT / folder).rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path))


def imported(tree) -> list[tuple[int, str]]:
    """(line, top-level module) of every import in `tree`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


@pytest.mark.parametrize("folder, banned", [("ui", {"torch"}), ("model", {"gradio", "plotly", "ui", "viz", "app"}),
                                            ("viz", {"torch", "gradio"})])
def test_each_layer_imports_only_what_it_may(folder, banned):
    wrong = [f"{name}:{line} imports {module}" for name, tree in sources(folder)
             for line, module in imported(tree) if module in banned]
    assert not wrong, wrong


# The classroom's domain logic, moved out of ui/ (issue 30): bookkeeping with no page in it.
CLASSROOM = {"rooms.py", "class_play.py", "lessons.py", "quiz.py", "class_draws.py", "guess_game.py"}


def test_the_classroom_is_model_logic_with_no_gradio_and_nothing_of_ui():
    """Rooms, each room's plays and the lesson files' checks live in model/classroom/ and import no gradio and
    nothing of ui/ (their refusals' words are model/errors.py's); ui/ keeps their handlers and HTML only."""
    found = {name.rsplit("/", 1)[-1] for name, _ in sources("model/classroom")}
    assert CLASSROOM <= found, sorted(CLASSROOM - found)
    wrong = [f"{name}:{line} imports {module}" for name, tree in sources("model/classroom")
             for line, module in imported(tree) if module in {"gradio", "plotly", "ui", "viz"}]
    assert not wrong, wrong
    assert not (ROOT / "ui" / "rooms.py").exists() and not (ROOT / "ui" / "lessons.py").exists()
    scanned = ast.parse("def f():\n    from ui.strings import t\nimport gradio as gr")  # the scan can fail
    assert sorted(imported(scanned)) == [(2, "ui"), (3, "gradio")]


# What would let ui/ hold the model or a tensor: the model's scheduler and its passes (issue 30: 16 model_lock calls in
# 13 ui/ files once), a session's backend, its sequence in the core and its cache, its logits. (ui/ asks a model's core
# to compute a named computation: core.compute, with plain arguments and a plain record back.)
# (A session's `prefill` attribute is its PrefillRecord, plain numbers: only passes' function of that name counts.)
MODEL_HOLDS = {"model_lock", "door", "scheduler", "scheduler_of", "Scheduler", "model_pass", "all_cores", "one_core",
               "backend", "sequence", "Sequence", "cache", "next_logits", "logits", "forward_one", "forward_batch"}
MODEL_MODULES = ("model.decoding.scheduler", "model.decoding.passes", "model.decoding.batching",
                 "model.decoding.backend", "model.decoding.sequence", "model.decoding.core")


def test_ui_takes_no_model_lock_and_holds_no_tensor():
    """No file under ui/ (nor app.py) names the model's scheduler or lock, a session's backend, sequence or cache, or
    logits: a view asks the session's runner (DecodeSession.whole_text) or the model's core for a named computation
    and gets plain records back."""
    files = [*sources("ui"), ("app.py", ast.parse((ROOT / "app.py").read_text(encoding="utf-8")))]
    wrong = []
    for name, tree in files:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in MODEL_HOLDS:
                wrong.append(f"{name}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.Name) and node.id in MODEL_HOLDS | {"prefill"}:
                wrong.append(f"{name}:{node.lineno} {node.id}")
            elif isinstance(node, ast.ImportFrom) and node.module in MODEL_MODULES:
                wrong.append(f"{name}:{node.lineno} imports {node.module}")
    assert not wrong, wrong
    scanned = ast.parse("with model_lock(s.batcher):\n    x = s.next_logits")  # the scan can fail
    assert {n.id for n in ast.walk(scanned) if isinstance(n, ast.Name)} & MODEL_HOLDS


def test_ui_touches_no_private_attribute_of_another_object():
    """No `x._name` in ui/ but on self or cls (dunders are Python's own): a session's state is the session's."""
    wrong = []
    for name, tree in sources("ui"):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            if node.attr.startswith("__") and node.attr.endswith("__"):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if (name, ast.unparse(node)) not in ALLOWED_PRIVATE:
                wrong.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    assert not wrong, wrong


def positional_length(value) -> int:
    """How many values a returned list or tuple literal holds (a starred part counts as one; [x] * n as n)."""
    if isinstance(value, (ast.List, ast.Tuple)):
        return len(value.elts)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        for seq, times in ((value.left, value.right), (value.right, value.left)):
            if isinstance(seq, (ast.List, ast.Tuple)) and isinstance(times, ast.Constant) and isinstance(times.value, int):
                return len(seq.elts) * times.value
    return 0


def test_no_handler_returns_many_outputs_by_position():
    """A list of many outputs is read by counting (the lesson's 28 were mirrored by a test's range(9)): more than
    MOST_BY_POSITION are returned as {component: value}, which Gradio puts in the event's order."""
    wrong = set()
    for name, tree in sources("ui"):
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.name in WIRING:
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
                    n = positional_length(node.value)
                    if n > MOST_BY_POSITION:
                        wrong.add(f"{name}:{node.lineno} {function.name} returns {n} values by position")
    assert not wrong, sorted(wrong)


def test_no_handler_returns_an_empty_dict():
    """Gradio reads {} as one output's value, not as 'nothing changed' (a dict is taken by component only when it
    has keys): a handler with nothing to change returns {some_output: gr.skip()}. The room's tick once did."""
    wrong = [f"{name}:{node.lineno}" for name, tree in sources("ui") for node in ast.walk(tree)
             if isinstance(node, (ast.Return, ast.Yield)) and isinstance(node.value, ast.Dict) and not node.value.keys]
    assert not wrong, wrong


def test_no_view_imports_another_view():
    """A view answers for itself (its chart in a lesson step too: lesson_figure, ui/views/__init__.py); the Lesson
    view once imported four others to redraw their charts. Only the registry (ui/views/__init__.py) imports views."""
    wrong = [f"{name}:{node.lineno} imports {node.module}" for name, tree in sources("ui/views")
             if not name.endswith("__init__.py") for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ui.views")]
    assert not wrong, wrong
