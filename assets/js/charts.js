// Token by Token, charts: the bottom of the page's modules, importing none. The page protocol (window.TBT, written
// by ui/protocol.py: every id and attribute name), the page's small helpers, a chart drawn into its plot with its
// title put in the HTML caption above and 'tbt-shown' announced, a chart laid out for a phone, the watch on the
// carriers, and each plot fitted to its box when that changes. The other modules import from here; page.js says
// what happens when a carrier changes.
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
// A plot this page draws is not plotly's responsive one: on each window resize plotly's own handler deletes the
// layout's height and, unless the plot had no height when plotly first met it, sets its box to 100% of a box of no
// height: the plot fell to 0 px, its chart cut away (app.css .tbt-fig: contain: content). A phone's plot is drawn
// with a config of its own (no toolbar), which plotly meets anew: a window turned narrow under a drawn chart, then
// resized, left it blank. This page re-lays out its plots itself (fitWidths, below): the width follows the box,
// the height stays as drawn.
const PAGE_CONFIG = {...CONFIG, responsive: false};
// On a phone the toolbar would sit over the legend and the titles; a tap still shows a point's hover
export const narrowScreen = () => innerWidth < T.fit.narrow_px;
export const plotConfig = () => (narrowScreen() ? {...PAGE_CONFIG, displayModeBar: false} : PAGE_CONFIG);
// The title goes into the HTML caption above the plot, and the room it took off the top margin:
// plotly.js measures every text it draws (the title and subtitle were 10 of a candidate chart's 57 ms).
const captionOf = (target) => el(target.id.replace(T.chart.plot, T.chart.caption));
// `narrowed`: laid out as on a phone (a gr.Plot in a narrow column is too: refit)
export const prepare = (fig, captioned, width, narrowed = narrowScreen()) => {  // -> {data, layout, html}: html is the caption's, null to leave it
  const layout = fig.layout;
  if (predicting()) hideDraw(fig.data, layout);
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
  if (narrowed) narrow(fig.data, layout, width || innerWidth - 40);
  else if (width) axisTitlesInside(layout, width);
  return {data: fig.data, layout, html};
};
// "Predict first" (the header's switch, presenter.js): a chart that says how it looks with its draw hidden
// (layout.meta.predict, viz/candidates.py hidden_draw: trace keys by index, layout keys) is drawn so while it is on.
export const predicting = () => document.documentElement.hasAttribute(T.predict.attribute);
function hideDraw(data, layout) {
  const hidden = layout.meta && layout.meta.predict;
  if (!hidden) return;
  for (const [i, keys] of Object.entries(hidden.traces)) if (data[i]) Object.assign(data[i], keys);
  for (const [key, value] of Object.entries(hidden.layout)) {
    layout[key] = value && typeof value === "object" && !Array.isArray(value) && layout[key] && typeof layout[key] === "object"
      ? {...layout[key], ...value} : value;
  }
}
// What app.css pins to the top of the window (sticky) while the chart scrolls up under it: the text panel, and on
// a phone the step buttons above it. (Their heights, in px.)
export const pinnedHeight = () => {
  const text = el(T.carriers.text), steps = document.querySelector(".tbt-steps");
  return (text ? text.getBoundingClientRect().height : 0) +
         (narrowScreen() && steps ? steps.getBoundingClientRect().height : 0);
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
  const caption = stack.previousElementSibling, below = innerHeight - pinnedHeight() - 24;
  const room = Math.floor(below - (caption ? caption.getBoundingClientRect().height : 0));
  // never so short that its rows' names touch (13 rows in 180-230 px at 1280, issue 33). Where they do not fit the
  // room, the plot takes the room its caption had (presenter.js lets the caption go up under the panel), and its
  // names a smaller type, down to ROW_MIN_PX (a laptop's 1280 x 800: 14 rows under three lines of chips); past
  // that, it is taller than the room and the page scrolls it up under the text panel. (A phone: narrow() gives
  // each name its row.)
  // (in presenter mode a row is a little tighter, its names still apart: the text and the whole chart on one
  // 1280 x 800 screen, issue 47)
  let rows = narrowScreen() ? 0 : rowsHeight(layout, 0, presenting() ? LINE_PRESENTER : LINE);
  if (rows > room && !presenting()) {
    const alone = Math.floor(below), size = namesFitting(layout, alone);
    if (size) {
      for (const ax of categoryAxes(layout)) ax.tickfont = {...(ax.tickfont || {}), size};
      rows = alone;
    }
  }
  const height = Math.max(T.fit.min_px, Math.min(layout.height, Math.max(room, rows)));
  if (height >= layout.height) return;
  const m = layout.margin || {}, inner = (h) => h - (m.t || 0) - (m.b || 0);
  const keepPx = (y) => (y < 0 ? y * inner(layout.height) / inner(height) : y > 1 ? 1 + (y - 1) * inner(layout.height) / inner(height) : y);
  if (layout.legend && typeof layout.legend.y === "number") layout.legend = {...layout.legend, y: keepPx(layout.legend.y)};
  for (const a of layout.annotations || []) if (a.yref === "paper" && typeof a.y === "number") a.y = keepPx(a.y);
  layout.height = height;
}
// A row of a chart's category axis is at least LINE times its label's type tall: a glyph from a fallback font such as
// ␣ makes a line ~1.7 em
const LINE = 1.75, LINE_PRESENTER = 1.25, ROW_MIN_PX = 12;
// The layout's category axes (tick names, a row each: the y axes with tickvals)
const categoryAxes = (layout) => Object.entries(layout)
  .filter(([k, ax]) => /^yaxis\d*$/.test(k) && ax && ax.visible !== false && Array.isArray(ax.tickvals)).map(([, ax]) => ax);
// The height at which every category axis of the layout has LINE rows, in px (its names in type `size`, else their own)
function rowsHeight(layout, size = 0, line = LINE) {
  const m = layout.margin || {}, base = (layout.font && layout.font.size) || 16;
  let inner = 0;
  for (const ax of categoryAxes(layout)) {
    const rows = Array.isArray(ax.range) ? Math.abs(ax.range[1] - ax.range[0]) : ax.tickvals.length;
    inner = Math.max(inner, rows * (size || (ax.tickfont && ax.tickfont.size) || base) * line / span(ax));
  }
  return Math.ceil(inner + (m.t || 0) + (m.b || 0));
}
// The largest type (whole px, at least ROW_MIN_PX) in which the names keep LINE rows in `height` px; 0 if none
function namesFitting(layout, height) {
  const base = (layout.font && layout.font.size) || 16;
  for (let size = base - 1; size >= ROW_MIN_PX; size--) if (rowsHeight(layout, size) <= height) return size;
  return 0;
}
// An x axis title, centred under its axis, ends inside the chart `width` px wide: the right margin grows by as much
// as it would run past (at 1280 the candidate chart's "cumulative probability (draw order)" was cut at its right edge)
function axisTitlesInside(layout, width) {
  const m = layout.margin || {}, size = (layout.font && layout.font.size) || 16, plotW = width - (m.l || 0) - (m.r || 0);
  let grow = 0;
  for (const [k, ax] of Object.entries(layout)) {
    if (!/^xaxis\d*$/.test(k) || !ax || ax.visible === false || !ax.title || !ax.title.text) continue;
    const d = ax.domain || [0, 1], centre = (d[0] + d[1]) / 2;
    const end = (m.l || 0) + plotW * centre + textPx(ax.title.text, (ax.title.font && ax.title.font.size) || size) / 2;
    if (end > width - 4) grow = Math.max(grow, (end - width + 4) / centre);  // (the centre moves left by grow * centre)
  }
  if (grow > 0) layout.margin = {...m, r: Math.ceil((m.r || 0) + grow)};
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
// ---- A narrow screen (a phone): the chart laid out for the width it has, its labels never drawn over one another ----
// A chart may say how it looks on a phone: layout.meta.narrow holds layout keys that replace (a dict: merge into)
// the wide ones (viz.style.narrow_layout); a chart that says nothing shows its first plot only (onePlot). Then,
// for every chart: smaller type, long titles and notes wrapped, token tick labels upright and thinned to fit,
// numeric ticks fewer, text beside bars given room, and a heatmap's cell texts kept only where they fit.
const NARROW_FONT = 0.85;  // a phone is held at a foot, a projector seen from the last row: type a little smaller
const CJK = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/;  // a whole em wide
// About how wide a text is in px (viz.style.text_px: a CJK character a whole em, others 0.62 em; errs wide)
export const textPx = (text, size) => {
  let w = 0;
  for (const ch of String(text).replace(/<br>/g, "\n").replace(/<[^>]+>/g, "").replace(/&[a-z]+;|&#\d+;/g, "x")) {
    w += CJK.test(ch) ? 1 : 0.62;
  }
  return w * size;
};
// `text` broken with <br> into lines of at most `px` (at a space, or anywhere in CJK text), its own breaks kept;
// or, `reflow`, taken out first (a title viz.style.wrap_text broke for a projector's width, broken for a phone's)
export const wrapPx = (text, size, px, reflow = false) =>
  (reflow ? [String(text).replace(/<br>/g, " ")] : String(text).split("<br>")).map((line) => {
    if (textPx(line, size) <= px) return line;
    const out = [];
    let cur = "";
    for (const piece of line.match(/[\u2e80-\u9fff\uff00-\uffef]|[^\s\u2e80-\u9fff\uff00-\uffef]+\s*|\s+/g) || []) {
      if (cur.trim() && textPx(cur + piece.trimEnd(), size) > px) { out.push(cur.trimEnd()); cur = ""; }
      cur += cur || piece.trim() ? piece : "";
    }
    if (cur.trim()) out.push(cur.trimEnd());
    return out.join("<br>");
  }).join("<br>");
// Every font size of a chart times k, never below `least` px: each *font of the layout down to 4 levels (axes and
// their titles, legend, notes) and of the traces. Not the layout's meta: the phone's keys there (meta.narrow)
// share their fonts with the layout once merged into it (narrow), and would be scaled twice.
function scaleFonts(data, layout, k, least = 0) {
  const scale = (font) => { if (font && typeof font.size === "number") font.size = Math.max(least, Math.round(font.size * k)); };
  const walk = (node, depth) => {
    if (!node || typeof node !== "object" || depth > 4 || ArrayBuffer.isView(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (/font$/.test(key)) scale(value);
      else if (key !== "meta" && value && typeof value === "object") walk(value, depth + 1);
    }
  };
  walk(layout, 0);
  for (const trace of data || []) for (const [key, value] of Object.entries(trace)) if (/font$/.test(key)) scale(value);
}
// A dict merged into another one level down (a colour bar's keys into the trace's), anything else replacing it
const mergeKeys = (into, keys) => {
  for (const [key, value] of Object.entries(keys)) {
    into[key] = value && typeof value === "object" && !Array.isArray(value) && into[key] && typeof into[key] === "object"
      ? {...into[key], ...value} : value;
  }
};
function narrow(data, layout, width) {
  // what the chart says changes in its traces on a phone, by trace name (viz.style.narrow_traces)
  const byName = (layout.meta && layout.meta.narrow_traces) || {};
  for (const trace of data) if (trace.name && byName[trace.name]) mergeKeys(trace, byName[trace.name]);
  const wide = layout.meta && layout.meta.narrow;
  if (wide) {
    for (const [key, value] of Object.entries(wide)) {
      layout[key] = value && typeof value === "object" && !Array.isArray(value) && layout[key] && typeof layout[key] === "object"
        ? {...layout[key], ...value} : value;
    }
  } else {
    onePlot(data, layout);
  }
  const base = (layout.font && layout.font.size) || 16, k = narrowScreen() ? NARROW_FONT : 1;  // (a column on a wide screen: its type)
  scaleFonts(data, layout, k, 11);
  layout.font = {...(layout.font || {}), size: Math.max(11, Math.round(base * k))};
  const size = layout.font.size, m = layout.margin || {};
  // (a colour bar takes its room from the plot's)
  const scaleBar = data.some((d) => d.type === "heatmap" && d.showscale !== false && d.visible !== false &&
                                   !(d.colorbar && d.colorbar.orientation === "h")) ? 70 : 0;  // (one laid flat: none)
  let plotW = Math.max(120, width - (m.l || 0) - (m.r || 0) - scaleBar);
  const plotH = Math.max(120, (layout.height || 450) - (m.t || 0) - (m.b || 0));
  const axes = Object.keys(layout).filter((k) => /^[xy]axis\d*$/.test(k) && layout[k] && layout[k].visible !== false);
  // an axis's length in px (a pair of axes with square cells, scaleanchor, takes the shorter side on both)
  const square = axes.find((k) => layout[k].scaleanchor), side = square && Math.min(plotW * span(layout.xaxis || {}), plotH * span(layout.yaxis || {}));
  const length = (k) => (square && (layout[k].scaleanchor || k === "xaxis") ? side : (k[0] === "x" ? plotW : plotH) * span(layout[k]));
  const fontOf = (ax) => (ax.tickfont && ax.tickfont.size) || size;
  // square cells (the attention heat map) as wide as the phone: the chart no taller than the square and its margins
  if (square && typeof layout.height === "number") layout.height = Math.min(layout.height, Math.ceil(side + (m.t || 0) + (m.b || 0)));
  for (const trace of data) cellTexts(trace, layout, plotW);
  for (const k of axes) {
    const ax = layout[k], horizontal = k[0] === "x", px = length(k), fs = fontOf(ax);
    if (ax.title && ax.title.text) {  // an axis title no longer than its axis
      const titleFs = (ax.title.font && ax.title.font.size) || size;
      ax.title = {...ax.title, text: wrapPx(ax.title.text, titleFs, Math.max(60, px))};
    }
    if (Array.isArray(ax.tickvals) && Array.isArray(ax.ticktext) && ax.tickvals.length > 1 && ax.showticklabels !== false) {
      // token labels: upright on a narrow x axis (turned, their boxes cross), a line apart (a glyph from a fallback
      // font such as ␣ makes the line ~1.7 em): smaller type down to 10 px, then every other one, the newest kept
      const n = ax.tickvals.length, room = px / n;
      let widest = Math.max(...ax.ticktext.map((s) => textPx(s, fs)));
      if (horizontal && (ax.tickangle || widest > room - 6)) ax.tickangle = -90;
      const upright = !horizontal || ax.tickangle === -90;
      let small = fs;
      while (upright && small > 10 && small * LINE > room) small -= 1;
      if (small !== fs) { ax.tickfont = {...(ax.tickfont || {}), size: small}; widest = widest * small / fs; }
      const need = upright ? small * LINE : widest + 8;
      if (!horizontal && need > room && !square) {  // a row each: every bar keeps its name, the chart grows to hold them
        layout.height = Math.ceil((layout.height || 450) + (need - room) * n / span(ax));
        continue;
      }
      const every = Math.max(1, Math.ceil(need / room));
      if (every > 1) {
        const keep = ax.tickvals.map((_, i) => (n - 1 - i) % every === 0);
        ax.tickvals = ax.tickvals.filter((_, i) => keep[i]);
        ax.ticktext = ax.ticktext.filter((_, i) => keep[i]);
      }
      // (plotly places an axis title by margins it is not told about: it measures them again here, on a phone only)
      if (horizontal && ax.tickangle === -90) ax.automargin = true;
    } else if (!ax.tickvals && ax.type !== "category") {
      // numbers: one per 60 px along x, one per 36 px up y
      ax.nticks = Math.max(2, Math.min(ax.nticks || 99, Math.floor(px / (horizontal ? 60 : 36))));
    } else if (Array.isArray(ax.tickvals) && horizontal && ax.tickformat) {
      const every = Math.ceil(ax.tickvals.length * 48 / px);
      if (every > 1) ax.tickvals = ax.tickvals.filter((_, i) => i % every === 0);
    }
  }
  // the left margin for the tick labels and title as they are now (fitted at the wide type: viz.style.fit_margins)
  if (!axes.some((k) => layout[k].automargin)) {
    let left = 0;
    for (const k of axes.filter((k) => k[0] === "y" && layout[k].side !== "right" && !layout[k].overlaying)) {
      const ax = layout[k], fs = fontOf(ax);
      if ((layout["xaxis" + (ax.anchor || "x").slice(1)] || {}).domain?.[0] > 0.001) continue;
      const ticks = ax.showticklabels === false ? 0 : Array.isArray(ax.ticktext) ? Math.max(0, ...ax.ticktext.map((s) => textPx(s, fs))) : textPx("000000", fs);
      left = Math.max(left, ticks + (ax.title && ax.title.text ? size * 1.6 + 6 : 0) + 12);
    }
    if (left && left < (m.l || 0)) { plotW += m.l - left; layout.margin = {...m, l: Math.round(left)}; }
  }
  // notes and panel titles wrapped to the room they have
  const frac = (a) => {
    if ((a.xref || "paper") === "paper") return a.x;
    const ax = layout["xaxis" + (a.xref || "x").replace(/ domain$/, "").slice(1)];
    if (!ax) return 0.5;
    let d = ax.domain || [0, 1];
    if (square && ax.constrain === "domain") {  // the square is centred in the domain plotly was given
      const w = side / plotW, mid = (d[0] + d[1]) / 2;
      d = [mid - w / 2, mid + w / 2];
    }
    if (/ domain$/.test(a.xref)) return d[0] + a.x * (d[1] - d[0]);
    const r = ax.range;
    return Array.isArray(r) && typeof r[0] === "number" && r[1] !== r[0] ? d[0] + (a.x - r[0]) / (r[1] - r[0]) * (d[1] - d[0]) : 0.5;
  };
  for (const a of layout.annotations || []) {
    if (typeof a.text !== "string" || typeof a.x !== "number") continue;
    const f = Math.min(1, Math.max(0, frac(a))), fs = (a.font && a.font.size) || size;
    // (a note in the plot stays in it: beside the axis are its tick labels)
    const inside = (a.xref || "paper") !== "paper", l = inside ? 0 : m.l || 0, r = inside ? 0 : m.r || 0;
    const room = a.xanchor === "left" ? (1 - f) * plotW + r : a.xanchor === "right" ? f * plotW + l
      : 2 * Math.min(f * plotW + l, (1 - f) * plotW + r);
    a.text = wrapPx(a.text, fs, Math.max(60, Math.min(room, width) - 12));
  }
  for (const trace of data) besideBars(trace, layout, plotW);
  // a legend's entries no wider than the chart (plotly puts as many in a row as fit, and wraps none)
  for (const trace of data) if (typeof trace.name === "string" && trace.showlegend !== false) trace.name = wrapPx(trace.name, (layout.legend && layout.legend.font && layout.legend.font.size) || size, width - 60);
}
// Text written to the right of bars (a scatter of text at each bar's end, or a bar's text outside): the x axis
// reaches far enough that the longest one ends inside the chart.
function besideBars(trace, layout, plotW) {
  const right = (trace.mode === "text" && /right/.test(trace.textposition || "")) ||
    (trace.type === "bar" && trace.orientation === "h" && trace.textposition === "outside");
  if (!right || trace.visible === false || !Array.isArray(trace.text)) return;
  const key = "xaxis" + (trace.xaxis || "x").slice(1), ax = layout[key];
  if (!ax || !Array.isArray(ax.range)) return;
  const px = plotW * span(ax);
  // a label no taller than its row
  const y = layout["yaxis" + (trace.yaxis || "y").slice(1)] || {}, rows = Array.isArray(y.range) ? Math.abs(y.range[1] - y.range[0])
    : (trace.y || []).length;
  const rowPx = (layout.height - (layout.margin.t || 0) - (layout.margin.b || 0)) * span(y) / Math.max(1, rows);
  let fs = (trace.textfont && trace.textfont.size) || 14;
  while (fs > 10 && fs * 1.6 > rowPx) fs -= 1;
  trace.textfont = {...(trace.textfont || {}), size: fs};
  let reach = ax.range[1];
  trace.text.forEach((text, i) => {
    const x = Number(trace.x[i]) + (trace.base ? Number(trace.base[i] || 0) : 0), w = textPx(text, fs) + 10;
    if (Number.isFinite(x) && w < px * 0.8) reach = Math.max(reach, (x - ax.range[0]) * px / (px - w) + ax.range[0]);
  });
  if (reach > ax.range[1]) layout[key] = {...ax, range: [ax.range[0], reach]};
}
const span = (ax) => { const d = ax.domain || [0, 1]; return d[1] - d[0]; };  // of the plot area
// A heatmap that writes a text in each cell (the logit lens): smaller type where that fits, else its last columns
// only, as many as hold their text (the newest positions: the ones the lens is read for)
function cellTexts(trace, layout, plotW) {
  if (trace.type !== "heatmap" || !trace.texttemplate || !Array.isArray(trace.text) || !trace.text.length) return;
  const key = "xaxis" + (trace.xaxis || "x").slice(1), ax = layout[key] || {};
  const n = trace.z[0].length, px = plotW * span(ax);
  let fs = (trace.textfont && trace.textfont.size) || 14;
  const widest = (f) => Math.max(...trace.text.flat().map((s) => textPx(s, f))) + 6;
  while (fs > 10 && widest(fs) > px / n) fs -= 1;
  trace.textfont = {...(trace.textfont || {}), size: fs};
  const keep = Math.max(1, Math.floor(px / widest(fs)));
  if (keep >= n) return;
  const cut = (rows) => rows.map((row) => row.slice(n - keep));
  trace.z = cut(trace.z);
  trace.text = cut(trace.text);
  if (Array.isArray(trace.customdata)) trace.customdata = cut(trace.customdata);
  trace.x = Array.from({length: keep}, (_, i) => n - keep + i);
  for (const k of Object.keys(layout).filter((k) => /^xaxis\d*$/.test(k))) {
    const a = layout[k];
    if (k !== key && a.matches !== (trace.xaxis || "x")) continue;
    layout[k] = {...a, range: a.matches ? undefined : [n - keep - 0.5, n - 0.5]};
    if (Array.isArray(a.tickvals) && Array.isArray(a.ticktext)) {
      const keepTick = a.tickvals.map((v) => v >= n - keep);
      layout[k].tickvals = a.tickvals.filter((_, i) => keepTick[i]);
      layout[k].ticktext = a.ticktext.filter((_, i) => keepTick[i]);
    }
  }
  layout.shapes = (layout.shapes || []).map((s) => (s.xref || "x") === (trace.xaxis || "x") && typeof s.x0 === "number"
    ? {...s, x0: Math.max(s.x0, n - keep - 0.5)} : s);
}
// Presenter mode (presenter.js; the attribute on <html>): every font size of a chart this page draws, times the
// protocol's scale, and its ink black, so a projector's last row reads it.
export const presenting = () => document.documentElement.hasAttribute(T.presenter.attribute);
// Its margins and height grow with its type: the tick labels and titles they hold are that much larger (at 1280 the
// candidate chart's token names ran off its left edge), and what is placed in fractions of the plot area keeps its
// distance in px times the scale.
function projectorSized(data, layout) {
  const k = T.presenter.chart_scale, m = layout.margin || {};
  scaleFonts(data, layout, k, T.presenter.least_px);
  if (!narrowScreen()) {  // (a phone's type is made smaller again, and its chart fitted to its width: narrow)
    layout.margin = Object.fromEntries(Object.entries(m).map(([side, px]) => [side, typeof px === "number" && side !== "pad" ? Math.round(px * k) : px]));
    if (typeof layout.height === "number") layout.height = Math.round(layout.height * k);
  }
  if (layout.meta && layout.meta.narrow) scaleFonts([], layout.meta.narrow, T.presenter.chart_scale, T.presenter.least_px);  // (not merged yet)
  if (!layout.font || typeof layout.font.size !== "number") layout.font = {...(layout.font || {}), size: Math.max(T.presenter.least_px, Math.round(12 * T.presenter.chart_scale))};
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
  const {data, layout, html} = prepare(fig, !!captionOf(target), target.clientWidth);
  setCaption(target, html);
  drawnFor(target);
  return window.Plotly.react(target, data, layout, plotConfig());
};
// The shape a plot's chart was laid out for (a phone's or a wide window's, in presenter mode or not): page.js draws
// again a chart shown in another shape (a tab opened after the window turned, or after presenter mode was switched).
// A page's plot drawn is fitted to its box from then on.
const SHAPE = "_tbtShape";
const shape = (narrowed = narrowScreen(), presenter = presenting()) => (narrowed ? "narrow" : "wide") + (presenter ? " presenter" : "");
export const drawnFor = (plot) => { plot[SHAPE] = shape(); fitToBox(plot, fitWidth); };
export const otherShape = (plot) => plot[SHAPE] !== undefined && plot[SHAPE] !== shape();
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

/* ---- The charts Gradio draws itself (gr.Plot: the ids in T.gradio_plots) get the page's own layout for a phone:
   each figure Gradio draws there is drawn again through prepare (above), as the page's charts are. ---- */
// A gr.Plot is laid out as on a phone on a phone, and in a column narrower than T.fit.beside_px (times the presenter
// scale) on a wide screen: the Lesson's chart beside its text at 1280, whose two plots side by side ran into each other
const narrowColumn = (gd) => narrowScreen() || gd.clientWidth < T.fit.beside_px * (presenting() ? T.presenter.chart_scale : 1);
function refit(gd) {
  if (gd.layout !== gd._tbtLayout) {  // Gradio drew a new figure (its layout is a new object each time): kept as drawn
    // (plotly's responsive resize deletes a layout's height to fit the chart to its box: the height drawn is kept)
    const layout = {...gd.layout, height: gd.layout.height || (gd._fullLayout && gd._fullLayout.height)};
    gd._tbtFigure = JSON.stringify({data: gd.data, layout});
    gd._tbtLayout = gd.layout;
    gd[SHAPE] = shape(false, false);  // (Gradio lays it out for a wide window, its type as the figure says)
    gd._tbtOwn = false;
  }
  const phone = narrowColumn(gd), want = shape(phone);
  if (!window.Plotly) return;
  if (gd[SHAPE] === want) {  // a plot this page drew again follows its box's width itself (not plotly's responsive)
    if (gd._tbtOwn) fitWidth(gd);
    return;
  }
  const fig = JSON.parse(gd._tbtFigure), laidOut = phone || presenting();
  // (prepare lays it out for a phone: narrow, with the keys the chart says it has there, meta.narrow; and in
  // presenter mode, its type projector-sized)
  const {data, layout} = laidOut ? prepare(fig, false, gd.clientWidth, phone) : fig;
  if (laidOut) wrapTitle(layout, gd.clientWidth);
  gd._tbtLayout = layout;
  gd[SHAPE] = want;
  gd._tbtOwn = true;
  // not plotly's responsive plot (PAGE_CONFIG): on the next window resize its handler took the height this sets away,
  // and the plot fell to 0 px (presenter mode at 1280, then 1920: Beams, Race, ... blank)
  window.Plotly.react(gd, data, layout, {...PAGE_CONFIG, displayModeBar: !phone});
}
// The title and subtitle broken into lines that fit `width` (plotly does not wrap them; viz.style.wrap_text broke
// them for a projector's width), the chart taller by the lines added, so what sits under them moves down with them.
function wrapTitle(layout, width) {
  const title = layout.title;
  if (!title || typeof title.text !== "string") return;
  const count = (text) => (text ? text.split("<br>").length : 0);
  const px = width - 16, size = (title.font && title.font.size) || 20;
  const sub = title.subtitle, subSize = (sub && sub.font && sub.font.size) || 14;
  const lines = () => count(title.text) * 1.3 * size + count(sub && sub.text) * 1.43 * subSize;  // (26 and 20 px at 20 and 14)
  const before = lines();
  title.text = wrapPx(title.text, size, px, true);
  if (sub && typeof sub.text === "string") sub.text = wrapPx(sub.text, subSize, px, true);
  // plotly draws a title of several lines anchored at its top about 0.7 em higher than one of one line: cut off
  const lift = count(title.text) > 1 ? Math.round(0.7 * size) : 0;
  if (lift) title.pad = {...(title.pad || {}), t: ((title.pad && title.pad.t) || 0) + lift};
  const extra = Math.round(lines() + lift - before);
  if (extra <= 0 || typeof layout.height !== "number") return;
  const old = layout.height;
  layout.height = old + extra;
  layout.margin = {...layout.margin, t: ((layout.margin && layout.margin.t) || 0) + extra};
  const lg = layout.legend;  // a legend placed from the top of the chart in px (viz.plot_head) moves down too
  if (lg && lg.yref === "container" && typeof lg.y === "number" && lg.y > 0.5) lg.y = 1 - ((1 - lg.y) * old + extra) / layout.height;
  else if (lg && lg.yref === "container" && typeof lg.y === "number") lg.y = lg.y * old / layout.height;
}

/* ---- Each plot fitted to its box when the box changes: the window resized or turned, its tab opened. ---- */
// A ResizeObserver, not a poll: it sees a plot's box change whatever changed it, a hidden plot (its tab closed: no
// box) shown again included. The page's own plots (PAGE_CONFIG: not plotly's responsive ones) take their box's
// width at the height they were drawn, or are drawn again if laid out for the other shape (page.js, onOtherShape);
// Gradio's are laid out again for a phone or a wide window (refit). (A page of the flipbook is fitted when shown:
// flipbook.js.) Only a plot on screen: plotly cannot lay out one without a box ("Something went wrong with axis
// scaling"). A frame later: the page has its new width then, and a plot re-laid out in the observer's own callback
// would change the boxes it reports on (a "ResizeObserver loop" error).
const onScreen = (gd) => gd.offsetParent !== null && gd.clientWidth > 0;
const fits = new WeakMap();  // plot -> how it is fitted to its box
let resized = new Set(), fitting = 0;
const boxes = new ResizeObserver((entries) => {
  for (const entry of entries) resized.add(entry.target);
  if (!fitting) fitting = requestAnimationFrame(fitResized);
});
function fitToBox(gd, fit) {
  if (!fits.has(gd)) boxes.observe(gd);
  fits.set(gd, fit);
}
let redrawOtherShape = () => {};
// page.js: what draws again the charts of the open tab laid out for the other shape (a tab opened after the turn)
export const onOtherShape = (redraw) => { redrawOtherShape = redraw; };
function fitResized() {
  fitting = 0;
  const plots = resized;
  resized = new Set();
  let reshape = false;
  for (const gd of plots) {
    if (!gd.isConnected) { boxes.unobserve(gd); fits.delete(gd); continue; }  // (replaced: its chart has a new plot)
    if (!window.Plotly || !onScreen(gd)) continue;
    if (fits.get(gd) === fitWidth && otherShape(gd)) reshape = true;
    else fits.get(gd)(gd);
  }
  if (reshape) redrawOtherShape();
}
// Presenter mode switched (presenter.js): every plot on screen fitted again now (a gr.Plot drawn again in its new type
// size: refit); one in a closed tab when its tab opens (its box changes then).
export const refitAll = () => {
  for (const gd of document.getElementsByClassName("js-plotly-plot")) if (fits.has(gd)) resized.add(gd);
  if (!fitting) fitting = requestAnimationFrame(fitResized);
};
function fitWidth(gd) {  // a page plot: its box's width, at the height it was drawn
  const full = gd._fullLayout;
  if (full && Math.abs(full.width - gd.clientWidth) > 1) window.Plotly.relayout(gd, {width: gd.clientWidth});
}
// A gr.Plot's plot appears when its tab is first opened or its first figure arrives, and nothing tells the page:
// the document's child lists are watched for it (a frame with changes looks the gr.Plots up by id, no more). Each
// is hooked once: re-fitted after each figure Gradio draws (plotly_afterplot), and whenever its box changes.
let looking = 0;
new MutationObserver(() => { if (!looking) looking = requestAnimationFrame(hookGradioPlots); })
  .observe(document.documentElement, {childList: true, subtree: true});
// A plot plotly has not finished with (no .on yet) is looked for again a frame later, up to 10 s: the Attention tab's
// GQA diagram, drawn as its tab opens, changed the page no more once it had its .on, and was never hooked.
let unfinished = 0;
function hookGradioPlots() {
  looking = 0;
  let waiting = false;
  for (const id of Object.values(T.gradio_plots)) {
    const box = el(id);
    for (const gd of box ? box.getElementsByClassName("js-plotly-plot") : []) {
      if (fits.has(gd)) continue;
      if (!gd.on) { waiting = true; continue; }
      gd.on("plotly_afterplot", () => onScreen(gd) && refit(gd));
      fitToBox(gd, refit);
    }
  }
  unfinished = waiting ? unfinished + 1 : 0;
  if (waiting && unfinished < 600 && !looking) looking = requestAnimationFrame(hookGradioPlots);
}
