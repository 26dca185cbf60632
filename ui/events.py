"""Wiring as a table: one row per event (trigger, handler, inputs, outputs, lane), bound in one place."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

import gradio as gr

from ui.protocol import PROTOCOL

GLOBALS = PROTOCOL["globals"]

# Concurrency lanes. Many steps may wait at once: the batcher runs them as one forward pass, one pass at a time.
MODEL_CONCURRENCY = 16  # requests that may wait for the step batcher together (its batch size)
LANES = {
    "model": dict(concurrency_id="model", concurrency_limit=MODEL_CONCURRENCY),
    "views": dict(concurrency_id="views", concurrency_limit=1),  # re-drawing a chart: fast, one at a time
    "bundle": dict(concurrency_id="bundle", concurrency_limit=1),  # ~0.4 s: not in the way of the views
    "ahead": dict(concurrency_id="ahead", concurrency_limit=2),  # waits for the pass computed ahead
    "play": dict(concurrency_id="play", concurrency_limit=MODEL_CONCURRENCY),
    # a computation on a user's whole text (lens, beams, race, self-consistency, constraints, speculative): its
    # passes take turns at the model's scheduler after the class's steps; two at once share it pass by pass
    "runs": dict(concurrency_id="runs", concurrency_limit=2),
    "measure": dict(concurrency_id="measure", concurrency_limit=1),
    "import": dict(concurrency_id="import", concurrency_limit=2),  # a replay runs each text of a trace in chunks
    "lesson": dict(concurrency_id="lesson", concurrency_limit=2),  # a lesson upload: never behind a trace's replay
    # a lesson's step shown (Start, Next, Back, Resume; an interview card's lesson): its prompt started as Start
    # does, and its chart, which may be a whole-text run (a beam search, a vote): out of the steps' lane, as many
    # at once as it (a class pressing Next together: the tokens a step writes batched as Next token's are)
    "lesson_steps": dict(concurrency_id="lesson_steps", concurrency_limit=MODEL_CONCURRENCY),
    # a lesson question answered (Commit, Reveal): a measured one runs the model for seconds (made once for everyone
    # asking the same: model/classroom/shared.py), so a class pressing it at once never fills the steps' lane
    "reveal": dict(concurrency_id="reveal", concurrency_limit=2),
    "page": {},  # no server work worth queueing apart
}


# The lanes a button's wait is not said in: a step's own buttons answer within a fraction of a second, and the page's
# and Play's work no server queue holds up
QUIET_LANES = ("page", "play", "ahead")
BUSY_EVENTS = ("click", "upload")  # the triggers a reader presses and then waits on


@dataclass
class Event:
    """One listener. `trigger` is a bound event method (button.click); api_name False hides it from the API.

    No loading overlay on the outputs by default: a step answers within a fraction of a second, and animating
    the overlay on every output takes the browser's time from drawing the answer.

    `busy`: the button pressed says it is running until the answer is in (assets/js/busy.js): disabled, its
    elapsed seconds (or of about how many, once it has run) after the first second, the answer scrolled into view
    after. None: every pressed button with an id outside QUIET_LANES, and no other trigger; the step buttons say False.
    """

    trigger: Callable
    handler: Callable | None
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    lane: str = "views"
    api_name: str | bool = False
    options: dict = field(default_factory=dict)  # anything else for the listener: js, trigger_mode, ...
    then_js: str | None = None  # the page's script to run once the event has ended
    busy: bool | None = None

    def bind(self):
        options = {"show_progress": "hidden", **LANES[self.lane], **self.options}
        button = self.busy_button()
        then_js = self.then_js
        if button is not None:  # (the button says the wait: no overlay of Gradio's on the outputs as well)
            options["js"], options["show_progress"] = busy_js(button, options.get("js")), "hidden"
            then_js = done_js(button, self.outputs, then_js)
        listener = self.trigger(self.handler, self.inputs, self.outputs, api_name=self.api_name, **options)
        if then_js is not None:
            listener.then(None, None, None, api_name=False, show_progress="hidden", js=then_js)
        return listener

    def busy_button(self) -> str | None:
        """The id of the button whose wait the page says, or None."""
        block = getattr(self.trigger, "__self__", None)
        pressed = getattr(self.trigger, "event_name", None) in BUSY_EVENTS and isinstance(block, (gr.Button, gr.UploadButton))
        hidden = "tbt-hidden" in (getattr(block, "elem_classes", None) or [])  # a trigger the page's script clicks
        wanted = self.busy if self.busy is not None else self.lane not in QUIET_LANES
        return block.elem_id if wanted and pressed and not hidden and block.elem_id else None


def busy_js(button: str, js: str | None) -> str:
    """The listener's js: the button said running, then the inputs as they were (or as `js` makes them)."""
    said = f"window.{GLOBALS['busy']}?.({json.dumps(button)})"
    return f"(...a) => {{ {said}; return a; }}" if js is None else f"(...a) => {{ {said}; return ({js})(...a); }}"


def done_js(button: str, outputs: list, then_js: str | None) -> str:
    """After the event (answered or refused): the button back, and the first of `outputs` on view scrolled to."""
    ids = [c.elem_id for c in outputs if getattr(c, "elem_id", None)]
    said = f"window.{GLOBALS['done']}?.({json.dumps(button)}, {json.dumps(ids)})"
    return f"() => {{ {said}; }}" if then_js is None else f"(...a) => {{ {said}; return ({then_js})(...a); }}"


def wire(rows: list[Event]) -> None:
    """Bind every row of the table."""
    for row in rows:
        row.bind()
