// Token by Token, the exported page's replay (viz/offline.py inlines this file into the one HTML file, beside the
// session record and plotly.js: no server, no network). Steps 0 (the prompt) .. N; each step shows its token, the
// candidates it was chosen from, the attention of the shown layer over the last `window` tokens, and the cache
// size up to it. Everything it shows comes from the record (#session): words, fonts and colours, the attention's
// the same as the live page's (viz.style). A module of its own: it imports nothing and the live page never loads it.
// A session on an engine's model has no attention (S.no_attention says why, and the page has no panel for it), a
// note under each step's candidates (the engine's top N, "approximate" where the rest matters) and no measured cache.
const S = JSON.parse(document.getElementById('session').textContent);
const W = S.words, N = S.steps.length, el = (id) => document.getElementById(id);
const fmt = (s, o) => s.replace(/\{(\w+)\}/g, (m, k) => (k in o ? o[k] : m));
const pct = (p) => { const x = 100 * p; return x >= 10 ? x.toFixed(1) + '%' : x >= 0.01 ? x.toFixed(2) + '%'
                                                 : x > 0 ? '<0.01%' : '0%'; };
const font = {family: S.font, size: 15, color: '#222'};
const cfg = {displayModeBar: false, responsive: true, staticPlot: false};
let step = 0, layer = String(S.layers[S.layers.length > 2 ? 1 : 0]), timer = null;
const withAttention = S.no_attention === null;

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

if (withAttention) {
  const layerPick = document.createElement('select'); layerPick.id = 'layer';
  for (const l of S.layers) { const o = document.createElement('option'); o.value = String(l);
    o.textContent = W.layer + ' ' + l; layerPick.appendChild(o); }
  layerPick.value = layer; layerPick.onchange = () => { layer = layerPick.value; drawAttention(); };
  el('att-controls').appendChild(layerPick);
}

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
  if (step === 0) { el('cand-title').textContent = el('cand-note').textContent = ''; Plotly.purge('cand-plot');
    return; }
  const s = S.steps[step - 1];
  el('cand-title').textContent = fmt(W.candidates_title, {step});
  el('cand-note').textContent = s.note;
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
  // the live page's colours (S.attention_colors, viz.style): the weights on its scale from 0 to the largest
  // shown (as viz.attention's zmin and zmax), the future masked in its grey
  const top = Math.max(0, ...z.flat().filter((w) => w !== null)) || 1;
  const mask = z.map((row) => row.map((w) => (w === null ? 0 : null)));
  const future = S.attention_colors.future;
  Plotly.react('att-plot', [
    {type: 'heatmap', z: mask, x: ticks, y: ticks, zmin: 0, zmax: 1, showscale: false, hoverinfo: 'skip',
     colorscale: [[0, future], [1, future]]},
    {type: 'heatmap', z, x: ticks, y: ticks, colorscale: S.attention_colors.scale, zmin: 0, zmax: top,
     hovertemplate: '%{y} → %{x}: %{z:.3f}<extra></extra>'}],
    layout({margin: {l: 120, r: 20, t: 10, b: 110}, xaxis: {title: {text: W.axis_key}, tickangle: -60},
      yaxis: {title: {text: W.axis_query}, autorange: 'reversed'}}), cfg);
}

function drawKV() {
  const points = [S.prefill_kv].concat(S.steps.slice(0, step).map((s) => s.kv));
  const [unit, scale] = S.kv_unit;
  el('kv-title').textContent = W.kv_title;
  const measured = {type: 'bar', name: W.kv_measured, x: points.map((p) => p[0]), y: points.map((p) => p[1] / scale),
    marker: {color: '#009E73'}};
  Plotly.react('kv-plot', [...(S.kv_measured ? [measured] : []),
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
  drawCandidates(); if (withAttention) drawAttention(); drawKV();
  document.body.dataset.shown = step;
}
show(0);
