"""Train Medusa heads for a model here, on CPU, by self-distillation: no data set, only the model's own greedy text.

    nice -n 19 .venv/bin/python -m model.speed.medusa_training            # SmolLM2, as shipped in assets/medusa/
    .venv/bin/python -m model.speed.medusa_training --prompts 6 --variants 2 --tokens 24 --epochs 1 --out /tmp/m

Medusa's second recipe (Cai et al. 2024, section 3.2: self-distillation) when the model's training data is not at
hand: let the model write, and train the heads to guess what it wrote. Here:

1. text, in two kinds. (a) Each prompt of RAW and CHAT (plain openings and chat requests made up for this purpose),
   --variants times, each time after a prefix the model samples itself (T = 1, top-p 0.95, --min-prefix to --prefix
   tokens: varied contexts from one prompt). (b) --self-requests chat texts whose request the model wrote itself: its
   chat template up to the user's words, the user's words sampled (as Magpie, Xu et al. 2024, has a model write its
   own prompts; self_request), then the assistant's turn. Each text is then continued GREEDILY for --tokens tokens,
   as the verifier decodes. One prompt in HELD_OUT_EVERY (with all its variants) and --self-held-out more
   self-written requests (other draws) are kept apart for the held-out measurement;
2. the final hidden state at each position t of the greedy part (and at the last token before it), taken from the
   same generate() call that wrote it, and the tokens that follow: the model's own greedy tokens, so head k's
   target at t is exactly the token greedy verification will accept at t + k + 1;
3. the heads (medusa_heads.MedusaHeads: K residual blocks, the model's LM head frozen) trained by cross-entropy on
   those targets, head k weighted 0.8^(k-1) as Medusa weights them, AdamW, a short warm-up then cosine decay;
4. the held-out text: each head's guess of rank r right how often (top-1, top-5), measured on the float16 weights
   that ship; the tree a verifying pass checks is built from these (medusa_heads.tree_paths).

One torch thread and the lowest priority (os.nice(19)): the machine is shared. Seeded: the same arguments on the
same machine write the same heads. Writes assets/medusa/<model>.safetensors and .json (the report: arguments, data,
time, loss curve, accuracy) and the loss curve as an SVG (--svg).
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import time
from pathlib import Path

import torch

from model.decoding.loading import end_ids, load_model
from model.speed.medusa_heads import ASSETS, TOP_GUESSES, MedusaHeads, read_heads, save_heads

HELD_OUT_EVERY = 6  # prompts 5, 11, 17, ... and all their variants: never trained on
RANKS = TOP_GUESSES  # ranks measured per head
LOSS_DECAY = 0.8  # head k's loss weighted LOSS_DECAY ** (k - 1) (Medusa's lambda_k)

# Plain openings a user might type, and requests in the chat template: made up here, about many kinds of text
# (stories, facts, code, lists, recipes, letters, numbers, other languages). No data set is read.
RAW = [
    "The capital of France is", "Once upon a time, in a small village by the sea,", "The best way to learn a language is",
    "def fibonacci(n):", "In 1969, the first humans", "My favourite recipe for pancakes:", "Dear Sir or Madam,",
    "The three primary colours are", "Photosynthesis is the process by which", "import numpy as np\n\n",
    "Here is a list of the planets in order:", "The old lighthouse keeper climbed the stairs", "Water boils at",
    "To install the package, run", "The French Revolution began", "Q: What is the largest ocean?\nA:",
    "Le petit prince", "今天天气", "The quick brown fox", "A good night's sleep helps", "Step 1: Preheat the oven",
    "The theory of relativity says", "class Stack:\n    def __init__(self):", "Shopping list:\n- milk\n-",
    "The mitochondria is", "In a galaxy far away,", "The train left the station at", "Chapter 1\n\nIt was a cold",
    "Why is the sky blue? Because", "The human heart has four chambers:", "SELECT name, age FROM",
    "The stock market fell today as", "My dog loves to", "The recipe calls for two cups of", "Hello, my name is",
    "The meeting is scheduled for", "Rain is falling on the roof, and", "The most important skill for a programmer is",
    "<html>\n<head>\n<title>", "1, 2, 3, 4, 5,", "Monday, Tuesday, Wednesday,", "The Great Wall of China",
    "To be or not to be,", "The detective looked at the clue and", "Climate change is caused by",
    "for i in range(10):\n    print(", "The president announced", "A triangle has three sides, and",
    "The following is an interview with", "Abstract: We propose a new method for", "Ingredients:\n",
    "The children ran into the garden", "The function returns", "In summary, the results show that",
    "The moon orbits the Earth", "Tips for staying healthy:\n1.", "The museum opens at", "She opened the letter and read:",
    "The first law of thermodynamics", "Once the water is boiling,", "The word 'algorithm' comes from",
    "#include <stdio.h>\n\nint main() {", "Paris is known for", "The cat sat on the mat. The cat",
    "Translate to French: good morning =>", "The population of Tokyo is", "An apple a day", "Let x be a number such that",
    "The volcano erupted", "The football match ended", "Roses are red,", "Kubernetes is",
]
CHAT = [
    "What is the capital of France?", "Write a short poem about the sea.", "Explain photosynthesis simply.",
    "Give me three tips for learning to code.", "How do I boil an egg?", "What is a black hole?",
    "Write a Python function that reverses a string.", "Summarize the story of Cinderella.",
    "What are the benefits of exercise?", "Tell me a joke.", "How does a computer work?", "What is 12 times 7?",
    "Write a haiku about autumn.", "Explain what a neural network is.", "List five fruits.",
    "What should I pack for a beach trip?", "How do vaccines work?", "Write a thank-you note to a teacher.",
    "What is the difference between weather and climate?", "Describe the water cycle.", "What is gravity?",
    "How do I make a cup of tea?", "Give me a recipe for a simple salad.", "Why do leaves change colour in autumn?",
    "What is the Pythagorean theorem?", "Write a limerick about a cat.", "How do I sort a list in Python?",
    "What causes earthquakes?", "Explain the rules of chess briefly.", "What is machine learning?",
    "Recommend a good book for a long trip.", "How can I sleep better?", "What is the speed of light?",
    "Write a short story about a robot.", "What is inflation?", "How do plants grow?",
]

# For a model a Chinese page starts on (Gemma 3 270M): Chinese openings and requests too
RAW_ZH = [
    "今天天气", "从前有一座山，山里有", "我最喜欢的季节是", "北京是中国的", "学习一门外语最好的方法是",
    "星期一，星期二，星期三，", "妈妈在厨房里做", "春天来了，", "这个故事告诉我们", "一、二、三、四、",
    "小明每天早上", "长城是", "下面是做番茄炒蛋的步骤：", "亲爱的老师：", "我们的学校在",
]
CHAT_ZH = [
    "请介绍一下北京。", "写一首关于月亮的短诗。", "怎样才能睡得更好？", "什么是人工智能？", "推荐三本好书。",
    "解释一下光合作用。", "如何学好数学？", "给我讲一个笑话。", "地球为什么会有四季？", "写一段关于秋天的文字。",
]
CHINESE_MODELS = ("gemma3-270m",)  # models a Chinese page starts on: their heads learn from Chinese text too


def prompts(tokenizer, chinese: bool = False) -> list[tuple[str, list[int]]]:
    """Every prompt as (its text, its ids): the plain ones as typed, the requests in the model's chat template;
    `chinese`: the Chinese ones too."""
    raw, chat = RAW + (RAW_ZH if chinese else []), CHAT + (CHAT_ZH if chinese else [])
    out = [(text, tokenizer(text)["input_ids"]) for text in raw]
    for text in chat:
        ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                            tokenize=True)
        out.append((text, list(ids["input_ids"] if hasattr(ids, "keys") else ids)))
    return out


def _batched(model, rows: list[list[int]], pad: int, **generate):
    """generate() over rows of different lengths, left-padded: (the output, the padded length)."""
    width = max(len(r) for r in rows)
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    return model.generate(input_ids=ids, attention_mask=mask, pad_token_id=pad, return_dict_in_generate=True,
                          **generate), width


@torch.no_grad()
def write_texts(lm, rows: list[tuple[list[int], list[int] | None]], args, seed: int):
    """For a batch of seeds (ids, suffix): a sampled prefix each, then a greedy continuation. A seed without a suffix
    samples --min-prefix to --prefix tokens (its own length) after its ids; one with a suffix (a self-written request:
    the chat template up to the user's words) samples the user's words until the end of their turn (at most
    --user-tokens), then takes the suffix (the template's end of the turn and the assistant's start). Per row: the
    final hidden states (n, d) of the tokens [the last before the greedy part] + greedy tokens but the last, and the
    tokens that follow each, (n, K + 1) (-100 past the end of the text)."""
    model, eos = lm.model, end_ids(lm)
    pad = model.generation_config.pad_token_id
    pad = pad if pad is not None else min(eos)
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(args.min_prefix, args.prefix + 1, (len(rows),), generator=g).tolist()
    lengths = [args.user_tokens if suffix is not None else n for (_, suffix), n in zip(rows, lengths)]
    torch.manual_seed(seed)
    out, width = _batched(model, [ids for ids, _ in rows], pad, max_new_tokens=max(lengths), do_sample=True,
                          temperature=1.0, top_p=0.95, top_k=0)
    sampled = out.sequences[:, width:].tolist()
    written = []
    for r, (ids, suffix) in enumerate(rows):
        prefix = sampled[r][: lengths[r]]
        cut = next((j for j, t in enumerate(prefix) if t in eos), len(prefix))
        written.append(ids + prefix[:cut] + (suffix or []))
    out, width = _batched(model, written, pad, max_new_tokens=args.tokens, do_sample=False, output_hidden_states=True,
                          temperature=None, top_p=None, top_k=None)
    steps = out.hidden_states  # per step, per layer: (B, positions, d); the last layer is after the final norm
    hidden = torch.cat([steps[0][-1][:, -1:]] + [s[-1] for s in steps[1:]], dim=1)  # (B, steps, d)
    K = args.heads
    texts = []
    for r in range(len(written)):
        greedy = out.sequences[r, width:].tolist()
        end = next((j for j, t in enumerate(greedy) if t in eos), len(greedy) - 1)  # the last token that counts
        seq = [written[r][-1]] + greedy[: end + 1]  # hidden[j] is the state of seq[j]
        n = min(len(seq) - 1, hidden.shape[1])
        targets = torch.full((n, K + 1), -100, dtype=torch.long)
        for j in range(n):
            ahead = seq[j + 1: j + K + 2]
            targets[j, : len(ahead)] = torch.tensor(ahead)
        texts.append((hidden[r, :n].clone(), targets))
    return texts


def gather(lm, seeds: list[tuple[list[int], list[int] | None]], args, seed: int):
    """Every seed written (write_texts, batched by length): hidden (N, d), targets (N, K+1), and the count of texts."""
    order = sorted(range(len(seeds)), key=lambda i: len(seeds[i][0]))  # similar lengths together: little padding
    hs, ts = [], []
    for b in range(0, len(order), args.gen_batch):
        batch = [seeds[i] for i in order[b: b + args.gen_batch]]
        for h, t in write_texts(lm, batch, args, seed * 100_003 + b):
            hs.append(h)
            ts.append(t)
        print(f"  texts {min(b + args.gen_batch, len(seeds))}/{len(seeds)}", flush=True)
    return torch.cat(hs), torch.cat(ts), len(seeds)


def self_request(tokenizer) -> tuple[list[int], list[int]]:
    """The model's chat template cut around the user's words: (its ids up to them, its ids after them). The model
    then writes a request of its own there (as Magpie, Xu et al. 2024, has an aligned model write its own prompts):
    contexts no list of prompts could give, and still none from a data set."""
    mark = "\u2063"  # an invisible separator, where the user's words go
    text = tokenizer.apply_chat_template([{"role": "user", "content": mark}], add_generation_prompt=True,
                                         tokenize=False)
    head, tail = text.split(mark)
    return (tokenizer(head, add_special_tokens=False)["input_ids"],
            tokenizer(tail, add_special_tokens=False)["input_ids"])


def head_logits(heads: MedusaHeads, weight: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """(B, d) hidden states -> (B, K, V) each head's logits through the frozen LM head `weight` (V, d)."""
    return heads(h) @ weight.T


@torch.no_grad()
def measure(heads: MedusaHeads, weight: torch.Tensor, hidden: torch.Tensor, targets: torch.Tensor,
            chunk: int = 256) -> dict:
    """Each head's guesses against the model's own tokens on `hidden`: how often the target is its guess of rank r
    (r < RANKS), top-1 and top-5, its mean cross-entropy (nats); and the model's own LM head's agreement with its
    next tokens (1.0 when the text is the model's greedy text and the hidden states line up with it)."""
    K = heads.n_heads
    hits = torch.zeros(K, RANKS)
    losses, counts = torch.zeros(K), torch.zeros(K)
    base_right = base_n = 0
    for b in range(0, len(hidden), chunk):
        h, t = hidden[b: b + chunk], targets[b: b + chunk]
        base = (h @ weight.T).argmax(-1)
        base_right += int((base == t[:, 0]).sum())
        base_n += len(h)
        logits = head_logits(heads, weight, h)  # (B, K, V)
        for k in range(K):
            valid = t[:, k + 1] >= 0
            if not valid.any():
                continue
            lk, tk = logits[valid, k], t[valid, k + 1]
            rank = (lk > lk.gather(1, tk[:, None])).sum(1)  # 0: the target is the head's first guess
            for r in range(RANKS):
                hits[k, r] += float((rank == r).sum())
            losses[k] += float(torch.nn.functional.cross_entropy(lk, tk, reduction="sum"))
            counts[k] += int(valid.sum())
    rank_hits = (hits / counts[:, None]).tolist()
    return {"rank_hits": rank_hits, "top1": [row[0] for row in rank_hits], "top5": [sum(row) for row in rank_hits],
            "loss": (losses / counts).tolist(), "positions": counts.int().tolist(), "base_agrees": base_right / base_n}


def train(heads: MedusaHeads, weight: torch.Tensor, hidden: torch.Tensor, targets: torch.Tensor, args) -> list:
    """The heads trained on (hidden, targets); the loss curve: [step, weighted loss, each head's loss] every
    --log-every steps (means over those steps)."""
    g = torch.Generator().manual_seed(args.seed)
    opt = torch.optim.AdamW(heads.parameters(), lr=args.lr, weight_decay=0.0)
    per_epoch = math.ceil(len(hidden) / args.batch)
    total = per_epoch * args.epochs
    warm = min(50, total // 10 + 1)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(total - warm, 1))))
    K = heads.n_heads
    weights = torch.tensor([LOSS_DECAY ** k for k in range(K)])
    curve, window, step, t0 = [], [], 0, time.perf_counter()
    for epoch in range(args.epochs):
        order = torch.randperm(len(hidden), generator=g)
        for b in range(0, len(order), args.batch):
            idx = order[b: b + args.batch]
            logits = head_logits(heads, weight, hidden[idx])  # (B, K, V)
            t = targets[idx, 1:]  # (B, K)
            each = torch.stack([torch.nn.functional.cross_entropy(logits[:, k], t[:, k], ignore_index=-100)
                                if (t[:, k] >= 0).any() else logits.sum() * 0 for k in range(K)])
            loss = (weights * each).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            window.append([float(loss.detach())] + each.detach().tolist())
            if step % args.log_every == 0 or step == total:
                mean = [sum(col) / len(window) for col in zip(*window)]
                curve.append([step] + [round(v, 4) for v in mean])
                window = []
                print(f"  step {step}/{total} (epoch {epoch + 1}) loss {mean[0]:.3f} heads "
                      + " ".join(f"{v:.2f}" for v in mean[1:]) + f"  {time.perf_counter() - t0:.0f} s", flush=True)
    return curve


def loss_svg(curve: list, n_heads: int, path: Path) -> None:
    """The loss curve as a small SVG (each head's cross-entropy against the step), no plotting library needed."""
    w, h, left, right, top, bottom = 640, 320, 56, 120, 20, 40
    steps = [row[0] for row in curve]
    values = [v for row in curve for v in row[2:]]
    x_max, y_max = max(steps), math.ceil(max(values))
    colours = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]

    def xy(step, value):
        return (left + (w - left - right) * step / x_max, top + (h - top - bottom) * (1 - value / y_max))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
             f'font-size="12"><rect width="{w}" height="{h}" fill="white"/>']
    for v in range(0, y_max + 1):
        x0, y = xy(0, v)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v}</text>')
    for k in range(n_heads):
        points = " ".join("{:.1f},{:.1f}".format(*xy(row[0], row[2 + k])) for row in curve)
        parts.append(f'<polyline fill="none" stroke="{colours[k % 6]}" stroke-width="2" points="{points}"/>')
        x, y = xy(curve[-1][0], curve[-1][2 + k])
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 4:.1f}" fill="{colours[k % 6]}">head {k + 1}</text>')
    parts.append(f'<text x="{(w - right + left) / 2}" y="{h - 8}" text-anchor="middle">training step '
                 f'(batches of positions)</text><text x="14" y="{h / 2}" transform="rotate(-90 14 {h / 2})" '
                 f'text-anchor="middle">cross-entropy (nats)</text>')
    for s in (0, x_max):
        x, _ = xy(s, 0)
        parts.append(f'<text x="{x:.1f}" y="{h - bottom + 16}" text-anchor="middle">{s}</text>')
    parts.append("</svg>\n")
    path.write_text("".join(parts), encoding="utf-8")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--heads", type=int, default=4, help="K: head k guesses the token k + 1 after the hidden state's")
    parser.add_argument("--prompts", type=int, default=0, help="use only the first N prompts (0: all; for a quick try)")
    parser.add_argument("--variants", type=int, default=6, help="texts written from each prompt")
    parser.add_argument("--min-prefix", type=int, default=4, help="sampled tokens after a prompt: at least this")
    parser.add_argument("--prefix", type=int, default=32, help="sampled tokens after a prompt: at most this")
    parser.add_argument("--self-requests", type=int, default=640, help="chat texts after a request the model wrote")
    parser.add_argument("--self-held-out", type=int, default=64, help="more of them, held out")
    parser.add_argument("--user-tokens", type=int, default=40, help="a self-written request: at most this long")
    parser.add_argument("--tokens", type=int, default=64, help="greedy tokens written per text")
    parser.add_argument("--gen-batch", type=int, default=32, help="texts written together")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=128, help="positions per training step")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ASSETS)
    parser.add_argument("--svg", type=Path, default=Path(__file__).resolve().parents[2] / "docs" / "medusa-loss.svg")
    args = parser.parse_args(argv)

    os.nice(19 - os.nice(0))  # the lowest priority: the machine is shared
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    started, cpu_started = time.perf_counter(), time.process_time()
    lm = load_model(args.model)
    every = prompts(lm.tokenizer, chinese=args.model in CHINESE_MODELS)
    if args.prompts:
        every = every[: args.prompts]
    train_ids = [ids for i, (_, ids) in enumerate(every) if i % HELD_OUT_EVERY != HELD_OUT_EVERY - 1]
    held_ids = [ids for i, (_, ids) in enumerate(every) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1]
    request = self_request(lm.tokenizer)
    train_seeds = [(list(ids), None) for ids in train_ids for _ in range(args.variants)] + [request] * args.self_requests
    held_seeds = [(list(ids), None) for ids in held_ids for _ in range(args.variants)] + [request] * args.self_held_out

    print(f"writing {len(train_seeds)} training texts and {len(held_seeds)} held-out", flush=True)
    t0 = time.perf_counter()
    hidden, targets, n_train = gather(lm, train_seeds, args, args.seed)
    held_hidden, held_targets, n_held = gather(lm, held_seeds, args, args.seed + 1)  # other draws: other requests
    write_s = time.perf_counter() - t0

    weight = lm.model.get_output_embeddings().weight.detach()  # (V, d), frozen (SmolLM2: the embeddings, tied)
    heads = MedusaHeads(hidden.shape[1], args.heads)
    before = measure(heads, weight, held_hidden, held_targets)  # untrained: each head repeats the next token's guess
    print(f"trained on {len(hidden):,} positions; {len(held_hidden):,} held out", flush=True)
    t0 = time.perf_counter()
    curve = train(heads, weight, hidden, targets, args)
    train_s = time.perf_counter() - t0

    report = {
        "model": args.model, "heads": args.heads, "design": "Medusa-1 residual block per head "
        "(h + SiLU(W h + b), W hidden x hidden), into the model's own frozen LM head; float16",
        "recipe": "self-distillation: texts the model wrote itself (a sampled prefix, then greedy), each head trained "
                  "by cross-entropy on the model's own greedy tokens k + 1 positions ahead",
        "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                      if k not in ("out", "svg")},
        "data": {"prompts_train": len(train_ids), "prompts_held_out": len(held_ids),
                 "self_requests_train": args.self_requests, "self_requests_held_out": args.self_held_out,
                 "texts_train": n_train, "texts_held_out": n_held, "positions_train": len(hidden),
                 "positions_held_out": len(held_hidden)},
        "seconds": {"write": round(write_s, 1), "train": round(train_s, 1)},
        "machine": {"threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
                    "torch": torch.__version__},
        "loss_curve": {"columns": ["step", "weighted"] + [f"head {k + 1}" for k in range(args.heads)],
                       "rows": curve},
        "untrained": {key: before[key] for key in ("top1", "top5")},
    }
    with torch.no_grad():  # measured as they ship: in float16
        for p in heads.parameters():
            p.copy_(p.half().float())
    report["accuracy"] = measure(heads, weight, held_hidden, held_targets)
    report["accuracy_train"] = measure(heads, weight, hidden[:20_000], targets[:20_000])
    report["seconds"]["total"] = round(time.perf_counter() - started, 1)
    report["seconds"]["cpu"] = round(time.process_time() - cpu_started, 1)  # this process's CPU time (a shared machine)
    weights_file, record = save_heads(heads, lm.model, args.model, report, args.out)
    assert read_heads(lm.model, args.model, args.out) is not None  # the app reads them back for this model
    if args.svg:
        loss_svg(curve, args.heads, args.svg)
    acc = report["accuracy"]
    print(f"wrote {weights_file} ({weights_file.stat().st_size:,} B) and {record}; "
          f"{report['seconds']['total']:.0f} s in all (writing {write_s:.0f} s, training {train_s:.0f} s)")
    print(f"the model's own head agrees with its greedy text: {acc['base_agrees']:.4f}")
    print("| head | guesses | top-1 | top-5 | loss (nats) |\n|---|---|---|---|---|")
    for k in range(args.heads):
        print(f"| {k + 1} | t + {k + 2} | {acc['top1'][k]:.3f} | {acc['top5'][k]:.3f} | {acc['loss'][k]:.3f} |")


if __name__ == "__main__":
    main()
