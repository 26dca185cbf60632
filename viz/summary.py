"""A student's summary as one printable page (issue 49): the texts they wrote with their settings, the steps they
forced or went back on, each question with their answer, the right one and why, their score, their notes, and the
charts they kept, in the page's language. Plain records in (model/classroom/journal.py's Summary), HTML out; the
kept charts are drawn by plotly.js inlined into the page (only when there are any), as static pictures."""
from __future__ import annotations

from typing import Callable

from model.classroom.journal import Answer, KeptChart, Summary, Text, right_values
from viz.i18n import counted, t
from viz.lesson import bold_marked, reveal_html
from viz.printable import document, esc, json_data
from viz.style import format_prob
from viz.tokenizers import MODEL_NAMES

DRAW_WIDTH = 960  # px: about the width of a chart on the page at a projector's 1280 px
Say = Callable[..., str]  # say(key, **fmt): any of the page's words in the summary's language (ui.strings.t)

# Draws each kept chart at the width the page's charts are made for (DRAW_WIDTH px), as a still SVG picture that
# then scales to the page (a phone, an A4 page's text): a chart drawn narrower would cut its titles and labels
DRAW_CHARTS = """
const kept = JSON.parse(document.getElementById('tbt-kept').textContent);
Promise.all(kept.map(async (fig, i) => {
  const box = document.getElementById('kept-' + i);
  const scratch = document.createElement('div');
  scratch.style.cssText = 'position: absolute; left: -10000px; top: 0';
  document.body.appendChild(scratch);
  const width = %d, height = (fig.layout && fig.layout.height) || 480;
  const layout = Object.assign({}, fig.layout, {width: width, height: height, autosize: false});
  await Plotly.newPlot(scratch, fig.data || [], layout, {staticPlot: true, displayModeBar: false});
  const url = await Plotly.toImage(scratch, {format: 'svg', width: width, height: height});
  Plotly.purge(scratch);
  scratch.remove();
  const img = document.createElement('img');
  img.src = url;
  img.alt = box.dataset.caption || '';
  img.style.cssText = 'width: 100%%; height: auto; display: block';
  box.appendChild(img);
})).then(() => { document.body.dataset.drawn = String(kept.length); });
""" % DRAW_WIDTH


def summary_page(summary: Summary, lang: str, say: Say, made: str, plotly_js: str | None = None) -> str:
    """The student's summary as one HTML page in `lang`. `made`: when it was made, as the page says it;
    `plotly_js`: plotly.js's source, inlined when the summary holds a kept chart (else not needed)."""
    body = [f"<h1>{esc(t('summary_title', lang))}</h1>",
            f'<p class="meta">{esc(t("summary_meta", lang, made=made))}</p>',
            _texts(summary.texts, lang), _answers(summary, lang, say), _notes(summary.notes, lang),
            _charts(summary.charts, lang, say),
            f'<p class="small">{esc(t("summary_only_yours", lang))}</p>']
    figures = [chart.figures.get(lang) or next(iter(chart.figures.values())) for chart in summary.charts]
    script = DRAW_CHARTS if figures else ""
    data = json_data("tbt-kept", figures) if figures else ""
    return document(lang, t("summary_title", lang), "".join(body) + data, script,
                    plotly_js if figures and plotly_js else "")


def settings_line(settings: dict, lang: str) -> str:
    """A step's settings in one line: T, top-k, top-p, min-p, repetition penalty, the stages' order, seed."""
    order = t("summary_order_last" if settings["order"] == "temperature_last" else "summary_order_first", lang)
    return t("summary_settings", lang, temperature=f"{settings['temperature']:g}", top_k=settings["top_k"],
             top_p=f"{settings['top_p']:g}", min_p=f"{settings['min_p']:g}",
             penalty=f"{settings['repetition_penalty']:g}", order=order, seed=settings["seed"])


def _texts(texts: list[Text], lang: str) -> str:
    out = [f'<section id="texts"><h2>{esc(t("summary_texts", lang))}</h2>']
    if not texts:
        out.append(f'<p class="none">{esc(t("summary_no_texts", lang))}</p>')
    for n, text in enumerate(texts, 1):
        mode = t("summary_mode_chat" if text.chat else "summary_mode_raw", lang)
        ended = " " + t("summary_ended", lang) if text.finished else ""
        out.append(f'<div class="box text" data-steps="{text.steps}" data-forced="{len(text.forced)}" '
                   f'data-backs="{len(text.backs)}"><h3>{esc(t("summary_text_head", lang, n=n, model=MODEL_NAMES.get(text.model, text.model)))}</h3>'
                   f'<p><b>{esc(t("summary_prompt", lang, mode=mode))}</b></p><div class="quote">{esc(text.prompt)}</div>'
                   f'<p><b>{esc(counted(text.steps, "summary_written_one", "summary_written", lang))}</b>{esc(ended)}</p>'
                   f'<div class="quote">{esc(text.text) or "&nbsp;"}</div>')
        if text.settings:
            rows = "".join(f"<tr><td>{esc(_steps(run.first, run.last, lang))}</td><td>{esc(settings_line(run.settings, lang))}"
                           f"</td></tr>" for run in text.settings)
            out.append(f'<table class="settings"><tr><th>{esc(t("summary_steps", lang))}</th>'
                       f'<th>{esc(t("summary_settings_head", lang))}</th></tr>{rows}</table>')
        if text.forced:
            items = "".join(f'<li data-step="{f.step}">{esc(t("summary_forced_item", lang, step=f.step, token=f.token, rank=f.rank, prob=format_prob(f.prob)))}</li>'
                            for f in text.forced)
            out.append(f'<p><b>{esc(t("summary_forced", lang, n=len(text.forced)))}</b></p><ul class="forced">{items}</ul>')
        if text.backs:
            items = "".join(f'<li data-from="{b.from_step}" data-to="{b.to_step}">{esc(_back(b, lang))}</li>'
                            for b in text.backs)
            out.append(f'<p><b>{esc(t("summary_backs", lang, n=len(text.backs)))}</b></p><ul class="backs">{items}</ul>')
        out.append("</div>")
    return "".join(out) + "</section>"


def _steps(first: int, last: int, lang: str) -> str:
    return t("summary_step_one", lang, step=first) if first == last else \
        t("summary_step_range", lang, first=first, last=last)


def _back(back, lang: str) -> str:
    undone = " ".join(back.undone) + (" …" if back.from_step - back.to_step > len(back.undone) else "")
    return t("summary_back_item", lang, frm=back.from_step, to=back.to_step, n=back.from_step - back.to_step,
             tokens=undone)


def _label(answer: Answer, value: str, lang: str) -> str:
    """A choice's label in `lang` (another language's, or the value itself, where `lang` has none)."""
    for labels in (answer.choices.get(lang, []), *answer.choices.values()):
        for label, choice in labels:
            if choice == value:
                return label
    return value


def _answers(summary: Summary, lang: str, say: Say) -> str:
    out = [f'<section id="questions"><h2>{esc(t("summary_questions", lang))}</h2>']
    if not summary.answers:
        out.append(f'<p class="none">{esc(t("summary_no_questions", lang))}</p>')
    for score in summary.scores:
        title = score.title.get(lang) or next(iter(score.title.values()), score.lesson)
        out.append(f'<p class="score" data-lesson="{esc(score.lesson)}" data-right="{score.right}" '
                   f'data-total="{score.total}"><b>{esc(t("summary_score", lang, title=title, right=score.right, total=score.total))}</b></p>')
    room = [a for a in summary.answers if a.where == "room"]
    if room:
        right = sum(1 for a in room if a.record.get("right") is True)
        out.append(f'<p class="score" data-lesson="room" data-right="{right}" data-total="{len(room)}"><b>'
                   f'{esc(t("summary_room_score", lang, right=right, total=len(room)))}</b></p>')
    for answer in summary.answers:
        out.append(_answer(answer, lang, say))
    return "".join(out) + "</section>"


def _answer(answer: Answer, lang: str, say: Say) -> str:
    question = answer.question.get(lang) or next(iter(answer.question.values()), "")
    where = t("summary_in_room", lang) if answer.where == "room" else t(
        "summary_in_lesson", lang, title=answer.title.get(lang) or next(iter(answer.title.values()), ""),
        step=(answer.step or 0) + 1)
    right = answer.record.get("right")
    if answer.guess is None:
        mine = f'<span class="none">{esc(t("summary_no_answer", lang))}</span>'
    else:
        verdict = "" if right is None else (f' <span class="right">{esc(t("summary_right", lang))}</span>' if right
                                            else f' <span class="wrong">{esc(t("summary_wrong", lang))}</span>')
        mine = f"<code>{esc(_label(answer, answer.guess, lang))}</code>{verdict}"
    answers = [_label(answer, value, lang) for value in right_values(answer.record)]
    correct = ", ".join(f"<code>{esc(a)}</code>" for a in answers) or esc(t("summary_no_verdict", lang))
    why = reveal_html(answer.record, lambda key, **fmt: say(key, lang, **fmt)) if answer.guess is not None else ""
    state = "none" if right is None else str(bool(right)).lower()
    return (f'<div class="box answer" data-key="{esc(answer.key)}" data-right="{state}">'
            f'<p class="small">{esc(where)}</p><p>{bold_marked(esc(question))}</p>'
            f'<p>{esc(t("summary_your_answer", lang))} {mine}</p>'
            f'<p>{esc(t("summary_right_answer", lang))} {correct}</p>'
            + (f'<div class="why"><b>{esc(t("summary_why", lang))}</b> {why}</div>' if why else "") + "</div>")


def _notes(notes: str, lang: str) -> str:
    body = f'<div class="quote" id="tbt-notes-printed">{esc(notes)}</div>' if notes.strip() else \
        f'<p class="none">{esc(t("summary_no_notes", lang))}</p>'
    return f'<section id="notes"><h2>{esc(t("summary_notes", lang))}</h2>{body}</section>'


def _charts(charts: list[KeptChart], lang: str, say: Say) -> str:
    out = [f'<section id="charts"><h2>{esc(t("summary_charts", lang))}</h2>']
    if not charts:
        out.append(f'<p class="none">{esc(t("summary_no_charts", lang))}</p>')
    for i, chart in enumerate(charts):
        caption = t("summary_chart_caption", lang, tab=say(chart.tab_title, lang), step=chart.step)
        out.append(f'<figure class="keep"><figcaption>{esc(caption)}</figcaption>'
                   f'<div class="quote small">{esc(chart.text[-300:])}</div>'
                   f'<div id="kept-{i}" class="plot" data-caption="{esc(caption)}"></div></figure>')
    return "".join(out) + "</section>"
