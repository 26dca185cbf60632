// Token by Token, the presenter's controls: Play (paced by the page) and a click on a generated chip to go back
// to that step (the keys are presenter.js's). Imports charts.js only; page.js puts Play on
// window for the Play button's listeners (T.globals) and draws the chart ahead once a Play has ended.
import {T, CHANGES, click, el, ended, gotoStep, markerRev} from "./charts.js";

const P = T.playing;
// Play: one streaming request (play_tokens) sends the steps one by one. The page says when it has taken each
// (POST <T.play_route><token>/shown, before drawing it); only then does the server send the next, computed
// meanwhile. Play so goes as fast as this page draws, never ahead of it, and Gradio's work per step is one
// message, not a whole event (about 45 ms of this page's work each).
let playing = false, stopAsked = false, stopSent = false, takenRev = null, staleToken = null;
export const isPlaying = () => playing;
const playMarker = () => el(T.ids.playing);
const playToken = () => { const p = playMarker(); return p && p.dataset[P.token] !== staleToken ? p.dataset[P.token] : null; };
const PAUSE = "▮▮ ";  // (⏸ has no glyph in common fonts: Debian's Chromium drew an empty box)
const playButton = (on) => {  // the button's own label stays (the language switch may change it meanwhile)
  const button = el(T.ids.play);
  if (!button) return;
  const label = button.textContent.startsWith(PAUSE) ? button.textContent.slice(PAUSE.length) : button.textContent;
  button.textContent = on ? PAUSE + label : label;
};
const tellPlay = (what) => {  // -> false if this Play's token has not arrived yet
  const token = playToken();
  if (!token) return false;
  const root = (window.gradio_config && window.gradio_config.root) || "";
  fetch(`${root}${T.play_route}${token}/${what}`, {method: "POST"}).catch(() => {});
  return true;
};
// The Play button: start (-> true), or stop a Play under way (-> false)
export function togglePlay() {
  if (playing) {  // stop after the step under way (before the first one arrives: when it does)
    if (!stopSent) stopSent = tellPlay("stop");
    stopAsked = !stopSent;
    return false;
  }
  if (ended()) return false;
  playing = true;
  stopAsked = stopSent = false;
  takenRev = markerRev();
  staleToken = (playMarker() && playMarker().dataset[P.token]) || null;  // left by a Play that failed
  playButton(true);
  click(T.triggers.play_run);
  return true;
}
// The request is over: stopped, done, the text ended, or an error (-> true if a Play was running)
export function playEnded() {
  if (!playing) return false;
  playing = false;
  playButton(false);
  return true;
}
// A new step is in the page: say so, so the server sends the next one while it is drawn
export function taken() {
  const rev = markerRev();
  if (!playing || stopSent || rev === takenRev || !playToken()) return;  // (stopped: the Play has ended)
  takenRev = rev;
  stopSent = tellPlay(stopAsked ? "stop" : "shown") && stopAsked;
}
// Another step asked for meanwhile (a button of CHANGES other than Play) stops Play
const PLAY = "#" + CSS.escape(T.ids.play);
document.addEventListener("click", (e) => {
  if (playing && e.target.closest && e.target.closest(CHANGES) && !e.target.closest(PLAY)) togglePlay();
}, true);

// A click on a generated chip goes back to that step: the text up to just before it, its candidates shown.
const CHIP = `#${CSS.escape(T.ids.chips)} .${CSS.escape(T.chips.generated)}`;
document.addEventListener("click", (e) => {
  const chip = e.target.closest && e.target.closest(CHIP);
  if (chip) gotoStep(Number(chip.dataset[T.chips.step]) - 1);
});
