"""Wiring as a table: one row per event (trigger, handler, inputs, outputs, lane), bound in one place."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

import gradio as gr

from ui.lanes import LANES, QUIET_LANES
from ui.protocol import PROTOCOL

GLOBALS = PROTOCOL["globals"]

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
        if button is not None:  # Gradio's page runs a .then only after an answer: a refusal runs .failure's
            listener.failure(None, None, None, api_name=False, show_progress="hidden", js=done_js(button, [], None))
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
