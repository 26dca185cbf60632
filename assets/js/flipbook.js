// Token by Token, the temperature slider: the bundle (the stepping chart at every temperature, asked for at the
// slider's first touch at a step) and the flipbook drawn from it, so each move shows at once, while the server's
// own answer to the move (the force list, the same chart) follows. Imports charts.js and ahead.js.
import {T, announce, carried, click, draw, plotConfig, prepare, setCaption, show, steppingPlot} from "./charts.js";
import {askAhead} from "./ahead.js";

const env = T.envelope, parts = T.parts;
// The flipbook. Once the page holds a step's candidate chart at every temperature (the bundle), each is drawn
// ahead, one per idle moment, into a page of its own, stacked hidden over the plot. A move to a temperature
// whose page is ready shows that page: nothing is drawn, it is on screen at the next frame (a Plotly.react of
// this chart takes 45-75 ms). A move before its page is ready draws that page then (once: the slider is likely
// to come back). A new step, or new settings, close the book and show the plot again.
let flip = {key: null, book: null, figs: null, pages: new Map(), shown: null};
export const flipBack = (target) => {  // show the plot itself again
  if (!flip.book || flip.book.parentElement !== target.parentElement) return;
  if (flip.shown) show(flip.shown.div, false);
  flip.shown = null;
  show(target, true);
  target.style.minHeight = "";
};
export const flipClose = (target) => {
  flipBack(target);
  if (flip.book) flip.book.remove();  // the pages are not responsive (no window listeners): dropping them frees them
  flip = {key: null, book: null, figs: null, pages: new Map(), shown: null};
};
// Draw a chart into the plot itself: a page of the book shown over it is put away first
export const drawPlot = (target, fig) => {
  flipBack(target);
  return draw(target, fig);
};
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
  book.className = parts.flipbook;
  target.after(book);
  const from = Number(target.dataset[env.temperature]);  // nearest temperatures first: where the slider is likely to go
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
  const {data, layout, html} = prepare(JSON.parse(JSON.stringify(flip.figs[t])), true, flip.book.clientWidth);  // plotly keeps what it is given
  const div = document.createElement("div");
  div.className = parts.flippage;
  show(div, false);
  div.dataset[env.temperature] = t;
  flip.book.append(div);
  window.Plotly.newPlot(div, data, layout, {...plotConfig(), responsive: false});
  flip.pages.set(t, {div, html, height: layout.height, width: flip.book.clientWidth});
}

// The bundle, parsed once per key
let bundle = {key: null, figs: null}, asked = null;
function bundleFor(key) {
  const holder = carried("bundle")[0];
  if (!holder || holder.dataset[env.key] !== key) return null;
  if (bundle.key !== key) bundle = {key, figs: JSON.parse(holder.textContent)};
  return bundle.figs;
}
export const openBundle = () => {  // after the charts are drawn: if the bundle of the chart shown has arrived, open its book
  const target = steppingPlot(), figs = target && bundleFor(target.dataset[env.key]);
  if (figs) flipOpen(target, target.dataset[env.key], figs);
};
const SLIDER = "#" + CSS.escape(T.ids.temperature), NUMBER = `${SLIDER} input[type='number']`;
export const sliderT = () => {  // the temperature the slider shows now, as charts name it ("0.70")
  const box = document.querySelector(NUMBER);
  return box && box.value !== "" ? Number(box.value).toFixed(T.temperature_decimals) : null;
};
function onTemperature(e) {
  if (!(e.target.closest && e.target.closest(SLIDER))) return;
  const target = steppingPlot();
  const key = target && target.dataset[env.key];
  if (!key || !window.Plotly) return;
  const figs = bundleFor(key);
  if (!figs) {
    if (asked !== key) { asked = key; click(T.triggers.bundle); }
    return;
  }
  // A move's own value (the number box follows the range input a moment later)
  const t = e.type === "input" && e.target.value !== "" ? Number(e.target.value).toFixed(T.temperature_decimals) : sliderT();
  const fig = figs[t];
  if (!fig || t === target.dataset[env.temperature]) return;
  flipOpen(target, key, figs);
  let drawn = null, how = "ready";
  if (t === target.dataset[parts.plot_temperature]) flipBack(target);  // the plot itself holds this temperature's chart
  else how = flipShow(target, t);
  if (!how) {  // no book (the plot is not in the page's stack): draw into the plot
    drawn = drawPlot(target, JSON.parse(JSON.stringify(fig)));  // plotly keeps what it is given: give it a copy
    target.dataset[parts.plot_temperature] = t;
    how = "drawn";
  }
  target.dataset[env.temperature] = t;
  announce(target, how, drawn);
  askAhead();  // the next step's chart at this temperature, once the slider rests
}
document.addEventListener("input", onTemperature, true);
document.addEventListener("pointerdown", onTemperature, true);
document.addEventListener("focusin", onTemperature, true);
