"""Command-line trace: python -m model --prompt "..." --steps 20 [--temperature ...] [--json] [--chat]."""
from __future__ import annotations

import argparse
import json
import sys

from model.decoding.loading import DEFAULT_MODEL, ModelLoadError, load_model
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession, SessionError
from model.decoding.trace import to_trace


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m model", description="Decode a prompt one token at a time and show each step.")
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--model", default=DEFAULT_MODEL, help="smollm2 (default), gemma3-270m, or a local model folder")
    ap.add_argument("--chat", action="store_true", help="apply the model's chat template (default: continue the raw prompt)")
    ap.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    ap.add_argument("--top-k", type=int, default=0, help="0 = off")
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--min-p", type=float, default=0.0)
    ap.add_argument("--repetition-penalty", type=float, default=1.0)
    ap.add_argument("--order", default="transformers", choices=["transformers", "temperature_last"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print the whole session as JSON (the app's trace format)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = SamplingConfig(args.temperature, args.top_k, args.top_p, args.min_p, args.repetition_penalty, args.order, args.seed)
    try:
        cfg.validate()
        lm = load_model(args.model)
        session = DecodeSession(lm)
        prefill = session.start(args.prompt, chat=args.chat)
        if not args.json:
            print("prompt tokens:", " ".join(t.display for t in prefill.tokens))
        for _ in range(args.steps):
            if session.finished or len(session.ids) >= session.max_tokens:
                break
            r = session.step(cfg)
            if not args.json:
                d = r.distribution
                print(f"{r.step:3d}  {r.token.display!s:>14}  p(T=1)={d.chosen_candidate.prob_t1:.3f}  "
                      f"p(final)={d.chosen_final_prob:.3f}  rank={d.chosen_rank}  u={d.u:.3f}  kv={r.kv.measured} B")
    except (ModelLoadError, SessionError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(to_trace(session), sys.stdout, ensure_ascii=False, indent=1)
        print()
    else:
        print("text:", repr(session.text))
        print(f"log-probability at T=1: {session.logprob_t1():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
