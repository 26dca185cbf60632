"""Branches: the tree of every text this prompt has had (going back and stepping differently keeps the old one),
choosing one to continue, and two side by side from where they split, each token with its log p."""
from __future__ import annotations

import gradio as gr

import viz
from model.decoding.branches import repeated_mask
from model.errors import SessionError
from model.parse import shown, whole_number
from ui.controls import plot
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.state import carrier
from ui.strings import Refusal, t
from viz.branches import branch_compare_html, branch_logp_figure, branch_row, branch_tree_chart


def branch_choices(tree, lang: str) -> list[tuple[str, int]]:
    """The dropdowns' entries: '#3 · 12 tokens · log P -20.41 · "…text"', the current text marked."""
    out = []
    for r in tree:
        label = branch_row(r, lang)
        label += (" · " + viz.t("branch_current", lang) if r.current else "") + f' · "…{r.text[-24:]}"'
        out.append((label.replace("\n", "↵"), r.id))
    return out


def branch_number(value) -> int:
    """A branch number from the page (an int) or the API (an int, or ASCII digits as text), read as every whole
    number is (model.parse.whole_number): "²" or "٣" is no branch, and is refused as one by name, as a number no
    branch has is by the session. Nothing picked: a refusal saying to pick one."""
    if value is None or value == "" or value == []:
        raise Refusal("branch_pick_first")
    number = whole_number(value, text=True)
    if number is None:
        raise SessionError("branch_missing", branch=shown(value))
    return number


class BranchesView:
    tab, title = "branches", "tab_branches"

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        plot(self.tab)
        add(gr.Markdown(t("explain_branches"), elem_classes="tbt-explain"), "explain_branches", "value")
        with gr.Row(equal_height=True):
            self.pick = add(gr.Dropdown([], label=t("branch_pick"), elem_id="tbt-branch-pick", scale=4,
                                        allow_custom_value=True), "branch_pick")
            self.switch_btn = add(gr.Button(t("btn_switch_branch"), elem_id="tbt-switch-branch", scale=1,
                                            variant="primary"), "btn_switch_branch", "value")
            self.delete_btn = add(gr.Button(t("btn_delete_branch"), elem_id="tbt-delete-branch", scale=1),
                                  "btn_delete_branch", "value")
        with gr.Row(equal_height=True):
            self.side_a = add(gr.Dropdown([], label=t("compare_a"), elem_id="tbt-compare-a", scale=3,
                                          allow_custom_value=True), "compare_a")
            self.side_b = add(gr.Dropdown([], label=t("compare_b"), elem_id="tbt-compare-b", scale=3,
                                          allow_custom_value=True), "compare_b")
            self.compare_btn = add(gr.Button(t("btn_branch_compare"), elem_id="tbt-compare-branches", scale=1),
                                   "btn_branch_compare", "value")
        self.compare_html = gr.HTML("", elem_id="tbt-branch-compare")
        # shown once two branches are compared (empty, it was a blank frame under the table)
        self.compare_plot = gr.Plot(elem_id=GRADIO_PLOTS["branches"], show_label=False, visible=False)

    def figure(self, session, cfg, view, dist=None) -> dict:
        """The tree, read off the session's branch records (no model run): the tab's chart, and a lesson step's."""
        return branch_tree_chart(session.branch_tree(), view.lang)

    def chart(self, session, cfg, view, dist=None) -> str:
        return carrier(self.figure(session, cfg, view, dist), self.tab)

    # ---- handlers ------------------------------------------------------------------------------------
    def _choices(self, session, lang) -> list:
        choices = branch_choices(session.branch_tree(), lang)
        return [gr.update(choices=choices)] * 3

    def refresh(self, request, cfg, view):
        """The dropdowns' entries again (a dropdown opened: a step may have made a branch since)."""
        return self._choices(self.app.session(request), view.lang)

    def relabel(self, request, cfg, view):
        """The dropdowns' entries in the page's language, for the text shown now (the tab opened, the language
        switched); nothing before there is a text."""
        try:
            session = self.app.session(request)
        except SessionError:
            return [gr.skip()] * 3
        return self._choices(session, view.lang)

    def switch(self, request, branch, cfg, view):
        """Make the picked branch the current text: one prefill; its steps and charts are what they were."""
        session = self.app.session(request)
        session.switch_branch(branch_number(branch))
        return [*self.app.answer(session, cfg, view), *self._choices(session, view.lang)]

    def delete(self, request, branch, cfg, view):
        """Forget the picked branch (never the current text)."""
        session = self.app.session(request)
        session.delete_branch(branch_number(branch))
        choices = self._choices(session, view.lang)
        return [self.app.chart(session, cfg, view), gr.update(choices=choices[0]["choices"], value=None),
                *choices[1:]]

    def compare(self, request, a, b, cfg, view):
        """Two branches side by side (nothing picked: the current text, and the one it split from)."""
        session = self.app.session(request)
        with session.reading():
            tree = session.branch_tree()
            current = next(r for r in tree if r.current)
            if a in (None, ""):
                a = current.id
            if b in (None, ""):
                others = [r.id for r in tree if r.id != branch_number(a)]
                if not others:
                    raise Refusal("compare_need_two")
                b = current.parent if current.parent in others else others[-1]
            first, second = session.branch_record(branch_number(a)), session.branch_record(branch_number(b))
        marks = [repeated_mask(x.ids, session.prompt_len)[session.prompt_len :] for x in (first, second)]
        return [branch_compare_html(first.id, first.steps, marks[0], second.id, second.steps, marks[1], view.lang),
                gr.update(value=branch_logp_figure(first.id, first.steps, second.id, second.steps, view.lang),
                          visible=True)]

    def events(self, page):
        h, page_in = page.handler, page.page_in
        lists = [self.pick, self.side_a, self.side_b]
        refresh = h(self.refresh)
        return [
            Event(self.pick.focus, refresh, page_in, lists, "views", "branch_choices"),
            *(Event(trigger, h(self.relabel), page_in, lists, "views") for trigger in (self.tab_block.select,
                                                                                       page.lang.change)),
            *(Event(d.focus, refresh, page_in, lists) for d in (self.side_a, self.side_b)),
            Event(self.switch_btn.click, h(self.switch, "branch"), [self.pick, *page_in],
                  [*page.step_out, *lists], "model", "switch_branch"),
            Event(self.delete_btn.click, h(self.delete, "branch"), [self.pick, *page_in],
                  [page.figure, *lists], "views", "delete_branch"),
            Event(self.compare_btn.click, h(self.compare, "a", "b"), [self.side_a, self.side_b, *page_in],
                  [self.compare_html, self.compare_plot], "views", "compare_branches"),
        ]
