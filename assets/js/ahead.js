// Token by Token, the next step's chart drawn ahead. After a step (a new text or settings) the page asks for
// the chart the next Next token will show (next_chart: from the pass the server computes ahead) and draws it,
// hidden, into a second plot under the one shown. When the next step's answer names that chart (its key and
// temperature), the two plots swap places: the step is on screen without a draw. Not while Play runs (the
// page is busy enough), and only for the stepping tab's chart (T.stepping_tab). Imports charts.js and play.js.
import {T, CHANGES, carried, drawnFor, plotConfig, click, ended, prepare, setCaption, show, steppingPlot} from "./charts.js";
import {isPlaying} from "./play.js";

const env = T.envelope, parts = T.parts;
// The page asks once the step (or a temperature move) has been on screen for T.ahead_after_ms, not at once:
// a presenter clicking Next again at once would find the page and the server busy with it (back to back, it
// made a step 30 ms slower).
// Nor when the step's status line says data-ahead="0": the server is busy with a class (ui/state.py AheadPolicy),
// and asking would make each step two events.
let ahead = {key: null, t: null, div: null, html: null}, aheadRev = null, aheadTimer = null;
export const cancelAhead = () => clearTimeout(aheadTimer);
const serverBusy = () => document.getElementById(T.ids.marker)?.dataset[T.marker.ahead] === "0";
export const askAhead = () => {
  clearTimeout(aheadTimer);
  if (isPlaying() || ended() || serverBusy()) return;
  aheadTimer = setTimeout(() => requestIdleCallback(() => { if (!isPlaying()) click(T.triggers.ahead); }),
                          T.ahead_after_ms);
};
// A change asked for meanwhile: the chart ahead would be for nothing (and Play stops: play.js)
document.addEventListener("click", (e) => {
  if (e.target.closest && e.target.closest(CHANGES)) clearTimeout(aheadTimer);
}, true);

// The chart drawn ahead was laid out for another width (a phone turned): drawn again when next taken
export const dropAhead = () => { ahead.key = null; aheadRev = null; };
export const takeAhead = () => {  // the next step's chart has arrived (or not): draw it when idle
  const next = carried("ahead")[0];
  if (next && next.dataset[env.revision] !== aheadRev) {
    aheadRev = next.dataset[env.revision];
    requestIdleCallback(() => drawAhead(aheadRev), {timeout: 1000});
  }
};
function drawAhead(rev) {
  const holder = carried("ahead")[0], target = steppingPlot();
  if (!holder || holder.dataset[env.revision] !== rev || !target ||
      holder.dataset[env.key] === target.dataset[env.key] || isPlaying()) return;
  let div = ahead.div;
  if (!div || div.parentElement !== target.parentElement) {
    div = document.createElement("div");
    div.className = parts.plot;
    div.setAttribute(parts.drawn_ahead, "");
    show(div, false);
    target.parentElement.append(div);
  }
  const {data, layout, html} = prepare(JSON.parse(holder.textContent), true, target.clientWidth);
  ahead = {key: null, t: null, div, html};  // not ready while it is being drawn
  drawnFor(div);
  window.Plotly.react(div, data, layout, plotConfig());
  ahead.key = holder.dataset[env.key];
  ahead.t = holder.dataset[env.temperature];
}
export const promote = (target, key, t) => {  // -> the plot that now shows the chart drawn ahead, or null
  const div = ahead.div;
  if (!div || ahead.key !== key || ahead.t !== t || div.parentElement !== target.parentElement) return null;
  setCaption(target, ahead.html);
  // Only attributes change (see charts.show): neither plot moves in the page, since a move re-styles a subtree too.
  div.id = target.id;
  target.removeAttribute("id");
  for (const name of Object.keys(target.dataset)) delete target.dataset[name];
  div.removeAttribute(parts.drawn_ahead);
  show(div, true);
  target.setAttribute(parts.drawn_ahead, "");  // the old plot goes out of sight, and takes the next chart drawn ahead
  show(target, false);
  ahead = {key: null, t: null, div: target, html: null};
  return div;
};
