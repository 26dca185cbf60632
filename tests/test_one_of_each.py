"""One of each (issue 19, seam 5): one reader of whole numbers, one tuple of the settings' names, one way to get the
model lock, one translation machinery. Each test here fails on the copy that had drifted before it was merged."""
import ast
import math
import re
from dataclasses import fields
from pathlib import Path

import gradio as gr
import pytest

from model.errors import MESSAGES, SessionError, message
from model.parse import parse_token_id, parse_whole, whole_number
from model.decoding.records import SETTING_NAMES, SamplingConfig
from model.words import LANGS, lookup
from ui.handlers import page_handler, parse_view, plainly, whole
from ui.strings import LANG_INPUT, PAGE, Refusal, t
from ui.views.branches import branch_number
from viz.i18n import WORDS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
TABS = ("candidates", "attention")


def code() -> dict[Path, ast.Module]:
    files = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "viz").rglob("*.py")),
             *sorted((ROOT / "model").rglob("*.py"))]
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in files}


def where(path: Path, node) -> str:
    return f"{path.relative_to(ROOT)}:{node.lineno}"


# ---- 1. whole numbers ------------------------------------------------------------------------------------------
NOT_WHOLE = ["²", "①", "٣", "１２", "-1", "+1", "1.5", "", " ", "1e3", "0x10", "1_000", "4 2", "9" * 5000, True, False,
             1.5, math.nan, math.inf, -math.inf, None, [1], "³"]


@pytest.mark.parametrize("value", NOT_WHOLE, ids=repr)
def test_every_reader_refuses_what_is_not_a_whole_number(value):
    """The same verdict from each reader of a page input; '²' was a bug message and '٣' a 3 in branch_number."""
    assert whole_number(value, text=True) is None and whole_number(value, text=False) is None
    for read in (parse_token_id, lambda v: parse_whole(v, "forced_token_not_an_id"), lambda v: whole(v, "steps")):
        with pytest.raises(SessionError):
            read(value)
    if value in (None, ""):
        return  # nothing picked: a branch and a layer have a refusal and a default of their own for it
    with pytest.raises(SessionError) as err:
        branch_number(value)
    assert err.value.key == "branch_missing"
    with pytest.raises(Refusal, match="Layer must be a whole number"):
        parse_view("en", "candidates", value, "mean", tabs=TABS)


@pytest.mark.parametrize("value, expected", [(3, 3), (3.0, 3), (0, 0), (0.0, 0), (49151, 49151)])
def test_every_reader_reads_a_whole_number_alike(value, expected):
    assert whole_number(value, text=False) == whole(value, "steps") == expected
    assert whole_number(value, text=True) == parse_token_id(value) == parse_whole(value, "forced_token_not_an_id") \
        == branch_number(value) == parse_view("en", "candidates", value, value, tabs=TABS).layer == expected


@pytest.mark.parametrize("value, expected", [("3", 3), (" 7 ", 7), ("007", 7), ("0", 0)])
def test_digits_as_text_are_read_where_the_input_is_text_and_refused_from_a_number_box(value, expected):
    """A token id, a branch and a head may be typed or picked as text; a count from a number box may not."""
    assert whole_number(value, text=True) == parse_token_id(value) == branch_number(value) == expected
    view = parse_view("en", "candidates", value, value, tabs=TABS)
    assert view.layer == view.head == expected
    assert whole_number(value, text=False) is None
    with pytest.raises(Refusal, match=f"Steps to go back must be a whole number, got {value!r}"):
        whole(value, "steps")


@pytest.mark.parametrize("typed", ["²", "٣", "①"])
@pytest.mark.parametrize("lang, words", [("en", "There is no branch"), ("zh", "没有可选择的分支")])
def test_a_typed_branch_that_is_not_ascii_digits_is_refused_plainly(typed, lang, words):
    """As the forced-token reader refuses '²': by name, in the page's language, never as a bug or as branch 3."""
    with pytest.raises(gr.Error) as err:
        with plainly("switch", lang):
            branch_number(typed)
    assert words in err.value.message and typed in err.value.message, err.value.message
    assert "Something went wrong" not in err.value.message and "出了点问题" not in err.value.message


def test_a_negative_number_still_reaches_the_range_checks():
    """'Steps to go back must be a whole number >= 1, got -1' and 'no branch -1' are the session's to say."""
    assert whole(-1, "steps") == -1 and branch_number(-1) == -1 and parse_token_id(-3) == -3
    with pytest.raises(SessionError):
        parse_whole(-1, "forced_token_not_an_id")


def test_a_long_paste_is_quoted_short():
    with pytest.raises(Refusal) as err:
        whole("9" * 5000, "steps")
    assert len(str(err.value)) < 200


def test_no_reader_uses_isdigit():
    """str.isdigit() passes '²' and '٣' (model/parse.py says why): whole numbers are read by whole_number()."""
    found = [where(p, n) for p, tree in code().items() for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and n.attr in ("isdigit", "isdecimal", "isnumeric")]
    assert not found, found


# ---- 2. the settings' names ----------------------------------------------------------------------------------
def test_the_settings_names_are_sampling_configs_fields():
    assert SETTING_NAMES == tuple(f.name for f in fields(SamplingConfig))


def test_the_api_parameters_and_the_lesson_settings_use_them():
    from model.classroom.lessons import SETTING_TYPES

    handler = page_handler(lambda request, cfg, view: None, tabs=TABS)
    names = tuple(handler.__signature__.parameters)
    assert names[1 : 1 + len(SETTING_NAMES)] == SETTING_NAMES
    assert tuple(SETTING_TYPES) == SETTING_NAMES


def test_no_other_list_of_the_settings_names_is_written_out():
    """A second tuple of the seven names drifts from the first (a new setting added to one of them only)."""
    written = []
    for path, tree in code().items():
        for n in ast.walk(tree):
            if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
                words = {e.value for e in n.elts if isinstance(e, ast.Constant)}
                if set(SETTING_NAMES) <= words:
                    written.append(where(path, n))
    assert not written, written


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 2.5, True, "4", None], ids=repr)
def test_the_bounded_counts_of_the_views_are_read_by_the_one_reader(value):
    """Self-consistency and constraints had their own copy, where inf raised OverflowError and nan ValueError."""
    from model.parse import whole_in_range

    for key in ("consistency_samples_range", "constrain_tokens_range", "spec_draft_len_range"):
        with pytest.raises(SessionError) as refused:
            whole_in_range(value, 1, 16, key)
        assert refused.value.key == key
    found = [where(p, n) for p, tree in code().items() for n in ast.walk(tree)
             if isinstance(n, ast.FunctionDef) and n.name == "_whole"]
    assert not found, found


# ---- 3. the model lock ---------------------------------------------------------------------------------------
def test_the_model_is_held_one_way():
    """Five ways to a model lock once, then 14 functions taking it as `lock=` or `model_lock=`; now every pass goes
    through the model's scheduler (model.decoding.scheduler), which no function takes as an argument."""
    found = [where(p, n) for p, tree in code().items() for n in ast.walk(tree)
             if (isinstance(n, ast.Attribute) and n.attr == "model_lock")
             or (isinstance(n, ast.arg) and n.arg in ("lock", "model_lock"))
             or (isinstance(n, ast.keyword) and n.arg in ("lock", "model_lock"))]
    assert not found, found


def test_a_models_end_tokens_are_read_one_way():
    """Five copies once (the session, speculative decoding, the race, self-consistency, constraints); now
    model.decoding.loading.end_ids. Beam search keeps generate()'s ordered list (its K depends on how many there are)."""
    found = [where(p, n) for p, tree in code().items() if p.name not in ("loading.py", "beams.py")
             for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "eos_token_id"
             and isinstance(n.value, ast.Attribute) and n.value.attr == "generation_config"]
    assert not found, found


def test_a_model_has_one_scheduler_shared_by_its_cores():
    from types import SimpleNamespace

    import torch

    from model.decoding.core import ModelCore
    from model.decoding.scheduler import scheduler_of

    model, other = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    lm = SimpleNamespace(model=model, name="tiny")
    assert ModelCore(lm).scheduler is scheduler_of(model) is ModelCore(lm).scheduler
    assert scheduler_of(other) is not scheduler_of(model)


def test_every_computation_sent_to_a_core_is_one_it_runs_by_name():
    """Whatever a view or a lesson runs on the model beyond one step goes to the model's core (WholeText.run /
    compute, a core's compute): a module-level function marked @computation, never a lambda or a closure, so it runs
    the same in the page's process and in a process of its own (where it is sent by name)."""
    import importlib

    from model.decoding.core import computation_name

    sent, wrong = 0, []
    for path, tree in code().items():
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for n in ast.walk(tree):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("run", "compute")
                    and n.args):
                continue
            first = n.args[0]
            if isinstance(first, ast.Lambda):
                wrong.append(f"{where(path, n)} sends a lambda")
                continue
            fn = getattr(module, first.id, None) if isinstance(first, ast.Name) else None
            if callable(fn) and getattr(fn, "__module__", "").startswith("model."):
                sent += 1
                try:
                    computation_name(fn)
                except LookupError as err:
                    wrong.append(f"{where(path, n)}: {err}")
    assert sent >= 20 and not wrong, (sent, wrong)


def test_a_core_process_is_recorded_in_one_place():
    """Three records of one model process once (a module's table, the registry's, the play route's copy): now the
    registry's cores only (ModelRegistry._cores), and nothing in model/ keeps a table of processes at module level."""
    found = [where(p, n) for p, tree in code().items() for n in tree.body
             if isinstance(n, (ast.Assign, ast.AnnAssign)) and any(
                 isinstance(t, ast.Name) and any(word in t.id.upper() for word in ("APART", "PROCESSES"))
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    assert not found, found
    names = {n.name for p, tree in code().items() for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert not names & {"apart_processes", "process_of", "serve_apart", "run_apart"}


# ---- 4. the words --------------------------------------------------------------------------------------------
def test_the_languages_are_declared_once():
    import ui.strings
    import viz

    assert ui.strings.LANGS is viz.LANGS is LANGS == ("en", "zh")
    found = [where(p, n) for p, tree in code().items() if p.name != "words.py" for n in ast.walk(tree)
             if isinstance(n, ast.Assign) and any(getattr(x, "id", None) == "LANGS" for x in n.targets)]
    assert not found, found


def test_every_table_is_read_by_the_one_lookup():
    """t() in ui/strings.py and viz/i18n.py and message() in model/errors.py each call lookup(); nothing else
    indexes a table (a second `pair[1] if lang == "zh"` is how the three drifted)."""
    callers = {}
    for path, tree in code().items():
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "lookup":
                callers.setdefault(path.name, 0)
                callers[path.name] += 1
            if isinstance(n, ast.Subscript) and getattr(n.value, "id", None) in ("PAGE", "WORDS", "MESSAGES"):
                raise AssertionError(f"a table indexed outside the lookup: {where(path, n)}")
    assert callers == {"strings.py": 1, "i18n.py": 1, "errors.py": 1}, callers


@pytest.mark.parametrize("table, key, fmt", [(PAGE, "not_whole", {"name": "n", "value": 1}),
                                             (WORDS, "kv_prefill", {"n": 12}), (MESSAGES, "token_limit", {"limit": 9})])
def test_each_table_says_the_same_through_its_reader_and_the_lookup(table, key, fmt):
    from viz.i18n import t as viz_t

    for lang in LANGS:
        expected = table[key][LANGS.index(lang)].format(**fmt)
        assert lookup(table, key, lang, fmt, "here") == expected == t(key, lang, **fmt)
        if table is WORDS:
            assert viz_t(key, lang, **fmt) == expected
        if table is MESSAGES:
            assert message(key, lang, **fmt) == expected == SessionError(key, **fmt).text(lang)
    assert t(key, "fr", **fmt) == t(key, "en", **fmt)  # a request's value that is no language reads as English
    with pytest.raises(ValueError):
        lookup(table, key, "fr", fmt, "here")
    with pytest.raises(KeyError, match="add it to here"):
        lookup(table, "no_such_key", "en", fmt, "here")


def test_say_is_gone():
    import ui.strings

    assert not hasattr(ui.strings, "say")


CJK = re.compile(r"[\u4e00-\u9fff]")


def test_the_guards_refusals_come_from_the_table():
    source = (ROOT / "ui" / "guard.py").read_text(encoding="utf-8")
    assert not CJK.search(source), "a Chinese literal in ui/guard.py: put the words in PAGE (ui/strings.py)"


def test_the_guards_refusals_are_said_in_the_events_language():
    from ui.guard import event_lang, said

    with gr.Blocks() as demo:
        lang = gr.Radio(["en", "zh"], value="en", elem_id=LANG_INPUT)
        box, out = gr.Textbox(), gr.Textbox()
        gr.Button().click(lambda b, l: b, [box, lang], out)
    fn = next(iter(demo.fns.values()))
    assert event_lang(fn, ["x", "zh"]) == "zh" and event_lang(fn, ["x", "en"]) == "en"
    assert event_lang(fn, ["zh"]) is None and event_lang(fn, ["x", "fr"]) is None and event_lang(None, []) is None
    assert said("queue_busy", "zh", n=3) == "你已有 3 个请求在等待，请等它们完成。"
    assert said("queue_busy", "en", n=3) == "You already have 3 requests waiting; wait for them to finish."
    both = said("input_count", None, expected=2, sent=1)  # no language to go by: both, as before
    assert both == "This event takes 2 inputs; 1 were sent. 这个事件需要 2 个输入，收到 1 个。"
    for key in ("queue_slow_busy", "no_such_event", "not_uploaded"):
        assert said(key, "en") == PAGE[key][0] and said(key, "zh") == PAGE[key][1]
