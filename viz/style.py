"""The look shared by every figure: fate colours and patterns, fonts, base layout and panel pieces, formatting."""
from __future__ import annotations

import functools
import html
import json
import math
import re
import unicodedata

import plotly.graph_objects as go
from plotly.colors import sequential
from plotly.utils import PlotlyJSONEncoder

from viz.i18n import t

# Okabe-Ito colours, one per fate, the same in every chart (colour-blind safe).
FATE_COLORS = {
    "chosen": "#D55E00",  # vermillion
    "kept": "#0072B2",  # blue
    "top_k": "#E69F00",  # orange
    "top_p": "#CC79A7",  # reddish purple
    "min_p": "#56B4E9",  # sky blue
    "greedy": "#999999",  # grey
    "grammar": "#009E73",  # bluish green: a constraint's cut (model/strategies/constrain.py)
}
# A second cue besides colour: cut tokens are hatched, each cut its own way.
FATE_PATTERNS = {"chosen": "", "kept": "", "top_k": "/", "top_p": "\\", "min_p": "x", "greedy": ".", "grammar": "-"}
# A short mark printed beside a bar, so the fate can be read without colour at all.
FATE_MARKS = {"chosen": "★", "kept": "", "top_k": "✂k", "top_p": "✂p", "min_p": "✂min", "greedy": "–",
              "grammar": "✂grammar"}

# Colours for things that are not fates (K and V, timings, masks), chosen not to clash with them.
KEY_COLOR = "#009E73"  # bluish green
VALUE_COLOR = "#F0E442"  # yellow
INK = "#222222"
CHOSEN_INK = "#A33F00"  # the chosen fate's vermillion, dark enough for small text on white (6.4:1)
MUTED = "#666666"
MASK_FUTURE = "#D9D9D9"
MASK_WINDOW = "#A6A6A6"
# Attention weights, light (0) to dark (the largest weight shown): ColorBrewer Blues spelled out, since plotly.js
# has its own, different scale under the name "Blues" (dark to light grey-blue), which it would use for the name
# in a chart that plotly's Python side did not expand. The live attention view and the exported page both use it.
ATTENTION_SCALE = [[i / (len(sequential.Blues) - 1), c] for i, c in enumerate(sequential.Blues)]

FONT_FAMILY = "'Noto Sans', 'Noto Sans CJK SC', 'PingFang SC', 'Microsoft YaHei', 'DejaVu Sans', Arial, sans-serif"
# The packaged models' names where the page names a model (titles, the picker, the calculator), not their ids
MODEL_NAMES = {"smollm2": "SmolLM2-135M", "gemma3-270m": "Gemma 3 270M"}


def model_name(name: str) -> str:
    """A model's name as the page says it: a packaged model's ("Gemma 3 270M" for gemma3-270m), else its own."""
    return MODEL_NAMES.get(name, name)

FONT_SIZE = 16
TITLE_SIZE = 20
SMALL_SIZE = 14  # the smallest text on any figure: still readable on a projector

BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
# The height the title takes at the top of a figure: its pad and line, and each subtitle line. The page draws
# titles as HTML above the plot instead (assets/js/charts.js, in the look of assets/app.css, whose caption
# sizes are TITLE_SIZE and SMALL_SIZE: ui.protocol.css_variables) and takes this much off the top margin.
TITLE_PX = 38
SUBTITLE_LINE_PX = 22


# No plotly theme: applying one deep-copies it into every figure (about 40 ms and 6 KB of JSON each), and
# plotly.js gives a white plot; we add light grid lines.
# No automargin either: plotly.js then measures every tick label and draws the figure twice (about 120 of
# the 170 ms a candidate chart took to draw in headless Chromium). The margins are worked out here instead,
# from the tick labels' text (fit_margins).
NO_TEMPLATE = go.layout.Template()
GRID = "#E5E5E5"
AXIS_NAME = re.compile(r"[xy]axis\d*")  # layout keys of axes: xaxis, yaxis, xaxis2, ...

# Every builder assembles plain dicts and makes its go.Figure once at the end, unchecked (figure()): each
# make_subplots / add_* / update_* call would walk and validate the tree again (candidate_figure: about
# 100 ms that way), and even one validation is 8 of the 10 ms left. The tests validate every figure instead.


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A go.Figure of plain dicts, not validated on the way (tests/test_viz.py checks every builder's output)."""
    return go.Figure(data=data, layout=layout, _validate=False)  # plotly 7's switch for trusted input


# The charts a step re-draws are also built as plain {"data", "layout"} dicts (candidate_chart, ...), which the
# page takes as JSON straight away: making a go.Figure of them and its JSON cost 5 ms, json.dumps 0.3 ms.
# candidate_figure and the like are the same builders, wrapped in a go.Figure, for the tests and notebooks.


def chart(data: list[dict], layout: dict) -> dict:
    """A chart as plain data: what plotly.js draws (go.Figure(**chart) is the same figure)."""
    return {"data": data, "layout": layout}


def as_figure(build_chart):
    """The go.Figure version of a chart builder: same arguments, same figure."""

    @functools.wraps(build_chart)
    def build_figure(*args, **kwargs) -> go.Figure:
        return figure(**build_chart(*args, **kwargs))

    return build_figure


def chart_json(spec: dict) -> str:
    """JSON for plotly.js of a chart: numpy arrays as lists, NaN as null (plotly's encoder)."""
    return json.dumps(spec, cls=PlotlyJSONEncoder)


def base_layout(title: str, lang: str = "en", subtitle: str | None = None, height: int = 520, automargin: bool = False,
                **overrides) -> dict:
    """The shared look as a layout dict (no theme, fonts >= 14 px, title pinned to the top, margins, light grid).

    `overrides` are further layout keys; a dict merges into the shared one (margin={"t": 150} keeps l, r and b).
    Every axis among them (xaxis, yaxis2, ...) and always xaxis and yaxis get the light grid colour. The margins
    are fitted to the outer tick labels; `automargin=True` leaves that to plotly.js instead (for a grid of
    panels whose inner axis titles need room too), at the cost of a second draw.
    """
    # Pinned to the top edge: plotly centres a title in the top margin, which leaves a gap above it.
    title_spec = {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": TITLE_SIZE},
                  "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": 12}}
    if subtitle:
        title_spec["subtitle"] = {"text": subtitle, "font": {"size": SMALL_SIZE, "color": MUTED}}
    layout = {
        "template": NO_TEMPLATE,
        "title": title_spec,
        "font": {"family": FONT_FAMILY, "size": FONT_SIZE, "color": INK},
        "hoverlabel": {"font": {"family": FONT_FAMILY, "size": SMALL_SIZE + 1}, "bgcolor": "white"},
        "legend": {"font": {"size": SMALL_SIZE}},
        "margin": {"l": 70, "r": 30, "t": 100 if subtitle else 70, "b": 60},
        "height": height,
        "meta": {"lang": lang,
                 "title_px": TITLE_PX + (SUBTITLE_LINE_PX * (subtitle.count("<br>") + 1) if subtitle else 0)},
        "xaxis": {},
        "yaxis": {},
    }
    for key, value in overrides.items():
        merge = isinstance(value, dict) and isinstance(layout.get(key), dict)
        layout[key] = {**layout[key], **value} if merge else value
    for key in layout:
        if AXIS_NAME.fullmatch(key):
            # ticklabeloverflow "allow": plotly.js otherwise measures every tick label against the plot's edges
            layout[key] = {"gridcolor": GRID, "zerolinecolor": GRID, "automargin": automargin,
                           "ticklabeloverflow": "allow", **layout[key]}
    return layout if automargin else fit_margins(layout)


TAG = re.compile(r"<[^>]+>")
NUMBER_TICK_CHARS = 6  # a numeric tick label such as '12.5k' or '100%'


def wide_char(ch: str) -> bool:
    """Whether `ch` is East Asian wide or full-width (CJK): a whole em, where most others take about half."""
    return unicodedata.east_asian_width(ch) in "WF"


def text_ems(text: str, narrow_em: float = 0.62) -> float:
    """About how wide `text` is in ems, every character counted (markup too): a wide character (wide_char) a
    whole em, any other `narrow_em`. The default 0.62 is a generous average for Noto Sans, so the estimate errs
    wide: a margin a little too big, never a label cut off."""
    return sum(1.0 if wide_char(ch) else narrow_em for ch in text)


def text_px(text: str, size: float) -> float:
    """About how wide `text` is in pixels at font `size` (text_ems; plotly markup such as <b> not counted).
    assets/js/charts.js textPx is the same estimate, for the page's layout on a phone."""
    return size * text_ems(html.unescape(TAG.sub("", text)))


def _tick_px(axis: dict, size: float) -> float:
    """The width of the widest tick label of an axis: its ticktext, or a numeric label."""
    if axis.get("showticklabels") is False or axis.get("visible") is False:
        return 0.0
    size = axis.get("tickfont", {}).get("size", size)
    texts = axis.get("ticktext")
    if texts:
        return max(text_px(str(s), size) for s in texts)
    return text_px("0" * NUMBER_TICK_CHARS, size)


def fit_margins(layout: dict) -> dict:
    """Widen the left and bottom margins to hold the outer axes' tick labels and titles (no automargin).

    The outer axes: a y axis whose x axis starts at the left edge, an x axis whose y axis starts at the
    bottom. Rotated x labels take their width times the sine of the angle. Margins only grow.
    """
    size = layout["font"]["size"]
    axes = {key: layout[key] for key in layout if AXIS_NAME.fullmatch(key)}

    def starts_at_zero(key: str) -> bool:
        return (axes.get(key, {}).get("domain") or (0, 1))[0] <= 0.001

    left, bottom = 0.0, 0.0
    for key, axis in axes.items():
        if axis.get("visible") is False:
            continue
        other = axis_key(axis.get("anchor", "x" if key[0] == "y" else "y"))
        title = 30 if axis.get("title", {}).get("text") else 0
        if key[0] == "y" and starts_at_zero(other):
            left = max(left, _tick_px(axis, size) + title + 14)
        elif key[0] == "x" and starts_at_zero(other):
            angle = math.radians(abs(axis.get("tickangle", 0) or 0))
            height = _tick_px(axis, size) * math.sin(angle) + size * 1.4 * math.cos(angle)
            bottom = max(bottom, height + title + 10)
    margin = layout["margin"]
    layout["margin"] = {**margin, "l": max(margin.get("l", 0), round(left)), "b": max(margin.get("b", 0), round(bottom))}
    return layout


def narrow_layout(layout: dict, **keys) -> dict:
    """`layout` with how the chart looks on a phone: layout keys for assets/js/charts.js to use there instead (a dict
    merges into the wide one, anything else replaces it), kept in its meta. A chart without them shows only its
    first plot on a phone."""
    layout["meta"] = {**layout.get("meta", {}), "narrow": keys}
    return layout


def narrow_traces(layout: dict, **by_name: dict) -> dict:
    """`layout` with what changes in its traces on a phone, by trace name: keys replacing (a dict: merged into) the
    trace's own there (assets/js/charts.js), kept in its meta: a colour bar laid flat under the plot, smaller
    markers."""
    layout["meta"] = {**layout.get("meta", {}), "narrow_traces": by_name}
    return layout


def stacked(heights_px: list[float], gaps_px: list[float]) -> list[tuple[float, float]]:
    """Rows of the given heights in px, top to bottom, `gaps_px[i]` between row i and i + 1, as [0, 1] domains of
    their total height."""
    total = sum(heights_px) + sum(gaps_px)
    rows, top = [], 1.0
    for h, gap in zip(heights_px, [*gaps_px, 0]):
        rows.append((max(0.0, top - h / total), top))
        top -= (h + gap) / total
    return rows


def axis_ids(k: int) -> tuple[str, str]:
    """The trace references of the k-th pair of axes (from 1): ('x', 'y'), ('x2', 'y2'), ..."""
    suffix = "" if k == 1 else str(k)
    return f"x{suffix}", f"y{suffix}"


def axis_key(ref: str) -> str:
    """The layout key of the axis a trace refers to as `ref`: 'x' -> 'xaxis', 'y2' -> 'yaxis2'."""
    return f"{ref[0]}axis{ref[1:]}"


def domains(weights: list[float], gap: float) -> list[tuple[float, float]]:
    """Stretches of [0, 1] with relative sizes `weights` and `gap` between neighbours, from 0 upwards."""
    sizes = [(1.0 - gap * (len(weights) - 1)) * w / float(sum(weights)) for w in weights]
    starts = [sum(sizes[:i]) + i * gap for i in range(len(sizes))]
    return [(start, start + size) for start, size in zip(starts, sizes)]


def panel_title(text: str, x_domain: tuple[float, float], top: float) -> dict:
    """An annotation naming a panel: centred above the panel spanning `x_domain`, whose top is at `top` (paper)."""
    return {"text": text, "x": sum(x_domain) / 2.0, "xref": "paper", "xanchor": "center", "y": top, "yref": "paper",
            "yanchor": "bottom", "showarrow": False, "font": {"size": FONT_SIZE}}


def vertical_line(x: float, name: str, line: dict, axes: tuple[str, str] = ("x", "y")) -> dict:
    """A shape: a line at data value x across the whole height of the panel on `axes`."""
    xref, yref = axes
    return {"type": "line", "name": name, "x0": x, "x1": x, "xref": xref, "y0": 0, "y1": 1, "yref": f"{yref} domain",
            "line": line}


def line_label(x: float, text: str, font: dict, side: str, axes: tuple[str, str] = ("x", "y")) -> dict:
    """An annotation at the top of the vertical line at x, on its `side` ('left' or 'right')."""
    xref, yref = axes
    return {"text": text, "x": x, "xref": xref, "xanchor": "right" if side == "left" else "left", "y": 1,
            "yref": f"{yref} domain", "yanchor": "top", "showarrow": False, "font": font}


def wrap_text(text: str, width: int) -> str:
    """`text` broken into lines of about `width` columns with <br> (plotly does not wrap a title or annotation). A
    column is half an em (text_ems): a CJK character counts two; a line breaks at a space, or anywhere in CJK text."""
    lines, line, cols = [], "", 0
    for word in re.findall(r"\S+\s*|\s+", text):
        for piece in (list(word) if any(wide_char(c) for c in word) else [word]):
            w = 2 * text_ems(piece, narrow_em=0.5)
            if line and cols + w > width:
                lines.append(line.rstrip())
                line, cols = "", 0
            line, cols = line + piece, cols + w
    return "<br>".join(lines + [line.rstrip()]) if line.strip() else "<br>".join(lines)


def token_label(display: str) -> str:
    """A token's readable form (TokenInfo.display) made safe for plotly text, which reads some HTML tags."""
    return html.escape(display, quote=False)


def format_prob(p: float) -> str:
    """A probability in [0, 1] as a percentage a student can read: '42.1%', '0.52%', '<0.01%', '0%'."""
    pct = 100.0 * p
    if pct >= 10:
        return f"{pct:.1f}%"
    if pct >= 0.01:
        return f"{pct:.2f}%"
    return "<0.01%" if pct > 0 else "0%"


def prob_ticks(top: float, most: int = 6) -> list[float]:
    """Round tick values for a probability axis from 0 up to `top` (never past 1), at most `most + 1` of them."""
    step = next((s for s in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5) if top / s <= most), 1.0)
    return [k * step for k in range(int(min(top, 1.0) / step + 1e-9) + 1)]


def legend_key(name: str, color: str, symbol: str = "square") -> dict:
    """A legend-only trace for something drawn as a shape, a heatmap region or many colours in one trace."""
    return {"type": "scatter", "x": [None], "y": [None], "mode": "markers", "name": name, "hoverinfo": "skip",
            "marker": {"symbol": symbol, "size": 14, "color": color, "line": {"color": color, "width": 3}}}


def fate_legend(fates, lang: str) -> list[dict]:
    """Legend-only traces for the given fates, in the order of `fates`."""
    return [legend_key(fate_label(fate, lang), FATE_COLORS[fate]) for fate in fates]


def format_bits(h: float) -> str:
    """An entropy in bits with two decimals, never '-0.00' (float error around zero)."""
    return f"{max(h, 0.0) + 0.0:.2f}"


def format_temperature(temperature: float) -> str:
    """A temperature without trailing zeros: 0.7 -> '0.7', 1.0 -> '1'."""
    return f"{temperature:g}"


def format_bytes(n: float) -> str:
    """Bytes in binary units with three significant figures: 1073741824 -> '1.00 GiB', 46080 -> '45.0 KiB'."""
    if n < 1024:
        return f"{int(n)} B"
    power = _unit_power(n)
    value = n / 1024**power
    if round(value, 2) >= 1024 and power < len(BINARY_UNITS) - 1:  # 1023.999 KiB reads better as 1.00 MiB
        power, value = power + 1, value / 1024
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{value:.{digits}f} {BINARY_UNITS[power]}"


def bytes_unit(largest: float) -> tuple[str, int]:
    """The binary unit to label an axis whose largest value is `largest` bytes: (name, bytes per unit)."""
    power = _unit_power(largest)
    return BINARY_UNITS[power], 1024**power


def _unit_power(n: float) -> int:
    """The largest power of 1024 not above n (integer steps: math.log(2**30, 1024) is not exactly 3)."""
    power = 0
    while power < len(BINARY_UNITS) - 1 and n >= 1024 ** (power + 1):
        power += 1
    return power


def fate_label(fate: str, lang: str) -> str:
    """The translated name of a fate ('chosen', 'cut by top-p', ...)."""
    return t(f"fate_{fate}", lang)
