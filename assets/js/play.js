// Token by Token, the presenter's controls: Play (paced by the page), the presenter keys, and a click on a
// generated chip to go back to that step.
(() => {
  "use strict";
  const T = window.TBT, tbt = (window.tbt = window.tbt || {});
  const P = T.playing;
  // Play: one streaming request (play_tokens) sends the steps one by one. The page says when it has taken each
  // (POST <T.play_route><token>/shown, before drawing it); only then does the server send the next, computed
  // meanwhile. Play so goes as fast as this page draws, never ahead of it, and Gradio's work per step is one
  // message, not a whole event (about 45 ms of this page's work each).
  tbt.playing = false;
  let stopAsked = false, stopSent = false, takenRev = null, staleToken = null;
  const playMarker = () => tbt.el(T.ids.playing);
  const playToken = () => { const p = playMarker(); return p && p.dataset[P.token] !== staleToken ? p.dataset[P.token] : null; };
  const PAUSE = "▮▮ ";  // (⏸ has no glyph in common fonts: Debian's Chromium drew an empty box)
  const playButton = (on) => {  // the button's own label stays (the language switch may change it meanwhile)
    const button = tbt.el(T.ids.play);
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
  tbt.play = window[T.globals.play] = () => {  // the Play button: start, or stop a Play under way
    if (tbt.playing) {  // stop after the step under way (before the first one arrives: when it does)
      if (!stopSent) stopSent = tellPlay("stop");
      stopAsked = !stopSent;
      return;
    }
    if (tbt.ended()) return;
    tbt.playing = true;
    stopAsked = stopSent = false;
    takenRev = tbt.markerRev();
    staleToken = (playMarker() && playMarker().dataset[P.token]) || null;  // left by a Play that failed
    tbt.cancelAhead();
    playButton(true);
    tbt.click(T.triggers.play_run);
  };
  window[T.globals.play_ended] = () => {  // the request is over: stopped, done, the text ended, or an error
    if (!tbt.playing) return;
    tbt.playing = false;
    playButton(false);
    tbt.askAhead();
  };
  tbt.taken = () => {  // a new step is in the page: say so, so the server sends the next one while it is drawn
    const rev = tbt.markerRev();
    if (!tbt.playing || stopSent || rev === takenRev || !playToken()) return;  // (stopped: the Play has ended)
    takenRev = rev;
    stopSent = tellPlay(stopAsked ? "stop" : "shown") && stopAsked;
  };

  document.addEventListener("keydown", (e) => {
    const tag = (e.target && e.target.tagName) || "";
    if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || e.target.isContentEditable || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "ArrowRight" || e.key === "n" || e.key === "N") { tbt.click(T.ids.next); e.preventDefault(); }
    else if (e.key === "ArrowLeft" || e.key === "b" || e.key === "B") { tbt.click(T.ids.back); e.preventDefault(); }
    else if (e.key === "p" || e.key === "P") { tbt.click(T.ids.play); e.preventDefault(); }
  });

  // A click on a generated chip goes back to that step: the text up to just before it, its candidates shown.
  const CHIP = `#${CSS.escape(T.ids.chips)} .${CSS.escape(T.chips.generated)}`;
  document.addEventListener("click", (e) => {
    const chip = e.target.closest && e.target.closest(CHIP);
    if (!chip) return;
    window[T.globals.goto_step] = Number(chip.dataset[T.chips.step]) - 1;
    tbt.click(T.triggers.goto);
  });
})();
