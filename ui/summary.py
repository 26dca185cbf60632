"""A student's summary (issue 49): the journal each page keeps of what its student did (model/classroom/journal.py),
held in the app's stash under JOURNAL and fed by App.on_render after every render a page handler asks for, by the
lesson's reveals and by the room's; the Keep this chart buttons (one under each chart that follows the text); and
the summary made as one printable page (viz/summary.py) offered as a file. A page's journal goes when the page
leaves (the stash's unload): nothing of it stays, and no other page can reach it.

One Summaries per app (`summaries_of`): the page's controls make it (the keep buttons), and the Save / load,
Lesson and Room views use the same one.
"""
from __future__ import annotations

import html
import json
import time
from dataclasses import replace

import gradio as gr

from model.classroom.journal import MAX_KEPT, Answer, Journal, KeptChart, Scored
from ui.exports import Exports
from ui.protocol import PLOTLY_JS
from ui.strings import LANGS, Refusal, t
from viz.style import chart_json
from viz.summary import summary_page

JOURNAL = "journal"  # the journal's name in the stash
SUMMARY_NAME = "token-by-token-summary.html"


def summaries_of(app) -> "Summaries":
    """The app's one Summaries (made on first use, its render hook added once)."""
    made = getattr(app, "summaries", None)
    if made is None:
        made = app.summaries = Summaries(app)
    return made


class Summaries:
    def __init__(self, app):
        self.app = app
        self.exports = Exports(app.stash, "summary")
        app.on_render.append(self.saw)

    def journal(self, user: str) -> Journal:
        """The user's journal (a new one on their first event)."""
        journal = self.app.stash.get(user, JOURNAL)
        if journal is None:
            journal = Journal()
            self.app.stash.put(user, JOURNAL, journal)
        return journal

    # ---- what the page did ----------------------------------------------------------------------------
    def saw(self, user: str, session, view, outputs: list, draw) -> None:
        """App.render's hook: the page of `user` now shows its session's text (inside the session's read lock)."""
        if outputs[0] is None or not session.started:  # only a chart drawn again: the text did not change
            return
        self.journal(user).saw(session.lm.name, session.prefill.prompt, session.prefill.chat, session.steps,
                               session.finished)

    def answered(self, user: str, answer: Answer) -> None:
        self.journal(user).answered(answer)

    def scored(self, user: str, score: Scored) -> None:
        self.journal(user).scored(score)

    # ---- the keep buttons ---------------------------------------------------------------------------------
    def keeper(self, tab: str):
        """The handler of the Keep this chart button under `tab`'s chart: that chart of the user's text as it is
        now, in each language of the page, kept for their summary."""
        def keep_chart(request, cfg, view):
            shown = self.app.views.get(tab)
            if shown is None:
                raise Refusal("keep_no_chart")
            session = self.app.session(request)
            with session.reading():
                cfg = session.replay_config() or cfg  # a play-back shows its recorded settings
                figures = {lang: json.loads(chart_json(shown.figure(session, cfg, replace(view, tab=tab, lang=lang))))
                           for lang in LANGS}
                step, text = len(session.steps), session.prefill.prompt + session.text
            n = self.journal(request.session_hash).keep(KeptChart(shown.title, step, text, figures))
            return kept_html(t("keep_kept", view.lang, n=n, limit=MAX_KEPT), n)

        keep_chart.__name__ = f"keep_{tab}"
        return keep_chart

    # ---- the summary --------------------------------------------------------------------------------------
    def make(self, request: gr.Request, lang="en", notes=""):
        """The user's summary as a printable page, in `lang`, written as a file for the download."""
        summary = self.journal(request.session_hash).summary(notes)
        made = time.strftime("%Y-%m-%d %H:%M")
        page = summary_page(summary, lang, t, made, PLOTLY_JS.read_text(encoding="utf-8") if summary.charts else None)
        return self.exports.write_text(request.session_hash, SUMMARY_NAME, page)


def kept_html(line: str, n: int) -> str:
    return f'<span class="tbt-kept" data-kept="{n}">{html.escape(line)}</span>'
