"""viz/: figures and HTML built from hand-made records show exactly the records' numbers."""
from __future__ import annotations

import base64
import json
import re
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from model.decoding.records import (CacheTiming, Distribution, KVBytes, ModelInfo, SamplingConfig, StageSummary, StepRecord,
                           Candidate, TemperatureSweep, Timings, TokenInfo)
from viz import (FATE_COLORS, WORDS, attention_figure, cache_timing_figure, candidate_figure, format_bytes,
                 gqa_figure, kv_calculator_figure, kv_growth_figure, t, temperature_figure, token_chips_html)
from viz import attention_chart, candidate_chart, kv_growth_chart, temperature_chart
from viz.candidates import draw_segments, shown_candidates
from viz.style import chart_json

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
DISPLAYS = ["␣the", "␣a", "↵", "<E4>", "␣cat", "<b>", "␣dog", "␣and", ",", ".", "␣of", "␣to",
            "␣in", "␣is", "␣it", "␣on", "␣he", "␣she", "␣we", "␣you"]
LOGITS = [6.0, 5.2, 4.9, 4.1, 3.8, 3.5, 3.1, 2.9, 2.5, 2.2, 2.0, 1.7, 1.5, 1.2, 1.0, 0.8, 0.5, 0.3, 0.1, -0.2]
SMOLLM = ModelInfo(name="SmolLM2-135M", layers=30, heads=9, kv_heads=3, head_dim=64, hidden=576, vocab=49152,
                   bytes_per_value=4, dtype="float32", context=8192, sliding_window=[None] * 30)


# --- hand-made records ------------------------------------------------------------------------------

def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z[np.isfinite(z)].max())
    return e / e.sum()


def _bits(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def make_dist(config: SamplingConfig, u: float = 0.3, n_candidates: int = 15, logits=LOGITS,
              forced_id: int | None = None) -> Distribution:
    """A Distribution over a 20-token vocabulary, run through config's stages (repetition penalty left off)."""
    logits = np.asarray(logits, dtype=float)
    p_t1 = _softmax(logits)
    z, cut_by, stage_probs, summaries = logits.copy(), {}, {}, []
    for stage in config.stages:
        before = np.isfinite(z)
        if stage == "temperature" and config.temperature == 0:
            z = np.where(np.arange(len(z)) == int(np.argmax(z)), 0.0, -np.inf)
        elif stage == "temperature":
            z = z / config.temperature
        elif stage == "top_k" and config.top_k:
            z = np.where(z >= np.sort(z)[-config.top_k], z, -np.inf)
        elif stage == "top_p" and config.top_p < 1:
            p = _softmax(z)
            order = np.argsort(-p, kind="stable")
            keep = order[: int(np.searchsorted(np.cumsum(p[order]), config.top_p)) + 1]
            z = np.where(np.isin(np.arange(len(z)), keep), z, -np.inf)
        elif stage == "min_p" and config.min_p:
            p = _softmax(z)
            z = np.where(p >= config.min_p * p.max(), z, -np.inf)
        for i in np.flatnonzero(before & ~np.isfinite(z)):
            cut_by[int(i)] = "greedy" if stage == "temperature" else stage
        stage_probs[stage] = _softmax(z)
        active = {"temperature": config.temperature != 1, "top_k": config.top_k > 0, "top_p": config.top_p < 1,
                  "min_p": config.min_p > 0}.get(stage, False)
        summaries.append(StageSummary(stage, active, int(np.isfinite(z).sum()), int((before & ~np.isfinite(z)).sum()),
                                      _bits(stage_probs[stage])))
    final = _softmax(z)
    order = sorted(np.flatnonzero(final > 0), key=lambda i: (-final[i], i))
    drawn = next(i for i, c in zip(order, np.cumsum(final[order])) if u < c)
    chosen = int(forced_id if forced_id is not None else drawn)
    ranks = np.argsort(-p_t1, kind="stable")
    shown = [int(i) for i in ranks[:n_candidates]] + ([chosen] if chosen not in ranks[:n_candidates] else [])
    tokens = {i: TokenInfo(i, DISPLAYS[i], DISPLAYS[i]) for i in range(len(logits))}
    rank_of = {int(i): r + 1 for r, i in enumerate(ranks)}
    candidates = [Candidate(tokens[i], float(logits[i]), float(p_t1[i]),
                            {s: float(stage_probs[s][i]) for s in config.stages if s in stage_probs},
                            float(final[i]), "chosen" if i == chosen else cut_by.get(i, "kept"), rank_of[i])
                  for i in shown]
    rest = [i for i in range(len(logits)) if i not in shown]
    return Distribution(
        position=7, config=config, candidates=candidates, stages=summaries,
        tail_mass_t1=float(p_t1[rest].sum()), tail_mass_final=float(final[rest].sum()),
        entropy_t1_bits=_bits(p_t1), entropy_final_bits=_bits(final), u=u, chosen=tokens[chosen],
        chosen_rank=rank_of[chosen], chosen_logprob_t1=float(np.log(p_t1[chosen])),
        chosen_final_prob=float(final[chosen]), forced=forced_id is not None)


def kv_point(tokens: int, info: ModelInfo = SMOLLM) -> KVBytes:
    half = info.layers * info.kv_heads * info.head_dim * tokens * info.bytes_per_value
    return KVBytes(measured=2 * half, formula=2 * half, keys=half, values=half, tokens=tokens)


def make_step(step: int, config: SamplingConfig, u: float, forced_id: int | None = None) -> StepRecord:
    dist = make_dist(config, u=u, forced_id=forced_id)
    return StepRecord(step=step, position=4 + step, distribution=dist, attention=np.zeros((1, 1, 1), np.float16),
                      kv=kv_point(5 + step), timings=Timings(1.0), text="")


def by_axis_label(fig, trace) -> dict[str, float]:
    """{tick label: bar length} for a horizontal bar trace on a numeric axis with tick text."""
    axis = fig.layout["yaxis" + trace.yaxis[1:]]
    labels = dict(zip(axis.tickvals, axis.ticktext))
    return {labels[y].replace("<b>", "").replace("</b>", ""): x for x, y in zip(trace.x, trace.y)}


CUTS = SamplingConfig(temperature=0.8, top_k=10, top_p=0.95, min_p=0.1)


# --- strings ----------------------------------------------------------------------------------------

def test_every_key_exists_in_both_languages_with_the_same_placeholders():
    fields = lambda s: {f for _, f, _, _ in string.Formatter().parse(s) if f}
    for key, (en, zh) in WORDS.items():
        assert fields(en) == fields(zh), key
        assert en != "" and zh != "", key


def test_t_fills_placeholders_and_names_a_missing_key():
    assert t("kv_prefill", "en", n=12) == "prompt (prefill): 12 tokens"
    assert "12" in t("kv_prefill", "zh", n=12)
    with pytest.raises(KeyError, match="viz/i18n.py"):
        t("no_such_key", "en")
    with pytest.raises(ValueError):
        t("kv_prefill", "fr")


def test_ui_labels_the_app_needs_exist():
    from ui.strings import PAGE

    for key in ("prompt", "examples", "mode_chat", "mode_raw", "model", "temperature", "top_k", "top_p", "min_p",
                "repetition_penalty", "order", "order_transformers", "order_temperature_last", "seed", "btn_next",
                "btn_play", "btn_back", "btn_reset", "btn_force", "btn_export", "btn_import",
                "language", "layer", "head", "mean_over_heads", "explain_candidates", "explain_temperature",
                "explain_attention", "explain_kv_cache", "explain_cache_timing", "explain_kv_calculator"):
        assert key in PAGE, key
    assert PAGE["temperature"][0] == "Temperature (0 = greedy)"
    assert PAGE["top_k"][0] == "Top-k (0 = off)"


# --- numbers ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, text", [(1073741824, "1.00 GiB"), (46080, "45.0 KiB"), (23040, "22.5 KiB"),
                                     (512, "512 B"), (1536, "1.50 KiB"), (5 * 2**20, "5.00 MiB"),
                                     (150 * 2**30, "150 GiB")])
def test_format_bytes_uses_binary_units(n, text):
    assert format_bytes(n) == text


# --- candidates -------------------------------------------------------------------------------------

def test_candidate_bars_show_the_records_probabilities_and_fates():
    dist = make_dist(CUTS, u=0.3)
    fates = {c.fate for c in dist.candidates}
    assert {"chosen", "kept", "top_k", "top_p", "min_p"} <= fates  # the record exercises every cut
    fig = candidate_figure(dist)
    shown = {c.token.display: c for c in shown_candidates(dist)}
    t1 = [tr for tr in fig.data if tr.meta and tr.meta.get("role") == "t1"]
    final = [tr for tr in fig.data if tr.meta and tr.meta.get("role") == "final"]
    seen_t1 = {}
    for trace in t1:
        fate = trace.meta["fate"]
        assert trace.marker.line.color == FATE_COLORS[fate]
        for label, x in by_axis_label(fig, trace).items():
            label = label.replace("&lt;", "<").replace("&gt;", ">")
            assert shown[label].fate == fate
            seen_t1[label] = x
    assert seen_t1 == {d: c.prob_t1 for d, c in shown.items()}
    seen_final = {}
    for trace in final:
        assert trace.marker.color == FATE_COLORS[trace.meta["fate"]]
        seen_final.update(by_axis_label(fig, trace))
    kept = {d.replace("<", "&lt;").replace(">", "&gt;"): c.final_prob
            for d, c in shown.items() if c.fate in ("chosen", "kept")}
    assert seen_final == pytest.approx(kept)
    top_p_trace = next(tr for tr in t1 if tr.meta["fate"] == "top_p")
    assert top_p_trace.marker.pattern.fgcolor == FATE_COLORS["top_p"]


def test_fate_colours_are_the_okabe_ito_palette_one_each():
    assert FATE_COLORS == {"chosen": "#D55E00", "kept": "#0072B2", "top_k": "#E69F00", "top_p": "#CC79A7",
                           "min_p": "#56B4E9", "greedy": "#999999", "grammar": "#009E73"}  # grammar: constraints


def test_draw_order_is_final_probability_descending_ties_by_id_not_rank():
    # A repetition penalty can reorder tokens: here rank 3 ends up most probable, and ranks 1 and 2 tie.
    dist = make_dist(SamplingConfig(top_k=3), u=0.1)
    first, second, third = sorted(dist.candidates, key=lambda c: c.rank)[:3]
    first.final_prob, second.final_prob, third.final_prob = 0.25, 0.25, 0.5
    first.token.id, second.token.id = 11, 10  # the tie goes to the lower id, whatever the rank
    dist.chosen = third.token
    for c in (first, second, third):
        c.fate = "chosen" if c is third else "kept"
    segments = draw_segments(dist)
    assert [s.candidate.rank for s in segments] == [3, 2, 1]
    assert [(s.start, s.end) for s in segments] == [(0.0, 0.5), (0.5, 0.75), (0.75, 1.0)]


def test_candidate_labels_are_in_rank_order_and_escaped():
    dist = make_dist(SamplingConfig(), u=0.5)
    fig = candidate_figure(dist)
    labels = [s.replace("<b>", "").replace("</b>", "") for s in fig.layout.yaxis.ticktext]
    ranked = sorted(dist.candidates, key=lambda c: c.rank)[:12]
    assert labels == [c.token.display.replace("<", "&lt;").replace(">", "&gt;") for c in ranked]
    assert "&lt;b&gt;" in labels


def test_draw_panel_has_u_line_and_top_p_line_at_the_config_values():
    fig = candidate_figure(make_dist(CUTS, u=0.3))
    lines = {s.name: s for s in fig.layout.shapes}
    assert lines["u"].x0 == lines["u"].x1 == 0.3
    assert lines["top_p"].x0 == lines["top_p"].x1 == 0.95
    assert lines["u"].xref == "x2"
    no_top_p = candidate_figure(make_dist(SamplingConfig(temperature=0.8), u=0.3))
    assert "top_p" not in {s.name for s in no_top_p.layout.shapes}


def test_top_p_running_total_is_over_the_probabilities_entering_top_p():
    dist = make_dist(SamplingConfig(temperature=0.8, top_p=0.9), u=0.3)
    fig = candidate_figure(dist)
    line = next(tr for tr in fig.data if tr.name == t("cand_legend_after_top_p", "en"))
    kept = sorted((c for c in dist.candidates if c.final_prob > 0), key=lambda c: -c.final_prob)
    assert list(line.x) == pytest.approx(np.cumsum([c.stage_probs["temperature"] for c in kept]))
    assert line.x[-2] < 0.9 <= line.x[-1]  # the smallest set reaching p: that is what top-p keeps


@pytest.mark.parametrize("u", [0.05, 0.3, 0.62, 0.97])
def test_u_lands_in_the_chosen_tokens_stretch_in_draw_order(u):
    dist = make_dist(SamplingConfig(temperature=1.3, top_p=0.95), u=u)
    segments = draw_segments(dist)
    picked = [s for s in segments if s.start <= u < s.end]
    assert len(picked) == 1 and picked[0].candidate is not None
    assert picked[0].candidate.token.id == dist.chosen.id
    finals = [s.end - s.start for s in segments if s.candidate]
    assert finals == sorted(finals, reverse=True)
    assert segments[-1].end == pytest.approx(1.0)


def test_top_n_limits_the_bars_but_keeps_the_chosen_token():
    dist = make_dist(SamplingConfig(temperature=3.0), u=0.999, n_candidates=20)
    assert dist.chosen_rank > 5
    shown = shown_candidates(dist, top_n=5)
    assert [c.rank for c in shown[:5]] == [1, 2, 3, 4, 5]
    assert shown[-1].token.id == dist.chosen.id and len(shown) == 6
    segments = draw_segments(dist, top_n=5)
    assert any(s.candidate and s.candidate.token.id == dist.chosen.id for s in segments)
    assert len(segments) <= 6


# --- temperature ------------------------------------------------------------------------------------

def test_temperature_panels_share_one_range_and_frame_the_current_one():
    temps = [0.3, 0.7, 1.0, 1.5]
    dists = [make_dist(SamplingConfig(temperature=x, top_p=0.9)) for x in temps]
    sweep = TemperatureSweep(temps, [d.entropy_final_bits for d in dists], [d.stages[-1].kept for d in dists], 0.9)
    fig = temperature_figure(dists, sweep, current_temperature=0.7)
    bars = [tr for tr in fig.data if tr.type == "bar"]
    assert [b.meta["temperature"] for b in bars] == temps
    for bar, dist in zip(bars, dists):
        by_id = {c.token.id: c.final_prob for c in dist.candidates}
        ranked = sorted(dist.candidates, key=lambda c: c.rank)[:8]
        assert list(bar.x) == [by_id[c.token.id] for c in ranked]
    ranges = {tuple(fig.layout[f"xaxis{'' if i == 1 else i}"].range) for i in range(1, 5)}
    assert len(ranges) == 1
    frame = next(s for s in fig.layout.shapes if s.name == "current")
    assert frame.xref == "x2 domain"
    sweep_lines = [tr for tr in fig.data if tr.type == "scatter"]
    assert list(sweep_lines[0].y) == sweep.entropy_bits and list(sweep_lines[1].y) == sweep.nucleus_size


# --- attention --------------------------------------------------------------------------------------

def _causal_weights(n: int, seed: int = 0) -> np.ndarray:
    w = np.tril(np.random.default_rng(seed).random((n, n))) + np.eye(n)
    return w / w.sum(axis=1, keepdims=True)


def test_attention_masks_exactly_the_future():
    n = 9
    weights = _causal_weights(n)
    fig = attention_figure(weights, DISPLAYS[:n], layer=3, head=4, info=SMOLLM, first_position=40)
    z = np.array(next(tr for tr in fig.data if tr.name == "weights").z, dtype=float)
    i, j = np.indices((n, n))
    assert np.array_equal(np.isnan(z), j > i)
    assert np.allclose(z[j <= i], weights[j <= i])
    mask = np.array(next(tr for tr in fig.data if tr.name == "mask").z, dtype=float)
    assert np.array_equal(~np.isnan(mask), j > i)
    assert "KV head 1" in fig.layout.title.text and "3 query heads" in fig.layout.title.text
    newest = next(s for s in fig.layout.shapes if s.name == "newest")
    assert (newest.y0, newest.y1) == (n - 1.5, n - 0.5)
    assert any("−∞" in (tr.name or "") for tr in fig.data)


def test_attention_sliding_window_masks_old_keys_too():
    n, window = 10, 4
    fig = attention_figure(_causal_weights(n), DISPLAYS[:n], layer=0, head=None, info=SMOLLM, sliding_window=window)
    z = np.array(next(tr for tr in fig.data if tr.name == "weights").z, dtype=float)
    i, j = np.indices((n, n))
    assert np.array_equal(np.isnan(z), (j > i) | (i - j >= window))
    assert "window_edge" in {s.name for s in fig.layout.shapes}
    assert "mean over 9 heads" in fig.layout.title.text


def test_gqa_figure_links_each_query_head_to_its_kv_head():
    fig = gqa_figure(SMOLLM)
    kv = next(tr for tr in fig.data if tr.name == "kv")
    links = [tr for tr in fig.data if tr.mode == "lines"]
    assert len(links) == 9
    for h, link in enumerate(links):
        assert link.x[0] == h and link.x[1] == kv.x[h // 3]


# --- KV cache ---------------------------------------------------------------------------------------

def test_kv_growth_matches_the_formula():
    points = [kv_point(n) for n in (12, 13, 14, 20, 40)]
    fig = kv_growth_figure(points, prefill_tokens=12, info=SMOLLM)
    formula = next(tr for tr in fig.data if tr.meta["role"] == "formula")
    scale = formula.meta["scale"]
    assert scale == 1024**2  # 40 tokens x 46,080 B is 1.76 MiB
    expected = [2 * 30 * 3 * 64 * n * 4 for n in (12, 13, 14, 20, 40)]
    assert [round(y * scale) for y in formula.y] == [0] + expected  # the line starts at 0 tokens, 0 bytes
    assert list(formula.x) == [0, 12, 13, 14, 20, 40]
    k, v = (next(tr for tr in fig.data if tr.meta["role"] == r) for r in ("kv_keys", "kv_values"))
    assert [round((a + b) * scale) for a, b in zip(k.y, v.y)] == expected
    assert "46,080 B" in fig.layout.title.subtitle.text
    assert "MiB" in fig.layout.yaxis.title.text
    assert next(s for s in fig.layout.shapes if s.name == "prefill").x0 == 12


def test_kv_calculator_bars_and_labels():
    rows = [("Llama-2-7B, 2,048 tokens, fp16", 2 * 32 * 32 * 128 * 2048 * 2),
            ("Llama-3-8B, 8,192 tokens, fp16", 2 * 32 * 8 * 128 * 8192 * 2),
            ("SmolLM2-135M, 2,048 tokens, fp32", 2 * 30 * 3 * 64 * 2048 * 4)]
    fig = kv_calculator_figure(rows)
    bar = fig.data[0]
    assert [round(x * 2**30) for x in bar.x] == [n for _, n in rows]
    assert list(bar.text) == ["1.00 GiB", "1.00 GiB", "90.0 MiB"]
    assert list(fig.layout.yaxis.ticktext) == [label for label, _ in rows]


def test_cache_timing_plots_both_series():
    timing = CacheTiming(seq_len=[16, 64, 256], cached_ms=[10.0, 11.0, 14.0], full_ms=[12.0, 30.0, 160.0])
    fig = cache_timing_figure(timing)
    assert [list(tr.y) for tr in fig.data] == [timing.cached_ms, timing.full_ms]
    assert list(fig.data[0].x) == timing.seq_len


# --- chips ------------------------------------------------------------------------------------------

def test_chips_escape_tokens_and_mark_steps():
    prompt = [TokenInfo(1, "<b>", "<b>"), TokenInfo(2, "Ġx", "␣x\"'")]
    steps = [make_step(1, SamplingConfig(), u=0.1), make_step(2, SamplingConfig(), u=0.5, forced_id=5)]
    out = token_chips_html(prompt, steps, "en")
    assert "&lt;b&gt;" in out and "<b>" not in out
    assert 'data-step="1"' in out and 'data-step="2"' in out
    assert out.count("tbt-chip tbt-prompt") == 2 and out.count("tbt-chip tbt-gen") == 2
    assert len(re.findall(r'class="[^"]*\btbt-forced\b', out)) == 1 and "forced by you" in out
    prob = steps[0].distribution.chosen_candidate.prob_t1
    assert f"rank {steps[0].distribution.chosen_rank}" in out and f"{100 * prob:.1f}%" in out
    mirrored = token_chips_html(prompt, steps, "en", step_data="room-step")  # a room's: a click goes nowhere
    assert 'data-room-step="1"' in mirrored and "data-step=" not in mirrored
    assert mirrored.replace("data-room-step=", "data-step=") == out


def test_chips_darker_means_more_probable_and_newlines_break():
    from viz.chips import chip_color
    lum = lambda c: sum(int(v) for v in c[4:-1].split(","))
    assert lum(chip_color(0.9)[0]) < lum(chip_color(0.1)[0])
    newline = make_step(1, SamplingConfig(), u=0.3)
    newline.distribution.chosen = TokenInfo(2, "Ċ", "↵")
    newline.distribution.candidates[2].token = newline.distribution.chosen
    assert "↵</span><br>" in token_chips_html([], [newline])


# --- every builder, both languages, no forbidden imports ---------------------------------------------

def _decoded(value):
    """plotly's JSON of a go.Figure with its typed arrays ({"dtype", "bdata", "shape"}) as plain lists, NaN as None."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        array = array.reshape([int(n) for n in shape.split(",")] if isinstance(shape, str) else shape or -1)
        return json.loads(json.dumps(array.tolist()).replace("NaN", "null"))
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    return [_decoded(v) for v in value] if isinstance(value, list) else value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_builder_runs_in_both_languages(lang):
    dists = [make_dist(SamplingConfig(temperature=x)) for x in (0.0, 1.0)]
    sweep = TemperatureSweep([0.0, 1.0], [0.0, 2.0], [1, 20], 1.0)
    figs = [candidate_figure(make_dist(CUTS), lang), candidate_figure(dists[0], lang),
            temperature_figure(dists, sweep, 1.0, lang), gqa_figure(SMOLLM, lang),
            attention_figure(_causal_weights(4), DISPLAYS[:4], 0, 0, SMOLLM, lang=lang),
            kv_growth_figure([kv_point(3)], 3, SMOLLM, lang), kv_calculator_figure([("a", 10)], lang),
            cache_timing_figure(CacheTiming([1], [1.0], [1.0]), lang)]
    for f in figs:  # the builders skip plotly's checks for speed: every property must still be a valid one
        go.Figure(json.loads(f.to_json()))  # validates: an unknown or mistyped property raises ValueError
    # The page draws the plain charts: the same JSON as the figures (an empty template aside)
    charts = [candidate_chart(make_dist(CUTS), lang), temperature_chart(dists, sweep, 1.0, lang),
              attention_chart(_causal_weights(4), DISPLAYS[:4], 0, 0, SMOLLM, lang=lang),
              kv_growth_chart([kv_point(3)], 3, SMOLLM, lang)]
    for spec, f in zip(charts, [figs[0], figs[2], figs[4], figs[5]]):
        page, built = json.loads(chart_json(spec)), _decoded(json.loads(f.to_json()))
        assert page["layout"].pop("template") == {} and built["layout"].pop("template") in ({}, None)
        assert page == built
        # plotly.js reads some colour-scale names differently from plotly's Python side ("Blues"): none by name
        assert all(isinstance(tr.get("colorscale", []), list) for tr in page["data"])
    assert all(f.layout.meta["lang"] == lang for f in figs)
    assert all(f.layout.font.size >= 14 for f in figs)
    for f in figs:  # every axis, each subplot's included, has the light grid (there is no theme to give one)
        axes = [k for k in f.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]
        assert axes and all(f.layout[k].gridcolor == f.layout[k].zerolinecolor == "#E5E5E5" for k in axes), axes
    assert token_chips_html([], [make_step(1, SamplingConfig(), 0.2)], lang).startswith("<div")


def test_viz_never_imports_torch_transformers_or_gradio():
    code = ("import sys, viz; bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'gradio')];"
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_not_shown_mass_counts_every_token_without_a_bar():
    """The subtitle's 'not shown' is 1 minus the bars drawn, also when the record holds more candidates than bars."""
    from viz.candidates import not_shown_mass
    from viz.style import format_prob

    dist = make_dist(SamplingConfig(temperature=0.8, top_p=0.9))
    shown = shown_candidates(dist, top_n=3)
    tail_t1, tail_final = not_shown_mass(dist, shown)
    assert tail_t1 == pytest.approx(1 - sum(c.prob_t1 for c in shown), abs=1e-6)
    assert tail_final == pytest.approx(1 - sum(c.final_prob for c in shown), abs=1e-6)
    assert format_prob(tail_t1) in candidate_figure(dist, top_n=3).layout.title.subtitle.text


def test_margins_hold_the_widest_tick_label_without_automargin():
    from viz.style import text_px

    dist = make_dist(SamplingConfig())
    layout = candidate_figure(dist).to_plotly_json()["layout"]
    assert not any(layout[k].get("automargin") for k in layout if k.startswith(("xaxis", "yaxis")))
    widest = max(text_px(s, 16) for s in layout["yaxis"]["ticktext"])
    assert layout["margin"]["l"] >= widest
    # A Chinese label is wider than a Latin one of the same length, and the margin grows with it.
    assert text_px("一二三四", 16) > text_px("abcd", 16) > 0
    assert text_px("<b>abc</b>", 16) == text_px("abc", 16)  # markup is not text
    long = make_dist(SamplingConfig())
    long.candidates[0].token.display = "␣" + "w" * 30
    assert candidate_figure(long).to_plotly_json()["layout"]["margin"]["l"] > layout["margin"]["l"]


def test_one_text_width_estimate_serves_margins_and_wrapping():
    """text_px (margins) and wrap_text (titles, notes) measure with the one estimate, text_ems: a CJK character a
    whole em; wrap_text counts in columns of half an em, so a CJK character takes two."""
    from viz.style import text_ems, text_px, wrap_text

    assert text_px("一二ab", 10) == 10 * text_ems("一二ab") == pytest.approx(10 * (2 + 2 * 0.62))
    assert text_px("<i>&lt;b&gt;</i>", 10) == 10 * text_ems("<b>")  # a tag is not text; an entity, what it shows
    for text in ["The draft is kept when the check passes, and the rest of its tokens are thrown away",
                 "草稿通过检验时被保留，其余的词元被丢弃，然后目标模型从那里继续生成", "mixed 中文 and English 文字 together"]:
        for width in (10, 16, 30):
            lines = wrap_text(text, width).split("<br>")
            assert "".join(lines).replace(" ", "") == text.replace(" ", "")  # nothing lost, only broken
            assert all(2 * text_ems(line, narrow_em=0.5) <= width for line in lines if len(line) > 1)


def test_figure_carrier_round_trips_the_figure_and_escapes_markup():
    from ui.protocol import carried_figure, figure_carrier

    dist = make_dist(SamplingConfig())
    dist.candidates[0].token.display = "</div><script>"
    fig = candidate_chart(dist)
    carrier = figure_carrier(fig, "tbt-fig-candidates")
    assert "</div><script>" not in carrier and 'data-target="tbt-fig-candidates"' in carrier
    assert carried_figure(carrier) == json.loads(candidate_figure(dist).to_json())
    revs = {figure_carrier(fig, "x").split('data-rev="')[1].split('"')[0] for _ in range(3)}
    assert len(revs) == 3  # every carrier is drawn once, even of the same figure


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_class_guesses_chart_counts_each_choice_and_names_no_one(lang):
    from viz.guesses import after_reveal_chart, class_guesses_chart, class_guesses_figure

    fig = class_guesses_figure(["␣Paris", "␣the", "␣London"], [3, 0, 1], 5, lang)
    go.Figure(json.loads(fig.to_json()))  # every property a valid one
    assert list(fig.data[0].y) == ["␣Paris", "␣the", "␣London"] and list(fig.data[0].x) == [3, 0, 1]
    assert t("guesses_sub", lang, answered=4, followers=5) == fig.layout.title.subtitle.text
    assert fig.layout.meta["lang"] == lang and fig.layout.font.size >= 14
    waiting = go.Figure(**after_reveal_chart(lang))
    assert waiting.data == () and waiting.layout.title.text == t("guesses_wait_title", lang)
    assert class_guesses_chart([], [], 0, lang)["data"][0]["x"] == []  # a room with no question yet: no bar


def test_the_batching_page_states_bandwidth_in_the_binary_units_of_its_sizes():
    """Issue 20 item 10: 513 MiB of weights beside GB/s mixed two unit systems; the page uses binary ones."""
    from viz.i18n import WORDS
    for key in ("batch_measure_subtitle", "batch_measure_sentence"):
        assert all("GiB" in text and "GB" not in text.replace("GiB", "") for text in WORDS[key])


@pytest.mark.parametrize("lang, one_text, one_token, many", [("en", "1 text.", "1 token ·", "2 tokens ·"),
                                                               ("zh", "共 1 段文本。", "1 个词元 ·", "2 个词元 ·")])
def test_the_branches_chart_counts_one_text_and_one_token_in_the_singular(lang, one_text, one_token, many):
    from model.decoding.branches import BranchSummary
    from ui.views.branches import branch_choices
    from viz.branches import branch_tree_chart

    one = BranchSummary(id=0, parent=None, fork=0, length=1, logprob_t1=-1.5, current=True, text=" Paris",
                        own_bytes=0, at=1)
    texts = json.dumps(branch_tree_chart([one], lang), ensure_ascii=False, default=str)
    assert one_text in texts and one_token in texts and "texts" not in texts.replace("hovertext", "")
    two = BranchSummary(id=1, parent=0, fork=0, length=2, logprob_t1=-3.0, current=False, text=" Lyon.", own_bytes=0,
                        at=2)
    labels = [label for label, _ in branch_choices([one, two], lang)]
    assert labels[0].startswith(f"#0 · {one_token}") and labels[1].startswith(f"#1 · {many}")


def test_the_engines_own_sampler_is_a_diamond_on_each_candidates_row_and_a_sentence():
    """viz.candidate_chart's engine_sampler (ui/views/candidates.py): a diamond at the engine's post-sampler
    probability on the row of each shown candidate it told about, the sentence under the title, the axis reaching
    the farthest diamond; without it, neither."""
    dist = make_dist(SamplingConfig(temperature=0.7, top_k=5), u=0.3)
    shown = shown_candidates(dist)
    probs = {c.token.id: (0.9 if i == 1 else c.final_prob) for i, c in enumerate(shown[:6])}  # row 1 moved far
    fig = candidate_figure(dist, engine_sampler={"probs": probs, "note": "NOTE"})
    diamonds = [tr for tr in fig.data if tr.meta and tr.meta.get("role") == "engine_sampler"]
    assert len(diamonds) == 1 and diamonds[0].marker.symbol == "diamond"
    labels = {c.token.display: probs[c.token.id] for c in shown[:6]}
    assert by_axis_label(fig, diamonds[0]) == pytest.approx({k.replace("<", "&lt;").replace(">", "&gt;"): v
                                                              for k, v in labels.items()})
    assert fig.layout.title.subtitle.text.endswith("NOTE") and fig.layout.xaxis.range[1] >= 0.9
    fault = candidate_figure(dist, engine_sampler={"note": "FAULT"})
    assert "FAULT" in fault.layout.title.subtitle.text
    assert not [tr for tr in fault.data if tr.meta and tr.meta.get("role") == "engine_sampler"]
    plain = candidate_figure(dist)
    assert not [tr for tr in plain.data if tr.meta and tr.meta.get("role") == "engine_sampler"]
    assert "NOTE" not in plain.layout.title.subtitle.text
