"""The page a first-time teacher can follow (issue 47), what needs no model, server or browser: the story's parts as
the navigation (one table, every view in one part), Start here, the wait a pressed button says (the wiring table
decides which), the numbers that must agree (the calculator on the session's model, float32 here and float16 there
each said), lesson 17's step-time verdict on a busy machine and its grading, its chart's legend under the plot,
Branches' one-branch state, model names in titles, and the Chinese examples. tests/test_browser_story.py reads the
same page in Chromium."""
import html
import re
from types import SimpleNamespace

import gradio as gr
import pytest

from model.decoding.records import CacheTiming, ModelInfo
from model.decoding.timing import Spread
from ui.events import Event
from ui.nav import FIRST, PART_WORDS, nav_html, nav_style, numbers
from ui.protocol import IDS, PROTOCOL, SCRIPT_WORDS
from ui.strings import LANG_INPUT, PAGE, t
from ui.views import PARTS, VIEWS, parts_of

pytestmark = pytest.mark.unit

# The README's parts, in its order (What the page shows), and Start here before them
README_PARTS = ["start", "one_step", "inside", "one_at_a_time", "beyond", "engines", "class"]


def gemma_info() -> ModelInfo:
    """Gemma 3 270M's shape as the page states it (README, docs/what-it-teaches.md): 18 layers, 4 query heads, 1 KV head of 256."""
    return ModelInfo(name="gemma3-270m", layers=18, heads=4, kv_heads=1, head_dim=256, hidden=640, vocab=262144,
                     bytes_per_value=4, dtype="float32", context=32768, sliding_window=[512] * 18)


def smollm2_info() -> ModelInfo:
    return ModelInfo(name="smollm2", layers=30, heads=9, kv_heads=3, head_dim=64, hidden=576, vocab=49152,
                     bytes_per_value=4, dtype="float32", context=8192, sliding_window=[None] * 30)


# ---- the navigation ----------------------------------------------------------------------------------------------
def test_every_view_is_in_one_part_in_the_readmes_order():
    assert [key for key, _ in PARTS] == README_PARTS
    placed = [View for _, views in PARTS for View in views]
    assert len(placed) == len(set(placed)) and VIEWS == placed  # each view once; VIEWS is the parts' order
    assert [View.tab for View in dict(PARTS)["start"]] == ["start"]
    # the KV cache's three views: one step's measured cache, then the engines' calculator and paged blocks
    assert "kv" in [V.tab for V in dict(PARTS)["one_step"]]
    assert {"calculator", "paged"} <= {V.tab for V in dict(PARTS)["engines"]}
    for key in README_PARTS:  # every part named, and said, in both languages
        assert key in PART_WORDS and all(t(word, lang) for word in PART_WORDS[key] for lang in ("en", "zh"))


def test_a_view_no_part_names_joins_the_last_part_and_empty_parts_go():
    class NewView:
        tab, title = "new", "tab_start"
    grouped = parts_of([VIEWS[1], NewView])
    assert [(key, [V.tab for V in views]) for key, views in grouped] == [("one_step", [VIEWS[1].tab]), ("class", ["new"])]


def test_the_navigation_lists_each_parts_tabs_and_hides_the_others():
    parts = [(key, [V.tab for V in views]) for key, views in PARTS]
    titles = {V.tab: V.title for V in VIEWS}
    for lang in ("en", "zh"):
        nav = nav_html(parts, titles, lang)
        buttons = re.findall(r'<button type="button" class="tbt-part[^"]*" data-tbt-part="(\w+)" data-tbt-tabs="([^"]*)"',
                             nav)
        assert [(key, tabs.split()) for key, tabs in buttons] == parts
        assert f'id="{IDS["nav"]}"' in nav and t("part_inside", lang) in nav and "tbt-part-first" in nav
        # the phone's menu: every tab once, by its name, grouped by its part (numbered after Start here)
        options = re.findall(r'<option value="(\w+)">([^<]*)</option>', nav)
        assert [tab for tab, _ in options] == [V.tab for V in VIEWS]
        assert dict(options)["lens"] == t("tab_lens", lang)
        assert f'label="2 · {t("part_inside", lang)}"' in nav
    assert numbers(parts)[FIRST] is None and numbers(parts)["class"] == 6
    style = nav_style(parts, "one_step")
    # the default part's tabs on view before the page's script has set the open part; every other part's hidden
    assert 'html:not([data-tbt-open-part]) #tbt-tabs [role=tab]:not([data-tab-id="candidates"])' in style
    assert 'html[data-tbt-open-part="inside"] #tbt-tabs [role=tab]:not([data-tab-id="ablation"])' in style
    assert 'html[data-tbt-open-part="start"] #tbt-tabs [role=tablist]' in style  # a part of one view: no row


def test_start_here_opens_lesson_1_presenter_mode_a_room_and_the_interview_path():
    from ui.views.start import start_html

    parts = [(key, [V.tab for V in views]) for key, views in PARTS]
    titles = {V.tab: V.title for V in VIEWS}
    for lang in ("en", "zh"):
        said = start_html(parts, titles, lang)
        assert 'data-tbt-go="lesson" data-tbt-press="tbt-lesson-start"' in said
        assert 'data-tbt-toggle="presenter"' in said and 'data-tbt-go="room"' in said
        assert 'data-tbt-go="interview"' in said
        assert all(f'data-tbt-go="{V.tab}"' in said for V in VIEWS if V.tab != "start")  # every tab, by its part
        assert t("start_lesson_btn", lang) in said and t("part_engines_about", lang) in html.unescape(said)
    # a page without the lesson offers no lesson
    assert "data-tbt-press" not in start_html([("one_step", ["candidates"])], titles, "en")


def test_the_protocol_gives_the_script_the_language_switch_and_its_words():
    assert IDS["lang"] == LANG_INPUT and IDS["tabs"] == "tbt-tabs"
    for key in SCRIPT_WORDS:
        assert PROTOCOL["words"][key] == {"en": PAGE[key][0], "zh": PAGE[key][1]}
    assert {"busy", "done"} <= set(PROTOCOL["globals"])


# ---- a pressed button says its wait --------------------------------------------------------------------------------
def test_the_wiring_table_says_which_buttons_wait():
    with gr.Blocks():
        run = gr.Button("Run", elem_id="tbt-x-run")
        nameless = gr.Button("Run")
        hidden = gr.Button("go", elem_id="tbt-x-hidden", elem_classes="tbt-hidden")
        upload = gr.UploadButton("Import", elem_id="tbt-x-import")
        box = gr.Textbox(elem_id="tbt-x-box")
        out = gr.Markdown(elem_id="tbt-x-out")
        assert Event(run.click, None, [], [out], "runs").busy_button() == "tbt-x-run"
        assert Event(upload.upload, None, [], [out], "import").busy_button() == "tbt-x-import"
        assert Event(run.click, None, [], [out], "model", busy=False).busy_button() is None  # Next token, Back, ...
        assert Event(run.click, None, [], [out], "page").busy_button() is None  # no server wait
        assert Event(nameless.click, None, [], [out], "runs").busy_button() is None  # nothing to find it by
        assert Event(hidden.click, None, [], [out], "runs").busy_button() is None  # the script's own trigger
        assert Event(box.submit, None, [], [out], "runs").busy_button() is None  # not a button


def test_a_busy_listener_says_running_then_done_with_its_outputs():
    from ui.events import busy_js, done_js

    with gr.Blocks() as demo:
        run = gr.Button("Run", elem_id="tbt-x-run")
        out = gr.Markdown(elem_id="tbt-x-out")
        hidden = gr.HTML(elem_id="tbt-figdata")
        Event(run.click, lambda: "x", [], [out, hidden], "runs", "x_run").bind()
    deps = demo.get_config_file()["dependencies"]
    first, then = deps[0], deps[1]
    assert first["js"] == busy_js("tbt-x-run", None) and "window.tbtBusy?.(\"tbt-x-run\")" in first["js"]
    assert first["show_progress"] == "hidden"  # the button says the wait, not an overlay on the outputs
    assert then["js"] == done_js("tbt-x-run", [out, hidden], None)
    assert '["tbt-x-out", "tbt-figdata"]' in then["js"] and then["trigger_after"] == 0
    assert not then["trigger_only_on_success"]  # refused or answered, the button comes back
    # a listener's own js kept, after the busy call
    assert busy_js("b", "(...a) => [1, ...a.slice(1)]").endswith("return ((...a) => [1, ...a.slice(1)])(...a); }")


# ---- every number agreeing -----------------------------------------------------------------------------------------
def calculator_on(info):
    from ui.views.calculator import CalculatorView

    app = SimpleNamespace(session=lambda request: SimpleNamespace(lm=SimpleNamespace(info=info)),
                          models=SimpleNamespace(get=lambda: SimpleNamespace(info=smollm2_info())))
    view = CalculatorView(app)
    view.shape = ["layers", "heads", "kv_heads", "head_dim"]
    view.result, view.plot, view.preset = "result", "plot", "preset"
    return view


def test_the_calculator_on_a_chinese_pages_gemma_shows_gemmas_shape():
    """The page is built for the default model (SmolLM2: its shape in the boxes, its name the preset's value); a
    Chinese page's session runs Gemma 3 270M. Opening the tab showed SmolLM2's shape named gemma3-270m (45.0 MiB)."""
    view = calculator_on(gemma_info())
    shown = view.calculate("smollm2", "float16", 2048, 1, 30, 9, 3, 64, "zh", request=object())
    assert [shown[k] for k in view.shape] == [18, 4, 1, 256]
    assert f"{2 * 18 * 1 * 256 * 2 * 2048:,}" in shown["result"]  # 18,874,368 B = 18.0 MiB in float16
    assert shown["preset"]["value"] == "gemma3-270m" and ("Gemma 3 270M", "gemma3-270m") in shown["preset"]["choices"]
    # the user's own numbers are kept once the preset names the session's model
    mine = view.calculate("gemma3-270m", "float16", 2048, 1, 20, 4, 1, 256, "zh", request=object())
    assert [mine[k] for k in view.shape] == [20, 4, 1, 256]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_float32_here_and_float16_in_the_calculator_each_say_which(lang):
    import viz
    from model.decoding.records import KVBytes

    info = smollm2_info()
    chart = viz.kv_growth_chart([KVBytes(46080, 46080, 23040, 23040, 1)], 1, info, lang)
    subtitle = chart["layout"]["title"]["subtitle"]["text"]
    assert "float32" in subtitle and "46,080 B" in subtitle  # docs/what-it-teaches.md: SmolLM2, 46,080 B a token in fp32
    shown = calculator_on(info).calculate("smollm2", "float16", 2048, 1, 30, 9, 3, 64, lang, request=object())
    assert "23,040" in shown["result"] and "float16" in shown["result"]
    assert t("calc_here", lang, model="SmolLM2-135M", running="float32", running_bytes=4, running_per_token="46,080",
             dtype="float16") in shown["result"]
    same = calculator_on(info).calculate("smollm2", "float32", 2048, 1, 30, 9, 3, 64, lang, request=object())
    assert "46,080" in same["result"] and t("calc_here", lang, model="SmolLM2-135M", running="float32",
                                              running_bytes=4, running_per_token="46,080", dtype="float32") \
        not in same["result"]


def test_titles_name_the_model_not_its_id():
    import numpy as np

    from model.decoding.records import TokenInfo
    from model.inside.lens import LogitLens
    from viz.lens import lens_chart

    tokens = [TokenInfo(i, f"t{i}", f"t{i}") for i in range(3)]
    lens = LogitLens(tokens=tokens, start=0, targets=tokens, target_is_next=[True] * 3,
                     top_ids=np.zeros((2, 3), dtype=np.int64), top_tokens=[tokens, tokens],
                     top_prob=np.full((2, 3), 0.5, dtype=np.float32), target_prob=np.full((2, 3), 0.5, dtype=np.float32),
                     target_rank=np.ones((2, 3), dtype=np.int64), final_max_abs_diff=0.0, ms=1.0)
    for lang in ("en", "zh"):
        title = lens_chart(lens, "gemma3-270m", lang)["layout"]["title"]["text"]
        assert "Gemma 3 270M" in title and "gemma3-270m" not in title


# ---- lesson 17, step 1 ---------------------------------------------------------------------------------------------
def test_a_busy_machine_is_said_as_busy_and_a_guess_is_graded_on_the_known_answer():
    from model.classroom.myths import STEP_KNOWN, step_busy, step_grade, step_verdict

    quiet = (Spread(100.0, 99.0, 101.0, 3), Spread(116.0, 115.0, 117.0, 3))
    assert step_verdict(100.0, 116.0, *quiet) == "grows" and step_busy(*quiet) is None
    # a class's load: 89.9 ms at 2 tokens against 530.6 ms at 512, one run of the long length in the time allowed
    loaded = (Spread(89.9, 85.0, 95.0, 3), Spread(530.6, 530.6, 530.6, 1))
    assert step_verdict(89.9, 530.6, *loaded) is None and step_busy(*loaded) == "few_runs"
    overlapping = (Spread(100.0, 90.0, 300.0, 3), Spread(140.0, 120.0, 400.0, 3))
    assert step_verdict(100.0, 140.0, *overlapping) is None and step_busy(*overlapping) == "overlap"
    assert STEP_KNOWN == "grows"
    assert step_grade("grows", None) == (True, "known") and step_grade("same", None) == (False, "known")
    assert step_grade("same", "same") == (True, "measured") and step_grade(None, None) == (None, "known")


def test_the_busy_reveal_says_why_and_grades_the_guess():
    from viz.lesson import reveal_html

    busy = {"kind": "step_time", "guess": "same", "right": False, "graded_on": "known", "known": "grows",
            "busy": "few_runs", "answer": None, "tokens": 512, "seq_len": [2, 13, 81, 512],
            "cached_ms": [89.9, 120.0, 250.0, 530.6], "full_ms": [100, 200, 600, 1600],
            "cached_range": [[85.0, 95.0], [110, 130], [240, 260], [530.6, 530.6]], "full_range": [[1, 2]] * 4,
            "runs": [3, 3, 2, 1], "slope": 0.8, "intercept": 90.0, "fit_short": 91.6, "fit_long": 499.6,
            "separated": False, "growth": 0.1}
    for lang in ("en", "zh"):
        said = reveal_html(busy, lambda key, **fmt: t(key, lang, **fmt))
        assert 'data-right="false"' in said and t("lesson_wrong", lang) in said  # graded, not "not answered"
        assert t("lesson_step_busy_runs", lang, runs=1, long="512") in said
        assert ("too busy" if lang == "en" else "太忙") in said and "530.6" in said


def test_the_step_time_charts_legend_sits_under_the_plot_clear_of_the_subtitle():
    from viz.kv_cache import cache_timing_figure

    timing = CacheTiming([2, 13, 81, 512], [89.9, 120.0, 250.0, 530.6], [100, 200, 600, 1600],
                         [(85.0, 95.0), (110, 130), (240, 260), (530.6, 530.6)], [(90, 110)] * 4, [3, 3, 2, 1])
    for lang in ("en", "zh"):
        layout = cache_timing_figure(timing, lang, fit=(0.8, 90.0)).layout
        assert (layout.legend.yref, layout.legend.y, layout.legend.yanchor) == ("container", 0, "bottom")
        lines = layout.title.subtitle.text.count("<br>") + 1
        assert layout.margin.t >= 38 + 22 * lines  # the title and every subtitle line above the plot


# ---- defaults that show the lesson -----------------------------------------------------------------------------------
def test_one_branch_says_how_to_make_a_second():
    from viz.branches import branch_tree_chart

    row = SimpleNamespace(id=1, parent=None, fork=0, length=5, at=5, logprob_t1=-3.2, current=True, text="Once upon")
    for lang in ("en", "zh"):
        notes = [a for a in branch_tree_chart([row], lang)["layout"]["annotations"] if a.get("name") == "one_branch"]
        assert len(notes) == 1 and t("branches_one", lang)[:12] in notes[0]["text"].replace("<br>", " ")
    two = [row, SimpleNamespace(id=2, parent=1, fork=2, length=4, at=4, logprob_t1=-4.0, current=False, text="x")]
    assert not [a for a in branch_tree_chart(two, "en")["layout"]["annotations"] if a.get("name") == "one_branch"]
    import plotly.graph_objects as go
    go.Figure(**branch_tree_chart([row], "en"))  # a lesson step draws it as a figure: every key a plotly one


def test_the_patching_example_is_the_models_and_chinese_on_a_chinese_page():
    from model.experiments.patching import DEFAULT_CLEAN, DEFAULT_CORRUPTED
    from ui.views.patching import PatchingView

    assert (t("patch_clean_example", "en"), t("patch_corrupted_example", "en")) == (DEFAULT_CLEAN, DEFAULT_CORRUPTED)
    en = (t("patch_clean_example", "en"), t("patch_corrupted_example", "en"))
    assert PatchingView.example_prompts(*en, "zh") == (t("patch_clean_example", "zh"), t("patch_corrupted_example", "zh"))
    zh = PatchingView.example_prompts(*en, "zh")
    assert PatchingView.example_prompts(*zh, "en") == en
    kept = PatchingView.example_prompts("My own prompt", en[1], "zh")  # a reader's own prompts are kept
    assert all(isinstance(x, type(gr.skip())) or x == gr.skip() for x in kept)


def test_the_chinese_patching_example_is_one_word_apart_on_gemma():
    """A Chinese page runs Gemma 3 270M: its two example prompts must have as many tokens (Patching refuses a pair that
    does not) and differ in one. Gemma's tokenizer only (its converted folder, as the app keeps it), no weights."""
    from transformers import AutoTokenizer

    from model.decoding.loading import cache_root

    folders = sorted(cache_root().glob("gemma3-270m-v*"))
    if not folders or not (folders[-1] / "tokenizer.json").exists():
        pytest.skip("Gemma 3 270M has not been converted here (the app converts it on its first start)")
    tokenizer = AutoTokenizer.from_pretrained(folders[-1])
    clean, corrupted = (tokenizer(t(key, "zh"), add_special_tokens=False)["input_ids"]
                        for key in ("patch_clean_example", "patch_corrupted_example"))
    assert len(clean) == len(corrupted) and sum(a != b for a, b in zip(clean, corrupted)) == 1
    assert tokenizer(t("patch_answer_example", "zh"), add_special_tokens=False)["input_ids"].__len__() == 1
