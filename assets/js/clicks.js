// Token by Token, clicks on a chart: a point of a plot whose tab is in T.step_on_click carries its step number
// as customdata; a click on it goes back to that step, exactly as a click on the step's chip does (play.js).
// Imports charts.js only.
import {T, gotoStep} from "./charts.js";

const plots = new Set(T.step_on_click.map((tab) => T.chart.plot + tab));
const listening = new WeakSet();  // the plots with a click listener (Plotly.react keeps it across redraws)
// The step s of a point: go to s - 1, the text just before step s's token, with the candidates it came from.
const goBack = (e) => {
  const point = e && e.points && e.points[0];
  const step = point ? Number(point.customdata) : NaN;
  if (!Number.isInteger(step) || step < 1) return;
  gotoStep(step - 1);
};
// A plot gets its listener the first time it shows a chart (charts.js announces each one).
document.addEventListener(T.shown_event, (e) => {
  const plot = e.target;
  if (!plots.has(plot.id) || listening.has(plot) || typeof plot.on !== "function") return;
  listening.add(plot);
  plot.on("plotly_click", goBack);
});
