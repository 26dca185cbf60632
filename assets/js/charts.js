// Token by Token, charts: each chart that arrives in a carrier drawn into its plot, its title put in the HTML
// caption above, and 'tbt-shown' announced; the watch on the carriers, the only elements this page observes.
// It makes the namespace the page's scripts share, window.tbt, and its helpers; every id and attribute name
// comes from the page protocol, window.TBT (ui/protocol.py).
(() => {
  "use strict";
  const T = window.TBT, tbt = (window.tbt = window.tbt || {});
  const env = T.envelope, parts = T.parts;
  tbt.attr = (name) => "data-" + name.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());  // dataset name -> attribute
  tbt.el = (id) => document.getElementById(id);
  tbt.click = (id) => { const b = tbt.el(id); if (b) b.click(); };
  tbt.steppingPlot = () => tbt.el(T.chart.plot + T.stepping_tab);
  const marker = () => tbt.el(T.ids.marker);
  tbt.markerRev = () => { const m = marker(); return m ? m.dataset[T.marker.revision] : null; };
  tbt.ended = () => { const m = marker(); return !!m && m.dataset[T.marker.ended] === "1"; };
  // The carriers of a kind (T.kinds) in the carriers' elements
  tbt.carried = (kind) => watched.flatMap((box) => [...box.querySelectorAll("." + T.kinds[kind])]);

  // Charts: each figure arrives as plotly JSON in a hidden carrier (ui.protocol.figure_carrier) and is drawn
  // with Plotly.react into its plot, which stays on the page: a step re-draws the chart in place, once.
  tbt.CONFIG = {responsive: true, displaylogo: false};
  // The title goes into the HTML caption above the plot, and the room it took off the top margin:
  // plotly.js measures every text it draws (the title and subtitle were 10 of a candidate chart's 57 ms).
  const captionOf = (target) => tbt.el(target.id.replace(T.chart.plot, T.chart.caption));
  tbt.prepare = (fig, captioned) => {  // -> {data, layout, html}: html is the caption's, null to leave it
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
    return {data: fig.data, layout, html};
  };
  tbt.setCaption = (target, html) => {
    const caption = captionOf(target);
    if (caption && html !== null && caption.dataset[parts.caption_html] !== html) {
      caption.innerHTML = html;
      caption.dataset[parts.caption_html] = html;
    }
  };
  tbt.draw = (target, fig) => {
    const {data, layout, html} = tbt.prepare(fig, !!captionOf(target));
    tbt.flipBack(target);
    tbt.setCaption(target, html);
    return window.Plotly.react(target, data, layout, tbt.CONFIG);
  };
  // Each time a plot shows a new chart, it says so: the benchmarks and tests wait for this event (T.shown_event;
  // detail: the plot's key and temperature, and how: "drawn" now, or "ready", drawn ahead).
  tbt.announce = (target, how, drawn) => Promise.resolve(drawn).then(() => target.dispatchEvent(new CustomEvent(
    T.shown_event, {bubbles: true, detail: {key: target.dataset[env.key], t: target.dataset[env.temperature], how}})));
  // A plot out of sight is moved off the page (app.css, [data-tbt-off]), not made invisible: visibility is
  // inherited, so hiding or showing a plot that way re-styled each of its ~950 elements (25-30 ms). And an
  // attribute, not a class: Gradio's style sheet has a [class*=...] rule with a descendant part, so any class
  // change re-styles the whole subtree too.
  tbt.show = (node, on) => {
    if (on) { node.removeAttribute(parts.off); node.removeAttribute("aria-hidden"); }
    else { node.setAttribute(parts.off, ""); node.setAttribute("aria-hidden", "true"); }
  };

  function drawCharts() {
    if (!window.Plotly) return;  // (drawn once it has loaded: see below)
    let stepped = false;
    for (const carrier of tbt.carried("figure")) {
      const id = carrier.dataset[env.target], rev = carrier.dataset[env.revision];
      let target = tbt.el(id);
      if (!target) { awaitPlot(id); continue; }  // its tab is not rendered yet
      if (target.dataset[env.revision] === rev || !carrier.textContent) continue;
      target.dataset[env.revision] = rev;
      // a candidate chart: what it shows, and at which temperature
      const key = carrier.dataset[env.key], t = carrier.dataset[env.temperature];
      if (key && key === target.dataset[env.key] && (t === target.dataset[env.temperature] || t !== tbt.sliderT())) {
        continue;  // already on screen (drawn from the bundle), or the answer to a move the slider has left
      }
      if (key && key !== target.dataset[env.key]) {  // a candidate chart of another step (or other settings)
        tbt.flipClose(target);
        stepped = true;
      }
      const drawnAhead = key ? tbt.promote(target, key, t) : null;
      const drawn = drawnAhead ? null : tbt.draw(target, JSON.parse(carrier.textContent));
      if (drawnAhead) target = drawnAhead;
      Object.assign(target.dataset, {[env.revision]: rev, [env.key]: key || "", [env.temperature]: t || "",
                                     [parts.plot_temperature]: t || ""});
      tbt.announce(target, drawnAhead ? "ready" : "drawn", drawn);
    }
    tbt.openBundle();  // flipbook.js: the bundle has arrived: draw its pages ahead
    tbt.takeAhead();  // ahead.js: the next step's chart has arrived: draw it when idle
    if (stepped) tbt.askAhead();
  }
  // A chart is drawn as soon as its answer is in the page, a frame sooner than at the next frame. A Play step
  // is said taken first (its carrier is read in this same task, so the next step cannot overwrite it).
  const react = () => { tbt.taken(); drawCharts(); };
  const plotly = tbt.el(T.ids.plotly_js);
  if (plotly && !window.Plotly) plotly.addEventListener("load", react, {once: true});

  // Waiting for elements: Gradio renders its components after this script runs, and a tab's only once it is
  // opened. A document observer waits until every one is in the page, then goes.
  tbt.whenPresent = (ids, then) => {
    const found = () => { const nodes = ids.map(tbt.el); return nodes.every(Boolean) ? nodes : null; };
    const nodes = found();
    if (nodes) return then(nodes);
    const wait = new MutationObserver(() => {
      const nodes = found();
      if (nodes) { wait.disconnect(); then(nodes); }
    });
    wait.observe(document.documentElement, {childList: true, subtree: true});
  };
  const awaited = new Set();
  function awaitPlot(id) {  // a chart for a plot not in the page yet: drawn once the plot is
    if (awaited.has(id)) return;
    awaited.add(id);
    tbt.whenPresent([id], () => { awaited.delete(id); react(); });
  }

  // The watch: each carrier's element (T.carriers) is observed, for what arrives in it and the status line's
  // revision, and its parent's child list, which changes if Gradio replaces it (then the wait starts again).
  const watched = [];
  const OBSERVE = {childList: true, subtree: true, characterData: true, attributes: true,
                   attributeFilter: [...new Set([env.revision, T.marker.revision])].map(tbt.attr)};
  const onCarriers = new MutationObserver(react);
  const onParents = new MutationObserver(() => {
    if (!watched.every((node) => node.isConnected && tbt.el(node.id) === node)) watch();
  });
  let waiting = false;
  function watch() {
    if (waiting) return;
    onCarriers.disconnect();
    onParents.disconnect();
    watched.length = 0;
    waiting = true;
    tbt.whenPresent(Object.values(T.carriers), (nodes) => {
      waiting = false;
      watched.push(...nodes);
      for (const node of nodes) {
        onCarriers.observe(node, OBSERVE);
        onParents.observe(node.parentElement, {childList: true});
      }
      react();  // what arrived meanwhile
    });
  }
  setTimeout(watch);  // once the page's other scripts have run: what arrives is theirs to handle too
})();
