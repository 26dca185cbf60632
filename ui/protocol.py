"""The page protocol, written down once: the ids and attributes the Python side writes and assets/js reads.

Charts travel to the page as plotly JSON inside a hidden carrier element (figure_carrier): its class is the
carrier's kind, its data attributes the envelope (target plot, key, temperature, revision), its text the
payload. The JavaScript never retypes an id or an attribute: page_assets() hands it this table as window.TBT,
before the page's modules (assets/js, entered at page.js), and puts the one style sheet (assets/app.css) on the
page.
"""
from __future__ import annotations

import html
import itertools
import json
import re
from pathlib import Path

import plotly

from ui.strings import LANGS, t
from viz.style import FONT_FAMILY, INK, MUTED, SMALL_SIZE, TITLE_SIZE, chart_json

# The page's words the script writes itself (ui/strings.py), each {language: text}: a button's wait (busy.js), and
# Gradio's own words in the page's language (own_words.js: the error box's title, the footer)
SCRIPT_WORDS = ("busy_running", "busy_estimate", "gradio_error", "gradio_warning", "gradio_api", "gradio_api_mcp",
                "gradio_built", "gradio_settings")

ASSETS = Path(__file__).resolve().parent.parent / "assets"
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"  # the plotly.js of the pinned plotly
JS_DIR = ASSETS / "js"  # the page's modules (and the exported page's replay, offline.js, which the page never loads)
PAGE_JS = JS_DIR / "page.js"  # the page's entry module: it imports the others of assets/js (see its header)
SCRIPT_ROUTE = "/tbt/js/"  # GET <route><file>.js: a module of JS_DIR (ui.server.add_script_route)

PROTOCOL = {
    # elements the page's script finds by id
    "ids": {
        "marker": "tbt-marker",  # the status line (ui.render.status_html): see "marker"
        "chips": "tbt-chips",  # the token chips (viz.chips): see "chips"
        "playing": "tbt-playing",  # a running Play's marker: see "playing"
        "temperature": "tbt-temperature",  # the temperature slider
        "next": "tbt-next", "back": "tbt-back", "reset": "tbt-reset", "start": "tbt-start", "play": "tbt-play",
        "force": "tbt-force-btn",
        "presenter": "tbt-presenter",  # the presenter-mode switch (assets/js/presenter.js)
        "predict": "tbt-predict",  # the predict-first switch (assets/js/presenter.js, charts.js hideDraw)
        "keys": "tbt-keys",  # the keys' help, shown by ? (assets/js/presenter.js)
        "plotly_js": "tbt-plotly-js",  # plotly.js's <script> (page_assets): a chart that arrives first waits for it
        "tabs": "tbt-tabs",  # Gradio's row of the views' tabs (each tab button's data-tab-id is its view's tab)
        "nav": "tbt-nav",  # the parts of the story above it (ui/nav.py, assets/js/nav.js)
        "lang": "tbt-lang",  # the language switch (ui.strings.LANG_INPUT): the words the script writes follow it
    },
    # data attributes (dataset names) of the status line, and of a running Play's marker
    # ended: "1" once the text has ended; ahead: "0" when the server is busy with a class (ui.lanes.AheadPolicy):
    # the page then does not ask for the next step's chart (one event per step instead of two)
    "marker": {"step": "step", "revision": "rev", "ended": "ended", "ahead": "ahead"},
    "playing": {"token": "token", "step": "step", "of": "of"},  # token: the Play's name in play_route
    # a generated chip: its class, and the data attribute with the step that wrote it (a click goes back there)
    # box: the class of the chips' scroller; decoded: of the decoded text's (both follow the newest token)
    "chips": {"generated": "tbt-gen", "step": "step", "box": "tbt-chips", "decoded": "tbt-decoded"},
    # hidden buttons the page clicks to ask the server for something
    "triggers": {
        "goto": "tbt-goto-btn",  # go to the step in window[globals.goto_step]
        "bundle": "tbt-bundle-btn",  # the candidate chart at every temperature (temperature_charts)
        "ahead": "tbt-ahead-btn",  # the chart the next step will show (next_chart)
        "play_run": "tbt-play-run",  # start the streaming Play
        "open_head": "tbt-open-head-btn",  # open the head in window[globals.open_head] in the Attention view
    },
    # names the page's script puts on window, for the listeners' js= snippets (the whole window surface:
    # assets/js/page.js)
    "globals": {"goto_step": "tbtGotoStep", "play": "tbtPlay", "play_ended": "tbtPlayEnded", "open_head": "tbtOpenHead",
                # a pressed button said running, and back when its event has ended (ui/events.py, assets/js/busy.js)
                "busy": "tbtBusy", "done": "tbtDone"},
    # the hidden outputs the carriers arrive in, and the text panel with the status line: the only elements
    # the script observes
    "carriers": {"figure": "tbt-figdata", "ahead": "tbt-ahead", "bundle": "tbt-bundle", "play": "tbt-playbox",
                 "text": "tbt-text"},
    # a carrier's kind is its class
    "kinds": {"figure": "tbt-figdata", "ahead": "tbt-figahead", "bundle": "tbt-figbundle"},
    # a carrier's envelope: data attributes (dataset names); the payload is the element's text. A plot carries
    # the same names for the chart it shows.
    "envelope": {"target": "target", "key": "key", "temperature": "t", "revision": "rev"},
    # a view's chart: id prefixes of the plot, the HTML caption above it, and the component holding both
    "chart": {"plot": "tbt-fig-", "caption": "tbt-cap-", "box": "tbt-plot-"},
    # the charts Gradio draws itself (a gr.Plot's elem_id, by what it shows): on a phone the page draws each again
    # laid out as its own charts are (assets/js/charts.js refit). ui/views still spell these ids in their gr.Plot
    # calls: tests/test_page.py holds the two together
    "gradio_plots": {
        "lens_pins": "tbt-plot-lens-pins",  # (the Logit lens's pinned tokens, ui/views/lens.py)
        "branches": "tbt-plot-branch-logp", "beams": "tbt-plot-beams", "race": "tbt-plot-race",
        "consistency": "tbt-plot-sc", "constraints": "tbt-plot-constrain", "calculator": "tbt-plot-calc",
        "speculative": "tbt-plot-spec", "batching": "tbt-plot-batching", "throughput": "tbt-plot-throughput",
        "paged": "tbt-plot-paged", "lesson": "tbt-lesson-plot", "lesson_class": "tbt-lesson-class-plot",
        "lens_commit": "tbt-plot-lens-commit",
        "gqa": "tbt-plot-gqa",  # (the Attention tab's query heads to KV heads, ui/controls.py)
        "medusa": "tbt-plot-medusa", "medusa_run": "tbt-plot-medusa-run",  # (ui/views/medusa.py)
    },
    # classes and attributes of a chart's parts (the script makes the caption's lines and the plots drawn ahead)
    "parts": {
        "plot": "tbt-fig", "stack": "tbt-stack", "caption": "tbt-caption",
        "caption_title": "tbt-cap-title", "caption_subtitle": "tbt-cap-sub",
        "flipbook": "tbt-flipbook", "flippage": "tbt-flippage",  # the temperature slider's pages drawn ahead
        "off": "data-tbt-off",  # a plot out of sight, moved off the page (app.css)
        "drawn_ahead": "data-tbt-ahead",  # the plot under the one shown that holds the next step's chart
        "plot_temperature": "plotT",  # dataset: the temperature of the chart the plot itself holds
        "caption_html": "html",  # dataset: the caption's HTML as last set
    },
    # tabs whose chart carries a step number as each point's customdata: a click on a point goes back to that
    # step, as a click on its chip does (assets/js/clicks.js)
    "step_on_click": ["chain"],
    # tabs whose chart carries [layer, head, ...] as each cell's customdata: a click on a cell opens that head in the
    # Attention view (assets/js/clicks.js, ui/views/heads.py)
    "head_on_click": ["heads"],
    "stepping_tab": "candidates",  # the tab whose chart is drawn ahead and has the temperature flipbook
    "shown_event": "tbt-shown",  # fired on a plot each time it shows a new chart (detail: key, t, how)
    "ahead_after_ms": 200,  # a step rests this long on screen before the page asks for the next one's chart
    "temperature_decimals": 2,  # how a temperature names a chart: as the slider's 0.05 steps
    "play_route": "/tbt/play/",  # POST <route><token>/shown or /stop
    # presenter mode: the attribute on <html> that app.css styles, how much larger a chart's text is drawn, and the
    # least any of it is (px: a projector's last row, issue 47)
    "presenter": {"attribute": "data-tbt-presenter", "chart_scale": 1.3, "least_px": 20},
    # predict first: the attribute on <html> while a candidate chart is drawn without its draw (viz.candidates.hidden_draw)
    "predict": {"attribute": "data-tbt-predict"},
    # the navigation (ui/nav.py, assets/js/nav.js): a part's button names its part and lists its tabs; the open part is
    # an attribute on <html>; the phone's menu is a <select> of every tab. Elsewhere on the page, a button with `go`
    # opens that tab (its part too) and then presses the button whose id is its `press`; one with `toggle` "presenter"
    # flips presenter mode (the Start here view, ui/views/start.py)
    "nav": {"part": "data-tbt-part", "tabs": "data-tbt-tabs", "menu": "data-tbt-menu",
            "open_attribute": "data-tbt-open-part", "parts_class": "tbt-parts", "part_class": "tbt-part",
            "first_class": "tbt-part-first", "number_class": "tbt-part-n", "name_class": "tbt-part-name",
            "menu_class": "tbt-menu",
            "where_class": "tbt-where", "go": "data-tbt-go", "press": "data-tbt-press", "toggle": "data-tbt-toggle"},
    # a chart drawn by the page fits the window under it down to min_px tall; below narrow_px wide (a phone) a
    # figure of plots side by side shows the first only, as does a gr.Plot in a column narrower than beside_px
    # (times the presenter scale in presenter mode: the Lesson's chart beside its text at 1280)
    "fit": {"min_px": 330, "narrow_px": 700, "beside_px": 640},
    "words": {key: {lang: t(key, lang) for lang in LANGS} for key in SCRIPT_WORDS},
}
IDS, TRIGGERS, CARRIERS, KINDS = (PROTOCOL[k] for k in ("ids", "triggers", "carriers", "kinds"))
GRADIO_PLOTS = PROTOCOL["gradio_plots"]  # the views' gr.Plot elem_ids, by name (the page's script reads the same)


def chart_id(tab: str) -> str:
    """The id of the element a tab's chart is drawn into."""
    return PROTOCOL["chart"]["plot"] + tab


def caption_id(tab: str) -> str:
    """The id of the HTML caption above a tab's chart (the chart's title and subtitle)."""
    return PROTOCOL["chart"]["caption"] + tab


def box_id(tab: str) -> str:
    """The id of the component that holds a tab's caption and chart."""
    return PROTOCOL["chart"]["box"] + tab


def temperature_key(temperature: float) -> str:
    """How a temperature names a chart on the page: two decimals, as the slider's 0.05 steps."""
    return f"{temperature:.{PROTOCOL['temperature_decimals']}f}"


_carrier_revision = itertools.count(1)


def figure_carrier(fig: dict, target: str, key: str | None = None, temperature: float | None = None,
                   kind: str = "figure") -> str:
    """A hidden element holding the chart `fig` as plotly JSON, for the page to draw into the element `target`.

    The JSON is the element's text (only & < > escaped: JSON is full of quotes, which an attribute would
    have to spell &quot;). Each carrier has its own revision, so the page draws every update exactly once.
    A candidate chart also names what it shows, `key` (the text and every setting but the temperature) and
    the temperature, so the page can tell it from a chart of the same step it already drew (figure_bundle).
    `kind` "ahead": the chart the next step will show, for the page to draw ahead.
    """
    env = PROTOCOL["envelope"]
    named = (f' data-{env["key"]}="{html.escape(key, quote=True)}" data-{env["temperature"]}="{temperature_key(temperature)}"'
             if key is not None and temperature is not None else "")
    return (f'<div class="{KINDS[kind]}" hidden data-{env["target"]}="{html.escape(target, quote=True)}"{named} '
            f'data-{env["revision"]}="{next(_carrier_revision)}">{html.escape(chart_json(fig), quote=False)}</div>')


def figure_bundle(figs: dict[float, dict], key: str) -> str:
    """A hidden element holding one candidate chart per temperature, for one `key` (text and other settings).

    The page draws from it while the temperature slider moves, at once, instead of waiting for the server.
    """
    entries = ",".join(f'"{temperature_key(t)}":{chart_json(fig)}' for t, fig in figs.items())
    return (f'<div class="{KINDS["bundle"]}" hidden data-{PROTOCOL["envelope"]["key"]}="{html.escape(key, quote=True)}">'
            f'{html.escape("{" + entries + "}", quote=False)}</div>')


CARRIER = re.compile(r'<div class="(?:%s)"[^>]*>(.*)</div>' % "|".join(KINDS.values()), re.S)


def carried_figure(carrier: str) -> dict:
    """The plotly figure (data, layout) in a figure_carrier element, or {temperature: figure} in a bundle."""
    return json.loads(html.unescape(CARRIER.fullmatch(carrier).group(1)))


def page_script() -> str:
    """The protocol for the page's script: <script>window.TBT = {...}</script>, before assets/js."""
    return f"<script>window.TBT = {json.dumps(PROTOCOL)};</script>"


def css_variables() -> str:
    """The style sheet's variables that the charts share (viz.style), so a caption looks like a plotly title."""
    return (f":root{{--tbt-font:{FONT_FAMILY};--tbt-title-px:{TITLE_SIZE}px;--tbt-small-px:{SMALL_SIZE}px;"
            f"--tbt-ink:{INK};--tbt-muted:{MUTED}}}")


def page_assets() -> dict:
    """The keyword arguments of gr.Blocks.launch that put the page's script and style on the page.

    head: plotly.js, the protocol (page_script), then the page's entry module, assets/js/page.js, as
    <script type="module"> from SCRIPT_ROUTE: the browser loads the modules it imports from beside it, in their
    one direction; css: the shared variables (css_variables), which Gradio puts before css_paths, the one style
    sheet; allowed_paths: plotly.js, served from the installed plotly. Nothing comes from a CDN.
    """
    head = "\n".join([f'<script id="{IDS["plotly_js"]}" src="/gradio_api/file={PLOTLY_JS}"></script>', page_script(),
                      f'<script type="module" src="{SCRIPT_ROUTE}{PAGE_JS.name}"></script>'])
    return {"head": head, "css": css_variables(), "css_paths": [ASSETS / "app.css"], "allowed_paths": [str(PLOTLY_JS)]}
