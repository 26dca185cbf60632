"""The class's guesses at a lesson's question, before the reveal: one bar per choice, counts only (no names)."""
from __future__ import annotations

from viz.i18n import t
from viz.style import SMALL_SIZE, as_figure, base_layout, chart

BAR = "#0072B2"  # the palette's blue (colour-blind safe)


def class_guesses_chart(labels: list[str], counts: list[int], followers: int, lang: str = "en") -> dict:
    """How many students picked each choice (`labels`, in the question's order) out of the `followers` in the
    room. The answer is not marked: the teacher shows this before revealing it."""
    answered = sum(counts)
    data = [{"type": "bar", "orientation": "h", "y": labels, "x": counts, "marker": {"color": BAR},
             "text": [str(n) for n in counts], "textposition": "outside", "cliponaxis": False,
             "textfont": {"size": SMALL_SIZE + 2},
             "hovertemplate": "%{y}: %{x}<extra></extra>"}]
    layout = base_layout(
        t("guesses_title", lang), lang, t("guesses_sub", lang, answered=answered, followers=followers),
        height=120 + 48 * max(len(labels), 2),
        xaxis={"title": {"text": t("guesses_axis", lang)}, "rangemode": "tozero", "dtick": max(1, -(-max(counts or [1]) // 8)),
               "range": [0, max(counts or [0]) * 1.15 + 1]},
        yaxis={"autorange": "reversed", "type": "category"},
        showlegend=False, bargap=0.35,
    )
    return chart(data, layout)


class_guesses_figure = as_figure(class_guesses_chart)


def after_reveal_chart(lang: str = "en") -> dict:
    """What a student's room shows in place of the teacher's chart while a question is open: the chart would
    give the answer away."""
    layout = base_layout(t("guesses_wait_title", lang), lang, t("guesses_wait_sub", lang), height=220,
                         xaxis={"visible": False}, yaxis={"visible": False})
    return chart([], layout)
