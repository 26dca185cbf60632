<script>
// Token by Token: presenter keys, Play loop, and clicking a token chip to go back to that step.
(() => {
  const el = (id) => document.getElementById(id);
  const marker = () => { const m = el("tbt-marker"); return m ? m.dataset.rev : null; };
  const ended = () => { const m = el("tbt-marker"); return m && m.dataset.ended === "1"; };
  const click = (id) => { const b = el(id); if (b) b.click(); };

  // Play: one streaming request (app.py, play_tokens) sends the steps one by one. The page says when it has
  // taken each (POST /tbt/play/<token>/shown, before drawing it); only then does the server send the next,
  // computed meanwhile. Play so goes as fast as this page draws, never ahead of it, and Gradio's work per
  // step is one message, not a whole event (about 45 ms of this page's work each).
  let playing = false, stopAsked = false, stopSent = false, takenRev = null, staleToken = null;
  const playToken = () => { const p = el("tbt-playing"); return p && p.dataset.token !== staleToken ? p.dataset.token : null; };
  const PAUSE = "▮▮ ";  // (⏸ has no glyph in common fonts: Debian's Chromium drew an empty box)
  const playButton = (on) => {  // the button's own label stays (the language switch may change it meanwhile)
    const button = el("tbt-play");
    if (!button) return;
    const label = button.textContent.startsWith(PAUSE) ? button.textContent.slice(PAUSE.length) : button.textContent;
    button.textContent = on ? PAUSE + label : label;
  };
  const tellPlay = (what) => {  // -> false if this Play's token has not arrived yet
    const token = playToken();
    if (!token) return false;
    const root = (window.gradio_config && window.gradio_config.root) || "";
    fetch(`${root}/tbt/play/${token}/${what}`, {method: "POST"}).catch(() => {});
    return true;
  };
  window.tbtPlay = () => {
    if (playing) {  // stop after the step under way (before the first one arrives: when it does)
      if (!stopSent) stopSent = tellPlay("stop");
      stopAsked = !stopSent;
      return;
    }
    if (ended()) return;
    playing = true;
    stopAsked = stopSent = false;
    takenRev = marker();
    staleToken = (el("tbt-playing") && el("tbt-playing").dataset.token) || null;  // left by a Play that failed
    clearTimeout(aheadTimer);
    playButton(true);
    click("tbt-play-run");
  };
  window.tbtPlayEnded = () => {  // the request is over: stopped, done, the text ended, or an error
    if (!playing) return;
    playing = false;
    playButton(false);
    askAhead();
  };
  function taken() {  // a new step is in the page: say so, so the server sends the next one while it is drawn
    const rev = marker();
    if (!playing || stopSent || rev === takenRev || !playToken()) return;  // (stopped: the Play has ended)
    takenRev = rev;
    stopSent = tellPlay(stopAsked ? "stop" : "shown") && stopAsked;
  }

  // Charts: each figure arrives as plotly JSON in a hidden carrier (viz.page.figure_carrier) and is drawn
  // with Plotly.react into its plot, which stays on the page: a step re-draws the chart in place, once.
  const CONFIG = {responsive: true, displaylogo: false};
  // The title goes into the HTML caption above the plot, and the room it took off the top margin:
  // plotly.js measures every text it draws (the title and subtitle were 10 of a candidate chart's 57 ms).
  const captionOf = (target) => el(target.id.replace("tbt-fig-", "tbt-cap-"));
  const prepare = (fig, captioned) => {  // -> {data, layout, html}: html is the caption's, null to leave it
    const layout = fig.layout;
    let html = null;
    if (captioned && layout.title) {
      const {text, subtitle} = layout.title;  // plotly's text markup (<b>, <br>, <span>) is HTML; tokens are escaped
      html = `<div class="tbt-cap-title">${text}</div>` + (subtitle ? `<div class="tbt-cap-sub">${subtitle.text}</div>` : "");
      delete layout.title;
      const room = (layout.meta && layout.meta.title_px) || 0;
      layout.margin = {...layout.margin, t: Math.max(20, ((layout.margin && layout.margin.t) || 0) - room)};
    }
    layout.autosize = true;
    return {data: fig.data, layout, html};
  };
  const setCaption = (target, html) => {
    const caption = captionOf(target);
    if (caption && html !== null && caption.dataset.html !== html) { caption.innerHTML = html; caption.dataset.html = html; }
  };
  const draw = (target, fig) => {
    const {data, layout, html} = prepare(fig, !!captionOf(target));
    flipBack(target);
    setCaption(target, html);
    return window.Plotly.react(target, data, layout, CONFIG);
  };
  // Each time a plot shows a new chart, it says so: the benchmarks and tests wait for this event ('tbt-shown';
  // detail: the plot's data-key and data-t, and how: "drawn" now, or "ready", drawn ahead).
  const announce = (target, how, drawn) => Promise.resolve(drawn).then(() => target.dispatchEvent(
    new CustomEvent("tbt-shown", {bubbles: true, detail: {key: target.dataset.key, t: target.dataset.t, how}})));

  // The temperature slider's flipbook. Once the page holds a step's candidate chart at every temperature (the
  // bundle, below), each is drawn ahead, one per idle moment, into a page of its own, stacked hidden over the
  // plot. A move to a temperature whose page is ready shows that page: nothing is drawn, it is on screen at
  // the next frame (a Plotly.react of this chart takes 45-75 ms). A move before its page is ready draws that
  // page then (once: the slider is likely to come back). A new step, or new settings, close the book and show
  // the plot again.
  let flip = {key: null, book: null, figs: null, pages: new Map(), shown: null};
  // A plot out of sight is moved off the page (app.css, [data-tbt-off]), not made invisible: visibility is
  // inherited, so hiding or showing a plot that way re-styled each of its ~950 elements (25-30 ms). And an
  // attribute, not a class: Gradio's style sheet has a [class*=...] rule with a descendant part, so any class
  // change re-styles the whole subtree too.
  const show = (node, on) => {
    if (on) { delete node.dataset.tbtOff; node.removeAttribute("aria-hidden"); }
    else { node.dataset.tbtOff = ""; node.setAttribute("aria-hidden", "true"); }
  };
  function flipBack(target) {  // show the plot itself again
    if (!flip.book || flip.book.parentElement !== target.parentElement) return;
    if (flip.shown) show(flip.shown.div, false);
    flip.shown = null;
    show(target, true);
    target.style.minHeight = "";
  }
  function flipClose(target) {
    flipBack(target);
    if (flip.book) flip.book.remove();  // the pages are not responsive (no window listeners): dropping them frees them
    flip = {key: null, book: null, figs: null, pages: new Map(), shown: null};
  }
  function flipShow(target, t) {  // show the page for temperature t: "ready" (drawn ahead), "drawn" (now), or null
    if (!flip.book || !flip.book.isConnected || flip.book.parentElement !== target.parentElement || !flip.figs[t]) return null;
    const how = flip.pages.has(t) ? "ready" : "drawn";
    if (how === "drawn") flipPage(t);  // drawn once: the slider will likely come back to it
    const page = flip.pages.get(t);
    if (flip.shown && flip.shown !== page) show(flip.shown.div, false);
    if (page.width !== flip.book.clientWidth) {  // the window was resized since the page was drawn
      page.width = flip.book.clientWidth;
      window.Plotly.Plots.resize(page.div);
    }
    show(page.div, true);
    show(target, false);
    target.style.minHeight = `${page.height}px`;  // the plot keeps the room (a page may have a row more)
    flip.shown = page;
    setCaption(target, page.html);
    return how;
  }
  function flipOpen(target, key, figs) {
    if (flip.key === key && flip.book && flip.book.isConnected) return;
    flipClose(target);
    const book = document.createElement("div");
    book.className = "tbt-flipbook";
    target.after(book);
    const from = Number(target.dataset.t);  // nearest temperatures first: where the slider is likely to go
    const todo = Object.keys(figs).sort((a, b) => Math.abs(a - from) - Math.abs(b - from));
    flip = {key, book, figs, pages: new Map(), shown: null};
    const next = () => {
      if (flip.book !== book) return;  // closed meanwhile
      const t = todo.find((x) => !flip.pages.has(x));
      if (t === undefined) return;
      flipPage(t);
      requestIdleCallback(next, {timeout: 1000});
    };
    requestIdleCallback(next, {timeout: 1000});
  }
  function flipPage(t) {  // draw the page of temperature t now
    const {data, layout, html} = prepare(JSON.parse(JSON.stringify(flip.figs[t])), true);  // plotly keeps what it is given
    const div = document.createElement("div");
    div.className = "tbt-flippage";
    show(div, false);
    div.dataset.t = t;
    flip.book.append(div);
    window.Plotly.newPlot(div, data, layout, {displaylogo: false});
    flip.pages.set(t, {div, html, height: layout.height, width: flip.book.clientWidth});
  }
  const sliderT = () => {  // the temperature the slider shows now, as charts name it ("0.70")
    const box = document.querySelector("#tbt-temperature input[type='number']");
    return box && box.value !== "" ? Number(box.value).toFixed(2) : null;
  };
  function drawCharts() {
    if (!window.Plotly) return;
    let stepped = false;
    for (const carrier of document.querySelectorAll(".tbt-figdata")) {
      let target = el(carrier.dataset.target);
      const rev = carrier.dataset.rev;
      if (!target || target.dataset.rev === rev || !carrier.textContent) continue;
      target.dataset.rev = rev;
      const {key, t} = carrier.dataset;  // a candidate chart: what it shows, and at which temperature
      if (key && key === target.dataset.key && (t === target.dataset.t || t !== sliderT())) {
        continue;  // already on screen (drawn from the bundle), or the answer to a move the slider has left
      }
      if (key && key !== target.dataset.key) {  // a candidate chart of another step (or other settings)
        flipClose(target);
        stepped = true;
      }
      const drawnAhead = key ? promote(target, key, t) : null;
      const drawn = drawnAhead ? null : draw(target, JSON.parse(carrier.textContent));
      if (drawnAhead) target = drawnAhead;
      Object.assign(target.dataset, {rev, key: key || "", t: t || "", plotT: t || ""});
      announce(target, drawnAhead ? "ready" : "drawn", drawn);
    }
    const target = el("tbt-fig-candidates"), figs = target && bundleFor(target.dataset.key);
    if (figs) flipOpen(target, target.dataset.key, figs);  // the bundle has arrived: draw its pages ahead
    const next = document.querySelector(".tbt-figahead");
    if (next && next.dataset.rev !== aheadRev) {  // the next step's chart has arrived: draw it when idle
      aheadRev = next.dataset.rev;
      requestIdleCallback(() => drawAhead(aheadRev), {timeout: 1000});
    }
    if (stepped) askAhead();
  }

  // The next step's chart, drawn ahead. After a step (a new text or settings) the page asks for the chart the
  // next Next token will show (app.py, next_chart: from the pass the server computes ahead) and draws it,
  // hidden, into a second plot under the one shown. When the next step's answer names that chart (its key
  // and temperature), the two plots swap places: the step is on screen without a draw. Not while Play runs
  // (the page is busy enough), and only for the candidates tab.
  // The page asks once the step (or a temperature move) has been on screen for AHEAD_AFTER_MS, not at once: a
  // presenter clicking Next again at once would find the page and the server busy with it (back to back, it
  // made a step 30 ms slower).
  const AHEAD_AFTER_MS = 200;
  let ahead = {key: null, t: null, div: null, html: null}, aheadRev = null, aheadTimer = null;
  const askAhead = () => {
    clearTimeout(aheadTimer);
    if (playing || ended()) return;
    aheadTimer = setTimeout(() => requestIdleCallback(() => { if (!playing) click("tbt-ahead-btn"); }), AHEAD_AFTER_MS);
  };
  document.addEventListener("click", (e) => {  // a change asked for meanwhile: the chart ahead would be for nothing
    if (!(e.target.closest && e.target.closest("#tbt-next, #tbt-back, #tbt-reset, #tbt-start, #tbt-force-btn, #tbt-goto-btn, #tbt-play"))) return;
    clearTimeout(aheadTimer);
    if (playing && !e.target.closest("#tbt-play")) window.tbtPlay();  // another step asked for: Play stops
  }, true);
  function drawAhead(rev) {
    const holder = document.querySelector(".tbt-figahead"), target = el("tbt-fig-candidates");
    if (!holder || holder.dataset.rev !== rev || !target || holder.dataset.key === target.dataset.key || playing) return;
    let div = ahead.div;
    if (!div || div.parentElement !== target.parentElement) {
      div = document.createElement("div");
      div.className = "tbt-fig";
      div.dataset.tbtAhead = "";
      show(div, false);
      target.parentElement.append(div);
    }
    const {data, layout, html} = prepare(JSON.parse(holder.textContent), true);
    ahead = {key: null, t: null, div, html};  // not ready while it is being drawn
    window.Plotly.react(div, data, layout, CONFIG);
    ahead.key = holder.dataset.key;
    ahead.t = holder.dataset.t;
  }
  function promote(target, key, t) {  // -> the plot that now shows the chart drawn ahead, or null
    const div = ahead.div;
    if (!div || ahead.key !== key || ahead.t !== t || div.parentElement !== target.parentElement) return null;
    setCaption(target, ahead.html);
    // Only attributes change (see show): neither plot moves in the page, since a move re-styles a subtree too.
    div.id = target.id;
    target.removeAttribute("id");
    for (const name of Object.keys(target.dataset)) delete target.dataset[name];
    delete div.dataset.tbtAhead;
    show(div, true);
    target.dataset.tbtAhead = "";  // the old plot goes out of sight, and takes the next chart drawn ahead
    show(target, false);
    ahead = {key: null, t: null, div: target, html: null};
    return div;
  }

  // The temperature slider: the first touch at a step asks the server for the chart at every temperature
  // (app.py, temperature_charts); from then on each move is drawn at once from those, while the server's
  // own answer to the move (the force list, the same chart) follows.
  let bundle = {key: null, figs: null}, asked = null;
  function bundleFor(key) {
    const holder = document.querySelector(".tbt-figbundle");
    if (!holder || holder.dataset.key !== key) return null;
    if (bundle.key !== key) bundle = {key, figs: JSON.parse(holder.textContent)};
    return bundle.figs;
  }
  function onTemperature(e) {
    if (!(e.target.closest && e.target.closest("#tbt-temperature"))) return;
    const target = el("tbt-fig-candidates");
    const key = target && target.dataset.key;
    if (!key || !window.Plotly) return;
    const figs = bundleFor(key);
    if (!figs) {
      if (asked !== key) { asked = key; click("tbt-bundle-btn"); }
      return;
    }
    // A move's own value (the number box follows the range input a moment later)
    const t = e.type === "input" && e.target.value !== "" ? Number(e.target.value).toFixed(2) : sliderT();
    const fig = figs[t];
    if (!fig || t === target.dataset.t) return;
    flipOpen(target, key, figs);
    let drawn = null, how = "ready";
    if (t === target.dataset.plotT) flipBack(target);  // the plot itself holds this temperature's chart
    else how = flipShow(target, t);
    if (!how) {  // no book (the plot is not in the page's stack): draw into the plot
      drawn = draw(target, JSON.parse(JSON.stringify(fig)));  // plotly keeps what it is given: give it a copy
      target.dataset.plotT = t;
      how = "drawn";
    }
    target.dataset.t = t;
    announce(target, how, drawn);
    askAhead();  // the next step's chart at this temperature, once the slider rests
  }
  document.addEventListener("input", onTemperature, true);
  document.addEventListener("pointerdown", onTemperature, true);
  document.addEventListener("focusin", onTemperature, true);
  // A chart is drawn as soon as its answer is in the page, a frame sooner than at the next frame. A Play step
  // is said taken first (its carrier is read in this same task, so the next step cannot overwrite it).
  const scheduleDraw = () => { taken(); drawCharts(); };
  new MutationObserver(scheduleDraw).observe(document.documentElement, {childList: true, subtree: true, characterData: true,
                                                                       attributes: true, attributeFilter: ["data-rev"]});

  document.addEventListener("keydown", (e) => {
    const tag = (e.target && e.target.tagName) || "";
    if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || e.target.isContentEditable || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "ArrowRight" || e.key === "n" || e.key === "N") { click("tbt-next"); e.preventDefault(); }
    else if (e.key === "ArrowLeft" || e.key === "b" || e.key === "B") { click("tbt-back"); e.preventDefault(); }
    else if (e.key === "p" || e.key === "P") { click("tbt-play"); e.preventDefault(); }
  });

  // A click on a generated chip goes back to that step: the text up to just before it, its candidates shown.
  document.addEventListener("click", (e) => {
    const chip = e.target.closest && e.target.closest("#tbt-chips .tbt-gen");
    if (!chip) return;
    window.tbtGotoStep = Number(chip.dataset.step) - 1;
    click("tbt-goto-btn");
  });
})();
</script>
