"""A session as one HTML page: its records as compact JSON, plotly.js and a small script that replays them.

The page needs no server and no network: every step's token, candidates, attention rows (of a few layers, mean
over heads) and cache size travel as numbers, and the script draws the charts in the browser. So 100 steps cost
a few hundred KB of records beside plotly.js (4.8 MB), instead of a figure per step.
"""
from __future__ import annotations

import html
import json

import numpy as np

from model.records import FATES, KVBytes, ModelInfo, PrefillRecord, StepRecord
from viz.chips import LIGHT_INK, chip_color
from viz.i18n import t
from viz.style import FATE_COLORS, FONT_FAMILY, bytes_unit, fate_label

FORMAT = "token-by-token/page"
ATTENTION_WINDOW = 48  # the heatmap shows the last 48 tokens, as the attention view does
DIGITS = 6  # significant digits kept of a probability: the page prints at most three


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
                   lang: str = "en") -> dict:
    """What the page replays, as plain JSON: the prompt, every step, the words of its language.

    Keys: prompt_tokens [display], prompt_attention {layer: P rows}, prefill_kv [tokens, measured, formula]
    (bytes), steps [{token, id, rank, p (T = 1), final (after the settings), forced, shade [background, light],
    settings, candidates [[display, p, final, fate]], attention {layer: row}, kv}], kv_unit [name, bytes per unit].
    """
    out_steps = []
    for s in steps:
        dist = s.distribution
        prob = dist.chosen_candidate.prob_t1
        background, ink = chip_color(prob)
        cfg = dist.config
        out_steps.append({
            "token": s.token.display, "id": s.token.id, "rank": dist.chosen_rank, "p": _p(prob),
            "final": _p(dist.chosen_final_prob), "forced": dist.forced, "shade": [background, ink == LIGHT_INK],
            "settings": t("offline_settings", lang, temperature=f"{cfg.temperature:g}", top_k=cfg.top_k,
                          top_p=f"{cfg.top_p:g}", min_p=f"{cfg.min_p:g}"),
            "candidates": [[c.token.display, _p(c.prob_t1), _p(c.final_prob), c.fate]
                           for c in sorted(dist.candidates, key=lambda c: c.rank)],
            "attention": {str(layer): _rows(s.attention[layer]) for layer in layers},
            "kv": _kv(s.kv),
        })
    largest = max([prefill.kv.measured, prefill.kv.formula] + [max(s.kv.measured, s.kv.formula) for s in steps])
    unit, scale = bytes_unit(largest)
    return {
        "format": FORMAT, "model": info.name, "prompt": prefill.prompt, "lang": lang, "layers": layers,
        "prompt_tokens": [tok.display for tok in prefill.tokens],
        "prompt_attention": {str(layer): _rows(prefill.attention[layer]) for layer in layers},
        "prefill_kv": _kv(prefill.kv), "steps": out_steps, "kv_unit": [unit, scale],
        "window": ATTENTION_WINDOW,
        "fates": {fate: [fate_label(fate, lang), FATE_COLORS[fate]] for fate in FATES},
        "words": {key.removeprefix("offline_"): t(key, lang) for key in WORD_KEYS},
        "font": FONT_FAMILY,
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
    title = html.escape(t("offline_title", lang))
    intro = html.escape(t("offline_intro", lang, model=record["model"], steps=len(record["steps"])))
    return f"""<!DOCTYPE html>
<html lang="{"zh-Hans" if lang == "zh" else "en"}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{PAGE_CSS}</style>
<script>{plotly_js}</script>
</head><body>
<h1>{title}</h1>
<p class="intro">{intro}</p>
<div id="controls"></div>
<div id="status" data-step="0"></div>
<div id="chips"></div>
<div id="panels">
 <section><h2 id="cand-title"></h2><div id="cand-plot" class="plot"></div><table id="cands"></table></section>
 <section><h2 id="att-title"></h2><div id="att-controls"></div><div id="att-plot" class="plot"></div></section>
 <section><h2 id="kv-title"></h2><div id="kv-plot" class="plot"></div></section>
</div>
<script type="application/json" id="session">{data}</script>
<script>{PAGE_JS}</script>
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
"""

# The replay: steps 0 (the prompt) .. N; each step shows its token, the candidates it was chosen from, the
# attention of the shown layer over the last `window` tokens, and the cache size up to it.
PAGE_JS = r"""
(() => {
  const S = JSON.parse(document.getElementById('session').textContent);
  const W = S.words, N = S.steps.length, el = (id) => document.getElementById(id);
  const fmt = (s, o) => s.replace(/\{(\w+)\}/g, (m, k) => (k in o ? o[k] : m));
  const pct = (p) => { const x = 100 * p; return x >= 10 ? x.toFixed(1) + '%' : x >= 0.01 ? x.toFixed(2) + '%'
                                                   : x > 0 ? '<0.01%' : '0%'; };
  const font = {family: S.font, size: 15, color: '#222'};
  const cfg = {displayModeBar: false, responsive: true, staticPlot: false};
  let step = 0, layer = String(S.layers[S.layers.length > 2 ? 1 : 0]), timer = null;

  const controls = el('controls');
  const button = (key, fn) => { const b = document.createElement('button'); b.id = 'btn-' + key;
    b.textContent = W[key]; b.onclick = fn; controls.appendChild(b); return b; };
  button('first', () => show(0)); button('back', () => show(step - 1));
  button('next', () => show(step + 1)); button('last', () => show(N));
  const play = button('play', () => { if (timer) stop(); else { if (step >= N) show(0);
    play.textContent = W.pause; timer = setInterval(() => (step >= N ? stop() : show(step + 1)), 700); } });
  const stop = () => { clearInterval(timer); timer = null; play.textContent = W.play; };
  const slider = document.createElement('input'); Object.assign(slider, {type: 'range', min: 0, max: N, value: 0,
    id: 'step-slider'}); slider.setAttribute('aria-label', W.step.replace(/\{\w+\}/g, '').trim());
  slider.oninput = () => show(+slider.value); controls.appendChild(slider);
  document.addEventListener('keydown', (e) => { if (e.key === 'ArrowRight') show(step + 1);
    if (e.key === 'ArrowLeft') show(step - 1); });

  const layerPick = document.createElement('select'); layerPick.id = 'layer';
  for (const l of S.layers) { const o = document.createElement('option'); o.value = String(l);
    o.textContent = W.layer + ' ' + l; layerPick.appendChild(o); }
  layerPick.value = layer; layerPick.onchange = () => { layer = layerPick.value; drawAttention(); };
  el('att-controls').appendChild(layerPick);

  // the chips: the prompt, then every generated token (hidden until its step)
  const chips = el('chips');
  const chip = (text, cls) => { const c = document.createElement('span'); c.className = 'chip ' + cls;
    c.textContent = text; chips.appendChild(c); return c; };
  S.prompt_tokens.forEach((tok) => { chip(tok, 'prompt').title = W.prompt; });
  const genChips = S.steps.map((s, i) => { const c = chip(s.token, 'gen' + (s.shade[1] ? ' light' : '') +
    (s.forced ? ' forced' : '')); c.style.background = s.shade[0]; c.style.borderColor = s.forced ? '' : s.shade[0];
    c.dataset.step = i + 1; c.onclick = () => show(i + 1); return c; });

  const layout = (extra) => Object.assign({font, margin: {l: 60, r: 20, t: 10, b: 50}, paper_bgcolor: '#fff',
    plot_bgcolor: '#fff', showlegend: false}, extra);

  function drawCandidates() {
    const table = el('cands'); table.innerHTML = '';
    if (step === 0) { el('cand-title').textContent = ''; Plotly.purge('cand-plot'); return; }
    const s = S.steps[step - 1];
    el('cand-title').textContent = fmt(W.candidates_title, {step});
    const rows = s.candidates.slice().reverse();
    Plotly.react('cand-plot', [{type: 'bar', orientation: 'h', x: rows.map((c) => c[1]),
      y: rows.map((c, i) => i), text: rows.map((c) => pct(c[1])), textposition: 'outside', cliponaxis: false,
      marker: {color: rows.map((c) => S.fates[c[3]][1])}, hovertemplate: '%{text}<extra></extra>'}],
      layout({margin: {l: 110, r: 70, t: 10, b: 50}, xaxis: {title: {text: W.axis_prob}, tickformat: '.0%',
        rangemode: 'tozero', gridcolor: '#e5e5e5'},
        yaxis: {tickvals: rows.map((c, i) => i), ticktext: rows.map((c) => c[0]), automargin: true}}), cfg);
    const head = table.insertRow(); for (const k of ['col_token', 'col_prob', 'col_final', 'col_fate']) {
      const th = document.createElement('th'); th.textContent = W[k]; head.appendChild(th); }
    for (const c of s.candidates) {
      const r = table.insertRow(); r.className = c[3] === 'chosen' ? 'chosen' : ''; r.dataset.p = c[1];
      [c[0], pct(c[1]), pct(c[2]), S.fates[c[3]][0]].forEach((v, i) => { const td = r.insertCell();
        td.textContent = v; td.className = ['tok', 'p', 'final', 'fate'][i]; });
      r.cells[3].style.color = S.fates[c[3]][1];
    }
  }

  function drawAttention() {
    const prompt = S.prompt_attention[layer], P = prompt.length, T = P + step;
    const rows = prompt.concat(S.steps.slice(0, step).map((s) => s.attention[layer]));
    const labels = S.prompt_tokens.concat(S.steps.slice(0, step).map((s) => s.token));
    const start = Math.max(0, T - S.window);
    const z = [];
    for (let i = start; i < T; i++) { const row = [];
      for (let j = start; j < T; j++) row.push(j <= i ? rows[i][j] : null); z.push(row); }
    const ticks = labels.slice(start).map((x, i) => (start + i) + ' ' + x);
    el('att-title').textContent = fmt(W.attention_title, {layer});
    Plotly.react('att-plot', [{type: 'heatmap', z, x: ticks, y: ticks, colorscale: [[0, '#f7fbff'], [0.2, '#9ecae1'], [1, '#08306b']], zmin: 0,
      hovertemplate: '%{y} → %{x}: %{z:.3f}<extra></extra>'}],
      layout({margin: {l: 120, r: 20, t: 10, b: 110}, xaxis: {title: {text: W.axis_key}, tickangle: -60},
        yaxis: {title: {text: W.axis_query}, autorange: 'reversed'}}), cfg);
  }

  function drawKV() {
    const points = [S.prefill_kv].concat(S.steps.slice(0, step).map((s) => s.kv));
    const [unit, scale] = S.kv_unit;
    el('kv-title').textContent = W.kv_title;
    Plotly.react('kv-plot', [
      {type: 'bar', name: W.kv_measured, x: points.map((p) => p[0]), y: points.map((p) => p[1] / scale),
       marker: {color: '#009E73'}},
      {type: 'scatter', mode: 'lines', name: W.kv_formula, x: [0].concat(points.map((p) => p[0])),
       y: [0].concat(points.map((p) => p[2] / scale)), line: {color: '#222', dash: 'dash'}}],
      layout({showlegend: true, legend: {orientation: 'h', y: 1.08}, xaxis: {title: {text: W.axis_tokens},
        range: [0, S.prefill_kv[0] + N + 1]}, yaxis: {title: {text: fmt(W.axis_bytes, {unit})},
        range: [0, 1.05 * Math.max(...[S.prefill_kv].concat(S.steps.map((s) => s.kv)).map((p) => Math.max(p[1], p[2]))) / scale]}}), cfg);
  }

  function show(n) {
    step = Math.max(0, Math.min(N, n)); slider.value = step;
    const status = el('status'); status.dataset.step = step;
    if (step === 0) { status.textContent = fmt(W.step, {step, steps: N}) + ' · ' + W.at_prompt; }
    else { const s = S.steps[step - 1];
      status.innerHTML = ''; status.append(fmt(W.step, {step, steps: N}) + ' · ');
      const tok = document.createElement('b'); tok.id = 'token'; tok.textContent = s.token; tok.dataset.id = s.id;
      const p = document.createElement('span'); p.id = 'prob'; p.textContent = pct(s.p); p.dataset.p = s.p;
      const [before, after] = W.chosen.split('{token}');
      status.append(fmt(before, {step}), tok, ...fmt(after, {rank: s.rank, forced: s.forced ? W.forced : '', step})
        .split('{prob}').flatMap((part, i) => (i ? [p, part] : [part])), ' · ' + s.settings); }
    genChips.forEach((c, i) => { c.classList.toggle('later', i >= step); c.classList.toggle('now', i === step - 1); });
    drawCandidates(); drawAttention(); drawKV();
    document.body.dataset.shown = step;
  }
  show(0);
})();
"""
