"""The page's state over the model's core: the model registry, every user's session, and how a step is drawn."""
from __future__ import annotations

import hashlib
from dataclasses import replace

import gradio as gr

import viz
from model.classroom.rooms import Rooms
from model.errors import SessionError
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession, WholeText
from model.runtime import CPU
from model.serving.sessions import ModelRegistry, SessionStore
from ui.guard import address
from ui.handlers import USER, View
from ui.lanes import AheadPolicy
from ui.protocol import figure_carrier, chart_id
from ui.reach import Reach
from ui.render import force_choices, status_html, text_panel
from ui.stash import Stash


class App:
    """What every handler shares: the models, the per-user sessions, the rooms, what the views keep for each user,
    and the views.

    The registries are made by the composition root (app.py) and handed in: `models` (loaded once), `store` (every
    user's session), `rooms` (model/classroom/rooms.py: the Room view opens and follows them; a lesson asks its
    questions in them), `reach` (the operator's public address, and where the server listens). `views` maps a tab id to its view (ui/views) for the views that draw every step: the one
    whose tab is open draws the step's chart. `all_views` maps every view of the page by its tab id (a lesson step
    asks the view it is about for its chart). `stash` holds what a view keeps for a user between events
    (ui/stash.py).
    """

    def __init__(self, models: ModelRegistry, store: SessionStore, rooms: Rooms, reach: Reach | None = None):
        self.models = models
        self.store = store
        self.rooms = rooms
        self.reach = reach or Reach()  # where students reach the server: a room's join link (ui/reach.py)
        self.revision = 0  # bumps on every render, so the page can tell a new step from an old one
        self.views: dict = {}
        self.all_views: dict = {}
        # bounded like the sessions: a user's values go when their page leaves, or as their session would expire
        self.stash = Stash(store.idle_seconds, store.max_sessions, store.clock)
        # called as hook(user, session, view, outputs, draw) after every render a page handler asks for (user: its
        # session id; draw(lang): the same chart in another language); a room (Rooms.on_render) keeps its teacher's.
        # Inside the session's read lock: keep it quick.
        self.on_render: list = []
        self.ahead = AheadPolicy()  # whether a page should ask for the next step's chart now

    def session(self, request: gr.Request) -> DecodeSession:
        """The user's session, or a refusal saying to start (or that it expired)."""
        return self.store.get(request.session_hash)

    def local_session(self, request: gr.Request) -> DecodeSession:
        """The user's session, for a view that runs the model itself: refused, saying so, on an engine's model."""
        session = self.session(request)
        if not session.capabilities.runs_locally:  # an engine's model: no local weights to run
            raise SessionError("engine_needs_local", model=session.lm.name)
        return session

    def open_session(self, request: gr.Request, model_name: str | None, fill) -> DecodeSession:
        """A new session for the user on `model_name`, filled by fill(session) (a prompt started, a trace replayed,
        a teacher's records taken): SessionStore.open, the one way a page opens a session, with its admission check
        before the session's first pass."""
        def make():
            session = self.models.new_session(model_name)
            fill(session)
            return session
        return self.store.open(request.session_hash, address(request), make)

    def local_core(self, request: gr.Request):
        """The core of the user's model if it is a local one, else the default local model's (no session yet, or one
        on an engine's model): for a computation on a text the page sends, not the session's (core.compute(fn,
        ...); core.lm: the model's name, tokenizer and shape)."""
        try:
            name = self.local_session(request).lm.name
        except SessionError:
            name = None
        return self.models.core(name)

    def on_user_model(self, request: gr.Request, compute, *args):
        """compute(lm, *args) on the user's model (the default local one before any session): in its core for a
        local model, directly for an engine's (the computation asks the engine: Score any text)."""
        try:
            lm = self.session(request).lm
        except SessionError:
            lm = self.models.get()
        core = self.models.core(lm.name)
        return core.compute(compute, *args) if core is not None else compute(lm, *args)

    def whole_text(self, request: gr.Request, refusal: str = "engine_needs_local") -> WholeText:
        """The user's text for a computation on all of it (DecodeSession.whole_text: the one runner, whose passes
        run in the model's core); refused with `refusal` on an engine's model."""
        return self.session(request).whole_text(refusal)

    def answer(self, session: DecodeSession, cfg: SamplingConfig, view: View) -> list:
        """The page after a change, and the next step's forward pass computed ahead while the browser draws it (the
        core started it with the change already, when the change passed cfg: then nothing more is asked of it)."""
        page = self.render(session, cfg, view)
        session.prefetch(cfg)  # the next Next token then only commits it (in a play-back: the recorded token)
        return page

    def render(self, session: DecodeSession, cfg: SamplingConfig, view: View) -> list:
        """Everything a step changes: the text with its status line, the open tab's chart, the force list.

        Three outputs, not one per piece: the page spends time on every output of every answer (its loading
        status, a copy of its value), and the server builds a component for each.
        """
        with session.reading():  # one consistent state, even if another request of this user is under way
            cfg = session.replay_config() or cfg  # playing back a trace: show the step as it was recorded
            dist = session.preview(cfg)
            last_kv = session.steps[-1].kv if session.steps else session.prefill.kv
            self.revision += 1
            with CPU.part("render"):  # the whole page of a step, its chart ("figures") included
                outputs = [
                    text_panel(viz.token_chips_html(session.prefill.tokens, session.steps, view.lang),
                               status_html(len(session.steps), len(session.ids), session.max_tokens, last_kv,
                                           session.logprob_t1(), session.finished, self.revision, view.lang,
                                           replay_left=session.replay_left, ahead=self.ahead.wanted(USER.get()))),
                    self._chart(session, cfg, view, dist),
                    gr.update(choices=force_choices(dist, view.lang, session.lm.tokens.tail(session.ids)), value=None),
                ]
            self._rendered(session, cfg, view, dist, outputs)
            return outputs

    def chart(self, session: DecodeSession, cfg: SamplingConfig, view: View, dist=None) -> str:
        """The chart of the open tab, in a carrier naming the tab's plot (only what the page shows is sent)."""
        with session.reading():
            cfg = session.replay_config() or cfg
            chart = self._chart(session, cfg, view, dist)
            self._rendered(session, cfg, view, dist, [None, chart, None])
            return chart

    def _rendered(self, session: DecodeSession, cfg: SamplingConfig, view: View, dist, outputs: list) -> None:
        """Tell on_render what a page handler's user is now shown (None: an output this render left as it was)."""
        user = USER.get()
        draw = lambda lang: self._chart(session, cfg, replace(view, lang=lang), dist)  # noqa: E731
        for hook in self.on_render if user is not None else ():
            hook(user, session, view, outputs, draw)

    def _chart(self, session, cfg, view, dist) -> str:
        with CPU.part("figures"):
            return self.views[view.tab].chart(session, cfg, view, dist)


def chart_key(session: DecodeSession, cfg: SamplingConfig, view: View) -> str | None:
    """What a candidate chart shows besides the temperature: the text so far, the other settings, the language.

    None while a trace plays back (its steps show their recorded settings, not the page's).
    """
    return None if session.replay_left else state_key(session.ids, cfg, view.lang)


def state_key(ids: list[int], cfg: SamplingConfig, lang: str) -> str:
    """chart_key of a text `ids` (the text a step will write, too)."""
    return hashlib.sha1(repr((ids, replace(cfg, temperature=0.0), lang)).encode()).hexdigest()[:16]


def carrier(fig: dict, tab: str, **named) -> str:
    """A view's chart in its carrier (ui.protocol.figure_carrier), for the plot of `tab`."""
    return figure_carrier(fig, chart_id(tab), **named)
