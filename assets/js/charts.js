// Token by Token, charts: the bottom of the page's modules, importing none. The page protocol (window.TBT, written
// by ui/protocol.py: every id and attribute name), the page's small helpers, a chart drawn into its plot with its
// title put in the HTML caption above and 'tbt-shown' announced, and the watch on the carriers, the only elements
// this page observes. The other modules import from here; page.js says what happens when a carrier changes.
export const T = window.TBT;
const env = T.envelope, parts = T.parts;
export const attr = (name) => "data-" + name.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());  // dataset name -> attribute
export const el = (id) => document.getElementById(id);
export const click = (id) => { const b = el(id); if (b) b.click(); };
export const steppingPlot = () => el(T.chart.plot + T.stepping_tab);
const marker = () => el(T.ids.marker);
export const markerRev = () => { const m = marker(); return m ? m.dataset[T.marker.revision] : null; };
export const ended = () => { const m = marker(); return !!m && m.dataset[T.marker.ended] === "1"; };
// Go to a step: the goto button's listener reads the step from window[T.globals.goto_step] (its js= snippet,
// ui/controls.py), the one value this page hands the server through window.
export const gotoStep = (step) => { window[T.globals.goto_step] = step; click(T.triggers.goto); };
// The buttons that ask for another step or other text: a chart drawn ahead would be for nothing, and they stop Play
export const CHANGES = [T.ids.next, T.ids.back, T.ids.reset, T.ids.start, T.ids.force, T.triggers.goto, T.ids.play]
  .map((id) => "#" + CSS.escape(id)).join(", ");

// Charts: each figure arrives as plotly JSON in a hidden carrier (ui.protocol.figure_carrier) and is drawn
// with Plotly.react into its plot, which stays on the page: a step re-draws the chart in place, once.
export const CONFIG = {responsive: true, displaylogo: false};
// The title goes into the HTML caption above the plot, and the room it took off the top margin:
// plotly.js measures every text it draws (the title and subtitle were 10 of a candidate chart's 57 ms).
const captionOf = (target) => el(target.id.replace(T.chart.plot, T.chart.caption));
export const prepare = (fig, captioned) => {  // -> {data, layout, html}: html is the caption's, null to leave it
  const layout = fig.layout;
  let html = null;
  if (captioned && layout.title) {
    const {text, subtitle} = layout.title;  // plotly's text markup (<b>, <br>, <span>) is HTML; tokens are escaped
    html = `<div class="${parts.caption_title}">${text}</div>` +
           (subtitle ? `<div class="${parts.caption_subtitle}">${subtitle.text}</div>` : "");
    delete layout.title;
    const room = (layout.meta && layout.meta.title_px) || 0;
    layout.margin = {...layout.margin, t: Math.max(20, ((layout.margin && layout.margin.t) || 0) - room)};
  }
  layout.autosize = true;
  if (presenting()) projectorSized(fig.data, layout);
  fitScreen(layout);  // (the stepping tab's chart only: see fitScreen)
  if (innerWidth < T.fit.narrow_px) onePlot(fig.data, layout);
  return {data: fig.data, layout, html};
};
// What app.css pins to the top of the window (sticky) while the chart scrolls up under it: the text panel, and on
// a phone the step buttons above it. (Their heights, in px.)
export const pinnedHeight = () => {
  const text = el(T.carriers.text), steps = document.querySelector(".tbt-steps");
  return (text ? text.getBoundingClientRect().height : 0) +
         (innerWidth < T.fit.narrow_px && steps ? steps.getBoundingClientRect().height : 0);
};
// The step and its chart on one screen: a chart taller than the window's room under what is pinned (and its caption)
// is drawn that tall, never below T.fit.min_px. What plotly places below the plot area
// in fractions of it (a legend, a note) keeps its distance in pixels.
function fitScreen(layout) {
  // only the stepping tab's (Candidates): shrinking the others' charts crowded their labels (tests/test_browser_layout)
  const plot = steppingPlot(), stack = plot && plot.closest("." + parts.stack);
  if (!stack || stack.offsetParent === null || typeof layout.height !== "number") return;
  // on a wide screen the text panel stays at the top (app.css, sticky) and the page scrolls the chart up under
  // it (presenter.js keepInView); on a phone the chart fits under the text, the page unscrolled
  const caption = stack.previousElementSibling;
  const room = Math.floor(innerHeight - pinnedHeight() - (caption ? caption.getBoundingClientRect().height : 0) - 24);
  const height = Math.max(T.fit.min_px, Math.min(layout.height, room));
  if (height >= layout.height) return;
  const m = layout.margin || {}, inner = (h) => h - (m.t || 0) - (m.b || 0);
  const keepPx = (y) => (y < 0 ? y * inner(layout.height) / inner(height) : y > 1 ? 1 + (y - 1) * inner(layout.height) / inner(height) : y);
  if (layout.legend && typeof layout.legend.y === "number") layout.legend = {...layout.legend, y: keepPx(layout.legend.y)};
  for (const a of layout.annotations || []) if (a.yref === "paper" && typeof a.y === "number") a.y = keepPx(a.y);
  layout.height = height;
}
// A narrow screen (a phone) shows one plot at a time: the first of plots laid side by side takes the width, the
// others are put away (their traces hidden, their axes and notes too).
function onePlot(data, layout) {
  const beside = Object.keys(layout).filter((k) => /^xaxis\d+$/.test(k) && layout[k].domain && layout[k].domain[0] > 0.3);
  if (!beside.length || !layout.xaxis || !layout.xaxis.domain) return;
  const gone = new Set(beside.map((k) => "x" + k.slice(5)));
  const ys = new Set(beside.map((k) => layout[k].anchor).filter(Boolean));
  for (const trace of data) if (gone.has(trace.xaxis)) trace.visible = false;
  // (a panel's title is a paper annotation over its plot: it goes with the plot)
  const domains = beside.map((k) => layout[k].domain);
  const overGone = (a) => (a.xref || "paper") === "paper" && typeof a.x === "number" && domains.some(([lo, hi]) => a.x >= lo && a.x <= hi);
  layout.annotations = (layout.annotations || []).filter((a) => !overGone(a) && !gone.has(a.xref) && !gone.has((a.xref || "").replace(" domain", "")));
  for (const k of beside) layout[k] = {...layout[k], visible: false, domain: [0.99, 1]};
  for (const y of ys) { const k = "yaxis" + y.slice(1); if (layout[k]) layout[k] = {...layout[k], visible: false}; }
  layout.shapes = (layout.shapes || []).filter((s) => !gone.has(s.xref) && !gone.has((s.xref || "").replace(" domain", "")));
  const [lo, hi] = layout.xaxis.domain, mid = (lo + hi) / 2;  // the first panel's title stays over it
  for (const a of layout.annotations) if ((a.xref || "paper") === "paper" && Math.abs(a.x - mid) < 1e-6) a.x = (lo + 1) / 2;
  layout.xaxis = {...layout.xaxis, domain: [lo, 1]};
}
// Presenter mode (presenter.js; the attribute on <html>): every font size of a chart this page draws, times the
// protocol's scale, and its ink black, so a projector's last row reads it.
export const presenting = () => document.documentElement.hasAttribute(T.presenter.attribute);
function projectorSized(data, layout) {
  const scale = (font) => { if (font && typeof font.size === "number") font.size = Math.round(font.size * T.presenter.chart_scale); };
  const walk = (node, depth) => {  // every *font of the layout, its axes and their titles, legend, annotations
    if (!node || typeof node !== "object" || depth > 4 || ArrayBuffer.isView(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (/font$/.test(key)) scale(value);
      else if (value && typeof value === "object") walk(value, depth + 1);
    }
  };
  walk(layout, 0);
  for (const trace of data || []) for (const [key, value] of Object.entries(trace)) if (/font$/.test(key)) scale(value);
  if (!layout.font || typeof layout.font.size !== "number") layout.font = {...(layout.font || {}), size: Math.round(12 * T.presenter.chart_scale)};
  layout.font = {...layout.font, color: "#000000"};
}
export const setCaption = (target, html) => {
  const caption = captionOf(target);
  if (caption && html !== null && caption.dataset[parts.caption_html] !== html) {
    caption.innerHTML = html;
    caption.dataset[parts.caption_html] = html;
  }
};
// Draw into the plot itself (a page of the temperature flipbook shown over it is put away first: flipbook.drawPlot)
export const draw = (target, fig) => {
  const {data, layout, html} = prepare(fig, !!captionOf(target));
  setCaption(target, html);
  return window.Plotly.react(target, data, layout, CONFIG);
};
// Each time a plot shows a new chart, it says so: the benchmarks and tests wait for this event (T.shown_event;
// detail: the plot's key and temperature, and how: "drawn" now, or "ready", drawn ahead).
export const announce = (target, how, drawn) => Promise.resolve(drawn).then(() => target.dispatchEvent(new CustomEvent(
  T.shown_event, {bubbles: true, detail: {key: target.dataset[env.key], t: target.dataset[env.temperature], how}})));
// A plot out of sight is moved off the page (app.css, [data-tbt-off]), not made invisible: visibility is
// inherited, so hiding or showing a plot that way re-styled each of its ~950 elements (25-30 ms). And an
// attribute, not a class: Gradio's style sheet has a [class*=...] rule with a descendant part, so any class
// change re-styles the whole subtree too.
export const show = (node, on) => {
  if (on) { node.removeAttribute(parts.off); node.removeAttribute("aria-hidden"); }
  else { node.setAttribute(parts.off, ""); node.setAttribute("aria-hidden", "true"); }
};

// Waiting for elements: Gradio renders its components after this script runs, and a tab's only once it is
// opened. A document observer waits until every one is in the page, then goes.
export const whenPresent = (ids, then) => {
  const found = () => { const nodes = ids.map(el); return nodes.every(Boolean) ? nodes : null; };
  const nodes = found();
  if (nodes) return then(nodes);
  const wait = new MutationObserver(() => {
    const nodes = found();
    if (nodes) { wait.disconnect(); then(nodes); }
  });
  wait.observe(document.documentElement, {childList: true, subtree: true});
};

// The watch: each carrier's element (T.carriers) is observed, for what arrives in it and the status line's
// revision, and its parent's child list, which changes if Gradio replaces it (then the wait starts again).
// `onChange` runs on each change, and once the carriers are (again) in the page, for what arrived meanwhile.
const watched = [];
// The carriers of a kind (T.kinds) in the carriers' elements
export const carried = (kind) => watched.flatMap((box) => [...box.querySelectorAll("." + T.kinds[kind])]);
export function watchCarriers(onChange) {
  const OBSERVE = {childList: true, subtree: true, characterData: true, attributes: true,
                   attributeFilter: [...new Set([env.revision, T.marker.revision])].map(attr)};
  const onCarriers = new MutationObserver(onChange);
  const onParents = new MutationObserver(() => {
    if (!watched.every((node) => node.isConnected && el(node.id) === node)) watch();
  });
  let waiting = false;
  function watch() {
    if (waiting) return;
    onCarriers.disconnect();
    onParents.disconnect();
    watched.length = 0;
    waiting = true;
    whenPresent(Object.values(T.carriers), (nodes) => {
      waiting = false;
      watched.push(...nodes);
      for (const node of nodes) {
        onCarriers.observe(node, OBSERVE);
        onParents.observe(node.parentElement, {childList: true});
      }
      onChange();  // what arrived meanwhile
    });
  }
  watch();
}

/* ---- wide: the charts Gradio draws itself (gr.Plot: Branches' comparison, Beams, Sampler race, Self-consistency,
   Constraints, KV calculator, Speculative decoding, batching, Paged KV blocks, Lesson) get the page's own layout for
   a phone: each figure Gradio draws there is drawn again through prepare (above), as the page's charts are. ---- */
const GRADIO_PLOTS = ["tbt-plot-branch-logp", "tbt-plot-beams", "tbt-plot-race", "tbt-plot-sc", "tbt-plot-constrain",
  "tbt-plot-calc", "tbt-plot-spec", "tbt-plot-batching", "tbt-plot-throughput", "tbt-plot-paged", "tbt-lesson-plot",
  "tbt-lesson-class-plot"].map((id) => `#${id} .js-plotly-plot`).join(", ");
const narrowNow = () => innerWidth < T.fit.narrow_px;
function refit(gd) {
  if (gd.layout !== gd._tbtLayout) {  // Gradio drew a new figure (its layout is a new object each time): kept as drawn
    // (plotly's responsive resize deletes a layout's height to fit the chart to its box: the height drawn is kept)
    const layout = {...gd.layout, height: gd.layout.height || (gd._fullLayout && gd._fullLayout.height)};
    gd._tbtFigure = JSON.stringify({data: gd.data, layout});
    gd._tbtLayout = gd.layout;
    gd._tbtNarrow = false;
  }
  const wanted = narrowNow();
  if (wanted === gd._tbtNarrow || !window.Plotly) return;
  const fig = JSON.parse(gd._tbtFigure);
  const phone = wanted && fig.layout.meta && fig.layout.meta.narrow;  // how the chart says it looks on a phone
  for (const [key, value] of Object.entries(phone || {})) {  // (a dict merges into the wide one; as viz.style says)
    const wide = fig.layout[key];
    fig.layout[key] = value && typeof value === "object" && !Array.isArray(value) && wide && typeof wide === "object"
      ? {...wide, ...value} : value;
  }
  const {data, layout} = wanted ? prepare(fig, false, gd.clientWidth) : fig;
  if (wanted) wrapTitle(layout, gd.clientWidth);
  gd._tbtLayout = layout;
  gd._tbtNarrow = wanted;
  window.Plotly.react(gd, data, layout, {...CONFIG, displayModeBar: !wanted});
}
// The title and subtitle broken into lines that fit `width` (plotly does not wrap them; viz.style.wrap_text broke
// them for a projector's width), the chart taller by the lines added, so what sits under them moves down with them.
const CJK = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/;
const widthPx = (text, size) => [...text.replace(/<[^>]+>/g, "").replace(/&[a-z]+;|&#\d+;/g, "x")]
  .reduce((w, ch) => w + (CJK.test(ch) ? 1 : 0.62), 0) * size;
function wrapLines(text, size, px) {  // -> the text re-broken with <br>: at a space, or anywhere in CJK text
  const words = text.replace(/<br>/g, " ").match(/[\u2e80-\u9fff\uff00-\uffef]|[^\s\u2e80-\u9fff\uff00-\uffef]+\s*|\s+/g) || [];
  const lines = [];
  let line = "";
  for (const word of words) {
    if (line.trim() && widthPx(line + word.trimEnd(), size) > px) { lines.push(line.trimEnd()); line = ""; }
    line += line || word.trim() ? word : "";
  }
  if (line.trim()) lines.push(line.trimEnd());
  return lines.join("<br>");
}
function wrapTitle(layout, width) {
  const title = layout.title;
  if (!title || typeof title.text !== "string") return;
  const count = (text) => (text ? text.split("<br>").length : 0);
  const px = width - 16, size = (title.font && title.font.size) || 20;
  const sub = title.subtitle, subSize = (sub && sub.font && sub.font.size) || 14;
  const before = count(title.text) * 26 + count(sub && sub.text) * 20;
  title.text = wrapLines(title.text, size, px);
  if (sub && typeof sub.text === "string") sub.text = wrapLines(sub.text, subSize, px);
  // plotly draws a title of several lines anchored at its top about 14 px higher than one of one line: cut off
  const lift = count(title.text) > 1 ? 14 : 0;
  if (lift) title.pad = {...(title.pad || {}), t: ((title.pad && title.pad.t) || 0) + lift};
  const extra = count(title.text) * 26 + count(sub && sub.text) * 20 + lift - before;
  if (extra <= 0 || typeof layout.height !== "number") return;
  const old = layout.height;
  layout.height = old + extra;
  layout.margin = {...layout.margin, t: ((layout.margin && layout.margin.t) || 0) + extra};
  const lg = layout.legend;  // a legend placed from the top of the chart in px (viz.plot_head) moves down too
  if (lg && lg.yref === "container" && typeof lg.y === "number" && lg.y > 0.5) lg.y = 1 - ((1 - lg.y) * old + extra) / layout.height;
  else if (lg && lg.yref === "container" && typeof lg.y === "number") lg.y = lg.y * old / layout.height;
}
setInterval(() => {  // a gr.Plot's plot appears when its tab is first opened: hooked once, re-fitted after each draw
  for (const gd of document.querySelectorAll(GRADIO_PLOTS)) {
    if (!gd.on || gd._tbtHooked) continue;
    gd._tbtHooked = true;
    gd.on("plotly_afterplot", () => refit(gd));
    refit(gd);
  }
}, 1000);
addEventListener("resize", () => { for (const gd of document.querySelectorAll(GRADIO_PLOTS)) if (gd._tbtHooked) refit(gd); });
