"""The page is put together from its views, none depending on another: with any one view left out it still
builds, every event's inputs and outputs are on the page, and the page's own controls and events are all there.
(Page owns every control its handlers share; a view only places some of them in its tab.)"""
import pytest

import app as app_module
from model.classroom.rooms import Rooms
from model.serving.sessions import ModelRegistry, SessionStore
from ui.protocol import PROTOCOL
from ui.views import VIEWS

pytestmark = pytest.mark.model

PAGE_EVENTS = {"start", "next_token", "back", "reset", "force", "go_to", "set_language", "play"}
SHARED = {"tbt-force", "tbt-force-btn", "tbt-layer", "tbt-head"}  # made by Page, shown by Candidates, Attention


@pytest.fixture(scope="module")
def models(lm):
    return ModelRegistry("smollm2", {"smollm2": lm})


def built(models, views):
    return app_module.build(app_module.App(models, SessionStore(), Rooms()), "smollm2", views=views)


@pytest.mark.parametrize("left_out", VIEWS, ids=[View.tab for View in VIEWS])
def test_the_page_builds_with_any_one_view_left_out(models, left_out):
    views = [View for View in VIEWS if View is not left_out]
    demo = built(models, views)
    on_page = set(demo.blocks)
    for fn in demo.fns.values():
        missing = [block for block in [*fn.inputs, *fn.outputs] if block._id not in on_page]
        assert not missing, (fn.api_name or fn.name, missing)  # an event on a component that is not on the page
    apis = {fn.api_name for fn in demo.fns.values()}
    assert PAGE_EVENTS <= apis
    tabs = {block.id for block in demo.blocks.values() if type(block).__name__ == "Tab"}
    assert tabs == {View.tab for View in views}
    ids = {getattr(block, "elem_id", None) for block in demo.blocks.values()}
    assert SHARED <= ids  # hidden when their view is left out, but there: the page's handlers read and write them


def test_the_shared_controls_are_shown_in_their_views_tabs(models):
    demo = built(models, VIEWS)
    by_id = {getattr(block, "elem_id", None): block for block in demo.blocks.values()}

    def tab_of(block):
        while block is not None and type(block).__name__ != "Tab":
            block = block.parent
        return block.id if block is not None else None

    assert {tab_of(by_id[i]) for i in ("tbt-force", "tbt-force-btn")} == {"candidates"}
    assert {tab_of(by_id[i]) for i in ("tbt-layer", "tbt-head")} == {"attention"}


def test_the_protocols_gradio_plots_are_plots_of_the_page(models):
    """assets/js/charts.js lays out for a phone the charts Gradio draws, found by the ids in PROTOCOL["gradio_plots"]
    (the script retypes none): each is a gr.Plot's elem_id on the page."""
    demo = built(models, VIEWS)
    plots = {block.elem_id for block in demo.blocks.values() if type(block).__name__ == "Plot"}
    assert set(PROTOCOL["gradio_plots"].values()) <= plots, set(PROTOCOL["gradio_plots"].values()) - plots
