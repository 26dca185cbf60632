"""The room a chart's own title takes at its top, for the charts Gradio draws (gr.Plot: the title stays in the
figure, not in an HTML caption as for the page's own charts), so a legend or a panel title placed under it in
pixels never runs into it. Measured in Chromium with viz.style's sizes: the title is drawn 3-32 px from the top,
the subtitle's lines 19 px each from 38 px; a legend row of SMALL_SIZE text is 24 px."""
from __future__ import annotations

HEAD_PX = 46  # the title, and the gap under the subtitle
LINE_PX = 20  # each subtitle line
TITLE_LINE_PX = 26  # each further title line (a title wrapped with <br>)
LEGEND_ROW_PX = 24


def head_px(title: str, subtitle: str | None) -> int:
    """How far from the top the title and subtitle reach, in px."""
    lines = subtitle.count("<br>") + 1 if subtitle else 0
    return HEAD_PX + TITLE_LINE_PX * title.count("<br>") + LINE_PX * lines
