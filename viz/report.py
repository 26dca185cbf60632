"""A room's class report as one printable page (issue 49): per question the class's answers counted against the right
one (a bar chart) and the most common wrong answer, the class's draws against the model's distribution (its
chi-squared), the games' bits, who joined and when. Plain records in (model/classroom/report.py), HTML out; the
charts are inline SVG drawn here (no script, no library: the page is small, prints as it shows, and a room of 80
renders at once). Colours are the figures' own (viz.style), and every bar also says what it is in words."""
from __future__ import annotations

from model.classroom.report import ClassReport, QuestionResult, label_of, words_of
from viz.i18n import t
from viz.printable import document, esc
from viz.style import FATE_COLORS, INK, KEY_COLOR, MUTED, format_prob

RIGHT = KEY_COLOR  # bluish green: the right answer
WRONG = FATE_COLORS["chosen"]  # vermillion: the most common wrong answer
OTHER = "#999999"  # grey: the other answers
CLASS = FATE_COLORS["kept"]  # blue: what the class did (as on the wall)
ROW_PX, LABEL_PX, BAR_PX, VALUE_PX = 28, 190, 330, 240
MAX_JOIN_BUCKETS = 30


def report_page(report: ClassReport, lang: str, made: str) -> str:
    """The report as one HTML page in `lang`; `made`: when it was made, as the page says it."""
    return document(lang, t("report_title", lang, code=report.code), report_body(report, lang, made))


def report_body(report: ClassReport, lang: str, made: str) -> str:
    """The report's sections as HTML (the page's body; the Room tab shows it as it is, with PREVIEW_CSS)."""
    meta = t("report_meta", lang, made=made, minutes=f"{report.open_s / 60:.0f}", joined=len(report.seats),
             seated=report.seated, peak=report.peak)
    body = [f"<h1>{esc(t('report_title', lang, code=report.code))}</h1>",
            f'<p class="meta">{esc(meta)}</p>',
            _questions(report, lang), _draws(report, lang), _games(report, lang), _seats(report, lang),
            f'<p class="small">{esc(t("report_privacy", lang))}</p>']
    return f'<div class="tbt-report" data-questions="{len(report.questions)}">{PREVIEW_CSS}{"".join(body)}</div>'


# Each chart is drawn twice: wide (the label left of its bar: a projector, a printed page) and narrow (the label
# above its bar, at a phone's width and full size); the style sheet shows one (NARROW_CSS).
NARROW_PX, NARROW_BAR_PX = 360, 200
NARROW_CSS = (".tbt-narrow {display: none} @media (max-width: 600px) {.tbt-wide {display: none} .tbt-narrow "
              "{display: block}} @media print {.tbt-wide {display: block !important} .tbt-narrow {display: none "
              "!important}}")


# The report's look where the Room tab shows it (the printable page has the whole style sheet, viz/printable.py)
PREVIEW_CSS = ("<style>.tbt-report .box {border: 1px solid #ddd; border-radius: 8px; padding: 6px 10px; margin: 8px 0}"
               " .tbt-report .none, .tbt-report .meta, .tbt-report .small {color: #666}"
               " .tbt-report td, .tbt-report th {border: 1px solid #ccc; padding: 2px 6px} " + NARROW_CSS + "</style>")


# ---- charts ---------------------------------------------------------------------------------------------------
def _svg(width: int, height: int, caption: str, body: str) -> str:
    return (f'<svg class="chart" role="img" aria-label="{esc(caption)}" viewBox="0 0 {width} {height}" width="100%" '
            f'style="max-width:{width}px" xmlns="http://www.w3.org/2000/svg">{body}</svg>')


def _text(x: float, y: float, words: str, size: int = 14, color: str = INK, anchor: str = "start") -> str:
    return (f'<text x="{x:.1f}" y="{y}" font-size="{size}" fill="{color}" text-anchor="{anchor}">{esc(words)}'
            f"</text>")


def _bar(x: float, y: float, length: float, height: int, color: str, outlined: bool = False) -> str:
    paint = f'fill="white" stroke="{INK}" stroke-width="2"' if outlined else f'fill="{color}"'
    return f'<rect x="{x}" y="{y}" width="{length:.1f}" height="{height}" {paint}/>'


def both(wide: str, narrow: str) -> str:
    return f'<div class="tbt-wide">{wide}</div><div class="tbt-narrow">{narrow}</div>'


def bars_svg(rows: list[tuple[str, float, str, str]], top: float, caption: str) -> str:
    """Horizontal bars, one per row (label, value, colour, words after the value), scaled to `top`; wide and
    narrow."""
    scale = lambda v, px: 0 if top <= 0 else px * v / top  # noqa: E731
    wide, narrow = [], []
    for i, (label, value, color, words) in enumerate(rows):
        y, length = 4 + i * ROW_PX, scale(value, BAR_PX)
        wide.append(_text(LABEL_PX - 8, y + 18, _short(label), anchor="end") + _bar(LABEL_PX, y + 4, length, 18, color)
                    + _text(LABEL_PX + length + 6, y + 18, words))
        y, length = 4 + i * 2 * ROW_PX, scale(value, NARROW_BAR_PX)
        narrow.append(_text(0, y + 14, _short(label, 40)) + _bar(0, y + 22, length, 18, color)
                      + _text(length + 6, y + 36, words, 13))
    width = LABEL_PX + BAR_PX + VALUE_PX
    return both(_svg(width, ROW_PX * len(rows) + 8, caption, "".join(wide)),
                _svg(NARROW_PX, 2 * ROW_PX * len(rows) + 8, caption, "".join(narrow)))


def paired_svg(rows: list[tuple[str, float, float]], names: tuple[str, str], caption: str, digits: str = "g") -> str:
    """Two bars per row (label, the class's value solid blue, the model's outlined), scaled together; wide and
    narrow."""
    top = max([max(a, b) for _, a, b in rows] + [1e-9])
    legend = lambda x: (_bar(x, 4, 14, 14, CLASS) + _text(x + 20, 16, names[0], 13)  # noqa: E731
                        + _bar(x + 180, 4, 14, 14, "", outlined=True) + _text(x + 200, 16, names[1], 13))
    wide, narrow = [legend(LABEL_PX)], [legend(0)]
    for i, (label, a, b) in enumerate(rows):
        y, la, lb = 30 + i * 2 * ROW_PX, BAR_PX * a / top, BAR_PX * b / top
        wide.append(_text(LABEL_PX - 8, y + 24, _short(label), anchor="end")
                    + _bar(LABEL_PX, y + 2, la, 20, CLASS) + _text(LABEL_PX + la + 6, y + 17, f"{a:{digits}}", 13)
                    + _bar(LABEL_PX, y + 26, lb, 20, "", outlined=True)
                    + _text(LABEL_PX + lb + 6, y + 41, f"{b:{digits}}", 13, MUTED))
        y, la, lb = 30 + i * 3 * ROW_PX, NARROW_BAR_PX * a / top, NARROW_BAR_PX * b / top
        narrow.append(_text(0, y + 14, _short(label, 40)) + _bar(0, y + 22, la, 20, CLASS)
                      + _text(la + 6, y + 37, f"{a:{digits}}", 13) + _bar(0, y + 46, lb, 20, "", outlined=True)
                      + _text(lb + 6, y + 61, f"{b:{digits}}", 13, MUTED))
    width = LABEL_PX + BAR_PX + VALUE_PX
    return both(_svg(width, 2 * ROW_PX * len(rows) + 34, caption, "".join(wide)),
                _svg(NARROW_PX, 3 * ROW_PX * len(rows) + 34, caption, "".join(narrow)))


def _short(label: str, most: int = 22) -> str:
    return label if len(label) <= most else label[: most - 1] + "…"


# ---- sections -------------------------------------------------------------------------------------------------
def _questions(report: ClassReport, lang: str) -> str:
    out = [f'<section id="questions"><h2>{esc(t("report_questions", lang))}</h2>']
    if not report.questions:
        out.append(f'<p class="none">{esc(t("report_no_questions", lang))}</p>')
    for q in report.questions:
        out.append(_question(q, lang))
    return "".join(out) + "</section>"


def _question(q: QuestionResult, lang: str) -> str:
    answered = q.answered
    rows = []
    for value, n in q.counts.items():
        share = n / answered if answered else 0.0
        if value in q.right:
            color, tag = RIGHT, " ✓ " + t("report_right_tag", lang)
        elif value == q.most_wrong:
            color, tag = WRONG, " ✗ " + t("report_common_wrong_tag", lang)
        else:
            color, tag = OTHER, ""
        rows.append((label_of(q, value, lang), n, color, f"{n} ({share:.0%}){tag}"))
    right = sum(q.counts[v] for v in q.right if v in q.counts)
    if not q.revealed:
        line = t("report_not_revealed", lang, answered=answered, seated=q.seated)
    else:
        line = t("report_answered", lang, answered=answered, seated=q.seated, right=right,
                 share=f"{right / answered:.0%}" if answered else "—")
        if q.most_wrong is not None:
            line += " " + t("report_most_wrong", lang, answer=label_of(q, q.most_wrong, lang), n=q.counts[q.most_wrong])
    if q.lapsed:
        line += " " + t("report_lapsed", lang, n=q.lapsed)
    chart = bars_svg(rows, max(q.counts.values(), default=0), words_of(q, lang))
    return (f'<div class="box question" data-key="{esc(q.key)}" data-answered="{answered}" data-right="{right}" '
            f'data-lapsed="{q.lapsed}" data-most-wrong="{esc(q.most_wrong or "")}"><h3>{esc(t("report_question_no", lang, no=q.no))} '
            f'{esc(words_of(q, lang))}</h3>{chart}<p>{esc(line)}</p></div>')


def _draws(report: ClassReport, lang: str) -> str:
    out = [f'<section id="draws"><h2>{esc(t("report_draws", lang))}</h2>']
    if not report.rounds:
        out.append(f'<p class="none">{esc(t("report_no_draws", lang))}</p>')
    for r in report.rounds:
        rows = [(t("report_other_tokens", lang) if label is None else label, n, expected)
                for label, n, expected in zip(r["labels"], r["counts"], r["expected"])]
        rows = [(f"{label} {format_prob(p)}", n, e) for (label, n, e), p in zip(rows, r["probs"])]
        head = t("report_round", lang, no=r["no"], temperature=f"{r['temperature']:g}", n=r["n"])
        chart = paired_svg(rows, (t("report_class_draws", lang), t("report_expected", lang)), head, ".3g")
        if r["n"] < 5:
            meaning = t("report_draws_few", lang, n=r["n"])
        else:
            meaning = t("report_draws_fits" if r["p_value"] >= 0.05 else "report_draws_off", lang,
                        p=format_prob(r["p_value"]))
        stats = t("report_draws_stats", lang, chi2=f"{r['chi2']:.2f}", dof=r["dof"], p=f"{r['p_value']:.3f}",
                  tv=f"{r['tv']:.3f}")
        out.append(f'<div class="box round" data-n="{r["n"]}" data-chi2="{r["chi2"]:.6g}"><h3>{esc(head)}</h3>{chart}'
                   f"<p>{esc(stats)}</p><p>{esc(meaning)}</p></div>")
    return "".join(out) + "</section>"


def _games(report: ClassReport, lang: str) -> str:
    out = [f'<section id="games"><h2>{esc(t("report_games", lang))}</h2>']
    if not report.games:
        out.append(f'<p class="none">{esc(t("report_no_games", lang))}</p>')
    for no, text, score in report.games:
        rows = [(f"{i + 1}. {token}", klass, model)
                for i, (token, klass, model) in enumerate(zip(score["tokens"], score["class_bits"], score["model_bits"]))]
        head = t("report_game", lang, no=no, text=text)
        chart = paired_svg(rows, (t("report_class_bits", lang), t("report_model_bits", lang)), head, ".2f")
        verdict = t("report_class_wins" if score["class_total"] < score["model_total"] else "report_model_wins", lang)
        line = t("report_game_totals", lang, klass=f"{score['class_total']:.1f}", model=f"{score['model_total']:.1f}",
                 n=len(score["tokens"]))
        out.append(f'<div class="box game" data-class="{score["class_total"]:.6g}" data-model="{score["model_total"]:.6g}">'
                   f"<h3>{esc(head)}</h3>{chart}<p>{esc(line)} {esc(verdict)}</p></div>")
    return "".join(out) + "</section>"


def _seats(report: ClassReport, lang: str) -> str:
    out = [f'<section id="seats"><h2>{esc(t("report_joined", lang, n=len(report.seats)))}</h2>']
    if not report.seats:
        out.append(f'<p class="none">{esc(t("report_no_seats", lang))}</p></section>')
        return "".join(out)
    minutes = [at / 60 for _, _, at in report.seats]
    span = max(minutes) + 1e-9
    width = max(1, int(span // MAX_JOIN_BUCKETS) + 1)  # minutes per bar: at most MAX_JOIN_BUCKETS bars
    buckets: dict[int, int] = {}
    for m in minutes:
        buckets[int(m // width)] = buckets.get(int(m // width), 0) + 1
    rows = [(t("report_minute", lang, start=k * width, end=(k + 1) * width), n, CLASS, str(n))
            for k, n in sorted(buckets.items())]
    out.append(bars_svg(rows, max(buckets.values()), t("report_joined", lang, n=len(report.seats))))
    items = "".join(f'<li data-seat="{no}"><b>{no}</b> {esc(name) or "—"} · '
                    f'{esc(t("report_seat_at", lang, minute=f"{at / 60:.1f}"))}</li>' for no, name, at in report.seats)
    out.append(f'<ul class="seats" style="columns: 3 14em; list-style: none; padding: 0; font-size: 14px">{items}</ul>')
    return "".join(out) + "</section>"
