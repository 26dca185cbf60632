"""bench.ceiling's Gradio stand-in (its part "gradio": Gradio alone, no model) has the app's step events as the app's
own Blocks config says them: for start, next_token and reset the same inputs and outputs (component types and
props), trigger, lane, progress and API parameters. The stand-in copies them from the app at start-up; this checks
the copy against the app's config, so the figure it gives is that of the app's events, not of look-alikes."""
import pytest

from bench.ceiling import STEP_APIS, app_blocks, arguments, standin_blocks
from model.serving.sessions import ModelRegistry

pytestmark = pytest.mark.model

SAME_DEPENDENCY = ("backend_fn", "js", "queue", "show_progress", "trigger_mode", "batch", "max_batch_size",
                   "collects_event_data", "types", "api_visibility", "connection", "time_limit", "stream_every",
                   "event_specific_args", "component_prop_inputs")


def config_of(demo):
    config = demo.get_config_file()
    components = {c["id"]: c for c in config["components"]}
    events = {d["api_name"]: d for d in config["dependencies"] if isinstance(d.get("api_name"), str)}
    return components, events


def component(config: dict) -> dict:
    """A component's config without its place on the page (its id, its parent)."""
    return {k: v for k, v in config.items() if k not in ("id", "parent_id", "key")}


@pytest.fixture(scope="module")
def app_and_standin(lm):
    demo, fns = app_blocks(ModelRegistry("smollm2", {"smollm2": lm}))
    outputs = {api: [None] * len(fns[api].outputs) for api in STEP_APIS}  # what the handlers answer: not compared
    return demo, fns, standin_blocks(demo, fns, outputs)


def test_the_stand_ins_step_events_are_the_apps(app_and_standin):
    demo, _, standin = app_and_standin
    (app_components, app_events), (own_components, own_events) = config_of(demo), config_of(standin)
    assert set(own_events) == set(STEP_APIS)
    for api in STEP_APIS:
        app_event, own_event = app_events[api], own_events[api]
        for key in SAME_DEPENDENCY:
            assert own_event[key] == app_event[key], (api, key)
        for side in ("inputs", "outputs"):
            app_side = [component(app_components[i]) for i in app_event[side]]
            own_side = [component(own_components[i]) for i in own_event[side]]
            assert [c["type"] for c in own_side] == [c["type"] for c in app_side], (api, side)
            assert own_side == app_side, (api, side)
        (app_target, app_trigger), = app_event["targets"]
        (own_target, own_trigger), = own_event["targets"]
        assert own_trigger == app_trigger and component(own_components[own_target]) == component(app_components[app_target])


def test_the_stand_ins_lanes_and_api_are_the_apps(app_and_standin):
    demo, fns, standin = app_and_standin
    own = {fn.api_name: fn for fn in standin.fns.values()}
    for api in STEP_APIS:
        assert (own[api].concurrency_id, own[api].concurrency_limit) == (fns[api].concurrency_id,
                                                                         fns[api].concurrency_limit)
    app_api, own_api = demo.get_api_info()["named_endpoints"], standin.get_api_info()["named_endpoints"]
    for api in STEP_APIS:  # what gradio_client (the simulated students) sees and sends
        app_end, own_end = app_api[f"/{api}"], own_api[f"/{api}"]
        assert own_end["parameters"] == app_end["parameters"]
        assert [unnamed(r) for r in own_end["returns"]] == [unnamed(r) for r in app_end["returns"]]


def unnamed(returned: dict) -> dict:
    """An API return's description without the name Gradio makes up for an output with no label (value_<its id>)."""
    generated = str(returned.get("label", "")).startswith("value_")
    return {k: v for k, v in returned.items() if not (k == "label" and generated)}


def test_a_client_sends_each_input_its_value(app_and_standin):
    _, fns, _ = app_and_standin
    values = arguments(fns["next_token"])
    assert len(values) == len(fns["next_token"].inputs) == 11  # 7 settings, the language, the open tab, layer, head
    assert values[:7] == [1.0, 0, 1.0, 0.0, 1.0, "transformers", 0] and values[8] == "candidates"
