// Token by Token, Gradio's own words in the page's language. Imports charts.js and busy.js (the page's language and
// words) only. Gradio writes a few words of its own in the browser's language, not the page's: the title of its error
// box ("Error"), and its footer. Each such text, in any of the page's languages, is written again in the page's
// language (T.words, ui/strings.py: gradio_*) when it appears and when the language is switched. Only the footer and
// the error boxes' container are watched (a step changes the page everywhere else, many times a second in Play).
import {T} from "./charts.js";
import {pageLang, word} from "./busy.js";

const KEYS = Object.keys(T.words).filter((key) => key.startsWith("gradio_"));
const known = new Map();  // a text in any language -> its key
for (const key of KEYS) for (const text of Object.values(T.words[key])) known.set(text, key);
const PLACES = ["footer", ".toast-wrap"];

function rewrite(place) {
  const walker = document.createTreeWalker(place, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim(), key = known.get(text);
    if (key && text !== word(key)) node.textContent = node.textContent.replace(text, word(key));
  }
}
const watched = new Set();
function watch() {
  for (const selector of PLACES) {
    const place = document.querySelector(selector);
    if (!place || watched.has(place)) continue;
    watched.add(place);
    rewrite(place);
    new MutationObserver(() => rewrite(place)).observe(place, {childList: true, subtree: true, characterData: true});
  }
  return watched.size === PLACES.length;
}
// Gradio renders both after this script runs: looked for at each change of the page until found (a minute at most)
if (!watch()) {
  const looking = new MutationObserver(() => { if (watch()) looking.disconnect(); });
  looking.observe(document.body, {childList: true, subtree: true});
  setTimeout(() => looking.disconnect(), 60_000);
}
// The page's language: switched by its reader, or set by the page as it opens (?lang=, the browser's): no event says
// so, the switch is read twice a second
let said = pageLang();
setInterval(() => {
  if (pageLang() === said) return;
  said = pageLang();
  for (const place of watched) rewrite(place);
}, 500);
