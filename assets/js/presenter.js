// Token by Token, the presenter's page: the keys a clicker or a keyboard sends, the chart area blanked, the keys
// shown, the chips box following the newest token, presenter mode and predict first (remembered in this browser).
// Imports charts.js only; page.js calls followChips each time the text changes, and onPredict once.
//
// Keys (none fires while typing in a field, nor with Ctrl, Alt or Meta):
//   PageDown, →, N   next token          PageUp, ←   back one token
//   P                play / pause        . or B      blank the chart area (again: show it)
//   ?                show the keys (again, or Esc: hide them)
import {T, click, el} from "./charts.js";

const root = document.documentElement;
const flag = (name, on) => { if (on) root.setAttribute(name, ""); else root.removeAttribute(name); };
const BLANK = "data-tbt-blank", KEYS = "data-tbt-keys", PRESENTER = T.presenter.attribute;

// ---- the chips box follows the newest token ------------------------------------------------------------------
// Each step replaces the box (the text arrives as one HTML), which then shows its top: the newest chip is at its
// end. The box scrolls to its end unless its reader scrolled it back; then it keeps their place.
let following = true, kept = 0;
const CHIPS = "." + T.chips.box;
const chipsBox = () => { const text = el(T.ids.chips); return text && text.querySelector(CHIPS); };
document.addEventListener("scroll", (e) => {
  const box = e.target;
  if (!box || !box.matches || !box.matches(CHIPS) || !box.closest("#" + CSS.escape(T.ids.chips))) return;
  following = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  kept = box.scrollTop;
}, true);
export function followChips() {
  // the decoded text shows its newest line (on a phone it has one: app.css)
  const text = el(T.ids.chips), decoded = text && text.querySelector("." + T.chips.decoded);
  if (decoded) decoded.scrollTop = decoded.scrollHeight;
  const box = chipsBox();
  if (!box || box.scrollHeight <= box.clientHeight) { following = true; return; }
  box.scrollTop = following ? box.scrollHeight : kept;
}

// The open tab's chart in view under the text panel (which app.css keeps at the top; on a phone under the step
// buttons): after a step, a chart whose bottom is below the window while it is partly in view is scrolled up, never
// under the panel; one that fits below the panel but whose top went under it (the panel grew as the chips filled
// their lines, or the page moved as a chart was swapped) is scrolled back down until its top is clear. A page
// scrolled elsewhere (the chart out of view) is left where its reader put it.
// Not before the reader's first key or touch: the page opens on its first screen (the title, the switches, the
// navigation), not scrolled 138 px past them to the first chart drawn
let touched = false;
for (const kind of ["keydown", "pointerdown", "wheel", "touchstart"]) {
  addEventListener(kind, () => { touched = true; }, {capture: true, passive: true});
}
document.addEventListener(T.shown_event, (e) => {
  if (!touched) return;
  const plot = e.target.closest ? e.target.closest("." + T.parts.stack) : null;
  const text = el(T.carriers.text);
  if (!plot || !text || plot.offsetParent === null) return;
  const box = plot.getBoundingClientRect(), caption = plot.previousElementSibling;
  const top = caption ? caption.getBoundingClientRect().top : box.top;
  const panel = text.getBoundingClientRect(), panelTop = parseFloat(getComputedStyle(text).top) || 0;
  if (top >= innerHeight || box.bottom <= panel.bottom) return;
  // The panel sticks once the page has gone up by `toStick` (it was lower on the page: the first steps): the room
  // and the chart's clearance are counted from where it will be then, its bottom at `stuck`
  const toStick = Math.max(0, panel.top - panelTop), stuck = panelTop + panel.height;
  // (a taller chart: its reader scrolls it, and keeps it). What must stay clear of the panel: the caption and the
  // plot where both fit under it, else the plot alone (charts.js fitScreen gave it the caption's room)
  const room = innerHeight - stuck - 8, fits = box.bottom - top <= room, plotFits = box.bottom - box.top <= room;
  const clear = fits || !plotFits ? top : box.top;
  // how far it can go up and stay clear (while the panel goes up with the page, the gap between them holds)
  const upTo = Math.max(clear - panel.bottom >= 8 ? toStick : 0, clear - stuck - 8);
  const by = box.bottom > innerHeight ? Math.min(box.bottom - innerHeight + 8, Math.max(0, upTo))
    : (fits || plotFits) && !toStick ? Math.min(0, clear - panel.bottom - 8) : 0;  // or back down, from under it
  if (by) scrollBy({top: by, behavior: "instant"});
});

// ---- keys ----------------------------------------------------------------------------------------------------
const NEXT = new Set(["PageDown", "ArrowRight", "n", "N"]), BACK = new Set(["PageUp", "ArrowLeft"]);
const PLAY = new Set(["p", "P"]), BLANKING = new Set([".", "b", "B"]);
// (a checkbox is not typed in: a teacher who has just ticked presenter mode presses the clicker's next at once)
const typing = (target) => {
  const tag = (target && target.tagName) || "";
  if (tag === "INPUT" && target.type === "checkbox") return false;
  return ["INPUT", "TEXTAREA", "SELECT"].includes(tag) || (target && target.isContentEditable);
};
document.addEventListener("keydown", (e) => {
  if (typing(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
  const blank = root.hasAttribute(BLANK);
  if (e.key === "?") flag(KEYS, !root.hasAttribute(KEYS));
  else if (e.key === "Escape" && (root.hasAttribute(KEYS) || blank)) { flag(KEYS, false); flag(BLANK, false); }
  else if (BLANKING.has(e.key)) flag(BLANK, !blank);
  else if (NEXT.has(e.key)) { flag(BLANK, false); click(T.ids.next); }
  else if (BACK.has(e.key)) { flag(BLANK, false); click(T.ids.back); }
  else if (PLAY.has(e.key)) { flag(BLANK, false); click(T.ids.play); }
  else return;
  e.preventDefault();
});

// ---- presenter mode, and predict first ------------------------------------------------------------------------
// Two switches in the header (ui/controls.py), read by this page's script alone and remembered in this browser
// (localStorage), each an attribute on <html> while it is on:
//   presenter mode (T.ids.presenter): larger type for text, captions and charts, a high contrast look, the settings
//     folded away (app.css, [data-tbt-presenter]); a projector's mode: on a narrow screen (a phone, below
//     T.fit.narrow_px) the page keeps its phone layout while the switch stays on, and takes it up when the window
//     is wide again (a phone's 390 px cannot hold the projector's type: its Next token ran out of the pinned row,
//     chart texts over one another);
//   predict first (T.ids.predict): a candidate chart drawn without the token its draw picks, nor u (charts.js
//     hideDraw), so the class can guess before Next shows it. Only what is drawn: the page sends nothing of it.
let predictChanged = () => {};
export const onPredict = (redraw) => { predictChanged = redraw; };  // page.js: the open tab's charts drawn again
let presenterChanged = () => {};
// page.js: what draws again the charts on screen in their new type size (else they stayed as drawn until the next step)
export const whenSwitched = (redraw) => { presenterChanged = redraw; };
const SWITCHES = [
  {id: T.ids.presenter, store: "tbt-presenter", attribute: PRESENTER, wide: true,
   // each chart re-laid out for its new box (Gradio's by plotly, the page's by charts.js)
   changed: () => { dispatchEvent(new Event("resize")); presenterChanged(); }},
  {id: T.ids.predict, store: "tbt-predict", attribute: T.predict.attribute, changed: () => predictChanged()},
];
const switchedOn = new Map();  // switch -> on, as its user left it (its attribute: on, and the screen wide if it must be)
const isOn = (sw) => switchedOn.get(sw);
const remembered = (sw) => { try { return localStorage.getItem(sw.store) === "1"; } catch (_) { return false; } };
// The attribute as the switch and the screen say; true if that changed it
const apply = (sw) => {
  const on = switchedOn.get(sw) && (!sw.wide || innerWidth >= T.fit.narrow_px);
  if (on === root.hasAttribute(sw.attribute)) return false;
  flag(sw.attribute, on);
  return true;
};
function setSwitch(sw, on) {
  if (on === isOn(sw)) return;
  switchedOn.set(sw, on);
  try { localStorage.setItem(sw.store, on ? "1" : "0"); } catch (_) { /* private mode: not remembered */ }
  if (apply(sw)) sw.changed();
}
for (const sw of SWITCHES) { switchedOn.set(sw, remembered(sw)); apply(sw); }
// a window turned narrow or wide: presenter mode off or on with it (its change's own resize event changes nothing)
addEventListener("resize", () => { for (const sw of SWITCHES) if (sw.wide && apply(sw)) sw.changed(); });
const switchInput = (sw) => { const box = el(sw.id); return box && box.querySelector("input[type=checkbox]"); };
document.addEventListener("change", (e) => {
  for (const sw of SWITCHES) if (e.target === switchInput(sw)) setSwitch(sw, e.target.checked);
}, true);
// A switch shows what this browser remembered, once Gradio has rendered it and enabled it (a click: Gradio keeps
// its state; a click on a still disabled input does nothing). The attribute stays what was remembered meanwhile.
// Checked every 300 ms for the page's first minute: on a loaded machine Gradio enables the input late, and may draw
// it again from its config after a click (a count of tries ran out before it held).
const syncStarted = Date.now();
const syncSwitches = setInterval(() => {
  if (Date.now() - syncStarted > 60_000) { clearInterval(syncSwitches); return; }
  for (const sw of SWITCHES) {
    const input = switchInput(sw);
    if (input && !input.disabled && input.checked !== isOn(sw)) input.click();  // (setSwitch: no change)
  }
}, 300);
