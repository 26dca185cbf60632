// Token by Token, Gradio's own words in the page's language. Imports busy.js (the page's language and words) only.
// Gradio writes a few words of its own in the browser's language, not the page's: the title of its error box
// ("Error"), and its footer. Each such text, in any of the page's languages, is written again in the page's
// language (T.words, ui/strings.py: gradio_*) when it appears and when the language is switched.
import {T, el} from "./charts.js";
import {word} from "./busy.js";

const KEYS = Object.keys(T.words).filter((key) => key.startsWith("gradio_"));
const known = new Map();  // a text in any language -> its key
for (const key of KEYS) for (const text of Object.values(T.words[key])) known.set(text, key);
const PLACES = "footer, .toast-wrap";

function rewrite(root) {
  for (const place of root.querySelectorAll ? [root.matches && root.matches(PLACES) ? root : null,
                                               ...root.querySelectorAll(PLACES)].filter(Boolean) : []) {
    const walker = document.createTreeWalker(place, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent.trim(), key = known.get(text);
      if (key && text !== word(key)) node.textContent = node.textContent.replace(text, word(key));
    }
  }
}
let pending = 0;
new MutationObserver((records) => {
  if (pending) return;
  // (only what was added near a toast or the footer: a step changes the page everywhere else)
  if (!records.some((r) => [...r.addedNodes].some((n) => n.nodeType === 1 && (n.matches(PLACES) || n.closest(PLACES) ||
                                                                             n.querySelector(PLACES))))) return;
  pending = requestAnimationFrame(() => { pending = 0; rewrite(document.body); });
}).observe(document.documentElement, {childList: true, subtree: true});
document.addEventListener("change", (e) => {
  const box = el(T.ids.lang);
  if (box && box.contains(e.target)) requestAnimationFrame(() => rewrite(document.body));
});
