"""How a page event becomes a call: the settings and view read from its inputs (an uploaded file's bytes too),
refusals said in the page's language, and nothing else leaked (a bug is logged and named only by its kind)."""
from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from model.errors import SessionError
from model.parse import shown, whole_number
from model.decoding.records import SETTING_NAMES, SamplingConfig
from ui.gradio_patches import NAMED_RANGES, patch_class
from ui.strings import Refusal, lang_of

log = logging.getLogger("token-by-token")
USER = contextvars.ContextVar("tbt_user", default=None)  # the session id a page handler runs for (App.render's hook)
VIEW_PARAMS = ("lang", "tab", "layer", "head")


@dataclass
class View:
    """What the user is looking at: language, open tab, attention layer and head (None = mean)."""

    lang: str = "en"
    tab: str = "candidates"
    layer: int = 0
    head: int | None = None


def config(*settings) -> SamplingConfig:
    """The sampling settings from the page (one value per SETTING_NAMES), validated (the refusal names the setting
    that is out of range)."""
    return SamplingConfig(**dict(zip(SETTING_NAMES, settings, strict=True))).validate()


def parse_view(lang, tab, layer, head, tabs: tuple[str, ...]) -> View:
    """The view options from the page (no layer: 0; no head or "mean": None); a refusal if one is not understood."""
    layer_n = 0 if layer in (None, "") else whole_number(layer, text=True)
    head_n = None if head in (None, "", "mean") else whole_number(head, text=True)  # "3" from its dropdown
    if layer_n is None or (head_n is None and head not in (None, "", "mean")):
        raise Refusal("bad_view", layer=repr(shown(layer)), head=repr(shown(head)))
    return View(lang_of(lang), tab if tab in tabs else tabs[0], layer_n, head_n)


def whole(value, name_key: str) -> int:
    """A whole number from a number box or slider on the page or the API (model.parse.whole_number's reading, no
    text; its range is the caller's), or a refusal naming it (`name_key`: its label's key)."""
    number = whole_number(value, text=False)
    if number is None:
        raise Refusal("not_whole", name_key=name_key, value=repr(shown(value)))
    return number


def page_handler(fn, *leading: str, tabs: tuple[str, ...]):
    """fn(request, *leading, cfg, view) as an event handler taking the leading inputs, the settings, the view.

    The handler's signature names every input (so the API documents them) and gets the gr.Request.
    """
    n = len(leading)

    def arguments(request, values):
        cfg = config(*values[n : n + len(SETTING_NAMES)])
        view = parse_view(*values[n + len(SETTING_NAMES) :], tabs=tabs)
        return (request, *values[:n], cfg, view)

    def lang(values):
        return lang_of(values[n + len(SETTING_NAMES)] if len(values) > n + len(SETTING_NAMES) else "en")

    if inspect.isgeneratorfunction(fn):  # a streaming handler (Gradio tells them apart by this)
        def handler(request: gr.Request, *values):
            with plainly(fn.__name__, lang(values)):
                yield from acting_for(request, fn(*arguments(request, values)))
    else:
        def handler(request: gr.Request, *values):
            with plainly(fn.__name__, lang(values)):
                token = USER.set(request.session_hash)
                try:
                    return fn(*arguments(request, values))
                finally:
                    USER.reset(token)

    names = ("request", *leading, *SETTING_NAMES, *VIEW_PARAMS)
    handler.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names]
    )
    handler.__annotations__ = {"request": gr.Request}
    handler.__name__ = fn.__name__
    return handler


def acting_for(request, steps):
    """A streaming handler's steps, each run with USER set to the request's session id (Gradio runs each step
    of a generator in a fresh copy of the context, so a value set in one step is gone in the next)."""
    try:
        while True:
            token = USER.set(request.session_hash)
            try:
                item = next(steps)
            except StopIteration:
                return
            finally:
                USER.reset(token)
            yield item
    finally:
        steps.close()  # closed early (the request cancelled): the handler's own clean-up runs now, not at gc


def friendly(fn, lang_arg: str | None = "lang"):
    """A handler whose refusals become a message on the page (gr.Error) in the language of its `lang_arg`."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs)
        with plainly(fn.__name__, lang_of(bound.arguments.get(lang_arg, "en"))):
            return fn(*args, **kwargs)

    return wrapper


@contextmanager
def plainly(name: str, lang: str):
    """Refusals in the page's language; anything else is logged, and the page is told only its kind."""
    try:
        yield
    except SessionError as err:
        raise gr.Error(err.text(lang), print_exception=False) from None
    except gr.Error:
        raise
    except Exception as err:  # a bug: the session is unchanged (steps are atomic), say so plainly
        log.exception("handler %s failed", name)
        raise gr.Error(Refusal("bug", kind=type(err).__name__).text(lang), print_exception=False) from None


def named_range(component, name_key: str):
    """Make a slider's or number box's range check name the setting (`name_key`: its label's key) in the page's
    language; Gradio's own says only 'Value 5 is greater than maximum value 2.', in English. The check is wrapped
    on the component's class, for the elem_ids named here (the named_range patch of ui/gradio_patches.py, which
    says why on the class)."""
    assert component.elem_id, "a named range needs an elem_id (its session copies keep it)"
    NAMED_RANGES[component.elem_id] = name_key
    patch_class(type(component))
    return component


def cached_upload(file) -> Path | None:
    """The path of an upload Gradio has stored in its own cache (its temp folder), or None for anything else:
    a page never chooses a server path. The path is never shown to the user."""
    if isinstance(file, dict):
        file = file.get("path")
    path = Path(file if isinstance(file, str) else getattr(file, "name", "") or "")
    try:
        return path if path.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve()) and path.is_file() else None
    except (OSError, ValueError):
        return None


def upload_bytes(file, limit: int, no_file: Exception, too_big: Exception) -> bytes:
    """The bytes of a file the user uploaded: `no_file` raised if it is not a file Gradio holds, `too_big` if it
    is larger than `limit` bytes."""
    path = cached_upload(file)
    if path is None:
        raise no_file
    if path.stat().st_size > limit:
        raise too_big
    return path.read_bytes()
