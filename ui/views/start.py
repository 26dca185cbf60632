"""Start here: where a first-time teacher or student begins. Four ways in (the first lesson, presenter mode at a
projector, a room for a class, the interview questions) and the story's parts, each with what it holds and its
tabs. Nothing runs on the server: each button opens a tab (and its part) in the page's script (assets/js/nav.js),
the lesson's also presses that tab's Start; the presenter button flips the header's switch."""
from __future__ import annotations

import html

import gradio as gr

from ui.nav import numbers, part_about, part_name
from ui.protocol import PROTOCOL
from ui.strings import t

NAV = PROTOCOL["nav"]
# The ways in: (key of its heading, of its text, of its button, the tab it opens, the id of a button to press there)
WAYS = [
    ("start_lesson_head", "start_lesson_text", "start_lesson_btn", "lesson", "tbt-lesson-start"),
    ("start_presenter_head", "start_presenter_text", "start_presenter_btn", None, None),
    ("start_room_head", "start_room_text", "start_room_btn", "room", None),
    ("start_interview_head", "start_interview_text", "start_interview_btn", "interview", None),
]


def start_html(parts, titles: dict[str, str], lang: str) -> str:
    """The view in `lang`: the ways in (those whose tab is on the page), then the parts with their tabs."""
    esc = lambda s: html.escape(s, quote=True)  # noqa: E731
    on_page = {tab for _, tabs in parts for tab in tabs}
    cards = []
    for head, text, button, tab, press in WAYS:
        if tab is not None and tab not in on_page:
            continue
        action = (f'{NAV["toggle"]}="presenter"' if tab is None else
                  f'{NAV["go"]}="{esc(tab)}"' + (f' {NAV["press"]}="{esc(press)}"' if press else ""))
        cards.append(f'<div class="tbt-start-card"><h3>{esc(t(head, lang))}</h3><p>{esc(t(text, lang))}</p>'
                     f'<button type="button" class="tbt-start-go" {action}>{esc(t(button, lang))}</button></div>')
    n = numbers(parts)
    rows = []
    for key, tabs in parts:
        if n[key] is None:
            continue
        links = " · ".join(f'<button type="button" class="tbt-start-tab" {NAV["go"]}="{esc(tab)}">'
                           f'{esc(t(titles[tab], lang))}</button>' for tab in tabs)
        rows.append(f'<li><b>{esc(part_name(key, lang, number=n[key]))}</b>: {esc(part_about(key, lang))}'
                    f'<br>{links}</li>')
    return (f'<div class="tbt-start"><p class="tbt-start-intro">{esc(t("start_intro", lang))}</p>'
            f'<div class="tbt-start-ways">{"".join(cards)}</div>'
            f'<h3>{esc(t("start_parts_head", lang))}</h3><ul class="tbt-start-parts">{"".join(rows)}</ul></div>')


class StartView:
    tab, title = "start", "tab_start"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        parts, titles = page.parts, page.titles
        page.labels.add(gr.HTML(start_html(parts, titles, "en"), elem_id="tbt-start-here"),
                        words=lambda lang: {"value": start_html(parts, titles, lang)})

    def events(self, page):
        return []
