"""Wiring as a table: one row per event (trigger, handler, inputs, outputs, lane), bound in one place."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

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


@dataclass
class Event:
    """One listener. `trigger` is a bound event method (button.click); api_name False hides it from the API.

    No loading overlay on the outputs by default: a step answers within a fraction of a second, and animating
    the overlay on every output takes the browser's time from drawing the answer.
    """

    trigger: Callable
    handler: Callable | None
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    lane: str = "views"
    api_name: str | bool = False
    options: dict = field(default_factory=dict)  # anything else for the listener: js, trigger_mode, ...
    then_js: str | None = None  # the page's script to run once the event has ended

    def bind(self):
        options = {"show_progress": "hidden", **LANES[self.lane], **self.options}
        listener = self.trigger(self.handler, self.inputs, self.outputs, api_name=self.api_name, **options)
        if self.then_js is not None:
            listener.then(None, None, None, api_name=False, show_progress="hidden", js=self.then_js)
        return listener


def wire(rows: list[Event]) -> None:
    """Bind every row of the table."""
    for row in rows:
        row.bind()
