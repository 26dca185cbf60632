// Token by Token, clicks on a chart: a point of a plot whose tab is in T.step_on_click carries its step number
// as customdata; a click on it goes back to that step, exactly as a click on the step's chip does (play.js).
// A cell of a plot whose tab is in T.head_on_click carries [layer, head, ...]: a click on it opens that head in
// the Attention view (the open_head listener's js= snippet reads window[T.globals.open_head], ui/views/heads.py).
// Imports charts.js only.
import {T, click, gotoStep} from "./charts.js";

const steps = new Set(T.step_on_click.map((tab) => T.chart.plot + tab));
const heads = new Set(T.head_on_click.map((tab) => T.chart.plot + tab));
const listening = new WeakSet();  // the plots with a click listener (Plotly.react keeps it across redraws)
const pointOf = (e) => e && e.points && e.points[0];
// The step s of a point: go to s - 1, the text just before step s's token, with the candidates it came from.
const goBack = (e) => {
  const point = pointOf(e);
  const step = point ? Number(point.customdata) : NaN;
  if (!Number.isInteger(step) || step < 1) return;
  gotoStep(step - 1);
};
// The head of a cell: its layer and head, handed to the server as "layer,head".
const openHead = (e) => {
  const point = pointOf(e), data = point && point.customdata;
  if (!Array.isArray(data) || !Number.isInteger(data[0]) || !Number.isInteger(data[1])) return;
  window[T.globals.open_head] = `${data[0]},${data[1]}`;
  click(T.triggers.open_head);
};
// A plot gets its listener the first time it shows a chart (charts.js announces each one).
document.addEventListener(T.shown_event, (e) => {
  const plot = e.target;
  const listener = steps.has(plot.id) ? goBack : heads.has(plot.id) ? openHead : null;
  if (!listener || listening.has(plot) || typeof plot.on !== "function") return;
  listening.add(plot);
  plot.on("plotly_click", listener);
});
