"""Interview questions: what ML interviews ask about decoding, one card each. A card gives the question, the common
wrong answer where there is one, a 30-second answer shown only when asked (the candidate answers out loud first),
and a button to the lesson that answers it, started as the Lesson tab's Start does (LessonView.open_lesson), or to
the tab that shows it. Every figure an answer states is computed (answer_figures: model.decoding.kv's formula and
PRESETS, model.speed.paged's block size) and put into its text's placeholders: none is typed in ui/strings.py.
Which questions this browser has revealed or opened is kept in a gr.BrowserState and ticked on each card."""
from __future__ import annotations

import json
from dataclasses import dataclass

import gradio as gr

import viz
from viz.style import format_prob
from model.classroom.lessons import builtin_lessons, say
from model.decoding.kv import DTYPE_BYTES, PRESETS, kv_cache_bytes, kv_calculation
from model.decoding.records import ModelInfo
from model.speed.medusa_heads import heads_report
from model.speed.paged import BLOCK_SIZE
from ui.events import Event
from ui.handlers import friendly
from ui.strings import Refusal, t

# what a browser remembers of a question (its progress: question ids per mark), and how a card says it
MARKS = {"revealed": "interview_marks_revealed", "opened": "interview_marks_opened"}
CACHE_MODEL, CACHE_TOKENS, CACHE_DTYPE = "Llama-2-7B", 2048, "float16"  # "a 7B model's KV cache", as asked
GQA_MODEL, GQA_TOKENS = "Llama-3-8B", 8192  # the same cache, four times the tokens, with GQA
MYTHS = "interview-myths"  # the lesson that tests each card's common wrong answer on this machine (issue 35)


@dataclass(frozen=True)
class Question:
    """One card. `question`, `answer`, `myth`: keys of ui/strings.py (the question, its 30-second answer, the common
    wrong answer or None); `lessons` (ids of assets/lessons) and `tabs` (view tab ids) answer it: the card's button
    opens the first lesson, else the first of its tabs on the page."""

    id: str
    question: str
    answer: str
    myth: str | None = None
    lessons: tuple[str, ...] = ()
    tabs: tuple[str, ...] = ()


QUESTIONS = (
    Question("token-by-token", "iq_token_by_token", "ia_token_by_token", None,
             ("one-token-at-a-time", "chain-rule-perplexity"), ("chain",)),
    Question("autoregressive", "iq_autoregressive", "ia_autoregressive", "im_autoregressive",
             ("training-vs-generation", MYTHS), ("kv",)),
    Question("kv-cache-size", "iq_kv_cache_size", "ia_kv_cache_size", "im_kv_cache_size", ("kv-cache", MYTHS),
             ("calculator",)),
    Question("parallel-training", "iq_parallel_training", "ia_parallel_training", None, ("training-vs-generation",),
             ("training",)),
    Question("exposure-bias", "iq_exposure_bias", "ia_exposure_bias", None, ("branches-exposure-bias", "self-consistency"),
             ("branches", "consistency")),
    Question("non-autoregressive", "iq_non_autoregressive", "ia_non_autoregressive", None,
             ("why-not-non-autoregressive",), ("training",)),
    Question("sampling", "iq_sampling", "ia_sampling", "im_sampling", ("top-k-top-p-min-p", "temperature", MYTHS),
             ("candidates",)),
    Question("speculative", "iq_speculative", "ia_speculative", None, ("speculative-decoding",), ("speculative",)),
    Question("medusa", "iq_medusa", "ia_medusa", None, ("medusa",), ("medusa",)),
    Question("mqa-gqa", "iq_mqa_gqa", "ia_mqa_gqa", None, ("mha-gqa-mqa",), ("calculator", "attention")),
    Question("serving", "iq_serving", "ia_serving", None, ("class-batched-paged",), ("batching", "paged")),
    Question("beam-search", "iq_beam_search", "ia_beam_search", "im_beam_search", ("beam-search", MYTHS),
             ("beams",)),
    Question("subwords", "iq_subwords", "ia_subwords", None, ("subwords",), ("tokenizers",)),
    Question("prefill-decode", "iq_prefill_decode", "ia_prefill_decode", None,
             ("prefill-vs-decode", "class-batched-paged"), ("prefill_decode", "batching")),
    Question("attribution", "iq_attribution", "ia_attribution", None, ("why-this-token",),
             ("attribution", "ablation")),
)
BY_ID = {q.id: q for q in QUESTIONS}


def answer_figures(info: ModelInfo) -> dict[str, dict]:
    """Each question's numbers, by question id: the {placeholders} of its answer (and wrong answer), computed by the
    app's own code. `info`: the page's model (kv_calculation's comparison row; no answer states it)."""
    layers, _, kv_heads, head_dim = PRESETS[CACHE_MODEL]
    value_bytes = DTYPE_BYTES[CACHE_DTYPE]
    cache_bytes = kv_cache_bytes(layers, kv_heads, head_dim, CACHE_TOKENS, value_bytes)
    gqa_layers, _, gqa_kv_heads, gqa_head_dim = PRESETS[GQA_MODEL]
    gqa = kv_cache_bytes(gqa_layers, gqa_kv_heads, gqa_head_dim, GQA_TOKENS, value_bytes)
    calc = kv_calculation(GQA_MODEL, info, CACHE_DTYPE, GQA_TOKENS, 1)  # its rows: MHA, GQA, MQA of that shape
    layouts = {row.kind: row for row in calc.rows}
    return {
        "kv-cache-size": dict(model=CACHE_MODEL, layers=layers, kv_heads=kv_heads, head_dim=head_dim,
                              tokens=f"{CACHE_TOKENS:,}", dtype=CACHE_DTYPE, value_bytes=value_bytes,
                              bytes=f"{cache_bytes:,}", size=viz.format_bytes(cache_bytes), gqa_model=GQA_MODEL,
                              gqa_kv_heads=gqa_kv_heads, gqa_tokens=f"{GQA_TOKENS:,}", gqa_size=viz.format_bytes(gqa)),
        "mqa-gqa": dict(model=GQA_MODEL, heads=calc.heads, kv_heads=calc.kv_heads, tokens=f"{GQA_TOKENS:,}",
                        dtype=CACHE_DTYPE, **{f"{kind}_size": viz.format_bytes(layouts[kind].bytes)
                                              for kind in ("mha", "gqa", "mqa")}),
        "serving": dict(block=BLOCK_SIZE),
        "medusa": dict(head_one=medusa_head_one()),
    }


def medusa_head_one() -> str:
    """How often the first Medusa head's first guess is the model's own token on held-out text (the training's
    measurement, assets/medusa/smollm2.json), as a percentage; a dash when no heads ship."""
    report = heads_report("smollm2")
    return format_prob(report["accuracy"]["top1"][0]) if report else "–"


def answer_text(question: Question, lang: str, figures: dict) -> str:
    """The question's 30-second answer in `lang`, its figures filled in."""
    return t(question.answer, lang, **figures.get(question.id, {}))


def marks_of(progress) -> dict[str, set[str]]:
    """{mark: question ids} from a browser's progress (sent by the browser: anything not understood is dropped)."""
    progress = progress if isinstance(progress, dict) else {}
    return {mark: {q for q in progress.get(mark) or () if isinstance(q, str) and q in BY_ID}
            if isinstance(progress.get(mark), list) else set() for mark in MARKS}


def with_mark(progress, question_id: str, mark: str) -> dict:
    """The progress with `question_id` marked `mark` (a plain dict of sorted lists, as the browser keeps it)."""
    marks = marks_of(progress)
    marks[mark].add(question_id)
    return {name: sorted(ids) for name, ids in marks.items()}


class InterviewView:
    tab, title = "interview", "tab_interview"
    chart = None

    def __init__(self, app):
        self.app = app

    # ---- components ----------------------------------------------------------------------------------
    def build(self, page):
        add = page.labels.add
        self.page = page
        self.figures = answer_figures(self.app.models.get().info)
        lessons, _ = builtin_lessons(tuple(page.titles))  # (one naming a tab this page lacks: left out, as there)
        self.lesson_titles = {lesson_id: lesson["title"] for lesson_id, lesson in lessons.items()}
        self.lessons_open = "lesson" in page.titles  # a page without the Lesson tab opens each question's tab
        add(gr.Markdown(t("interview_intro"), elem_classes="tbt-explain"), "interview_intro", "value")
        self.summary = gr.Markdown(self._summary({}, "en"), elem_id="tbt-interview-summary")
        # the question a card's button asks about: its listener's js puts the card's id here (the API sends its own)
        self.asked = gr.Textbox("", label="question", elem_id="tbt-interview-asked", elem_classes="tbt-hidden")
        self.heads, self.answers, self.reveal_buttons, self.open_buttons = {}, {}, {}, {}
        for n, q in enumerate(QUESTIONS, 1):
            # a Column, not a Group: a Group writes its elem_id on two nested elements
            with gr.Column(elem_classes="tbt-interview-card", elem_id=f"tbt-interview-card-{q.id}"):
                self.heads[q.id] = gr.Markdown(self._head(q, n, {}, "en"), elem_id=f"tbt-interview-head-{q.id}")
                if q.myth:
                    add(gr.Markdown(self._myth(q, "en"), elem_classes="tbt-interview-myth"),
                        words=lambda lang, q=q: {"value": self._myth(q, lang)})
                with gr.Row():
                    self.reveal_buttons[q.id] = add(gr.Button(t("btn_interview_reveal"), size="sm",
                                                              elem_id=f"tbt-interview-reveal-{q.id}"),
                                                    "btn_interview_reveal", "value")
                    target = self._open_label(q, "en")
                    self.open_buttons[q.id] = add(gr.Button(target or "", size="sm", variant="primary",
                                                            visible=target is not None,
                                                            elem_id=f"tbt-interview-open-{q.id}"),
                                                  words=lambda lang, q=q: {"value": self._open_label(q, lang) or ""})
                # in the page's language from the start (the switch relabels it); shown when the candidate asks
                self.answers[q.id] = add(gr.Markdown(self._answer(q, "en"), visible=False,
                                                     elem_id=f"tbt-interview-answer-{q.id}", elem_classes="tbt-explain"),
                                         words=lambda lang, q=q: {"value": self._answer(q, lang)})
        self.progress = gr.BrowserState({}, storage_key="tbt-interview-progress")  # {"revealed": [ids], "opened": [ids]}

    # ---- handlers ------------------------------------------------------------------------------------
    def reveal(self, question, progress, lang="en"):
        """A card's answer shown, and the question marked revealed in this browser."""
        q = self._question(question)
        progress = with_mark(progress, q.id, "revealed")
        return {self.answers[q.id]: gr.update(visible=True), self.progress: progress, **self.cards(progress, lang)}

    def open_question(self, request, question, progress, cfg, view):
        """The lesson that answers the question, started as the Lesson tab's Start does (its first step's prompt and
        settings in the session, the Lesson tab open); a question no lesson answers (or a page without the Lesson
        tab) opens its tab. An unknown question is refused before anything changes."""
        q = self._question(question)
        lessons, lesson = self.app.all_views.get("lesson"), self._lesson(q)
        if lessons is not None and lesson is not None:
            shown = lessons.open_lesson(request, lesson, cfg, view)
        else:
            tab = self._tab(q)
            if tab is None:
                raise Refusal("interview_no_question", question=json.dumps(q.id))
            shown = {self.page.tabs_block: gr.Tabs(selected=tab)}
        progress = with_mark(progress, q.id, "opened")
        return {**shown, self.progress: progress, **self.cards(progress, view.lang)}

    def cards(self, progress, lang="en") -> dict:
        """Each card's heading with its tick, and the count above them, from the browser's progress, in `lang`."""
        marks = marks_of(progress)
        return {self.summary: self._summary(marks, lang),
                **{self.heads[q.id]: self._head(q, n, marks, lang) for n, q in enumerate(QUESTIONS, 1)}}

    def _question(self, question) -> Question:
        if not isinstance(question, str) or question not in BY_ID:
            raise Refusal("interview_no_question", question=json.dumps(str(question)[:40], ensure_ascii=False))
        return BY_ID[question]

    # ---- words ---------------------------------------------------------------------------------------
    def _summary(self, marks, lang) -> str:
        done = set().union(*marks.values()) if marks else set()
        return t("interview_summary", lang, done=len(done), total=len(QUESTIONS))

    def _head(self, q, n, marks, lang) -> str:
        seen = [t(key, lang) for mark, key in MARKS.items() if q.id in marks.get(mark, ())]
        tick = "✔ " if seen else ""
        heading = f"### {tick}{n}. {t(q.question, lang)}"
        places = [t("interview_lesson_place", lang, title=say(self.lesson_titles[lesson], lang))
                  for lesson in q.lessons if lesson in self.lesson_titles and self.lessons_open]
        places += [t("interview_tab_place", lang, tab=t(self.page.titles[tab], lang)) for tab in q.tabs
                   if tab in self.page.titles]
        where = t("interview_where", lang, places=" · ".join(places))
        return f"{heading}\n{where}" + (f" — **{' · '.join(seen)}**" if seen else "")

    def _answer(self, q, lang) -> str:
        return f"**{t('interview_answer_lead', lang)}** {answer_text(q, lang, self.figures)}"

    def _myth(self, q, lang) -> str:
        return t("interview_myth", lang, myth=t(q.myth, lang, **self.figures.get(q.id, {})))

    def _lesson(self, q) -> str | None:
        """The first of the question's lessons this page has (None: none, or no Lesson tab)."""
        return next((lesson for lesson in q.lessons if lesson in self.lesson_titles), None) if self.lessons_open else None

    def _tab(self, q) -> str | None:
        return next((tab for tab in q.tabs if tab in self.page.titles), None)

    def _open_label(self, q, lang) -> str | None:
        """The card's button: its lesson's title, else its tab's name; None if the page has neither."""
        lesson = self._lesson(q)
        if lesson is not None:
            return t("btn_interview_lesson", lang, title=say(self.lesson_titles[lesson], lang))
        tab = self._tab(q)
        return None if tab is None else t("btn_interview_tab", lang, tab=t(self.page.titles[tab], lang))

    # ---- wiring --------------------------------------------------------------------------------------
    def events(self, page):
        """Each card's two buttons call one handler each, with the card's id put in by the listener's js; the first
        card's listeners carry the API names (interview_reveal, interview_open: the question is their input), the
        others are the same calls from other buttons."""
        lessons = self.app.all_views.get("lesson")
        cards = [self.summary, *self.heads.values()]
        opened = lessons.shown_outputs(page) if lessons is not None else []
        if not any(c is page.tabs_block for c in opened):
            opened.append(page.tabs_block)
        rows = []
        for n, q in enumerate(QUESTIONS):
            js = {"js": f"(...a) => [{json.dumps(q.id)}, ...a.slice(1)]"}
            rows += [
                Event(self.reveal_buttons[q.id].click, friendly(self.reveal), [self.asked, self.progress, page.lang],
                      [*self.answers.values(), self.progress, *cards], "page", n == 0 and "interview_reveal", js),
                Event(self.open_buttons[q.id].click, page.handler(self.open_question, "question", "progress"),
                      [self.asked, self.progress, *page.page_in], [*opened, self.progress, *cards],
                      "lesson_steps", n == 0 and "interview_open", js),
            ]
        return [
            *rows,
            Event(self.tab_block.select, self.cards, [self.progress, page.lang], cards, "page", "interview_cards"),
            Event(page.lang.change, self.cards, [self.progress, page.lang], cards, "page"),
            # the progress as read from this browser's storage when the state mounts (after a reload it can mount
            # after the tab's select has sent the empty default: seen under load, the ticks then stayed off)
            Event(self.progress.change, self.cards, [self.progress, page.lang], cards, "page"),
        ]
