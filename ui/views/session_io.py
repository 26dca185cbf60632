"""Save / load: export the session as its JSON trace (with the student's notes); import one to play it back step by
step; the student's summary of everything this page did (ui/summary.py), to print or keep."""
from __future__ import annotations

import gradio as gr

from model.errors import SessionError
from model.decoding.trace import MAX_TRACE_BYTES, read_trace, replay, to_trace, trace_notes
from model.parse import valid_notes
from viz.offline import session_page, session_record, shown_layers
from ui.events import Event
from ui.exports import EXPORT_KEEP_S, EXPORT_NAME, Exports  # noqa: F401 (EXPORT_KEEP_S, EXPORT_NAME: the tests' names)
from ui.handlers import friendly, upload_bytes, whole
from ui.protocol import PLOTLY_JS
from ui.strings import Refusal, t

PAGE_NAME = "token-by-token-session.html"


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
        # the student's summary (issue 49): what this page did, their answers, notes and kept charts, to print
        add(gr.Markdown(t("explain_summary"), elem_classes="tbt-explain"), "explain_summary", "value")
        self.summary_btn = add(gr.Button(t("btn_summary"), variant="primary", elem_id="tbt-summary"), "btn_summary",
                               "value")
        self.summary_file = add(gr.File(label=t("summary_file"), elem_id="tbt-summary-file", interactive=False),
                                "summary_file")

    def export_trace(self, request: gr.Request, lang="en", notes=""):
        trace = to_trace(self.app.session(request), notes)
        return self.exports.write(request.session_hash, trace)

    def export_page(self, request: gr.Request, lang="en", layer=0, notes=""):
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
            record = session_record(session.prefill, list(session.steps), info, layers, lang, valid_notes(notes))
        page = session_page(record, PLOTLY_JS.read_text(encoding="utf-8"))
        return self.exports.write_text(request.session_hash, PAGE_NAME, page)

    def import_trace(self, request, file, cfg, view):
        """A trace played back (checked whole first); its notes, if it has any, into the notes box."""
        raw = uploaded_bytes(file)
        trace = read_trace(raw)
        notes = trace_notes(trace)  # (refused before any pass, as the rest of the trace)
        # checked whole, then played back one step per Next token
        session = self.app.open_session(request, trace.get("model"), lambda s: replay(s, trace, rewind=True))
        return [*self.app.answer(session, cfg, view), gr.skip() if notes is None else notes]

    def events(self, page):
        return [
            Event(self.export_btn.click, friendly(self.export_trace), [page.lang, page.notes], [self.export_file],
                  "views", "export"),
            Event(self.page_btn.click, friendly(self.export_page), [page.lang, page.layer, page.notes],
                  [self.page_file], "views", "export_page"),
            Event(self.import_btn.upload, page.handler(self.import_trace, "file"), [self.import_btn, *page.page_in],
                  [*page.step_out, page.notes], "import", "import_trace"),
            Event(self.summary_btn.click, friendly(page.summaries.make), [page.lang, page.notes], [self.summary_file],
                  "views", "my_summary"),
        ]


def uploaded_bytes(file) -> bytes:
    """The bytes of an uploaded trace, at most what a trace can be."""
    return upload_bytes(file, MAX_TRACE_BYTES, Refusal("import_no_file"),
                        Refusal("import_too_big", limit=f"{MAX_TRACE_BYTES:,}"))
