"""Tokens per verifying pass of Medusa's heads on a set of texts, beside prompt lookup's: python -m bench.medusa.

Each text (TEXTS: prose, lists, code, chat requests; none a prompt the heads were trained on) is continued greedily
for --tokens tokens by plain decoding (one pass a token), by prompt lookup (model/speed/speculative.py, k = 4) and
by Medusa with trees of each --trees size (model/speed/medusa.py). Per text and way: tokens per pass, whether the
tokens equal plain greedy's, and wall ms per token on this machine (one torch thread, nice 19: a shared machine; the
CPU share others took is printed with it). Writes bench/results/medusa.json.
"""
from __future__ import annotations

import argparse
import os

import torch

from bench import CpuWatch, save, table
from model.decoding.loading import load_model
from model.speed.medusa import LOOKUP_DRAFT, MedusaDecoder
from model.speed.medusa_heads import heads_for
from model.speed.speculative import GREEDY, plain_greedy, speculative_decode

TEXTS = {  # (text, chat): made up here, none of them a training prompt
    "prose": ("The history of the bicycle begins in the early nineteenth century, when", False),
    "story": ("The old lighthouse keeper climbed the stairs every evening, and on the night of the storm he", False),
    "facts": ("The largest planet in our solar system is", False),
    "list": ("Monday, Tuesday, Wednesday, Thursday,", False),
    "numbers": ("2, 4, 6, 8, 10,", False),
    "code": ("def area_square(side):\n    return side * side\n\n\ndef area_rectangle(width, height):\n", False),
    "code2": ("import math\n\ndef circle_area(radius):\n", False),
    "recipe": ("To make a simple tomato soup, first", False),
    "chat-explain": ("Explain what a rainbow is.", True),
    "chat-list": ("Name four animals that live in the ocean.", True),
    "chat-code": ("Write a Python function that adds two numbers.", True),
    "chat-advice": ("How can I study better for exams?", True),
}


def ids_of(lm, text: str, chat: bool) -> list[int]:
    if not chat:
        return list(lm.tokenizer(text)["input_ids"])
    ids = lm.tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                           tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--trees", type=int, nargs="+", default=[1, 4, 8, 12, 20, 32])
    ap.add_argument("--model", default="smollm2")
    args = ap.parse_args()
    os.nice(19 - os.nice(0))
    torch.set_num_threads(1)
    lm = load_model(args.model)
    heads = heads_for(lm)
    per_text, totals = {}, {"plain": [0, 0, 0.0], "lookup": [0, 0, 0.0], **{f"medusa-{n}": [0, 0, 0.0] for n in args.trees}}
    rows = []
    with CpuWatch() as watch:
        for name, (text, chat) in TEXTS.items():
            ids = ids_of(lm, text, chat)
            plain, plain_ms, plain_passes = plain_greedy(lm, ids, args.tokens)
            lookup = speculative_decode(lm, ids, GREEDY, LOOKUP_DRAFT, max_new_tokens=args.tokens)
            lookup_ms = sum(r.round_ms for r in lookup.rounds)
            ways = {"plain": (plain, plain_passes, plain_ms), "lookup": (list(lookup.generated), lookup.passes, lookup_ms)}
            for n in args.trees:
                decoder = MedusaDecoder(lm, heads, ids, n, args.tokens)
                decoder.run()
                ways[f"medusa-{n}"] = (decoder.generated, len(decoder.rounds), decoder.ms)
            per_text[name] = {}
            for way, (tokens, passes, ms) in ways.items():
                per_text[name][way] = {"tokens": len(tokens), "passes": passes, "tokens_per_pass": len(tokens) / passes,
                                       "ms_per_token": ms / len(tokens), "same_as_plain": tokens == plain}
                totals[way][0] += len(tokens)
                totals[way][1] += passes
                totals[way][2] += ms
            rows.append([name] + [f"{per_text[name][w]['tokens_per_pass']:.2f}" + ("" if per_text[name][w]["same_as_plain"]
                                                                                  else " (differs)") for w in ways])
            print(table(["text", *ways], rows[-1:]), flush=True)
    summary = {way: {"tokens": t, "passes": p, "tokens_per_pass": t / p, "ms_per_token": ms / t}
               for way, (t, p, ms) in totals.items()}
    rows.append(["ALL"] + [f"{summary[w]['tokens_per_pass']:.2f}" for w in totals])
    rows.append(["ms/token"] + [f"{summary[w]['ms_per_token']:.0f}" for w in totals])
    print()
    print(table(["text", *totals], rows))
    print(f"others' CPU share over the run: {100 * watch.other_share:.0f} %")
    acc = heads.report["accuracy"]
    print("saved", save("medusa", {"tokens": args.tokens, "trees": args.trees, "lookup_draft": LOOKUP_DRAFT,
                                   "heads_top1": acc["top1"], "heads_top5": acc["top5"], "texts": per_text,
                                   "all": summary, "other_cpu_share": watch.other_share, "wall_s": watch.wall_s}))


if __name__ == "__main__":
    main()
