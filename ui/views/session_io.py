"""Save / load: export the session as its JSON trace; import one to play it back step by step."""
from __future__ import annotations

import functools
import json
import shutil
import tempfile
import threading
from pathlib import Path

import gradio as gr

from model.errors import SessionError
from model.decoding.trace import MAX_TRACE_BYTES, read_trace, replay, to_trace
from viz.offline import session_page, session_record, shown_layers
from ui.events import Event
from ui.handlers import friendly, upload_bytes, whole
from ui.protocol import PLOTLY_JS
from ui.strings import Refusal, t

EXPORT_NAME = "token-by-token-trace.json"
PAGE_NAME = "token-by-token-session.html"
EXPORT_KEEP_S = 10.0  # an export's own file lives this long: Gradio has copied it for the download by then


class Exports:
    """Each exported file is written to a folder of its own, which is removed EXPORT_KEEP_S later: Gradio serves
    the download from its own copy, made as soon as the handler returns the file (and removed by its cache
    clean-up). The user's newest folder is kept in the app's stash (ui/stash.py) with its removal as its cleanup,
    so it also goes when their next export does, or when they leave."""

    def __init__(self, stash, name: str):
        self.stash, self.name = stash, name  # the app's stash, and this view's name in it

    def write(self, user: str, trace: dict) -> str:
        return self.write_text(user, EXPORT_NAME, json.dumps(trace, ensure_ascii=False, indent=1))

    def write_text(self, user: str, name: str, text: str) -> str:
        """`text` in a new folder of the user's, as the file `name` (one of ours: never a name the page sent)."""
        folder = Path(tempfile.mkdtemp(prefix="tbt-export-"))
        path = folder / name
        path.write_text(text, encoding="utf-8")
        self.stash.put(user, self.name, folder, cleanup=functools.partial(shutil.rmtree, folder, ignore_errors=True))
        timer = threading.Timer(EXPORT_KEEP_S, self._expire, (user, folder))
        timer.daemon = True
        timer.start()
        return str(path)

    def _expire(self, user: str, folder: Path) -> None:
        self.stash.forget(user, self.name, only=folder)  # still the user's newest: let go, its cleanup removes it
        shutil.rmtree(folder, ignore_errors=True)  # a no-op unless the stash let it go without its cleanup


class SessionView:
    tab, title = "session", "tab_session"
    chart = None

    def __init__(self, app):
        self.app = app
        self.exports = Exports(app.stash, self.tab)

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_session"), elem_classes="tbt-explain", elem_id="tbt-session-explain"),
            "explain_session", "value")  # what each button does (the tab was two empty boxes and three buttons)
        self.export_btn = add(gr.Button(t("btn_export"), elem_id="tbt-export"), "btn_export", "value")
        self.export_file = add(gr.File(label=t("trace_file"), elem_id="tbt-export-file", interactive=False),
                               "trace_file")
        self.page_btn = add(gr.Button(t("btn_export_page"), elem_id="tbt-export-page"), "btn_export_page", "value")
        self.page_file = add(gr.File(label=t("page_file"), elem_id="tbt-export-page-file", interactive=False),
                             "page_file")
        self.import_btn = add(gr.UploadButton(t("btn_import"), file_types=[".json"], elem_id="tbt-import"),
                              "btn_import")  # an UploadButton says its text by its label

    def export_trace(self, request: gr.Request, lang="en"):
        trace = to_trace(self.app.session(request))
        return self.exports.write(request.session_hash, trace)

    def export_page(self, request: gr.Request, lang="en", layer=0):
        """The session as one web page that replays offline (viz/offline.py), in the page's language, with the
        attention of the attention view's layer, the first and the last (mean over heads). No model pass, and no
        engine call: on an engine's model (no attention weights) the page has the engine's candidates and says why
        it has no attention panel."""
        session = self.app.session(request)
        with session.reading():
            if not session.started:
                raise SessionError("nothing_to_export")
            info = session.lm.info
            layer = 0 if layer in (None, "") else whole(layer, "layer")  # NaN, 1.5, "x": refused, named
            layers = shown_layers(layer, info) if session.capabilities.attention else []
            record = session_record(session.prefill, list(session.steps), info, layers, lang)
        page = session_page(record, PLOTLY_JS.read_text(encoding="utf-8"))
        return self.exports.write_text(request.session_hash, PAGE_NAME, page)

    def import_trace(self, request, file, cfg, view):
        raw = uploaded_bytes(file)
        trace = read_trace(raw)
        # checked whole, then played back one step per Next token
        session = self.app.open_session(request, trace.get("model"), lambda s: replay(s, trace, rewind=True))
        return self.app.answer(session, cfg, view)

    def events(self, page):
        return [
            Event(self.export_btn.click, friendly(self.export_trace), [page.lang], [self.export_file], "views",
                  "export"),
            Event(self.page_btn.click, friendly(self.export_page), [page.lang, page.layer], [self.page_file], "views",
                  "export_page"),
            Event(self.import_btn.upload, page.handler(self.import_trace, "file"), [self.import_btn, *page.page_in],
                  page.step_out, "import", "import_trace"),
        ]


def uploaded_bytes(file) -> bytes:
    """The bytes of an uploaded trace, at most what a trace can be."""
    return upload_bytes(file, MAX_TRACE_BYTES, Refusal("import_no_file"),
                        Refusal("import_too_big", limit=f"{MAX_TRACE_BYTES:,}"))
