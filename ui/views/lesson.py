"""Lesson: a guided walk through the page, in one place. Each step loads its prompt and settings into the user's
session (as Start does) and shows, side by side, what to look at: the step's text with its Previous / Next
buttons, and the step's own chart (the view it is about, drawn by that view's pure viz builder from the session's
records). A predict step asks for a guess first and shows the chart, with the model's probability of the guess,
only after the guess is committed (or the teacher presses Reveal). The lesson files and their checks are
model/classroom/lessons.py's; progress is kept in the browser (gr.BrowserState) to resume after a reload."""
from __future__ import annotations

import functools
import json
from dataclasses import replace

import gradio as gr
import plotly.graph_objects as go

import viz
from model.parse import a_name, valid_text
from model.decoding.records import SETTING_NAMES
from model.classroom.lessons import (MAX_LESSON_BYTES, ORDER_CHOICES, LessonError, builtin_lessons, check_lesson,
                                     lesson_model, read_lesson, say)
from model.classroom.figures import fill, step_figures
from model.classroom.quiz import (NoToken, count_choices, graded, reveal_record, size_choices, step_config,
                                  typed_guess)
from model.classroom.rooms import Question
from model.classroom.journal import Answer, Scored, right_values
from model.classroom.scores import lesson_score, read_results
from model.classroom.shared import SharedMeasurements
from model.errors import SessionError
from ui.events import Event
from ui.protocol import GRADIO_PLOTS
from ui.handlers import friendly, upload_bytes
from ui.strings import LANGS, Refusal, t
from viz.guesses import class_guesses_chart
from viz.lesson import answer_figure, reveal_html as reveal_in
from viz.tokenizers import MODEL_NAMES

# after a step is shown: back to the lesson's top if the page was left scrolled below it (Next is low on a phone)
SCROLL_TO_LESSON = ("() => { const b = document.getElementById('tbt-lesson-body');"
                    " if (b && b.getBoundingClientRect().top < 0) b.scrollIntoView({block: 'start'}); }")


class LessonView:
    tab, title = "lesson", "tab_lesson"
    chart = None

    def __init__(self, app):
        self.app = app
        self.measured = SharedMeasurements()  # a measured question's record, one for every student who asks it

    # ---- components ----------------------------------------------------------------------------------
    def build(self, page):
        add = page.labels.add
        self.page = page
        self.tabs = list(page.titles)  # every tab of the page, the lesson's own too
        self.tab_titles = dict(page.titles)
        self.lessons, refused = builtin_lessons(self.tabs)
        for name, err in refused.items():  # a lesson naming a tab this page does not have: left out, said once
            print(f"lesson {name} left out: {err}")
        add(gr.Markdown(t("lesson_intro"), elem_classes="tbt-explain"), "lesson_intro", "value")
        with gr.Row(equal_height=True):
            self.pick = add(gr.Dropdown(self._titles("en"), value=next(iter(self.lessons), None),
                                        label=t("lesson_pick"), elem_id="tbt-lesson-pick", scale=3),
                            words=lambda lang: {"label": t("lesson_pick", lang), "choices": self._titles(lang)})
            self.start = add(gr.Button(t("lesson_start"), variant="primary", elem_id="tbt-lesson-start", scale=1),
                             "lesson_start", "value")
            self.upload = add(gr.UploadButton(t("lesson_upload"), file_types=[".json"], elem_id="tbt-lesson-upload",
                                              scale=1), "lesson_upload")
        self.resume_md = gr.Markdown("", visible=False, elem_id="tbt-lesson-saved")
        self.resume = add(gr.Button(t("lesson_resume"), visible=False, elem_id="tbt-lesson-resume"),
                          "lesson_resume", "value")
        # one screen: the step's text, its buttons and its question beside (on a phone: above) the step's chart
        with gr.Row(equal_height=False, elem_id="tbt-lesson-body"):
            with gr.Column(scale=2, min_width=320):
                self.step_md = gr.Markdown("", elem_id="tbt-lesson-step")
                with gr.Row():
                    self.prev = add(gr.Button(t("lesson_prev"), size="sm", elem_id="tbt-lesson-prev"), "lesson_prev",
                                    "value")
                    self.next = add(gr.Button(t("lesson_next"), variant="primary", size="sm", elem_id="tbt-lesson-next"),
                                    "lesson_next", "value")
                with gr.Group(visible=False) as self.predict_box:
                    self.question = gr.Markdown("", elem_id="tbt-lesson-question")
                    with gr.Row(equal_height=True):
                        self.guess = add(gr.Dropdown([], label=t("lesson_guess"), allow_custom_value=True, scale=3,
                                                     elem_id="tbt-lesson-guess"), "lesson_guess")
                        self.commit = add(gr.Button(t("lesson_commit"), variant="primary", scale=1,
                                                    elem_id="tbt-lesson-commit"), "lesson_commit", "value")
                    with gr.Row():
                        # the teacher's answer without a guess of their own
                        self.reveal_btn = add(gr.Button(t("lesson_reveal"), size="sm", elem_id="tbt-lesson-reveal-btn"),
                                              "lesson_reveal", "value")
                        # a teacher with a room open: the students guess in their Room tab, counted here
                        self.class_btn = add(gr.Button(t("btn_class_guesses"), size="sm", visible=False,
                                                       elem_id="tbt-lesson-class"), "btn_class_guesses", "value")
                    self.class_plot = gr.Plot(visible=False, elem_id=GRADIO_PLOTS["lesson_class"], show_label=False)
                self.reveal = gr.HTML("", elem_id="tbt-lesson-reveal")
                # at the last step: the student's score (and, with a room open, the class's per question)
                self.score = gr.Markdown("", elem_id="tbt-lesson-score")
                # at the last step: the student's summary, as the Save / load tab makes it (ui/summary.py)
                with gr.Row(visible=False, elem_id="tbt-lesson-summary-row") as self.summary_row:
                    self.summary_btn = add(gr.Button(t("btn_summary"), variant="primary", size="sm", scale=0,
                                                     min_width=180, elem_id="tbt-lesson-summary"), "btn_summary",
                                           "value")
                    self.summary_file = add(gr.File(label=t("summary_file"), interactive=False, scale=1,
                                                    elem_id="tbt-lesson-summary-file"), "summary_file")
                # the step's whole tab, for more than its chart (its knobs, its buttons)
                self.open_view = gr.Button("", visible=False, size="sm", elem_id="tbt-lesson-open")
            with gr.Column(scale=3, min_width=320):
                self.reveal_plot = gr.Plot(visible=False, elem_id=GRADIO_PLOTS["lesson"], show_label=False)
        self.lesson = gr.State(None)  # the open lesson (checked)
        self.index = gr.State(0)  # its step shown
        self.revealed = gr.State(None)  # the step's reveal, to say it again in the other language
        self.results = gr.State({})  # the open lesson's questions answered: {step index (str): right}
        self.figures = gr.State(None)  # the step's figures as filled in: {"model": its model, "figures": {...}}
        # {"id", "step", "file", "results"}
        self.progress = gr.BrowserState({}, storage_key="tbt-lesson-progress")

    def _titles(self, lang):
        return [(say(lesson["title"], lang), lesson_id) for lesson_id, lesson in self.lessons.items()]

    # ---- handlers ------------------------------------------------------------------------------------
    def open_lesson(self, request, lesson_id, cfg, view):
        if lesson_id not in self.lessons:
            raise Refusal("lesson_no_lesson")
        return self._show(request, self.lessons[lesson_id], 0, view, {})

    def upload_lesson(self, request, file, cfg, view):
        return self._show(request, read_lesson(uploaded_lesson(file), self.tabs), 0, view, {})

    def next_step(self, request, lesson, index, results, cfg, view):
        if lesson is None:
            raise Refusal("lesson_no_lesson")
        return self._show(request, lesson, min(int(index) + 1, len(lesson["steps"]) - 1), view, results)

    def prev_step(self, request, lesson, index, results, cfg, view):
        if lesson is None:
            raise Refusal("lesson_no_lesson")
        return self._show(request, lesson, max(int(index) - 1, 0), view, results)

    def resume_lesson(self, request, progress, cfg, view):
        """The step the browser remembers (its copy of an uploaded lesson is checked again: the browser sent it)."""
        lesson, index = self._saved(progress)
        if lesson is None:
            raise Refusal("lesson_no_lesson")
        return self._show(request, lesson, index, view, progress.get("results"))

    def saved_progress(self, progress, lang):
        """Opening the Lesson tab: say where the browser left a lesson, with a button to resume it."""
        lesson, index = self._saved(progress)
        if lesson is None:
            return gr.update(visible=False), gr.update(visible=False)
        text = t("lesson_saved", lang, title=say(lesson["title"], lang), step=index + 1, total=len(lesson["steps"]))
        return gr.update(value=text, visible=True), gr.update(visible=True)

    def _saved(self, progress):
        if not isinstance(progress, dict):
            return None, 0
        lesson = self.lessons.get(a_name(progress.get("id")))  # {"id": [1]}: no lesson, not a TypeError
        if progress.get("file") is not None:
            try:
                if len(json.dumps(progress["file"])) > MAX_LESSON_BYTES:
                    return None, 0
                lesson = check_lesson(progress["file"], tuple(self.tabs))
            except (LessonError, TypeError, ValueError, RecursionError):
                return None, 0
        step = progress.get("step")
        if lesson is None or isinstance(step, bool) or not isinstance(step, int):
            return None, 0
        return lesson, min(max(step, 0), len(lesson["steps"]) - 1)

    def _show(self, request, lesson, index, view, results):
        """Step `index`: its session started as Start does (and its tokens written), its settings on the sliders,
        its tab opened, its texts' placeholders filled with the figures of its model and settings. A predict step
        stays on the Lesson tab and sends no candidates until the guess. `results`: the lesson's questions
        answered so far ({step index: right}), kept with the progress."""
        step, page = lesson["steps"][index], self.page
        results = read_results(results, len(lesson["steps"]))
        cfg = step_config(step)
        prompt = say(step["prompt"], view.lang)
        model = lesson_model(lesson, view.lang, self.app.models.names()) or page.default_model
        def fill(session):  # started as Start does, and the step's tokens written
            session.start(prompt, chat=step["mode"] == "chat")
            for _ in range(step["generate"]):
                if session.finished:
                    break
                session.step(cfg)
        session = self.app.open_session(request, model, fill)
        stepped = step["view"] in self.app.views
        text, figure, force = self.app.answer(session, cfg, replace(view, tab=step["view"] if stepped else page.tabs[0]))
        predict = step["predict"]
        if predict is not None or not stepped:
            figure, force = gr.skip(), gr.update(choices=[], value=None)  # nothing of the candidates before a guess
        figures = step_figures(step, session.lm.info, MODEL_NAMES.get(session.lm.name, session.lm.name), session,
                               view.lang)
        shown_for = {"model": session.lm.name, "figures": figures}
        room = self.app.rooms.room_of(request.session_hash) is not None
        counts = count_choices(session, cfg) if predict is not None and predict["kind"] == "kept_count" else None
        shown = {
            self.lesson: lesson, self.index: index, self.revealed: None,
            self.results: results, self.figures: shown_for, self.progress: self._progress(lesson, index, results),
            self.step_md: self._step_text(lesson, index, view.lang, figures),
            self.score: self._score_text(request, lesson, index, results, view.lang),
            self.open_view: self._open_button(step, view.lang, predict is None),
            self.reveal_btn: gr.update(interactive=True), self.class_btn: gr.update(visible=room),
            self.predict_box: gr.update(visible=predict is not None),
            self.question: self._question(predict, view.lang, figures),
            self.guess: gr.update(choices=self._choices(predict, view.lang, info=session.lm.info, counts=counts), value=None,
                                  interactive=True),
            self.commit: gr.update(interactive=True),
            self.reveal: "",
            self.reveal_plot: self._step_plot(session, cfg, step, view) if predict is None else gr.update(
                value=None, visible=False),
            page.prompt: prompt, page.mode: step["mode"], page.model: session.lm.name,
            **{knob: getattr(cfg, name) for knob, name in zip(page.settings, SETTING_NAMES)},  # the sliders show them
            page.tabs_block: gr.Tabs(selected=self.tab),
            page.tab_state: step["view"] if stepped and predict is None else gr.skip(),
            page.text: text, page.figure: figure, page.force: force,
            self.class_plot: gr.update(value=None, visible=False),
            self.summary_row: gr.update(visible=index == len(lesson["steps"]) - 1),
        }
        # the room asked last, once the teacher's answer is made: a step that fails asks the class nothing
        self.app.rooms.ask(request.session_hash,  # if this user has a room
                           self._room_question(lesson, index, view.lang, figures, session.lm.info, counts))
        return shown

    def _progress(self, lesson, index, results) -> dict:
        """What the browser keeps of a lesson (gr.BrowserState): its id, the step, the file of one not built in,
        the questions answered ({step index: right}) for the score."""
        builtin = lesson["id"] in self.lessons and self.lessons[lesson["id"]] == lesson
        return {"id": lesson["id"], "step": index, "file": None if builtin else lesson, "results": dict(results)}

    def commit_guess(self, request, lesson, index, results, guess, cfg, view):
        """The guess committed: the answer, the step's chart, and the model's probability of the guess."""
        if lesson is None:
            raise Refusal("lesson_no_lesson")
        if guess in (None, ""):
            raise Refusal("lesson_guess_first")
        return self._reveal(request, lesson, index, valid_text(str(guess), "lesson_guess_invalid_text"), view,
                            results)

    def reveal_step(self, request, lesson, index, results, cfg, view):
        """The teacher's Reveal: the answer and the step's chart without a guess of their own (not scored)."""
        if lesson is None:
            raise Refusal("lesson_no_lesson")
        return self._reveal(request, lesson, index, None, view, results)

    def _reveal(self, request, lesson, index, guess, view, results):
        step = lesson["steps"][int(index)]
        predict = step["predict"]
        if predict is None:
            raise Refusal("lesson_no_predict")
        choices = predict["choices"][view.lang] if "choices" in predict else []
        if guess is not None:
            guess = typed_guess(predict, guess, choices)
        session = self.app.session(request)
        cfg = step_config(step)
        try:
            answer = self._answer(session, step, guess, cfg, view.lang)
        except NoToken:
            raise Refusal("lesson_guess_first") from None
        if predict["kind"] in MEASURED:  # measured or searched once: each of the class's guesses graded on it
            score = functools.partial(graded, answer)
        else:
            score = lambda value: reveal_record(session, step, typed_guess(predict, value, choices), cfg,  # noqa: E731
                                                view.lang)
        self.app.rooms.reveal(request.session_hash, score)  # the class's guesses closed, each scored for its student
        results = read_results(results, len(lesson["steps"]))
        if answer["right"] is not None:  # a guess committed: scored (the teacher's Reveal without one is not)
            results[str(int(index))] = answer["right"]
            self._journal(request, lesson, int(index), session, cfg, answer, results, view.lang)
        measured = answer_figure(answer, view.lang)  # the measurement's own chart (a step_time, a beam_vs_sample)
        shown = {self.revealed: answer, self.reveal: reveal_html(answer, view.lang),
                 self.results: results, self.progress: self._progress(lesson, int(index), results),
                 self.score: self._score_text(request, lesson, int(index), results, view.lang),
                 self.reveal_plot: self._step_plot(session, cfg, step, view) if measured is None else gr.update(
                     value=measured, visible=True),
                 self.commit: gr.update(interactive=False), self.guess: gr.update(interactive=False),
                 self.reveal_btn: gr.update(interactive=False),
                 self.open_view: self._open_button(step, view.lang, True)}
        if step["view"] in self.app.views:  # the step's tab draws every step: its chart and the force list, now
            _, shown[self.page.figure], shown[self.page.force] = self.app.answer(session, cfg,
                                                                                  replace(view, tab=step["view"]))
        return shown

    def _journal(self, request, lesson, index, session, cfg, answer, results, lang):
        """The student's answer, the right one (in the reveal record) and their score, for their summary: the
        question in every language about the text the student answered on (as a room asks it, `_room_question`)."""
        step = lesson["steps"][index]
        info = session.lm.info
        figures = step_figures(step, info, MODEL_NAMES.get(session.lm.name, session.lm.name), session, lang)
        counts = count_choices(session, cfg) if step["predict"]["kind"] == "kept_count" else None
        asked = self._room_question(lesson, index, lang, figures, info, counts)
        summaries = self.page.summaries
        summaries.answered(request.session_hash, Answer(asked.key, "lesson", dict(lesson["title"]), index,
                                                        asked.words, asked.choices, answer["guess"], answer,
                                                        right_values(answer)))
        score = lesson_score(lesson, results)
        summaries.scored(request.session_hash, Scored(lesson["id"], dict(lesson["title"]), score.right, score.total))

    def _answer(self, session, step, guess, cfg, lang) -> dict:
        """The question's reveal record for `guess`; a measured one (SHARED) depends only on the model, the
        machine and the text, so it is made once for everyone who asks the same within a few minutes
        (model/classroom/shared.py) and graded for each one's guess."""
        if step["predict"]["kind"] not in SHARED:
            return reveal_record(session, step, guess, cfg, lang)
        key = (session.lm.name, tuple(session.ids), json.dumps(step["predict"], sort_keys=True), repr(cfg))
        return graded(self.measured.get(key, lambda: reveal_record(session, step, None, cfg, lang)), guess)

    def open_step_view(self, lesson, index):
        """The step's tab, opened when the student has read the step (and, at a question, seen the answer)."""
        if lesson is None:
            return gr.skip()
        return gr.Tabs(selected=lesson["steps"][int(index)]["view"])

    def class_guesses(self, request: gr.Request, lesson, index, lang="en"):
        """How many of the teacher's room picked each answer of this step's question (counts, no names)."""
        question, counts, followers = self.app.rooms.tally(request.session_hash)
        if lesson is None or question is None or question.key != question_key(lesson, int(index)):
            raise SessionError("room_guess_no_question")
        labels = [label for label, _ in question.choices[lang]]
        chart = class_guesses_chart(labels, [counts[value] for _, value in question.choices[lang]], followers, lang)
        return gr.update(value=go.Figure(**chart), visible=True)

    def _room_question(self, lesson, index, lang, figures, info, counts=None):
        """The step's question as a room shows it to the students, in every language of the page; None without.
        The class guesses about the teacher's text, on the teacher's model (`info`, its `figures` filled in): its
        choices are those of the teacher's language `lang`, and each student reads the question in their own
        (`_asked_in`)."""
        step = lesson["steps"][index]
        predict = step["predict"]
        if predict is None:
            return None
        return Question(question_key(lesson, index),
                        {other: self._asked_in(step, lang, other, figures, info) for other in LANGS},
                        {other: self._choices(predict, other, lang, info, counts) for other in LANGS})

    def _asked_in(self, step, teacher_lang, lang, figures, info) -> str:
        """The step's question in `lang` about the teacher's text, prompt and model (those of `teacher_lang`): the
        lesson's own words where they say the same (the teacher's language, the same prompt, a question that names
        no text), else the question's kind worded in `lang` around the teacher's prompt, token or model."""
        predict = step["predict"]
        kind, same_text = predict["kind"], step["prompt"][lang] == step["prompt"][teacher_lang]
        if lang == teacher_lang or kind in ("order", *MEASURED) or (kind == "next_token" and same_text) or \
                (kind == "cache_size" and predict["model"] != "current"):
            return self._question(predict, lang, figures)
        if kind == "next_token":
            said = t("room_q_next_token", lang, text=step["prompt"][teacher_lang])
        elif kind == "kept_by_top_p":
            said = t("room_q_kept_by_top_p", lang, top_p=f"{step_config(step).top_p:g}",
                     token=token_label(predict["token"][teacher_lang]))
        else:  # a cache's size on the model the teacher's page runs, not the one the other language's lesson names
            said = t("room_q_cache_size", lang, model=MODEL_NAMES.get(info.name, info.name), layers=info.layers, kv_heads=info.kv_heads,
                     head_dim=info.head_dim, dtype=predict["dtype"], tokens=predict["tokens"])
        return f"**{said}**"

    def redraw(self, request: gr.Request, lesson, index, answer, shown_for, results, lang):
        """The language switched: the lesson's texts again, filled with the figures of the step as shown (the
        reveal from its record, no model run)."""
        if lesson is None or not shown_for:
            return {self.step_md: gr.skip()}  # every output as it was ({}: one value)
        step = lesson["steps"][int(index)]
        predict, figures = step["predict"], shown_for["figures"]
        info = self.app.models.get(shown_for["model"]).info
        said = {self.step_md: self._step_text(lesson, int(index), lang, figures),
                self.score: self._score_text(request, lesson, int(index), results or {}, lang),
                self.open_view: self._open_button(step, lang, predict is None or answer),
                self.question: self._question(predict, lang, figures)}
        if predict is None or predict["kind"] != "kept_count":  # (its counts are the step's: the same in any language)
            said[self.guess] = gr.update(choices=self._choices(predict, lang, info=info))
        if answer:
            said[self.reveal] = reveal_html(answer, lang)
        return said

    # ---- words ---------------------------------------------------------------------------------------
    def _step_text(self, lesson, index, lang, figures) -> str:
        step = lesson["steps"][index]
        head = f"### {say(lesson['title'], lang)}\n**{t('lesson_step_of', lang, step=index + 1, total=len(lesson['steps']))}**"
        return f"{head}\n\n{fill(say(step['text'], lang), figures)}"

    def _score_text(self, request, lesson, index, results, lang) -> str:
        """At the lesson's last step: the student's score and each question's result; with a room open, the
        class's result on each question too (counts, no names: model/classroom/scores.py). Elsewhere nothing."""
        score = lesson_score(lesson, results)
        if int(index) != len(lesson["steps"]) - 1 or not score.total:
            return ""
        lines = [t("lesson_score", lang, right=score.right, total=score.total), ""]
        lines += [f"- {t('lesson_score_step', lang, step=q.step + 1, result=t(SCORE_WORDS[q.right], lang))}"
                  for q in score.questions]
        if self.app.rooms.room_of(request.session_hash) is not None:
            counted = self.app.rooms.results(request.session_hash)
            lines += ["", t("lesson_class_results", lang), ""]
            for q in score.questions:
                r = counted.get(question_key(lesson, q.step))
                lines.append("- " + (t("lesson_class_step", lang, step=q.step + 1, right=r.right, wrong=r.wrong,
                                       none=r.no_answer) if r else t("lesson_class_not_revealed", lang, step=q.step + 1)))
        return "\n".join(lines)

    def _open_button(self, step, lang, shown):
        tab = step["view"]
        if tab in (self.tab, "batching") or not shown:
            return gr.update(visible=False)
        return gr.update(value=t("lesson_open_tab", lang, tab=t(self._tab_title(tab), lang)), visible=True)

    def _tab_title(self, tab):
        return self.tab_titles.get(tab, "tab_lesson")

    @staticmethod
    def _question(predict, lang, figures) -> str:
        return f"**{fill(say(predict['question'], lang), figures)}**" if predict else ""

    def _choices(self, predict, lang, tokens_of=None, info=None, counts=None) -> list:
        """A question's choices as (label in `lang`, value); a next_token question's tokens are those of the
        language `tokens_of` (default `lang`): each language's lesson runs on its own model; a cache's sizes are
        those of the session's model (`info`) for a question on the current model. `counts`: a kept_count
        question's (quiz.count_choices, of the step's session)."""
        if predict is None:
            return []
        kind = predict["kind"]
        if kind in ("next_token", "top_attribution"):
            return [(token_label(c), c) for c in predict["choices"]["zh" if (tokens_of or lang) == "zh" else "en"]]
        if kind == "kept_by_top_p":
            return [(t("lesson_yes", lang), "yes"), (t("lesson_no", lang), "no")]
        if kind == "order":
            return [(t(ORDER_WORDS[o], lang), o) for o in ORDER_CHOICES]
        if kind in MYTH_WORDS:
            return [(t(key, lang), value) for value, key in MYTH_WORDS[kind].items()]
        if kind == "kept_count":
            return [(f"{n:,}", str(n)) for n in counts or ()]
        return [(viz.format_bytes(n), str(n)) for n in size_choices(predict, info or self.app.models.get().info)]

    # ---- the step's chart ------------------------------------------------------------------------------
    def _step_plot(self, session, cfg, step, view):
        """The chart of the view the step is about, shown in the lesson beside its text (hidden for a view with
        no chart: its Open-the-tab button leads there)."""
        figure = self.step_figure(session, cfg, step, replace(view, tab=step["view"]))
        if figure is None:
            return gr.update(value=None, visible=False)
        return gr.update(value=figure if isinstance(figure, go.Figure) else go.Figure(**figure), visible=True)

    def step_figure(self, session, cfg, step, view):
        """The step's chart, asked of the view it is about (ui/views/__init__.py): its `lesson_figure`, else its
        `figure` of this session (a view that draws every step), else None (a view with no chart of a text, such
        as the session tab). A plotly figure or its {"data", "layout"} dict."""
        shown = self.app.all_views.get(step["view"])
        if hasattr(shown, "lesson_figure"):
            return shown.lesson_figure(session, cfg, step, view)
        if hasattr(shown, "figure"):
            return shown.figure(session, cfg, view)
        return None

    # ---- wiring --------------------------------------------------------------------------------------
    def shown_outputs(self, page) -> list:
        """What a step shown (`_show`) writes: the outputs of Start, and of anything else that opens a lesson as
        Start does (open_lesson: the Interview tab's buttons)."""
        return [self.lesson, self.index, self.revealed, self.results, self.figures, self.progress, self.step_md,
                self.score, self.open_view, self.predict_box, self.question,
                self.guess, self.commit, self.reveal, self.reveal_plot, page.prompt, page.mode, page.model,
                *page.settings, page.tabs_block, page.tab_state, *page.step_out, self.class_plot, self.reveal_btn,
                self.class_btn, self.summary_row]

    def events(self, page):
        h, page_in = page.handler, page.page_in
        shown = self.shown_outputs(page)
        revealed = [self.revealed, self.reveal, self.reveal_plot, self.commit, self.guess, self.open_view, page.figure,
                    page.force, self.reveal_btn, self.results, self.progress, self.score]
        scroll = {"then_js": SCROLL_TO_LESSON}
        held = [self.lesson, self.index]
        return [
            Event(self.start.click, h(self.open_lesson, "lesson_id"), [self.pick, *page_in], shown,
                  "lesson_steps", "lesson_open"),
            Event(self.upload.upload, h(self.upload_lesson, "file"), [self.upload, *page_in], shown, "lesson",
                  "lesson_upload"),
            Event(self.next.click, h(self.next_step, "lesson", "index", "results"), [*held, self.results, *page_in],
                  shown, "lesson_steps", "lesson_next", **scroll),
            Event(self.prev.click, h(self.prev_step, "lesson", "index", "results"), [*held, self.results, *page_in],
                  shown, "lesson_steps", "lesson_back", **scroll),
            Event(self.resume.click, h(self.resume_lesson, "progress"), [self.progress, *page_in], shown,
                  "lesson_steps", "lesson_resume"),
            Event(self.commit.click, h(self.commit_guess, "lesson", "index", "results", "guess"),
                  [*held, self.results, self.guess, *page_in], revealed, "reveal", "lesson_guess"),
            Event(self.reveal_btn.click, h(self.reveal_step, "lesson", "index", "results"),
                  [*held, self.results, *page_in], revealed, "reveal", "lesson_reveal"),
            Event(self.tab_block.select, self.saved_progress, [self.progress, page.lang],
                  [self.resume_md, self.resume], "page", "lesson_saved"),
            Event(self.open_view.click, self.open_step_view, held, [page.tabs_block], "page", "lesson_open_tab"),
            Event(self.class_btn.click, friendly(self.class_guesses), [*held, page.lang], [self.class_plot], "page",
                  "lesson_class_guesses"),
            Event(self.summary_btn.click, friendly(page.summaries.make), [page.lang, page.notes], [self.summary_file],
                  "views", "lesson_summary"),
            Event(page.lang.change, self.redraw, [*held, self.revealed, self.figures, self.results, page.lang],
                  [self.step_md, self.score, self.open_view, self.question, self.guess, self.reveal], "page"),
        ]


SCORE_WORDS = {True: "lesson_score_right", False: "lesson_score_wrong", None: "lesson_score_none"}
ORDER_WORDS = {"transformers": "lesson_order_transformers", "temperature_last": "lesson_order_temperature_last",
               "same": "lesson_order_same"}
MYTH_WORDS = {"step_time": {"same": "lesson_step_same", "grows": "lesson_step_grows"},  # value: its label's key
              "beam_vs_sample": {"beam": "lesson_beam_higher", "sampled": "lesson_sampled_higher",
                                 "same": "lesson_beam_same"},
              "prefill_vs_decode": {"prefill": "lesson_pd_prefill", "decode": "lesson_pd_decode"}}
MEASURED = ("step_time", "kept_count", "beam_vs_sample", "prefill_vs_decode", "top_attribution")  # answered once
SHARED = ("step_time", "beam_vs_sample", "prefill_vs_decode")  # measured by runs of seconds: made once for everyone


def question_key(lesson, index: int) -> str:
    """Which question a room holds: a lesson's step (the same step asked again keeps the class's guesses)."""
    return f"{lesson['id']}#{index}"


def token_label(text: str) -> str:
    """A token's text as the chips show it: a leading space as ␣."""
    return text.replace(" ", "␣").replace("\n", "↵")


def reveal_html(answer: dict, lang: str) -> str:
    """The reveal of model.classroom.quiz.reveal_record's `answer`, in the page's words in `lang` (viz.lesson)."""
    return reveal_in(answer, functools.partial(t, lang=lang))


def uploaded_lesson(file) -> bytes:
    """The bytes of a lesson the user uploaded (a file in Gradio's own cache, at most MAX_LESSON_BYTES)."""
    return upload_bytes(file, MAX_LESSON_BYTES, Refusal("lesson_no_file"),
                        LessonError("lesson_too_big", limit=f"{MAX_LESSON_BYTES:,}"))
