<script>
// Token by Token: presenter keys, Play loop, and clicking a token chip to go back to that step.
(() => {
  const el = (id) => document.getElementById(id);
  const marker = () => { const m = el("tbt-marker"); return m ? m.dataset.rev : null; };
  const ended = () => { const m = el("tbt-marker"); return m && m.dataset.ended === "1"; };
  const click = (id) => { const b = el(id); if (b) b.click(); };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  async function waitForNewStep(rev, timeoutMs) {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (marker() !== rev) return true;
      await sleep(25);
    }
    return false;
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
      if (!(await waitForNewStep(rev, 20000))) break;
    }
    playing = false;
    if (button) button.textContent = label;
  };

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
