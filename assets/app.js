<script>
// Token by Token: presenter keys, Play loop, and clicking a token chip to go back to that step.
(() => {
  const el = (id) => document.getElementById(id);
  const marker = () => { const m = el("tbt-marker"); return m ? m.dataset.rev : null; };
  const ended = () => { const m = el("tbt-marker"); return m && m.dataset.ended === "1"; };
  const click = (id) => { const b = el(id); if (b) b.click(); };

  // Resolves true as soon as the page shows a step other than `rev` (false after timeoutMs).
  function waitForNewStep(rev, timeoutMs) {
    return new Promise((resolve) => {
      if (marker() !== rev) return resolve(true);
      const observer = new MutationObserver(() => { if (marker() !== rev) done(true); });
      const timer = setTimeout(() => done(false), timeoutMs);
      const done = (shown) => { observer.disconnect(); clearTimeout(timer); resolve(shown); };
      observer.observe(document.documentElement, {childList: true, subtree: true, attributes: true,
                                                  attributeFilter: ["data-rev"]});
    });
  }

  // Play: press Next token, wait until the page shows the new step, repeat (n at most). Each step is its own
  // request, so a playing presenter never holds the server for others.
  let playing = false;
  window.tbtPlay = async (n) => {
    if (playing) { playing = false; return; }
    playing = true;
    const button = el("tbt-play");
    const label = button ? button.textContent : "";
    if (button) button.textContent = "⏸ " + label;
    for (let i = 0; i < (Number(n) || 20) && playing && !ended(); i++) {
      const rev = marker();
      click("tbt-next");
      // The next click goes out as soon as the page has taken this answer (a click while Gradio still holds
      // the event is dropped), before its charts are drawn at the next frame (below): the server computes
      // the next step while the browser draws this one.
      if (!(await waitForNewStep(rev, 20000))) break;
      await new Promise((r) => setTimeout(r, 0));
    }
    playing = false;
    if (button) button.textContent = label;
  };

  // Charts: each figure arrives as plotly JSON in a hidden carrier (viz.page.figure_carrier) and is drawn
  // with Plotly.react into its plot, which stays on the page: a step re-draws the chart in place, once.
  const CONFIG = {responsive: true, displaylogo: false};
  // The title goes into the HTML caption above the plot, and the room it took off the top margin:
  // plotly.js measures every text it draws (the title and subtitle were 10 of a candidate chart's 57 ms).
  const draw = (target, fig) => {
    const layout = fig.layout, caption = el(target.id.replace("tbt-fig-", "tbt-cap-"));
    if (caption && layout.title) {
      const {text, subtitle} = layout.title;  // plotly's text markup (<b>, <br>, <span>) is HTML; tokens are escaped
      const html = `<div class="tbt-cap-title">${text}</div>` + (subtitle ? `<div class="tbt-cap-sub">${subtitle.text}</div>` : "");
      if (caption.dataset.html !== html) { caption.innerHTML = html; caption.dataset.html = html; }
      delete layout.title;
      const room = (layout.meta && layout.meta.title_px) || 0;
      layout.margin = {...layout.margin, t: Math.max(20, ((layout.margin && layout.margin.t) || 0) - room)};
    }
    layout.autosize = true;
    window.Plotly.react(target, fig.data, layout, CONFIG);
  };
  const sliderT = () => {  // the temperature the slider shows now, as charts name it ("0.70")
    const box = document.querySelector("#tbt-temperature input[type='number']");
    return box && box.value !== "" ? Number(box.value).toFixed(2) : null;
  };
  function drawCharts() {
    if (!window.Plotly) return;
    for (const carrier of document.querySelectorAll(".tbt-figdata")) {
      const target = el(carrier.dataset.target);
      const rev = carrier.dataset.rev;
      if (!target || target.dataset.rev === rev || !carrier.textContent) continue;
      target.dataset.rev = rev;
      const {key, t} = carrier.dataset;  // a candidate chart: what it shows, and at which temperature
      if (key && key === target.dataset.key && (t === target.dataset.t || t !== sliderT())) {
        continue;  // already on screen (drawn from the bundle), or the answer to a move the slider has left
      }
      draw(target, JSON.parse(carrier.textContent));
      target.dataset.key = key || "";
      target.dataset.t = t || "";
    }
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
    draw(target, JSON.parse(JSON.stringify(fig)));  // plotly keeps what it is given: give it a copy
    target.dataset.t = t;
  }
  document.addEventListener("input", onTemperature, true);
  document.addEventListener("pointerdown", onTemperature, true);
  document.addEventListener("focusin", onTemperature, true);
  // A chart is drawn as soon as its answer is in the page, a frame sooner than at the next frame. While Play
  // runs it waits for that frame instead, so that Play's next click goes out first (see tbtPlay).
  let drawPending = false;
  const scheduleDraw = () => {
    if (drawPending) return;
    if (!playing) return drawCharts();
    drawPending = true;
    requestAnimationFrame(() => { drawPending = false; drawCharts(); });
  };
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
