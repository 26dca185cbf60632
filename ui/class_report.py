"""The class report, in the Room tab (issue 49): the teacher's button, the report on the page and its two files (a
CSV and a printable page). The counting is model/classroom/report.py's over what the room and its plays hold
(model/classroom/rooms.py, class_play.py), the page viz/report.py's; ui/views/room.py builds this and adds its rows.
The files are the server's own, in a temporary folder that goes seconds after the download (ui/exports.py); the
server keeps no report, and a room's records go when it closes."""
from __future__ import annotations

import time

import gradio as gr

from model.classroom.report import class_report, report_csv
from ui.events import Event
from ui.exports import Exports
from ui.handlers import friendly
from ui.strings import t
from viz.report import report_body, report_page

CSV_NAME = "token-by-token-class-report.csv"
PAGE_NAME = "token-by-token-class-report.html"


class ClassReportView:
    """The teacher's Class report button, the report shown under it and its files."""

    def __init__(self, app, tab: str):
        self.app, self.tab = app, tab
        self.exports = Exports(app.stash, "report")

    def build(self, page):
        add = page.labels.add
        with gr.Accordion(t("report_box"), open=False, elem_id="tbt-report-box") as box:
            add(box, "report_box", "label")
            add(gr.Markdown(t("explain_report"), elem_classes="tbt-explain"), "explain_report", "value")
            self.button = add(gr.Button(t("btn_report"), variant="primary", elem_id="tbt-report"), "btn_report",
                              "value")
            self.files = add(gr.File(label=t("report_files"), file_count="multiple", interactive=False,
                                     elem_id="tbt-report-files"), "report_files")
            self.shown = gr.HTML("", elem_id="tbt-report-view")

    def make(self, request: gr.Request, lang="en"):
        """The report of the teacher's room, now: shown, and written as a CSV and a printable page."""
        teacher = request.session_hash
        room = self.app.rooms.report(teacher)  # refused without a room, before anything else
        rounds, games = self.app.class_play.results(teacher)
        report = class_report(room, rounds, games)
        made = time.strftime("%Y-%m-%d %H:%M")
        files = self.exports.write_texts(teacher, {
            CSV_NAME: report_csv(report, lang, t("report_other_tokens", lang)),
            PAGE_NAME: report_page(report, lang, made)})
        return [files, report_body(report, lang, made)]

    def events(self, page) -> list[Event]:
        return [Event(self.button.click, friendly(self.make), [page.lang], [self.files, self.shown], "views",
                      "class_report")]
