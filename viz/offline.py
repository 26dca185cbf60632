"""A session as one HTML page: its records as compact JSON, plotly.js and a small script that replays them.

The page needs no server and no network: every step's token, candidates, attention rows (of a few layers, mean
over heads) and cache size travel as numbers, and the script draws the charts in the browser. So 100 steps cost
a few hundred KB of records beside plotly.js (4.8 MB), instead of a figure per step.

A session on an engine's model (model/vllm/session.py) has no attention weights: its page has no
attention panel and says why in its place, every step's candidates carry the engine's note (its top N's mass, and
"approximate" where the result depends on the unknown rest, as the live chart says), and the cache is the formula's.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from model.decoding.records import FATES, KVBytes, ModelInfo, PrefillRecord, StepRecord
from viz.candidates import engine_note
from viz.chips import LIGHT_INK, chip_color, chosen_how
from viz.i18n import t
from model.decoding.tokens import token_labels
from viz.style import ATTENTION_SCALE, FATE_COLORS, FONT_FAMILY, MASK_FUTURE, MODEL_NAMES, bytes_unit, fate_label

FORMAT = "token-by-token/page"
ATTENTION_WINDOW = 48  # the heatmap shows the last 48 tokens, as the attention view does
DIGITS = 6  # significant digits kept of a probability: the page prints at most three
# The replay's script, a file of its own beside the live page's modules; inlined at export (the page is one file)
REPLAY_JS = Path(__file__).resolve().parent.parent / "assets" / "js" / "offline.js"


def shown_layers(layer: int, info: ModelInfo) -> list[int]:
    """The layers a saved page can show: the attention view's current one, the first and the last."""
    return sorted({min(max(int(layer), 0), info.layers - 1), 0, info.layers - 1})


def _p(x: float) -> float:
    return float(f"{x:.{DIGITS}g}")


def _rows(attention: np.ndarray) -> list[list[float]]:
    """Attention rows, mean over heads, as short decimals: (heads, ..., t) -> [[...], ...] or [...]."""
    mean = attention.astype(np.float32).mean(axis=0)
    return np.round(mean, 4).tolist()


def _kv(kv: KVBytes) -> list[int]:
    return [kv.tokens, kv.measured, kv.formula]


def session_record(prefill: PrefillRecord, steps: list[StepRecord], info: ModelInfo, layers: list[int],
                   lang: str = "en", notes: str = "") -> dict:
    """What the page replays, as plain JSON: the prompt, every step, the words of its language.

    layers: the attention layers to keep; [] for a session without attention weights (an engine's model), whose
    page says why instead of drawing the panel.
    Keys: prompt_tokens [display], prompt_attention {layer: P rows}, prefill_kv [tokens, measured, formula]
    (bytes), steps [{token, id, rank, p (T = 1), final (after the settings), forced, shade [background, light],
    settings, note (the engine's line about its top N, "" for a local model), candidates [[display, p, final,
    fate]], attention {layer: row}, kv}], kv_unit [name, bytes per unit], kv_measured (False: every measured size
    is 0, the engine's cache is not here), no_attention (why the page has no attention panel, or None),
    attention_colors {scale: the live attention view's colorscale, future: its mask colour} (viz.style), notes (the
    student's notes, plain text: the page shows them under its title).
    """
    out_steps, shown = [], [label.short for label in token_labels([*prefill.tokens, *(s.token for s in steps)])]
    for n, s in enumerate(steps, start=len(prefill.tokens)):
        dist = s.distribution
        prob = dist.chosen_candidate.prob_t1
        background, ink = chip_color(prob)
        cfg = dist.config
        out_steps.append({
            "token": shown[n], "id": s.token.id, "rank": dist.chosen_rank, "p": _p(prob),
            "final": _p(dist.chosen_final_prob), "forced": dist.forced, "shade": [background, ink == LIGHT_INK],
            "settings": t("offline_settings", lang, temperature=f"{cfg.temperature:g}", top_k=cfg.top_k,
                          top_p=f"{cfg.top_p:g}", min_p=f"{cfg.min_p:g}")
                        + ("" if not chosen_how(dist, lang) else " · " + chosen_how(dist, lang)),
            "note": engine_note(dist, lang),
            "candidates": [[c.token.display, _p(c.prob_t1), _p(c.final_prob), c.fate]
                           for c in sorted(dist.candidates, key=lambda c: c.rank)],
            "attention": {str(layer): _rows(s.attention[layer]) for layer in layers},
            "kv": _kv(s.kv),
        })
    largest = max([prefill.kv.measured, prefill.kv.formula] + [max(s.kv.measured, s.kv.formula) for s in steps])
    unit, scale = bytes_unit(largest)
    return {
        "format": FORMAT, "model": info.name, "prompt": prefill.prompt, "lang": lang, "layers": layers,
        "prompt_tokens": shown[: len(prefill.tokens)],
        "prompt_attention": {str(layer): _rows(prefill.attention[layer]) for layer in layers},
        "prefill_kv": _kv(prefill.kv), "steps": out_steps, "kv_unit": [unit, scale],
        "kv_measured": any(kv.measured for kv in [prefill.kv, *(s.kv for s in steps)]),
        # the live Attention tab's own sentence (viz/unavailable.py) where the panel would be
        "no_attention": None if layers else t("engine_attention_reason", lang, model=info.name),
        "window": ATTENTION_WINDOW,
        "fates": {fate: [fate_label(fate, lang), FATE_COLORS[fate]] for fate in FATES},
        "words": {key.removeprefix("offline_"): t(key, lang) for key in WORD_KEYS},
        "font": FONT_FAMILY,
        "attention_colors": {"scale": ATTENTION_SCALE, "future": MASK_FUTURE},
        "notes": notes,
    }


WORD_KEYS = (  # the words the page's script shows, by the name it uses (the key without 'offline_')
    "offline_step", "offline_at_prompt", "offline_chosen", "offline_forced", "offline_first", "offline_back",
    "offline_next", "offline_last", "offline_play", "offline_pause", "offline_candidates_title", "offline_col_token",
    "offline_col_prob", "offline_col_final", "offline_col_fate", "offline_attention_title", "offline_layer",
    "offline_kv_title", "offline_kv_measured", "offline_kv_formula", "offline_axis_tokens", "offline_axis_prob",
    "offline_axis_bytes", "offline_axis_key", "offline_axis_query", "offline_prompt",
)


def session_page(record: dict, plotly_js: str) -> str:
    """The whole page: the record (session_record) and plotly.js inline, and the script that replays them."""
    lang = record["lang"]
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    plotly_js = plotly_js.replace("</script", "<\\/script")  # (the pinned plotly.js holds none)
    replay = replay_script()
    title = html.escape(t("offline_title", lang))
    intro = html.escape(t("offline_intro", lang, model=MODEL_NAMES.get(record["model"], record["model"]),
                          steps=len(record["steps"])))
    if record["no_attention"] is None:
        attention = '<section><h2 id="att-title"></h2><div id="att-controls"></div><div id="att-plot" class="plot"></div></section>'
    else:  # no weights to draw: the panel's place says why, in the page's language
        attention = (f'<section id="att-none"><h2>{html.escape(t("engine_attention_title", lang))}</h2>'
                     f'<p class="why">{html.escape(record["no_attention"])}</p></section>')
    return f"""<!DOCTYPE html>
<html lang="{"zh-Hans" if lang == "zh" else "en"}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{PAGE_CSS}</style>
<script>{plotly_js}</script>
</head><body>
<h1>{title}</h1>
<p class="intro">{intro}</p>
{notes_html(record.get("notes", ""), lang)}
<div id="controls"></div>
<div id="status" data-step="0"></div>
<div id="chips"></div>
<div id="panels">
 <section><h2 id="cand-title"></h2><p id="cand-note"></p><div id="cand-plot" class="plot"></div><table id="cands"></table></section>
 {attention}
 <section><h2 id="kv-title"></h2><div id="kv-plot" class="plot"></div></section>
</div>
<script type="application/json" id="session">{data}</script>
<script type="module">
{replay}</script>
</body></html>"""


PAGE_CSS = """
body { font-family: 'Noto Sans', 'Noto Sans CJK SC', 'PingFang SC', 'Microsoft YaHei', Arial, sans-serif;
       margin: 16px 24px; color: #222; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 8px 0; }
.intro { color: #555; margin: 0 0 12px; }
#controls button { font-size: 17px; padding: 6px 14px; margin-right: 6px; }
#controls input[type=range] { width: 320px; vertical-align: middle; }
#status { font-size: 19px; margin: 10px 0; min-height: 1.5em; }
#chips { line-height: 2; border: 1px solid #ccc; border-radius: 8px; padding: 6px; max-height: 200px; overflow-y: auto; }
.chip { display: inline-block; margin: 2px 1px; padding: 2px 5px; border-radius: 5px; font-size: 20px;
        white-space: pre; background: #eee; border: 2px solid #eee; }
.gen { cursor: pointer; } .light { color: #fff; } .forced { border-style: dashed; border-color: #222; }
.now { outline: 3px solid #D55E00; outline-offset: 1px; } .later { display: none; }
#panels { display: flex; flex-wrap: wrap; gap: 16px; }
#panels section { flex: 1 1 560px; min-width: 420px; }
.plot { height: 420px; }
#cands { border-collapse: collapse; font-size: 15px; } #cands td, #cands th { padding: 2px 8px; text-align: left; }
#cands tr.chosen { font-weight: bold; }
#cand-note { color: #555; margin: 0 0 6px; } #cand-note:empty { display: none; }
.why { font-size: 18px; color: #555; }
.notes { white-space: pre-wrap; overflow-wrap: anywhere; background: #f7f7f7; border-radius: 8px; padding: 6px 10px;
         font-size: 16px; max-height: 240px; overflow-y: auto; }
"""


def notes_html(notes: str, lang: str) -> str:
    """The student's notes as the saved page shows them (escaped, their lines kept); nothing without notes."""
    if not notes.strip():
        return ""
    return (f'<section id="notes"><h2>{html.escape(t("offline_notes", lang))}</h2>'
            f'<div class="notes">{html.escape(notes)}</div></section>')


def replay_script() -> str:
    """The replay's script (assets/js/offline.js), read at export to be inlined into the page."""
    source = REPLAY_JS.read_text(encoding="utf-8")
    if "</script" in source.lower():
        raise ValueError(f"{REPLAY_JS} contains '</script': the page would end the script there; split the string.")
    return source
