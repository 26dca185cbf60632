// Token by Token, a pressed button's wait said on the button itself. Imports charts.js only.
// Every listener of a button a reader presses and then waits on (ui/events.py Event.busy: the views' runs, the
// measurements, the lessons, the imports, Start) calls busy(id) from its js= snippet as it is sent, and done(id, ids)
// once it has ended, answered (a .then) or refused (a .failure: Gradio runs no .then after an error): one place for every such event, none per view.
//   busy:  the button disabled at once (no second press queues the same work again); after the first second, its
//          elapsed seconds written on it, "of about N s" once this page has seen it run before;
//   done:  the button back as it was, and the first of the event's outputs that shows in the open tab scrolled into
//          view under what is pinned at the top (the text panel; on a phone the step buttons too).
import {T, el, pinnedHeight} from "./charts.js";

const SHOW_AFTER_MS = 1000, TICK_MS = 250;
const running = new Map();  // button id -> {started, timer, disabledBefore}
const took = new Map();  // button id -> ms its last run took (this page's estimate of the next)
export const pageLang = () => {
  const box = el(T.ids.lang), on = box && box.querySelector("input:checked");
  return on && on.value === "zh" ? "zh" : "en";
};
export const word = (key, fmt = {}) => {
  const text = (T.words[key] || {})[pageLang()] || (T.words[key] || {}).en || key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in fmt ? String(fmt[name]) : `{${name}}`));
};
const ATTR = "data-tbt-busy";

function tick(id) {
  const run = running.get(id), button = el(id);
  if (!run || !button) return;
  const ms = Date.now() - run.started;
  if (ms < SHOW_AFTER_MS) return;
  const s = Math.floor(ms / 1000), before = took.get(id);
  const text = before && before > ms ? word("busy_estimate", {s, total: Math.max(s + 1, Math.round(before / 1000))})
    : word("busy_running", {s});
  if (button.getAttribute(ATTR) !== text) button.setAttribute(ATTR, text);
}

export function busy(id) {
  const button = el(id);
  if (!button) return;
  const old = running.get(id);
  if (old) clearInterval(old.timer);
  const run = {started: Date.now(), disabledBefore: old ? old.disabledBefore : button.disabled};
  run.timer = setInterval(() => tick(id), TICK_MS);
  running.set(id, run);
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
}

export function done(id, outputs) {
  const run = running.get(id), button = el(id);
  if (run) {
    clearInterval(run.timer);
    running.delete(id);
    took.set(id, Date.now() - run.started);
  }
  if (button) {
    button.removeAttribute(ATTR);
    button.removeAttribute("aria-busy");
    if (run && !run.disabledBefore) button.disabled = false;
  }
  // the answer into view, once the page has drawn it (two frames: Gradio's update, then the chart's)
  requestAnimationFrame(() => requestAnimationFrame(() => intoView(outputs || [])));
}

// What the event answered: the first of its outputs that shows in the open tab (not a hidden carrier, nor the text
// panel or the settings beside it, which a view's event may also write), a chart's carrier standing for the plot it
// draws into with its caption. It is scrolled into view under what is pinned, unless it is on screen already: its
// bottom brought up if it fits the room, else its top just under the pinned panel.
function shownBy(id) {
  const node = el(id);
  if (!node) return [];
  if (Object.values(T.carriers).includes(id)) {
    const carried = node.querySelector(`[data-${T.envelope.target}]`);
    const plot = carried && el(carried.dataset[T.envelope.target]), stack = plot && plot.closest("." + T.parts.stack);
    return stack ? [stack.previousElementSibling, stack].filter(Boolean) : [];
  }
  return [node];
}
const answerOf = (node) => node.checkVisibility() && node.getBoundingClientRect().height > 0 &&
  !node.closest(".tbt-hidden, .tbt-controls") && !node.closest("#" + CSS.escape(T.carriers.text));
function intoView(ids) {
  const nodes = ids.map((id) => shownBy(id).filter(answerOf)).find((found) => found.length);
  if (!nodes) return;
  const boxes = nodes.map((node) => node.getBoundingClientRect());
  const top = Math.min(...boxes.map((b) => b.top)), bottom = Math.max(...boxes.map((b) => b.bottom));
  const pinned = pinnedHeight(), room = innerHeight - pinned - 8;
  if (top >= pinned && bottom <= innerHeight) return;
  const by = bottom - top <= room && top >= pinned ? bottom - innerHeight + 8 : top - pinned - 8;
  if (Math.abs(by) > 2) scrollBy({top: by, behavior: "instant"});
}

window[T.globals.busy] = busy;
window[T.globals.done] = done;
