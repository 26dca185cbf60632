"""What a Gradio event costs the server beyond its handler (issue 25): the work Gradio does for every event that this
app never uses is taken out (ui/gradio_patches.py: queue_analytics, no_matplotlib_switch, the inline_ patches), and
a page is told not to ask for the next step's chart while a class keeps the server busy (ui/lanes.py AheadPolicy),
so that a step is one event, not two."""
import importlib.util
import time

import anyio
import gradio as gr
import pytest

from model.decoding.records import KVBytes
from ui import gradio_patches, server
from ui.render import status_html
from ui.lanes import AheadPolicy

pytestmark = pytest.mark.unit


def test_a_few_sessions_keep_the_chart_ahead_a_class_does_not():
    policy = AheadPolicy(busy_sessions=4, window_s=2.0)
    assert all(policy.wanted(user, now=10.0 + i * 0.1) for i, user in enumerate("abc"))  # a presenter and two more
    assert policy.wanted("a", now=10.5)  # the same sessions stepping again: still three
    assert not policy.wanted("d", now=10.6)  # a fourth within 2 s: a class
    assert not policy.wanted("a", now=11.0)
    assert policy.wanted("a", now=13.0)  # the others have not stepped for 2 s: alone again
    assert policy.wanted(None, now=13.1)  # not a page's render: counted for nobody


def test_the_status_line_says_when_not_to_ask_ahead():
    kv = KVBytes(measured=100, formula=100, keys=50, values=50, tokens=5)
    quiet = status_html(1, 5, 64, kv, -1.0, False, 7)
    busy = status_html(1, 5, 64, kv, -1.0, False, 7, ahead=False)
    assert 'data-ahead' not in quiet
    assert 'data-ahead="0"' in busy
    assert busy.replace(' data-ahead="0"', "") == quiet  # nothing else changes


def blocks_with_a_slider():
    with gr.Blocks() as demo:
        knob = gr.Slider(0, 2, 1.0, label="t")
        out = gr.HTML()
        gr.Button().click(lambda x: f"<b>{x}</b>", [knob], [out])
    demo.queue(status_update_rate=server.QUEUE_STATUS_S)
    gradio_patches.patch_app(demo)
    return demo, knob, out


def test_the_queue_no_longer_summarises_every_event():
    demo, _, _ = blocks_with_a_slider()
    queue = demo._queue
    records = [{"time": time.time(), "status": "success", "process_time": 0.1, "function": "f", "session_hash": "s"}
               for _ in range(500)]
    queue.events_recorded = 500
    cached = queue.cached_event_analytics_summary
    # Gradio's default recomputes this pandas summary of up to 10,000 events after every event (19 ms at 10,000)
    assert queue.compute_analytics_summary(records) is cached
    assert queue.ANALYTICS_MAX_EVENTS == gradio_patches.ANALYTICS_EVENTS
    assert not queue.live_updates  # the queue's places: every QUEUE_STATUS_S, not to every waiting event per start
    if importlib.util.find_spec("matplotlib") is None:  # no failed import of it around every event
        from gradio import utils

        assert utils.MatplotlibBackendMananger is gradio_patches._NoBackendSwitch


def test_small_values_are_checked_in_place_and_refusals_still_raised():
    from gradio import blocks

    _, knob, out = blocks_with_a_slider()
    assert gradio_patches._inline(knob.preprocess) and gradio_patches._inline(out.postprocess)
    assert not gradio_patches._inline(lambda: None) and not gradio_patches._inline(gr.File().preprocess)
    run_sync = blocks.anyio.to_thread.run_sync

    async def main():
        assert await run_sync(knob.preprocess, 1.5) == 1.5
        with pytest.raises(gr.Error):
            await run_sync(knob.preprocess, 5)  # over the maximum: Gradio's refusal, as before
        assert await run_sync(sum, [1, 2]) == 3  # anything else: a worker thread, as before

    anyio.run(main)
