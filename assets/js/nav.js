// Token by Token, the navigation: the parts of the story over Gradio's row of tabs (ui/nav.py). Imports charts.js only.
// The open part is an attribute on <html> (T.nav.open_attribute), which the style sheet ui/nav.py writes reads to
// show only that part's tabs. Whatever selects a tab (a click on it, a lesson, a clicked head, an interview card, a
// Start here button) selects its part too: the tab row is watched, and the part follows the selected tab. A part's
// button opens the tab last open in it (else its first); the phone's menu opens the tab it names. Elsewhere on the
// page, a button with T.nav.go opens its tab and then presses T.nav.press once that tab shows it; one with T.nav.toggle
// "presenter" flips presenter mode (the header's switch).
import {T, el, whenPresent} from "./charts.js";

const N = T.nav, root = document.documentElement;
const nav = () => el(T.ids.nav);
const partButtons = () => { const n = nav(); return n ? [...n.querySelectorAll(`[${N.part}][${N.tabs}]`)] : []; };
const tabsOf = (button) => (button.getAttribute(N.tabs) || "").split(" ").filter(Boolean);
const partOf = (tab) => { const b = partButtons().find((b) => tabsOf(b).includes(tab)); return b ? b.getAttribute(N.part) : null; };
const tabButton = (tab) => { const box = el(T.ids.tabs); return box && box.querySelector(`[role=tab][data-tab-id="${CSS.escape(tab)}"]`); };
const selectedTab = () => {
  const box = el(T.ids.tabs), b = box && box.querySelector("[role=tab][aria-selected=true]");
  return b ? b.dataset.tabId : null;
};
const lastOpen = new Map();  // part -> the tab last open in it

// The part shown: the attribute, the button marked current, the menu on the selected tab and saying where it is
function show(part) {
  if (part && root.getAttribute(N.open_attribute) !== part) root.setAttribute(N.open_attribute, part);
  for (const b of partButtons()) {
    const current = b.getAttribute(N.part) === part;
    if (current !== b.hasAttribute("aria-current")) {
      if (current) b.setAttribute("aria-current", "true");
      else b.removeAttribute("aria-current");
    }
  }
  const n = nav(), menu = n && n.querySelector(`[${N.menu}]`), tab = selectedTab();
  if (!menu) return;
  if (tab && menu.value !== tab) menu.value = tab;
  const option = menu.selectedOptions[0], where = n.querySelector("." + N.where_class);
  if (where && option) {
    const group = option.parentElement.label || "";
    const said = group && group !== option.textContent ? `${group} › ${option.textContent}` : option.textContent;
    if (where.textContent !== said) where.textContent = said;  // (only a change: the navigation's box is watched)
  }
}
// The selected tab's part shown (and remembered as that part's last open tab)
function follow() {
  const tab = selectedTab(), part = tab ? partOf(tab) : null;
  if (!part) return;
  lastOpen.set(part, tab);
  show(part);
}

export function openTab(tab) {
  const part = partOf(tab);
  if (!part) return false;
  show(part);  // (its tabs on view first: a hidden tab takes no click)
  const button = tabButton(tab);
  if (button && button.getAttribute("aria-selected") !== "true") button.click();
  follow();
  return true;
}
function openPart(part) {
  const button = partButtons().find((b) => b.getAttribute(N.part) === part);
  if (!button) return;
  const tabs = tabsOf(button), now = selectedTab();
  if (tabs.includes(now)) { show(part); return; }
  openTab(lastOpen.get(part) || tabs[0]);
}

// A button pressed once it is on the page and can be pressed (a tab's components render when it first opens)
function pressWhenReady(id) {
  const started = Date.now();
  whenPresent([id], ([button]) => {
    const tryPress = () => {
      if (!button.disabled) button.click();
      else if (Date.now() - started < 30_000) setTimeout(tryPress, 200);
    };
    tryPress();
  });
}

document.addEventListener("click", (e) => {
  const target = e.target.closest ? e.target : null;
  if (!target) return;
  const part = target.closest(`#${CSS.escape(T.ids.nav)} [${N.part}][${N.tabs}]`);
  if (part) { openPart(part.getAttribute(N.part)); return; }
  const go = target.closest(`[${N.go}]`);
  if (go) {
    if (openTab(go.getAttribute(N.go)) && go.hasAttribute(N.press)) pressWhenReady(go.getAttribute(N.press));
    return;
  }
  const toggle = target.closest(`[${N.toggle}]`);
  if (toggle && toggle.getAttribute(N.toggle) === "presenter") {
    const box = el(T.ids.presenter), input = box && box.querySelector("input[type=checkbox]");
    if (input && !input.disabled) input.click();
  }
});
document.addEventListener("change", (e) => {
  if (e.target && e.target.matches && e.target.matches(`#${CSS.escape(T.ids.nav)} [${N.menu}]`)) openTab(e.target.value);
});

// The tab row and the navigation watched: a tab selected by anything, or the navigation drawn again (the language
// switched), and the part shown follows. (The row only, not the tabs' panels: a chart drawn there changes the page
// at every step.)
whenPresent([T.ids.tabs], ([box]) => {
  const watch = () => {
    const list = box.querySelector("[role=tablist]");
    if (!list) { requestAnimationFrame(watch); return; }
    new MutationObserver(follow).observe(list.parentElement, {subtree: true, childList: true, attributes: true,
                                                              attributeFilter: ["aria-selected"]});
    follow();
  };
  watch();
});
whenPresent([T.ids.nav], ([n]) => {
  new MutationObserver(follow).observe(n.closest(".block") || n.parentElement, {childList: true, subtree: true});
  follow();
});
