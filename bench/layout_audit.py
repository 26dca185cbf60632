"""The page's layout audit, read from the DOM (bounding boxes and computed styles, never pixels): every tab in both
languages at 390x844, 1280x800 and 1920x1080; for each, the chart texts over one another, the titles or labels cut
by their chart or by an SVG clip-path, the text below 4.5:1 against what it is drawn on, HTML wider than the window,
a plot of the open tab that shows no chart (0 px, or no text of it in its box) or cuts it, and what scrolls under
the pinned step buttons and text panel showing through them (issue 22).

    .venv/bin/python -m bench.layout_audit [--tabs temperature,paged] [--sizes 1280x800] [--langs en] [--shots DIR]

The app runs as its own server process. Per language, a projector's browser tab (1280x800) opens each tab of the
page and runs it once, then the window is resized under it to 1920 and 1280; a phone's browser tab is opened at
390x844 and reads each tab there (as a phone opens the page). It prints the findings per tab, language and size,
and their count, and fails nothing: tests/test_browser_layout.py runs the same audit and asserts it. Screenshots
go to --shots (default /tmp/tbt-layout-audit): look at them.
"""
from __future__ import annotations

import argparse
import shutil
from collections import Counter
from pathlib import Path

from bench.appserver import AppServer
from ui.protocol import PROTOCOL

FIT = PROTOCOL["fit"]  # (narrow_px: below it, a phone's layout)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SIZES = [(390, 844), (1280, 800), (1920, 1080)]
PHONE = (390, 844)
# Each tab, and what a student or teacher clicks to see its chart (the tabs that draw every step need nothing).
TABS = [("start", None), ("candidates", None), ("temperature", None), ("attention", None), ("lens", "#tbt-lens-run"),
        ("kv", None), ("ablation", "#tbt-abl-run"), ("patching", "#tbt-patch-run"), ("heads", "#tbt-heads-run"),
        ("two_models", ("#tbt-two-score", "#tbt-two-continue")), ("chain", None), ("training", ("#tbt-compare", "#tbt-score")), ("tokenizers", None), ("branches", None),
        ("beams", "#tbt-beams-search"), ("race", "#tbt-race-run"), ("consistency", "#tbt-sc-run"),
        ("constraints", "#tbt-constrain-run"), ("calculator", None), ("speculative", "#tbt-spec-run"),
        ("batching", "#tbt-batch-refresh"), ("paged", "#tbt-paged-refresh"), ("interview", None), ("lesson", None),
        ("room", None), ("session", None)]

# The check, run in the page: every visible text of every visible plotly chart, and the chart captions.
# -> a list of problems, each a short sentence naming the texts.
CHECK = r"""() => {
  const W = innerWidth, problems = [];
  const rgb = (s) => { const m = (s || '').match(/[\d.]+/g); return m ? m.slice(0, 4).map(Number) : null; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                       return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const contrast = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const over = (fg, alpha, bg) => fg.slice(0, 3).map((v, i) => v * alpha + bg[i] * (1 - alpha));
  const fillOf = (node) => { const s = getComputedStyle(node); const c = rgb(s.fill);
    if (!c || s.fill === 'none') return null; const a = (c.length > 3 ? c[3] : 1) * Number(s.fillOpacity || 1);
    return {c, a}; };
  const seen = (node) => node.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) &&
    !node.closest('[data-tbt-off], [data-tbt-ahead], .tbt-hidden, .hoverlayer, .modebar');
  const name = (node) => JSON.stringify((node.textContent || '').trim().slice(0, 40));
  const px = (r) => `${Math.round(r.left)},${Math.round(r.top)} ${Math.round(r.width)}x${Math.round(r.height)}`;
  // The box an SVG clip-path cuts a node to, in the window's pixels: each clip-path="url(#id)" on the node or an
  // ancestor in its chart, its <clipPath>'s rect taken through the screen transform of the element that names it.
  // -> {r, by} of the tightest, or null.
  const clipBox = (node, plot) => {
    let best = null;
    for (let e = node; e && e !== plot && e instanceof SVGElement; e = e.parentElement) {
      // (plotly writes url('#id'), or url('<the page's address>#id') under a <base>; an attribute, or a style)
      const ref = (e.getAttribute('clip-path') || e.style.clipPath || '').match(/url\(["']?[^#"')]*#([^"')]+)["']?\)/);
      const rect = ref && plot.querySelector(`clipPath[id="${CSS.escape(ref[1])}"] rect`);
      const m = rect && e.getScreenCTM && e.getScreenCTM();
      if (!m) continue;
      const x = rect.x.baseVal.value, y = rect.y.baseVal.value, w = rect.width.baseVal.value, h = rect.height.baseVal.value;
      const pts = [[x, y], [x + w, y], [x, y + h], [x + w, y + h]].map(([a, b]) => new DOMPoint(a, b).matrixTransform(m));
      const xs = pts.map((p) => p.x), ys = pts.map((p) => p.y);
      const r = {left: Math.min(...xs), right: Math.max(...xs), top: Math.min(...ys), bottom: Math.max(...ys)};
      r.width = r.right - r.left; r.height = r.bottom - r.top;
      if (!best || r.width * r.height < best.r.width * best.r.height) best = {r, by: ref[1]};
    }
    return best;
  };
  const inside = (r, b) => r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
  const apart = (r, b) => r.right <= b.left || r.left >= b.right || r.bottom <= b.top || r.top >= b.bottom;
  // The open tab's panel: its plots must each show their chart (a plot of no size, or one showing no text, is blank)
  const panel = [...document.querySelectorAll('[role=tabpanel]')].find((p) => p.checkVisibility());
  for (const plot of panel ? panel.querySelectorAll('.js-plotly-plot') : []) {
    if (!seen(plot) || !plot.parentElement.checkVisibility() || !plot.querySelector('.main-svg')) continue;
    const r = plot.getBoundingClientRect(), where = plot.id || plot.closest('[id]')?.id || 'plot';
    const shown = [...plot.querySelectorAll('svg text')].filter((n) => (n.textContent || '').trim() && seen(n))
      .some((n) => { const b = n.getBoundingClientRect(); return b.width > 0 && !apart(b, r); });
    // (a plot that clips what overflows it: app.css gives the page's own `contain: content`)
    const style = getComputedStyle(plot), clips = /paint|content|strict/.test(style.contain) || style.overflow !== 'visible';
    const drawn = plot.querySelector('.main-svg').getBoundingClientRect();
    if (r.width < 1 || r.height < 1) problems.push(`${where}: blank, the plot is ${Math.round(r.width)}x${Math.round(r.height)} px`);
    else if (!shown) problems.push(`${where}: blank, no text of its chart shows in its ${Math.round(r.width)}x${Math.round(r.height)} px`);
    else if (clips && (drawn.bottom > r.bottom + 2 || drawn.right > r.right + 2)) {
      problems.push(`${where}: its ${Math.round(drawn.width)}x${Math.round(drawn.height)} px chart is cut to the plot's ${Math.round(r.width)}x${Math.round(r.height)} px`);
    }
  }
  const plots = [...document.querySelectorAll('.js-plotly-plot')].filter((p) => {
    const r = p.getBoundingClientRect(); return r.width > 0 && r.height > 0 && seen(p); });
  for (const plot of plots) {
    const where = plot.id || plot.closest('[id]')?.id || 'plot';
    const svg = plot.querySelector('.main-svg'); if (!svg) continue;
    const box = svg.getBoundingClientRect();
    const paperRect = svg.querySelector('rect.bg');
    const paper = (paperRect && fillOf(paperRect)) || {c: [255, 255, 255], a: 1};
    const plotbgs = [...plot.querySelectorAll('.bglayer rect.bg, .plotbg rect')].map((r) => ({r: r.getBoundingClientRect(), f: fillOf(r)}));
    // (a text its clip-path hides whole is not drawn: plotly hides what lies past an axis' range that way)
    const texts = [...plot.querySelectorAll('svg text')].filter((n) => (n.textContent || '').trim() && seen(n))
      .map((n) => ({n, r: n.getBoundingClientRect(), clip: clipBox(n, plot)})).filter((x) => x.r.width > 0 && x.r.height > 0)
      .filter((x) => !x.clip || !apart(x.r, x.clip.r));
    // (a text is cut, or overlaps another, where its ink is: each line's box less what its font puts above and below
    // the em, a fallback font's ␣ up to 1.7 em tall: a projector's rows 1.25 lines apart, a CJK cell's text, as read)
    const ink = ({n, r}) => {
      const fs = parseFloat(getComputedStyle(n).fontSize) || 0, lines = Math.max(1, n.querySelectorAll('tspan.line').length);
      const pad = fs ? Math.max(0, (r.height / lines - fs) / 2) : 0;
      return {left: r.left, right: r.right, top: r.top + pad, bottom: r.bottom - pad, width: r.width, height: r.height - 2 * pad};
    };
    for (const x of texts) x.ink = ink(x);
    for (const {n, clip, ink: r} of texts) {
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) {
        problems.push(`${where}: ${name(n)} is cut by its chart (${Math.round(r.left - box.left)},${Math.round(r.top - box.top)} ${Math.round(r.width)}x${Math.round(r.height)} in ${Math.round(box.width)}x${Math.round(box.height)})`);
      } else if (clip && !inside(r, clip.r)) {
        problems.push(`${where}: ${name(n)} is cut by its clip-path ${clip.by} (${px(r)} in ${px(clip.r)})`);
      }
      // what it is drawn on: its own bar (a bar's label), its annotation's box, the plot area, or the paper
      let bg = paper.c;
      const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
      for (const p of plotbgs) if (p.f && cx >= p.r.left && cx <= p.r.right && cy >= p.r.top && cy <= p.r.bottom) bg = over(p.f.c, p.f.a, bg);
      const ann = n.closest('.annotation');
      const annBg = ann && ann.querySelector('rect.bg');
      const annFill = annBg && fillOf(annBg);
      if (annFill) bg = over(annFill.c, annFill.a, bg);
      if (n.classList.contains('bartext')) {
        const bar = n.closest('.point') && n.closest('.point').querySelector('path');
        const bf = bar && fillOf(bar);
        if (bf) { const br = bar.getBoundingClientRect();
          if (cx >= br.left && cx <= br.right && cy >= br.top && cy <= br.bottom) bg = over(bf.c, bf.a, bg); }
      }
      if (n.closest('.textpoint')) {  // a scatter point's label: on its marker, if it is drawn on one
        const trace = n.closest('.trace');
        for (const m of trace ? trace.querySelectorAll('.points path') : []) {
          const mr = m.getBoundingClientRect(), mf = fillOf(m);
          if (mf && cx >= mr.left && cx <= mr.right && cy >= mr.top && cy <= mr.bottom) bg = over(mf.c, mf.a, bg);
        }
      }
      const f = n.closest('.heatmaplayer') ? null : fillOf(n);  // (a heatmap's cell is an image: plotly picks its ink)
      if (f) { const ratio = contrast(over(f.c, f.a, bg), bg);
        if (ratio < 4.5) problems.push(`${where}: ${name(n)} has contrast ${ratio.toFixed(2)}:1`); }
    }
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i].ink, b = texts[j].ink;
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 2 && h > 2) problems.push(`${where}: ${name(texts[i].n)} overlaps ${name(texts[j].n)} (${Math.round(w)}x${Math.round(h)} px)`);
    }
  }
  // HTML: a caption, a table or a row of the open tab wider than the window is cut on the right
  for (const node of [...document.querySelectorAll('.tbt-caption, table, #tbt-chips')].filter((n) => n.checkVisibility())) {
    const r = node.getBoundingClientRect();
    if (r.width > 0 && r.right > W + 1) problems.push(`${node.id || node.className || node.tagName}: ends at ${Math.round(r.right)} px, past the window's ${W}`);
    const scroller = node.closest('[id]');
    if (node.tagName === 'TABLE' && node.parentElement.scrollWidth > node.parentElement.clientWidth + 1 &&
        getComputedStyle(node.parentElement).overflowX !== 'auto') problems.push(`table in ${scroller && scroller.id}: cut on the right`);
  }
  if (document.documentElement.scrollWidth > W + 1) problems.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${W} px window`);
  return problems;
}"""


# A phone's one screen (issue 22, item 4): what app.css pins at its top (the step buttons, the text panel with the
# chips) and the open tab's first chart (its caption and plot), in px; whether Next token, the newest chip and the
# chart fit the window together once the chart is scrolled up under what is pinned.
SCREEN = r"""() => {
  const h = (e) => (e ? Math.round(e.getBoundingClientRect().height) : 0);
  const steps = document.querySelector('.tbt-steps'), text = document.getElementById('tbt-text');
  const panel = [...document.querySelectorAll('[role=tabpanel]')].find((p) => p.checkVisibility());
  const plot = panel && [...panel.querySelectorAll('.js-plotly-plot')].find((p) => p.checkVisibility() &&
    !p.closest('[data-tbt-off], [data-tbt-ahead]') && p.getBoundingClientRect().height > 0);
  const stack = plot && plot.closest('.tbt-stack'), caption = stack && stack.previousElementSibling;
  const top = caption && caption.matches('.tbt-caption') ? caption : plot;
  const chart = plot ? Math.round(plot.getBoundingClientRect().bottom - top.getBoundingClientRect().top) : 0;
  const pinned = (getComputedStyle(steps).position === 'sticky' ? h(steps) : 0) + h(text);
  return {pinned, steps: h(steps), text: h(text), chips: h(document.querySelector('#tbt-chips')), chart,
          room: innerHeight - pinned, fits: !!plot && pinned + chart <= innerHeight};
}"""


# What app.css pins at the top (the step buttons on a phone, the text panel with the chips at every size) must be on
# top of what scrolls under it: at points 12 px apart over each pinned box, the topmost element is the pinned one's
# (an open list or the keys' help may lie over it: they are meant to).
PINNED = r"""() => {
  const problems = [], named = new Set();
  for (const pin of document.querySelectorAll('.tbt-steps, #tbt-text')) {
    if (!/sticky|fixed/.test(getComputedStyle(pin).position) || !pin.checkVisibility()) continue;
    const r = pin.getBoundingClientRect();
    for (let y = Math.max(r.top, 0) + 3; y < Math.min(r.bottom, innerHeight) - 2; y += 12) {
      for (let x = r.left + 3; x < r.right - 2; x += 12) {
        const hit = document.elementFromPoint(x, y);
        if (!hit || pin.contains(hit) || hit.contains(pin)) continue;
        if (hit.closest('[role=listbox], ul.options, #tbt-keys, .toast-wrap')) continue;
        const name = JSON.stringify((hit.textContent || '').trim().slice(0, 30) || hit.tagName);
        if (!named.has(name)) { named.add(name); problems.push(`${name} shows through the pinned ${pin.id || 'step buttons'}`); }
      }
    }
  }
  return problems;
}"""


# Every text on the page a reader sees, with its computed font size (Gradio's rules are more specific than app.css's:
# the style sheet says little): each element with a text of its own, or a field with a value, that is visible, not
# moved off the page, not in a hover label or toolbar. -> [{kind, px, text, where}], kind the first of KINDS it is in.
FONTS = r"""() => {
  const KINDS = [['status line', '.tbt-status'], ['explanations', '.tbt-explain'], ['chip legend', '.tbt-chips-legend'],
    ['keys line', '#tbt-keys'], ['lesson buttons', '[id^=tbt-lesson] button'], ['lesson text', '[id^=tbt-lesson]'],
    ['chart text', 'svg'], ['chart caption', '.tbt-caption'], ['text panel', '#tbt-text'], ['tabs', '[role=tablist]'],
    ['buttons', 'button'], ['fields', 'input, textarea, select, label']];
  const seen = (n) => n.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) &&
    !n.closest('[data-tbt-off], [data-tbt-ahead], .tbt-hidden, .hoverlayer, .modebar');
  const out = [];
  for (const n of document.body.querySelectorAll('*')) {
    if (['SCRIPT', 'STYLE'].includes(n.tagName)) continue;
    const own = [...n.childNodes].filter((c) => c.nodeType === 3).map((c) => c.textContent).join('').trim();
    const field = ['INPUT', 'TEXTAREA'].includes(n.tagName) &&
      !['checkbox', 'radio', 'range', 'file', 'hidden'].includes(n.type) ? (n.value || '').trim() : '';
    if (!(own || field) || !seen(n)) continue;
    const r = n.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    out.push({kind: (KINDS.find(([, s]) => n.closest(s)) || ['other'])[0], px: parseFloat(getComputedStyle(n).fontSize),
              text: (own || field).slice(0, 40), where: n.id || n.closest('[id]')?.id || n.tagName});
  }
  return out;
}"""


# Whether the page is done with what was asked of it: no request under way, the fonts in, and the document unchanged
# for `ms` and `frames` frames since the wait began. What follows a resize, an opened tab or an answer (plotly's
# re-layout, a chart drawn again for a phone, a gr.Plot refitted: charts.js) changes the document, each change a frame
# or a timer after the last; a change restarts the count. Polled once a frame (wait_for_function's "raf").
QUIET = r"""([token, ms, frames]) => {
  const q = window.__tbtQuiet || (window.__tbtQuiet = {token: null});
  if (!q.observer) {
    q.observer = new MutationObserver(() => { q.last = performance.now(); q.frames = 0; });
    q.observer.observe(document.documentElement, {subtree: true, childList: true, attributes: true, characterData: true});
  }
  if (q.token !== token) { q.token = token; q.last = performance.now(); q.frames = 0; }  // a new wait
  q.frames += 1;
  // (a pressed button's run under way, assets/js/busy.js: its seconds tick once a second, quiet in between)
  if (document.querySelector('.pending, .generating, .eta-bar, [aria-busy="true"]') || document.fonts.status !== 'loaded') {
    q.last = performance.now(); q.frames = 0; return false;
  }
  return performance.now() - q.last >= ms && q.frames >= frames;
}"""
_waits = iter(range(1, 1 << 62))  # each wait's own token


def settle(page, quiet_ms: int = 300, frames: int = 3):
    """Wait until no request of the page is under way and plotly has laid out what it was given: the page quiet for
    `quiet_ms` (a fixed 800 ms wait here was two fifths of the audit's time)."""
    page.wait_for_function(QUIET, arg=[next(_waits), quiet_ms, frames], polling="raf", timeout=180_000)


def open_view(page, name: str):
    """The tab `name`, its part of the story opened first when its tab is not on view (tests/browser.py does the same)."""
    tab = page.get_by_role("tab", name=name, exact=True, include_hidden=True)
    tab.wait_for(state="attached", timeout=30_000)
    if not tab.is_visible():
        tab_id = tab.get_attribute("data-tab-id")
        part = page.locator(f"#tbt-nav [data-tbt-tabs~='{tab_id}']")
        if part.is_visible():
            part.click()
        else:
            page.locator("#tbt-nav select").select_option(tab_id)
    if tab.get_attribute("aria-selected") != "true":
        tab.click()
    page.get_by_role("tab", name=name, exact=True, selected=True, include_hidden=True).wait_for(state="attached",
                                                                                               timeout=30_000)


def audit(page, lang: str, tabs, sizes, shots: Path | None = None, steps: int = 3, home=(1280, 800),
          screens: dict | None = None, every_shot: bool = True, each=None) -> dict:
    """{(tab, lang, width): [finding, ...]} for a tab already on the page (English or Chinese). Each tab is opened
    at the window size `home`, then read at each of `sizes` (a phone's page: home and sizes 390x844, as a phone
    opens it; a window turned narrow under a drawn chart is another case, checked at the wide home). `screens`,
    if given, gets {(tab, lang, width): SCREEN's measures} for each narrow size. Screenshots go to `shots`: every
    reading's, or (every_shot False) only those of a reading with findings. `each(tab, width)`, if given, is called
    at each reading, after the checks: a test's own reading of the same page."""
    from ui.strings import t

    def resized(width, height):  # (a window set to the size it has changes nothing: no wait)
        if page.viewport_size != {"width": width, "height": height}:
            page.set_viewport_size({"width": width, "height": height})
            settle(page)

    def shot(name, findings):
        if shots and (every_shot or findings):
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots / f"{name}.png"))

    page.locator("#tbt-marker").wait_for(timeout=120_000)
    for step in range(1, steps + 1):
        page.locator("#tbt-next").click()
        page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.step === '{step}'",
                               timeout=120_000)
    found = {}
    for tab, action in tabs:
        resized(*home)  # (the charts re-laid out for the width before the tab row is clicked)
        open_view(page, t(f"tab_{tab}", lang))
        for selector in (action,) if isinstance(action, str) else action or ():
            page.locator(selector).click()
            settle(page)
        if not action:
            settle(page)
        # the wide sizes first: a window turned narrow re-draws the charts for a phone, turned wide it only resizes them
        for width, height in sorted(sizes, reverse=True):
            resized(width, height)
            key = (tab, lang, width)
            found[key] = page.evaluate(CHECK)
            shot(f"{tab}_{lang}_{width}", found[key])
            if screens is not None and width <= 700:
                screens[key] = page.evaluate(SCREEN)
            if each:
                each(tab, width)
            # and the open tab's first chart scrolled to, what lay above it now under what is pinned (the checks
            # above are the same scrolled or not)
            chart = page.locator("[role=tabpanel]:visible .js-plotly-plot:visible").first
            if chart.count():
                chart.scroll_into_view_if_needed()
                settle(page, quiet_ms=100, frames=2)
                pinned = page.evaluate(PINNED)
                found[key] += pinned
                shot(f"{tab}_{lang}_{width}_chart", pinned)
            page.evaluate("() => scrollTo(0, 0)")
    return found


def presenter_on(page):
    """Check the presenter-mode switch (assets/js/presenter.js) and wait until the page is in presenter mode (a
    projector's mode: on a phone's narrow screen the page keeps its phone layout, the switch on)."""
    page.locator("#tbt-presenter input[type=checkbox]:enabled").check(timeout=120_000)
    page.wait_for_function(f"() => innerWidth < {FIT['narrow_px']} || "
                           "document.documentElement.hasAttribute('data-tbt-presenter')", timeout=30_000)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tabs", default="", help="comma-separated tab keys (default: every tab)")
    ap.add_argument("--sizes", default="", help="comma-separated WxH (default: 390x844,1280x800,1920x1080)")
    ap.add_argument("--langs", default="en,zh")
    ap.add_argument("--shots", default="/tmp/tbt-layout-audit")
    ap.add_argument("--presenter", action="store_true", help="switch presenter mode on before auditing")
    ap.add_argument("--port", type=int, default=None, help="the app's port (default: the first free 78xx one)")
    args = ap.parse_args(argv)
    tabs = [(k, a) for k, a in TABS if not args.tabs or k in args.tabs.split(",")]
    sizes = [tuple(map(int, s.split("x"))) for s in args.sizes.split(",")] if args.sizes else SIZES
    from playwright.sync_api import sync_playwright

    found, screens = {}, {}
    with AppServer(port=args.port) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for lang in args.langs.split(","):
            # a projector's page read at its sizes; a phone's opened at 390, as a phone opens it
            for home, read in [((1280, 800), [s for s in sizes if s[0] > 700]), (PHONE, [s for s in sizes if s[0] <= 700])]:
                if not read:
                    continue
                page = browser.new_page(viewport={"width": home[0], "height": home[1]},
                                        locale={"en": "en-US", "zh": "zh-CN"}[lang])
                page.on("pageerror", lambda err: print(f"page error: {err}"))  # a chart that failed is not clean
                page.goto(server.url)
                if args.presenter:
                    presenter_on(page)
                found.update(audit(page, lang, tabs, read, Path(args.shots) if args.shots else None, home=home,
                                   screens=screens))
                page.close()
        browser.close()
    for (tab, lang, width), problems in found.items():
        print(f"{tab} {lang} {width}: {len(problems)}")
        for problem in problems:
            print(f"    {problem}")
    kinds = Counter("overlap" if " overlaps " in x else "blank" if ": blank" in x else "clip-path" if "clip-path" in x
                    else "cut" if " cut " in x else "contrast" if "contrast" in x
                    else "wide" for problems in found.values() for x in problems)
    print(f"{sum(kinds.values())} findings: {dict(kinds)}")
    for (tab, lang, width), m in screens.items():  # a phone's one screen: pinned + chart <= the window's height
        print(f"screen {tab} {lang} {width}: pinned {m['pinned']} px (steps {m['steps']}, text {m['text']}, chips "
              f"{m['chips']}), chart {m['chart']} px, room {m['room']} px: {'fits' if m['fits'] else 'does not fit'}")


if __name__ == "__main__":
    main()
