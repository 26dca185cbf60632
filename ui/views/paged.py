"""Paged KV blocks: this server's live sessions laid out by a model of vLLM's block allocator (model/speed/paged.py),
from their real lengths and prompt ids. Only counts and bytes reach the page; the user's own row is marked,
every other session is anonymous.

On an engine's model whose KV cache events reach this server (app.py --engine-kv-events), the view also draws the
engine's own blocks (model/vllm/kv_events.py): each session's chain of the engine's block hashes beside this
app's model of the same texts, and whether they count the same shared blocks; without events, one sentence."""
from __future__ import annotations

import gradio as gr

from model.errors import SessionError
from model.vllm.kv_events import engine_blocks_view
from model.speed.paged import BLOCK_SIZE, paged_layout
from model.decoding.session import MAX_TOKENS
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import friendly
from ui.strings import t
from viz.i18n import t as viz_t
from viz.paged import paged_figure
from viz.paged_engine import engine_blocks_figure
from viz.style import format_bytes


def layout_numbers(layout, you: int | None) -> dict:
    """The layout's totals and rows as numbers (what the API and the tests read): lengths and bytes only."""
    rows = [{"tokens": r.tokens, "blocks": r.blocks, "shared_blocks": sum(r.shared), "you": i == you}
            for i, r in enumerate(layout.sessions)]
    keys = ("block_size", "bytes_per_token", "max_tokens", "physical_blocks", "table_blocks", "used_bytes",
            "held_bytes", "allocated_bytes", "unshared_bytes", "shared_saving_bytes", "waste_bytes", "reserved_bytes")
    return {"sessions": len(rows), "rows": rows, **{k: getattr(layout, k) for k in keys}}


class PagedView:
    tab, title = "paged", "tab_paged"
    chart = None

    def __init__(self, app):
        self.app = app

    def build(self, page):
        add = page.labels.add
        add(gr.Markdown(t("explain_paged"), elem_classes="tbt-explain"), "explain_paged", "value")
        add(gr.Markdown(t("names_paged"), elem_classes="tbt-explain tbt-names"), "names_paged", "value")  # the words an interview uses
        self.refresh = add(gr.Button(t("btn_paged_refresh"), elem_id="tbt-paged-refresh"), "btn_paged_refresh",
                           "value")
        self.summary = gr.Markdown(elem_id="tbt-paged-summary")
        self.plot = gr.Plot(label=t("tab_paged"), elem_id=GRADIO_PLOTS["paged"], show_label=False)
        self.numbers = gr.JSON(label="paged layout", elem_id="tbt-paged-numbers", elem_classes="tbt-hidden")
        # the engine's own blocks, from its events: empty unless the model is an engine's with events
        self.engine_line = gr.Markdown(elem_id="tbt-paged-engine-summary")
        self.engine_plot = gr.Plot(label="engine KV blocks", elem_id="tbt-paged-engine-plot", show_label=False,
                                  visible=False)

    def sessions(self, lm, own):
        """(label, tokens held, prompt ids) per live session on `lm`: the user's own (`own`) first, as "you"; the
        others unlabelled. The ids only decide which full prompt blocks are shared."""
        rows, you = [], None
        for key, session in self.app.store.live():
            ids = list(session.ids)  # a copy: a step of that user may be appending
            if not session.started or session.lm is not lm or not ids:
                continue
            prompt = ids[: session.prompt_len]
            if own(key, session):
                rows.insert(0, ("", len(ids), prompt))
                you = 0
            else:
                rows.append(("", len(ids), prompt))
        return rows, you

    def laid_out(self, lm, own, lang):
        """The live sessions on `lm` in blocks (what the tab shows, and a lesson step): (summary, figure, numbers)."""
        rows, you = self.sessions(lm, own)
        if you is not None:
            rows[0] = (viz_t("paged_you", lang), *rows[0][1:])
        layout = paged_layout(rows, lm.info, MAX_TOKENS, BLOCK_SIZE)
        blocks = (t("paged_one_block", lang) if layout.physical_blocks == 1
                  else t("paged_blocks", lang, n=layout.physical_blocks))
        summary = t("paged_summary" if len(rows) > 1 else "paged_summary_one", lang, sessions=len(rows),
                    physical=layout.physical_blocks, blocks=blocks, paged=format_bytes(layout.allocated_bytes),
                    reserved=format_bytes(layout.reserved_bytes), waste=format_bytes(layout.waste_bytes),
                    shared=format_bytes(layout.shared_saving_bytes), max=MAX_TOKENS)
        return summary, paged_figure(layout, lang), layout_numbers(layout, you)

    def engine_blocks(self, lm, own, lang):
        """The engine's own blocks for the live sessions on `lm`: (line, figure or None, numbers or None). Nothing
        when `lm` is not an engine's with events; one sentence while none has come."""
        events = getattr(lm, "kv_events", None)
        if events is None:
            return "", None, None
        snapshot = events.snapshot()
        rows = []
        for key, session in self.app.store.live():
            ids = list(session.ids)
            if not session.started or session.lm is not lm or not ids:
                continue
            if own(key, session):
                rows.insert(0, (viz_t("paged_you", lang), ids))
            else:
                rows.append(("", ids))
        record = engine_blocks_view(snapshot, rows) if snapshot.heard else None
        if record is None:
            return t("paged_engine_silent", lang), None, {"heard": snapshot.heard, **snapshot.counts}
        line = t("paged_engine_summary", lang, stored=snapshot.counts["stored"], removed=snapshot.counts["removed"],
                 live=record.live, block=record.block_size)
        numbers = {"heard": True, **snapshot.counts, "block_size": record.block_size, "live": record.live,
                   "engine_shared": record.engine_shared, "model_shared": record.model_shared, "agree": record.agree,
                   "rows": [{"tokens": r.tokens, "full_blocks": r.full_blocks, "hashes": r.hashes, "shared": r.shared,
                             "removed": r.removed, "you": bool(r.label)} for r in record.rows]}
        return line, engine_blocks_figure(record, lang), numbers

    def show(self, request: gr.Request, lang="en"):
        own_key = request.session_hash
        lm = self.app.models.get()
        try:  # the user's own model when they started a text (an engine's, say), else the server's default
            lm = self.app.session(request).lm
        except SessionError:
            pass
        own = lambda key, session: key == own_key  # noqa: E731
        summary, figure, numbers = self.laid_out(lm, own, lang)
        line, engine_figure, engine_numbers = self.engine_blocks(lm, own, lang)
        return {self.summary: summary, self.plot: figure, self.numbers: {**numbers, "engine": engine_numbers},
                self.engine_line: line, self.engine_plot: gr.update(value=engine_figure, visible=engine_figure is not None)}

    def lesson_figure(self, session, cfg, step, view):
        """A lesson step about paged blocks: the live sessions on the lesson's model (the class's), the student's
        own (this step's session) first."""
        return self.laid_out(session.lm, lambda key, other: other is session, view.lang)[1]

    def events(self, page):
        show = friendly(self.show)
        out = [self.summary, self.plot, self.numbers, self.engine_line, self.engine_plot]
        return [
            Event(self.refresh.click, show, [page.lang], out, "views", "paged"),
            Event(self.tab_block.select, show, [page.lang], out, "views", "paged_open"),
        ]
