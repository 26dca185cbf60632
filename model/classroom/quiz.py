"""A lesson's predict-then-reveal questions answered by the engine: the right answer and the numbers the reveal
says (ranks, probabilities, what top-p keeps, cache sizes), as plain records. No gradio, no words: the page says
them (ui/views/lesson.py) and draws them (viz/lesson.py).

A question (`predict`, checked by model/classroom/lessons.py) is one of:
  next_token     {"choices": {"en": [token texts], "zh": [...]}}: which token comes next
  kept_by_top_p  {"token": {"en": text, "zh": text}}: does top-p keep this token
  order          {}: which order of temperature and the cuts keeps more tokens
  cache_size     {"model": CURRENT_MODEL or a kv.PRESETS name, "tokens": n, "dtype": a kv.DTYPE_BYTES name,
                  "myth_factor": optional, a wrong size (the right one times it) always among the choices}
  step_time      {"tokens": n}: does a cached step take longer on a long text (measured, a line fitted)
  kept_count     {}: how many tokens top-p keeps at this step (the choices computed: count_choices)
  beam_vs_sample {"width": B, "tokens": n}: which text has the higher log P, beam search's or sampling's
  prefill_vs_decode {"tokens": n}: which makes more tokens per second here, a prefill or a decode step (measured)
  top_attribution {"choices": {"en": [token texts], "zh": [...]}}: which has the largest integrated gradient
"""
from __future__ import annotations

import math
from dataclasses import replace

from model.decoding.kv import DTYPE_BYTES, PRESETS, kv_cache_bytes
from model.decoding.records import ModelInfo, SamplingConfig
from model.classroom.myths import (beam_vs_sample_record, count_choices, kept_count_record,  # noqa: F401 (re-exported)
                                   step_grade, step_time_record)
from model.classroom.probes import prefill_vs_decode_record, top_attribution_record

CURRENT_MODEL = "current"  # cache_size: the model the page runs
SIZE_SPREADS = ((1, 4, 16, 64), (1 / 4, 1, 4, 16), (1 / 16, 1 / 4, 1, 4), (1 / 64, 1 / 16, 1 / 4, 1))


class NoToken(ValueError):
    """The text asked about is no token at all (it tokenizes to nothing)."""


def step_config(step: dict) -> SamplingConfig:
    """A lesson step's settings: the lesson's, over the plain distribution's defaults (T = 1, no cut)."""
    return SamplingConfig(**step["settings"]).validate()


def cache_shape(predict: dict, info: ModelInfo) -> tuple[int, int, int]:
    """(layers, KV heads, head size) of a cache_size question: a preset's, or the loaded model's (`info`)."""
    if predict["model"] == CURRENT_MODEL:
        return info.layers, info.kv_heads, info.head_dim
    layers, _, kv_heads, head_dim = PRESETS[predict["model"]]
    return layers, kv_heads, head_dim


def predict_cache_bytes(predict: dict, info: ModelInfo) -> int:
    """The right answer of a cache_size question, in bytes (docs/what-it-teaches.md: Its size)."""
    return kv_cache_bytes(*cache_shape(predict, info), predict["tokens"], DTYPE_BYTES[predict["dtype"]])


def size_choices(predict: dict, info: ModelInfo) -> list[int]:
    """Four cache sizes to pick from (bytes), the right one among them (its place varies with the question)."""
    right = predict_cache_bytes(predict, info)
    spread = SIZE_SPREADS[(predict["tokens"] * 7 + len(predict["model"])) % len(SIZE_SPREADS)]
    # the wrong answer a lesson tests (myth_factor), in place of the spread's size farthest from it
    if predict.get("myth_factor") not in (None, *spread):
        myth = predict["myth_factor"]
        farthest = max((f for f in spread if f != 1 and f != myth), key=lambda f: abs(math.log(f / myth)))
        spread = sorted({*spread, myth} - {farthest})
    return [int(right * f) for f in spread]


def token_rank(session, text: str, cfg: SamplingConfig) -> int:
    """The rank (1: the most likely) of the first token of `text` after the session's text, with the step's
    settings `cfg` (the rank its reveal says): what a kept_by_top_p question's `{rank}` says. NoToken if `text`
    has no token."""
    ids = session.lm.tokenizer.encode(text, add_special_tokens=False)
    if not ids:
        raise NoToken(text)
    return session.preview(cfg, force_token=ids[0]).chosen_candidate.rank


def reveal_record(session, step: dict, guess: str | None, cfg: SamplingConfig, lang: str = "en") -> dict:
    """What the reveal says, as plain numbers (probabilities in [0, 1], bytes): the engine's own answer.

    Every record has "kind", "guess" and "right" (bool; None when the teacher revealed without a guess, `guess`
    None: a next_token question then asks about the model's most likely token). By kind, also:
      cache_size     bytes, layers, kv_heads, head_dim, tokens, bytes_per (bytes per value)
      order          first, last: tokens kept with temperature first (transformers' order) and last; answer (the
                     right choice), temperature, top_k, top_p, min_p (the settings both orders ran)
      step_time, kept_count, beam_vs_sample: model.classroom.myths' records (each has "answer")
      prefill_vs_decode, top_attribution: model.classroom.probes' records (each has "answer")
      next_token     token_id, token (its display), several (the guess is more than one token; the first is
                     asked), prob (at T = 1), rank, vocab, top, top_prob (the most probable token), chosen (the
                     token these settings draw)
      kept_by_top_p  the same as next_token (for the question's token), and kept (bool), before (the T = 1
                     probability of the tokens ranked above it), p (top-p)
    `session`: a started DecodeSession at the step; no model run. NoToken if the text asked about has no token.
    `lang`: the page's language (a kept_by_top_p question names its token per language: each runs on its model).
    """
    predict = step["predict"]
    kind = predict["kind"]
    info = session.lm.info
    if kind == "step_time":
        return step_time_record(session, predict, guess)
    if kind == "kept_count":
        return kept_count_record(session, cfg, guess)
    if kind == "beam_vs_sample":
        return beam_vs_sample_record(session, predict, cfg, guess)
    if kind == "prefill_vs_decode":
        return prefill_vs_decode_record(session, predict, guess)
    if kind == "top_attribution":
        return top_attribution_record(session, predict, guess, lang)
    if kind == "cache_size":
        layers, kv_heads, head_dim = cache_shape(predict, info)
        right = predict_cache_bytes(predict, info)
        return {"kind": kind, "guess": guess, "right": _right(guess, str(right) == guess), "bytes": right,
                "layers": layers, "kv_heads": kv_heads, "head_dim": head_dim, "tokens": predict["tokens"],
                "bytes_per": DTYPE_BYTES[predict["dtype"]]}
    dist = session.preview(cfg)
    if kind == "order":
        first = session.preview(replace(cfg, order="transformers")).stages[-1].kept
        last = session.preview(replace(cfg, order="temperature_last")).stages[-1].kept
        right = "transformers" if first > last else "temperature_last" if last > first else "same"
        return {"kind": kind, "guess": guess, "right": _right(guess, guess == right), "first": first, "last": last,
                "answer": right, "temperature": cfg.temperature, "top_k": cfg.top_k, "top_p": cfg.top_p,
                "min_p": cfg.min_p}
    top = min(dist.candidates, key=lambda c: c.rank)
    if kind == "next_token" and guess is None:
        ids = [top.token.id]  # no guess: the question is answered by the model's own most likely token
    else:
        asked = guess if kind == "next_token" else predict["token"]["zh" if lang == "zh" else "en"]
        ids = session.lm.tokenizer.encode(asked, add_special_tokens=False)
        if not ids:
            raise NoToken(asked)
    token = session.preview(cfg, force_token=ids[0]).chosen_candidate  # the asked token, wherever it ranks
    record = {"kind": kind, "guess": guess, "token_id": token.token.id, "token": token.token.display,
              "several": len(ids) > 1, "prob": token.prob_t1, "rank": token.rank, "vocab": info.vocab,
              "top": top.token.display, "top_prob": top.prob_t1, "chosen": dist.chosen.display}
    if kind == "next_token":
        record["right"] = _right(guess, token.token.id == top.token.id)
    else:
        kept = token.stage_probs["top_p"] > 0
        before = sum(c.stage_probs["top_k"] for c in dist.candidates if c.rank < token.rank)
        record.update(right=_right(guess, (guess == "yes") == kept), kept=kept, before=before, p=cfg.top_p)
    return record


def graded(record: dict, guess: str | None) -> dict:
    """A reveal record with its right answer ("answer") said again for another guess, no model run: a measured or
    searched question (step_time, beam_vs_sample) is run once and each of the class's guesses graded on it."""
    if record["kind"] == "step_time":  # graded on the known answer when the machine was too busy to measure one
        right, graded_on = step_grade(guess, record["answer"])
        return {**record, "guess": guess, "right": right, "graded_on": graded_on}
    return {**record, "guess": guess, "right": _right(guess, guess == record["answer"])}


def _right(guess: str | None, right: bool) -> bool | None:
    """Whether a guess was right; None for a reveal without a guess."""
    return None if guess is None else right


def typed_guess(predict: dict, guess: str, choices: list[str]) -> str:
    """A guess as the text it asks about: a word typed for a next_token question (not one of its `choices`, and
    starting with a letter or digit) is read as written after the prompt, so with the leading space its token has."""
    if predict["kind"] == "next_token" and guess not in choices and guess[:1].isascii() and \
            guess[:1].isalnum():
        return " " + guess
    return guess
