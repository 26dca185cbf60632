"""A lesson's questions answered by running the model on the step's text: plain records out (ms, tokens per second,
logits); the page says them (ui/views/lesson.py) and draws them (viz/lesson.py).

  prefill_vs_decode  which makes more tokens per second here: a prefill of `tokens` tokens (the step's text
                     repeated), or one decode step at batch 1 on it (measured: REPEATS runs each, the view's passes)
  top_attribution    which of the question's tokens has the largest integrated gradient for the step's last token
                     (computed: model/inside/attribution.py at STEPS points), with the attention of the same step
"""
from __future__ import annotations

import torch
from transformers import DynamicCache

from model.decoding.core import computation
from model.decoding.scheduler import model_pass
from model.decoding.timing import separated, spread
from model.inside.attribution import STEPS, compute as attribution
from model.speed.prefill_decode import long_text, measure_decode, measure_prefill

REPEATS = 3  # timed runs of each (timing.MIN_RUNS: fewer cannot conclude)


@computation
@torch.no_grad()
def prefill_and_decode(lm, ids: list[int], tokens: int, repeats: int = REPEATS):
    """(a prefill of ids repeated to `tokens` tokens, a batch-1 decode step after `tokens` tokens), each a PassTime
    measured as the Prefill vs decode view measures it."""
    text = long_text(ids, tokens + 1)
    model = lm.model
    prefill = measure_prefill(model, text, tokens, repeats)
    base = DynamicCache(config=model.config)
    with model_pass(model):
        model(input_ids=torch.tensor([text[:tokens]]), past_key_values=base, use_cache=True, logits_to_keep=1)
    return prefill, measure_decode(model, base, text[tokens], 1, repeats)


def prefill_vs_decode_record(session, predict: dict, guess: str | None) -> dict:
    """A prefill_vs_decode question's reveal: tokens per second of each, every run's, and the answer by a stated rule
    (timing.separated on the per-run tokens per second: "prefill" or "decode" when every run of one beat every run
    of the other, else None: too noisy to say). Keys: tokens, prefill_ms, decode_ms (medians), prefill_tps,
    decode_tps (medians), prefill_runs, decode_runs (tokens/s of each run), ratio, answer."""
    return {"kind": "prefill_vs_decode", **pair_record(session, predict["tokens"], guess)}


def pair_record(session, tokens: int, guess: str | None = None) -> dict:
    """prefill_vs_decode_record's numbers (without its kind): also the Prefill vs decode view's lesson chart."""
    text = session.whole_text("pd_needs_weights")
    prefill, decode = text.run(prefill_and_decode, tokens)
    p_tps = [1000.0 * prefill.tokens / ms for ms in prefill.runs]
    d_tps = [1000.0 * decode.tokens / ms for ms in decode.runs]
    p, d = spread(p_tps), spread(d_tps)
    answer = "prefill" if separated(d, p) else "decode" if separated(p, d) else None
    return {"guess": guess, "right": None if guess is None or answer is None else guess == answer, "answer": answer,
            "tokens": tokens, "prefill_ms": prefill.ms, "decode_ms": decode.ms,
            "prefill_tps": prefill.tokens_per_s, "decode_tps": decode.tokens_per_s, "prefill_runs": p_tps,
            "decode_runs": d_tps, "ratio": prefill.tokens_per_s / decode.tokens_per_s}


def last_position(ids: list[int], token: int) -> int | None:
    """The position of the last occurrence of `token` in `ids`, or None."""
    return max((i for i, t in enumerate(ids) if t == token), default=None)


def top_attribution_record(session, predict: dict, guess: str | None, lang: str) -> dict:
    """A top_attribution question's reveal: the step's last token (the next one if none was written) explained at
    STEPS points; each choice's integrated gradient and attention at its last occurrence in the context; the answer:
    the choice with the largest integrated gradient. Keys: target (display), position, choices: [{text, token (its
    display), position, ig, attention}] in the question's order (a choice that is not one token of the context:
    position None, ig None), answer (a choice's text), most_attention (display of the context token, after the
    first, with the most attention), delta (the completeness gap), steps."""
    text = session.whole_text("attr_needs_weights")
    a = text.run(attribution, None, None, text.prompt_len, STEPS)
    context = [tok.id for tok in a.tokens]
    rows = []
    for choice in predict["choices"]["zh" if lang == "zh" else "en"]:
        ids = session.lm.tokenizer.encode(choice, add_special_tokens=False)
        at = last_position(context, ids[0]) if len(ids) == 1 else None
        rows.append({"text": choice, "token": session.lm.tokens.info(ids[0]).display if ids else choice,
                     "position": at, "ig": None if at is None else float(a.integrated[at]),
                     "attention": None if at is None else float(a.attention[at])})
    scored = [r for r in rows if r["ig"] is not None]
    answer = max(scored, key=lambda r: r["ig"])["text"] if scored else None
    after_first = range(1, len(a.tokens))
    most = max(after_first, key=lambda i: a.attention[i]) if len(a.tokens) > 1 else 0
    return {"kind": "top_attribution", "guess": guess,
            "right": None if guess is None or answer is None else guess == answer, "answer": answer,
            "target": a.target.display, "position": a.position, "choices": rows,
            "most_attention": a.tokens[most].display, "delta": a.delta, "steps": a.steps}
