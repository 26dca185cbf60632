// Token by Token, the page's one entry module (ui/protocol.py page_assets loads it; it imports the rest). The
// modules import in one direction, each only from those below it:
//   charts.js <- play.js <- ahead.js <- flipbook.js <- page.js, charts.js <- clicks.js <- page.js, and
//   charts.js <- presenter.js <- page.js (the keys, presenter mode, the chips box following the newest token), and
//   charts.js <- nav.js <- page.js (the parts of the story over the tab row), charts.js <- busy.js <- page.js (a pressed
//   button's wait), charts.js <- busy.js <- own_words.js <- page.js (Gradio's own words in the page's language).
// This module says what happens when a carrier changes: each chart that arrives drawn (or the one drawn ahead
// shown), the flipbook and the chart ahead told. The page's window surface, all of it:
//   read:    window.TBT (the protocol, ui/protocol.py), window.Plotly (plotly.js), window.gradio_config (Gradio);
//   written: window[T.globals.play] and window[T.globals.play_ended] (below), which the Play button's listeners
//            call from their js= snippets (ui/play.py), window[T.globals.goto_step] (charts.gotoStep), which
//            the goto listener's js= snippet reads (ui/controls.py), window[T.globals.open_head] (clicks.js),
//            which the open_head listener's reads (ui/views/heads.py), and window[T.globals.busy] and
//            window[T.globals.done] (busy.js), which every pressed button's listeners call (ui/events.py Event.busy).
//            No module reaches another through window.
import {T, announce, carried, el, onOtherShape, otherShape, refitAll, steppingPlot, watchCarriers, whenPresent} from "./charts.js";
import {playEnded, taken, togglePlay} from "./play.js";
import {askAhead, cancelAhead, dropAhead, promote, takeAhead} from "./ahead.js";
import {drawPlot, flipClose, openBundle, sliderT} from "./flipbook.js";
import {followChips, onPredict, whenSwitched} from "./presenter.js";
import "./clicks.js";
import "./nav.js";
import "./busy.js";
import "./own_words.js";

const env = T.envelope, parts = T.parts;

function drawCharts() {
  if (!window.Plotly) return;  // (drawn once it has loaded: see below)
  let stepped = false;
  for (const carrier of carried("figure")) {
    const id = carrier.dataset[env.target], rev = carrier.dataset[env.revision];
    let target = el(id);
    if (!target) { awaitPlot(id); continue; }  // its tab is not rendered yet
    if (target.dataset[env.revision] === rev || !carrier.textContent) continue;
    target.dataset[env.revision] = rev;
    // a candidate chart: what it shows, and at which temperature
    const key = carrier.dataset[env.key], t = carrier.dataset[env.temperature];
    if (key && key === target.dataset[env.key] && (t === target.dataset[env.temperature] || t !== sliderT())) {
      continue;  // already on screen (drawn from the bundle), or the answer to a move the slider has left
    }
    if (key && key !== target.dataset[env.key]) {  // a candidate chart of another step (or other settings)
      flipClose(target);
      stepped = true;
    }
    const drawnAhead = key ? promote(target, key, t) : null;
    const drawn = drawnAhead ? null : drawPlot(target, JSON.parse(carrier.textContent));
    if (drawnAhead) target = drawnAhead;
    Object.assign(target.dataset, {[env.revision]: rev, [env.key]: key || "", [env.temperature]: t || "",
                                   [parts.plot_temperature]: t || ""});
    announce(target, drawnAhead ? "ready" : "drawn", drawn);
  }
  openBundle();  // flipbook.js: the bundle has arrived: draw its pages ahead
  takeAhead();  // ahead.js: the next step's chart has arrived: draw it when idle
  if (stepped) askAhead();
}
// A chart is drawn as soon as its answer is in the page, a frame sooner than at the next frame. A Play step
// is said taken first (its carrier is read in this same task, so the next step cannot overwrite it).
const react = () => { taken(); followChips(); drawCharts(); };
const plotly = el(T.ids.plotly_js);
if (plotly && !window.Plotly) plotly.addEventListener("load", react, {once: true});

const awaited = new Set();
function awaitPlot(id) {  // a chart for a plot not in the page yet: drawn once the plot is
  if (awaited.has(id)) return;
  awaited.add(id);
  whenPresent([id], () => { awaited.delete(id); react(); });
}

// Play, for the Play button's listeners (ui/play.py): started, no chart is asked for ahead; ended, one is.
window[T.globals.play] = () => { if (togglePlay()) cancelAhead(); };
window[T.globals.play_ended] = () => { if (playEnded()) askAhead(); };

// A window that turns narrow or wide (a phone turned, a window resized past T.fit.narrow_px): each chart of the
// open tab drawn again for its new shape (charts.js narrow: one plot at a time on a phone), the flipbook's pages
// and the chart ahead too; another tab's when it is opened (its plot's box changes: charts.js onOtherShape).
// (Between, a resize only re-lays a plot out for its box's width: charts.js fitWidth.)
function drawForShape(all) {
  if (!window.Plotly) return;
  const shown = carried("figure").map((carrier) => [carrier, el(carrier.dataset[env.target])])
    // (the open tab's: a plot in a hidden tab has no width to lay out for)
    .filter(([carrier, target]) => target && target.offsetParent !== null && carrier.textContent &&
            target.dataset[env.revision] && (all || otherShape(target)));
  if (!all && !shown.length) return;
  const stepping = steppingPlot();
  if (all || shown.some(([, target]) => target === stepping)) {
    if (stepping) flipClose(stepping);
    dropAhead();
  }
  for (const [carrier, target] of shown) drawPlot(target, JSON.parse(carrier.textContent));
  openBundle();
  takeAhead();
}
// (two frames later: the page has its new width by then; drawn in this event, plotly took the box's old one)
matchMedia(`(max-width: ${T.fit.narrow_px - 0.02}px)`).addEventListener("change", () => {
  requestAnimationFrame(() => requestAnimationFrame(() => drawForShape(true)));
});
onOtherShape(() => drawForShape(false));
onPredict(() => drawForShape(true));  // predict first switched: the open tab's charts with their draw hidden or shown
// Presenter mode switched: the open tab's charts drawn again at once in their new type size, the flipbook's pages and
// the chart ahead too, Gradio's plots re-fitted (charts.js refitAll); another tab's when it is opened (its shape)
whenSwitched(() => { drawForShape(true); refitAll(); });
setTimeout(() => watchCarriers(react));  // once the page's other scripts have run: what arrives is theirs too
