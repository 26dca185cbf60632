"""The model's decode pass and the sampling pipeline under a class's load (issue 25, item 2): what a step costs.

    .venv/bin/python -m bench.precision [--rounds 3] [--lengths 64 256] [--compile] [--name precision]

In one process, one sitting, every variant alternated round by round (A B A B ...), each figure the median of its
passes, CPU seconds of the whole process (time.process_time: a second OpenMP thread's work counts too), and the
day's single-stream `model.generate` (one thread, greedy, 32 tokens after bench.PROMPT) measured before, between
and after, so every figure can be read as a ratio to it:

  pass        one decode pass at batch 1 (forward_one) and batch 16 (forward_batch) on caches of L tokens
              (sessions L, L-1, ..., as a class's differ): fp32 on one thread (the batcher's), the batch pass as it
              was before this issue (the padded cache copied into a DynamicCache, then concatenated in every
              layer), fp32 on two threads, bf16 on one thread; and batches of 8 and 32 (the batcher's max is 16).
  split       a batch-16 pass in parts: the sessions' caches padded into the batch's, the model, the new keys and
              values copied back and the attention rows taken.
  sampling    model.decoding.sampling.derive for one step, the classroom's settings (T 1, no cut) and a sampled one
              (T 0.8, top-k 50, top-p 0.9), its parts.
  precision   bf16 against fp32 on the teaching prompts: the largest difference of any probability over the prompt's
              last position and 32 greedy steps (the fp32 path, fed to both), whether the greedy choice differs
              anywhere, and whether bf16's greedy `generate` equals fp32's.
  heap        (--heap, alone) glibc malloc's default against model.runtime.keep_freed_memory(), forked arms.
  compile     (--compile) torch.compile of the model: the time of the first batched passes (compiling) and of
              the passes after, against eager, in a subprocess with a time limit.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import subprocess
import sys
import time

import torch
from transformers import DynamicCache

from bench import PROMPT, CpuWatch, save, table
from model.decoding.batching import batch_cache, forward_batch, forward_one
from model.decoding.loading import load_model
from model.decoding.records import SamplingConfig
from model.decoding.sampling import derive

TEACHING_PROMPTS = [PROMPT, "Once upon a time, in a small village,", "The capital of France is", "def fibonacci(n):",
                    "The best way to learn a language is", "In the year 2050, cities will"]
BATCH = 16
GREEDY_STEPS = 32


@torch.no_grad()
def forward_batch_before(model, caches, token_ids):
    """The batch pass as it was before issue 25 (kept here for the A/B): the padded caches are put into a plain
    DynamicCache by update() (a copy), and every layer concatenates the new token onto the whole batch (another)."""
    lengths = [c.get_seq_length() for c in caches]
    longest = max(lengths)
    batch = DynamicCache()
    for layer_idx in range(len(caches[0].layers)):
        first = caches[0].layers[layer_idx].keys
        shape = (len(caches), first.shape[1], longest, first.shape[3])
        keys, values = first.new_zeros(shape), first.new_zeros(shape)
        for i, c in enumerate(caches):
            held = c.layers[layer_idx].keys.shape[-2]
            keys[i, :, longest - held:] = c.layers[layer_idx].keys[0]
            values[i, :, longest - held:] = c.layers[layer_idx].values[0]
        batch.update(keys, values, layer_idx)
    mask = torch.zeros(len(caches), longest + 1, dtype=torch.long)
    for i, n in enumerate(lengths):
        mask[i, longest - n:] = 1
    out = model(input_ids=torch.tensor(token_ids).reshape(-1, 1), attention_mask=mask,
                position_ids=torch.tensor(lengths).reshape(-1, 1), past_key_values=batch, use_cache=True,
                output_attentions=True)
    results = []
    for i, (c, n) in enumerate(zip(caches, lengths)):
        row = torch.stack([a[i, :, -1, longest - n:] for a in out.attentions]).to(torch.float16).numpy()
        results.append((out.logits[i, -1].clone(), row, 0.0))
    for layer_idx, layer in enumerate(batch.layers):
        for i, c in enumerate(caches):
            c.layers[layer_idx].update(layer.keys[i:i + 1, :, -1:].clone(), layer.values[i:i + 1, :, -1:].clone())
    return results


def prompt_ids(lm, n: int) -> list[int]:
    """n token ids of bench.PROMPT, repeated as needed (a cache of n real tokens)."""
    ids = lm.tokenizer(PROMPT)["input_ids"]
    return (ids * (n // len(ids) + 1))[:n]


@torch.no_grad()
def prefill(model, ids: list[int]) -> DynamicCache:
    cache = DynamicCache(config=model.config)
    model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True, logits_to_keep=1)
    return cache


@torch.no_grad()
def generate_tok_s(lm, new_tokens: int = 32) -> float:
    """Single-stream greedy `model.generate` tokens/s now, one thread (the day's reference)."""
    ids = torch.tensor([lm.tokenizer(PROMPT)["input_ids"]])
    t0 = time.perf_counter()
    lm.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                      do_sample=False)
    return new_tokens / (time.perf_counter() - t0)


def timed(fn) -> tuple[float, float]:
    """(process CPU ms, wall ms) of fn()."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000


def pass_variants(lm, lm16, length: int):
    """name: (batch, threads, a function running one pass and cutting the caches back)."""
    ids = prompt_ids(lm, length)
    caches = {"fp32": [prefill(lm.model, ids[: length - i]) for i in range(2 * BATCH)],
              "bf16": [prefill(lm16.model, ids[: length - i]) for i in range(BATCH)]}
    models = {"fp32": lm.model, "bf16": lm16.model}

    def run(kind, batch, fn):
        def go():
            cs = caches[kind][:batch]
            if batch == 1:
                forward_one(models[kind], cs[0], 5)
            else:
                fn(models[kind], cs, [5] * batch)
            for c in cs:
                c.crop(-1)
        return go

    return {
        "batch 1, fp32, 1 thread": (1, 1, run("fp32", 1, None)),
        "batch 1, fp32, 2 threads": (1, 2, run("fp32", 1, None)),
        "batch 1, bf16, 1 thread": (1, 1, run("bf16", 1, None)),
        f"batch {BATCH}, fp32, 1 thread, before": (BATCH, 1, run("fp32", BATCH, forward_batch_before)),
        f"batch {BATCH}, fp32, 1 thread": (BATCH, 1, run("fp32", BATCH, forward_batch)),
        f"batch {BATCH}, fp32, 2 threads": (BATCH, 2, run("fp32", BATCH, forward_batch)),
        f"batch {BATCH // 2}, fp32, 1 thread": (BATCH // 2, 1, run("fp32", BATCH // 2, forward_batch)),
        f"batch {2 * BATCH}, fp32, 1 thread": (2 * BATCH, 1, run("fp32", 2 * BATCH, forward_batch)),
        f"batch {BATCH}, bf16, 1 thread": (BATCH, 1, run("bf16", BATCH, forward_batch)),
    }, caches["fp32"][:BATCH]


@torch.no_grad()
def split_pass(model, caches) -> dict[str, float]:
    """One batch-16 pass in parts (CPU ms): the padded batch cache, the model, the copy back and attention rows."""
    token_ids = [5] * len(caches)
    t = {}
    cpu = time.process_time()
    batch, lengths, longest = batch_cache(caches)
    mask = torch.zeros(len(caches), longest + 1, dtype=torch.long)
    for i, n in enumerate(lengths):
        mask[i, longest - n:] = 1
    t["pad the caches into the batch"] = time.process_time() - cpu
    cpu = time.process_time()
    out = model(input_ids=torch.tensor(token_ids).reshape(-1, 1), attention_mask=mask,
                position_ids=torch.tensor(lengths).reshape(-1, 1), past_key_values=batch, use_cache=True,
                output_attentions=True)
    t["the model"] = time.process_time() - cpu
    cpu = time.process_time()
    for i, (c, n) in enumerate(zip(caches, lengths)):
        torch.stack([a[i, :, -1, longest - n:] for a in out.attentions]).to(torch.float16).numpy()
        out.logits[i, -1].clone()
    t["attention rows, logits"] = time.process_time() - cpu
    cpu = time.process_time()
    for layer_idx, layer in enumerate(batch.layers):
        for i, c in enumerate(caches):
            c.layers[layer_idx].update(layer.keys[i:i + 1, :, -1:].clone(), layer.values[i:i + 1, :, -1:].clone())
    t["new K, V back into each cache"] = time.process_time() - cpu
    for c in caches:
        c.crop(-1)
    return {k: v * 1000 for k, v in t.items()}


def measure_passes(lm, lm16, lengths: list[int], rounds: int, reps: int = 3) -> dict:
    out = {}
    for length in lengths:
        variants, fp32_caches = pass_variants(lm, lm16, length)
        samples = {name: [] for name in variants}
        splits = []
        for _ in range(rounds):
            for name, (batch, threads, go) in variants.items():  # A B C ... each round, so a slow spell hits all
                torch.set_num_threads(threads)
                go()  # warm
                for _ in range(reps):
                    samples[name].append(timed(go))
            torch.set_num_threads(1)
            splits.append(split_pass(lm.model, fp32_caches))
        rows = {}
        for name, (batch, threads, _) in variants.items():
            cpu = statistics.median(s[0] for s in samples[name])
            wall = statistics.median(s[1] for s in samples[name])
            rows[name] = {"batch": batch, "threads": threads, "cpu_ms": cpu, "wall_ms": wall,
                          "cpu_ms_per_step": cpu / batch, "wall_ms_per_step": wall / batch}
        split = {k: statistics.median(s[k] for s in splits) for k in splits[0]}
        out[str(length)] = {"passes": rows, "split_cpu_ms": split}
        print(f"cache {length}: done", flush=True)
    torch.set_num_threads(1)
    return out


def inverse_cdf_before(probs, u, head=256):
    """model.decoding.sampling.inverse_cdf as it was before issue 25 (for the A/B): past the head, the whole vocabulary."""
    kept = int((probs > 0).sum())
    target = torch.tensor([u * float(probs.double().sum())], dtype=torch.float64)
    k = min(head, kept)
    while True:
        vals, idx = torch.topk(probs, k)
        idx, by_id = torch.sort(idx)
        vals, order = torch.sort(vals[by_id], descending=True, stable=True)
        idx = idx[order]
        cum = torch.cumsum(vals.double(), 0)
        i = min(int(torch.searchsorted(cum, target, right=True)), k - 1)
        if k == kept or (i < k - 1 and vals[i] > vals[-1]):
            return int(idx[i])
        k = kept


@torch.no_grad()
def path_logits(lm) -> list[tuple[list[int], torch.Tensor]]:
    """For each teaching prompt: (the prompt's ids and fp32's greedy continuation, the logits (n, V) at the prompt's
    last position and after each greedy token but the last): real next-token distributions, as a class sees."""
    out = []
    for prompt in TEACHING_PROMPTS:
        ids = torch.tensor([lm.tokenizer(prompt)["input_ids"]])
        full = lm.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=GREEDY_STEPS,
                                 min_new_tokens=GREEDY_STEPS, do_sample=False)
        p = ids.shape[1]
        out.append((full[0].tolist(), p, lm.model(input_ids=full).logits[0, p - 1: -1].float().clone()))
    return out


def measure_sampling(lm, paths, rounds: int) -> dict:
    """derive() CPU ms per step over real distributions (every position of `paths`, seeds 0-2, so u varies), the
    classroom's settings (T 1, no cut) and a sampled one (T 0.8, top-k 50, top-p 0.9); the draw as it was
    before (inverse_cdf_before) and now, alternated; how many draws walked past the sorted head; what parts cost."""
    import model.decoding.sampling as sampling

    settings = {"classroom (T 1, no cut)": {}, "sampled (T 0.8, top-k 50, top-p 0.9)": dict(temperature=0.8, top_k=50,
                                                                                           top_p=0.9)}
    now = sampling.inverse_cdf
    steps = [(ids[: p + j], logits[j]) for ids, p, logits in paths for j in range(logits.shape[0])]
    out, past_head = {}, {}
    for name, kw in settings.items():
        per = {"before": [], "now": []}
        for _ in range(rounds):
            for which, fn in (("before", inverse_cdf_before), ("now", now)):
                sampling.inverse_cdf = fn
                try:
                    cpu = time.process_time()
                    for seed in range(3):
                        for ctx, logit in steps:
                            derive(logit, torch.tensor([ctx]), SamplingConfig(seed=seed, **kw), len(ctx), lm.tokens)
                    per[which].append((time.process_time() - cpu) * 1000 / (3 * len(steps)))
                finally:
                    sampling.inverse_cdf = now
        out[name] = {k: statistics.median(v) for k, v in per.items()}
    for seed in range(3):  # T 1, no cut: the draw walks past the top 256 when u is past their mass
        for ctx, logit in steps:
            head_mass = float(torch.topk(torch.softmax(logit, -1), 256).values.double().sum())
            past_head[seed] = past_head.get(seed, 0) + (sampling.draw_u(seed, len(ctx)) > head_mass)
    out["draws_past_the_head"] = {"of": 3 * len(steps), "past": sum(past_head.values())}
    logits = steps[0][1]
    parts = {
        "softmax over the vocabulary": lambda: torch.softmax(logits, -1),
        "entropy": lambda: torch.special.entr(torch.softmax(logits, -1)).sum(),
        "top 20 (topk)": lambda: torch.topk(logits, 20),
        "top 256 (topk, the draw's head)": lambda: torch.topk(logits, 256),
        "full sort of the vocabulary": lambda: torch.sort(logits, descending=True),
        "log_softmax": lambda: torch.log_softmax(logits, -1),
    }
    out["parts"] = {name: statistics.median(timed(fn)[0] for _ in range(rounds * 10)) for name, fn in parts.items()}
    return out


@torch.no_grad()
def measure_precision(lm, lm16, paths) -> dict:
    """bf16 against fp32 on each teaching prompt along fp32's greedy path (a full forward pass of each model)."""
    rows = []
    for (ids, p, l32), prompt in zip(paths, TEACHING_PROMPTS):
        full = torch.tensor([ids])
        g16 = lm16.model.generate(full[:, :p], attention_mask=torch.ones_like(full[:, :p]), max_new_tokens=GREEDY_STEPS,
                                  min_new_tokens=GREEDY_STEPS, do_sample=False)[0]
        l16 = lm16.model(input_ids=full).logits[0, p - 1: -1].float()
        p32, p16 = torch.softmax(l32, -1), torch.softmax(l16, -1)
        top = p32.argmax(-1, keepdim=True)
        rows.append({
            "prompt": prompt[:40], "prompt_tokens": p,
            "max_abs_prob_diff": float((p32 - p16).abs().max()),
            "max_abs_chosen_prob_diff": float((p32.gather(-1, top) - p16.gather(-1, top)).abs().max()),
            "max_abs_logit_diff": float((l32 - l16).abs().max()),
            "argmax_differs_at": int((p32.argmax(-1) != p16.argmax(-1)).sum()),
            "greedy_generate_equal": g16.tolist() == ids,
            "first_greedy_difference": next((i for i, (a, b) in enumerate(zip(ids[p:], g16[p:].tolist())) if a != b),
                                            None),
        })
    return {"positions_per_prompt": GREEDY_STEPS, "prompts": rows,
            "max_abs_prob_diff": max(r["max_abs_prob_diff"] for r in rows),
            "greedy_equal": sum(r["greedy_generate_equal"] for r in rows)}


def measure_heap(lm, rounds: int = 2) -> dict:
    """glibc malloc's default against model.runtime.keep_freed_memory(), A B A B: each arm a forked child of this
    process (mallopt cannot be undone; the parent has run passes first, as a server has), batch 16 and batch 1
    at 64 and 256 cached tokens, CPU ms of a pass (median of 3 after a warm one)."""
    import json
    import os

    from model.runtime import keep_freed_memory

    caches = {n: [prefill(lm.model, prompt_ids(lm, n)[: n - i]) for i in range(BATCH)] for n in (64, 256)}

    def go(n, b):
        cs = caches[n][:b]
        forward_one(lm.model, cs[0], 5) if b == 1 else forward_batch(lm.model, cs, [5] * b)
        for c in cs:
            c.crop(-1)

    for n in caches:
        go(n, BATCH)
        go(n, 1)
    out = {"default": [], "kept": []}
    for _ in range(rounds):
        for arm in out:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(r)
                    if arm == "kept":
                        keep_freed_memory()
                    res = {}
                    for n in caches:
                        for b in (BATCH, 1):
                            go(n, b)
                            res[f"batch {b}, {n} tokens"] = statistics.median(timed(lambda: go(n, b))[0] for _ in range(3))
                    os.write(w, json.dumps(res).encode())
                finally:
                    os._exit(0)
            os.close(w)
            with os.fdopen(r) as f:
                out[arm].append(json.loads(f.read() or "{}"))
            os.waitpid(pid, 0)
    return {arm: {k: statistics.median(x[k] for x in runs) for k in runs[0]} for arm, runs in out.items()}


COMPILE_CODE = r"""
import json, statistics, sys, time, torch
sys.path.insert(0, '.')
from bench.precision import BATCH, prefill, prompt_ids
from model.decoding.batching import forward_batch
from model.decoding.loading import load_model
torch.set_num_threads(1)
lm = load_model()
ids = prompt_ids(lm, 64)
caches = [prefill(lm.model, ids[: 64 - i]) for i in range(BATCH)]
def go(model):
    forward_batch(model, caches, [5] * BATCH)
    for c in caches:
        c.crop(-1)
def t(model):
    c = time.process_time(); go(model); return (time.process_time() - c) * 1000
eager = [t(lm.model) for _ in range(3)]
compiled = torch.compile(lm.model, dynamic=True)
first = []
for _ in range(3):
    first.append(t(compiled)); print('FIRST', first[-1], flush=True)
steady = [t(compiled) for _ in range(5)]
eager2 = [t(lm.model) for _ in range(3)]
print('COMPILE', json.dumps({"eager_ms": statistics.median(eager + eager2), "first_passes_ms": first,
                             "compiled_ms": statistics.median(steady)}))
"""


def measure_compile(timeout_s: float) -> dict:
    t0 = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", COMPILE_CODE], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as err:
        firsts = [line for line in (err.stdout or b"").decode(errors="replace").splitlines() if line.startswith("FIRST")]
        return {"error": f"not done after {timeout_s:.0f} s", "first_passes": firsts}
    import json

    if "COMPILE" not in done.stdout:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300],
                "seconds": time.perf_counter() - t0}
    return {**json.loads(done.stdout.split("COMPILE", 1)[1]), "seconds": time.perf_counter() - t0}


def report(r: dict) -> str:
    lines = [f"single-stream generate (one thread): {', '.join(f'{g:.1f}' for g in r['generate_tok_s'])} tokens/s "
             f"(start, between, end); other processes took {r['others_share']:.0%} of the CPU"]
    for length, res in r["passes"].items():
        base = res["passes"][f"batch {BATCH}, fp32, 1 thread, before"]["cpu_ms_per_step"]
        rows = [[name, v["cpu_ms"], v["wall_ms"], v["cpu_ms_per_step"], v["cpu_ms_per_step"] / base]
                for name, v in res["passes"].items()]
        lines.append(f"\ncache of {length} tokens")
        lines.append(table(["pass", "CPU ms", "wall ms", "CPU ms per step", "x batch-16 before"], rows))
        lines.append("batch-16 pass in parts (CPU ms): " + ", ".join(f"{k} {v:.1f}" for k, v in res["split_cpu_ms"].items()))
    s = r["sampling"]
    lines.append("\nsampling (derive, CPU ms per step, the draw before / now): " + "; ".join(
        f"{k} {v['before']:.2f} / {v['now']:.2f}" for k, v in s.items() if "before" in v))
    lines.append(f"  draws past the sorted head of 256 at T 1: {s['draws_past_the_head']['past']} of "
                 f"{s['draws_past_the_head']['of']}")
    lines.append("  parts: " + ", ".join(f"{k} {v:.2f}" for k, v in s["parts"].items()))
    p = r["precision"]
    lines.append(f"\nbf16 vs fp32 ({p['positions_per_prompt']} greedy positions after each prompt): largest probability "
                 f"difference {p['max_abs_prob_diff']:.4f}; greedy generate equal on {p['greedy_equal']} of "
                 f"{len(p['prompts'])} prompts")
    lines.append(table(["prompt", "max |dp|", "max |dp chosen|", "max |dlogit|", "argmax differs", "greedy equal"],
                       [[x["prompt"], x["max_abs_prob_diff"], x["max_abs_chosen_prob_diff"], x["max_abs_logit_diff"],
                         x["argmax_differs_at"], x["greedy_generate_equal"]] for x in p["prompts"]]))
    if r.get("compile"):
        lines.append(f"\ntorch.compile: {r['compile']}")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lengths", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--compile", action="store_true", help="also measure torch.compile (a subprocess)")
    ap.add_argument("--compile-timeout", type=float, default=420.0)
    ap.add_argument("--only-compile", action="store_true", help="only torch.compile, with generate before and after")
    ap.add_argument("--heap", action="store_true", help="only glibc malloc's default against keep_freed_memory")
    ap.add_argument("--name", default="precision")
    args = ap.parse_args(argv)
    if args.heap:
        torch.set_num_threads(1)
        lm = load_model()
        gens = [generate_tok_s(lm)]
        result = {"heap": measure_heap(lm), "generate_tok_s": [*gens, generate_tok_s(lm)]}
        print(f"generate {result['generate_tok_s']} tokens/s; CPU ms of a pass: {result['heap']}")
        print(f"wrote {save(args.name, result)}")
        return
    if args.only_compile:
        torch.set_num_threads(1)
        lm = load_model()
        gens = [generate_tok_s(lm)]
        del lm.model  # the subprocess loads its own
        result = {"compile": measure_compile(args.compile_timeout)}
        result["generate_tok_s"] = [*gens, generate_tok_s(load_model())]
        print(f"generate {result['generate_tok_s']} tokens/s; torch.compile: {result['compile']}")
        print(f"wrote {save(args.name, result)}")
        return
    torch.set_num_threads(1)
    lm = load_model()
    lm16 = copy.copy(lm)
    lm16.model = copy.deepcopy(lm.model).to(torch.bfloat16)
    gens = [generate_tok_s(lm)]
    with CpuWatch() as watch:
        passes = measure_passes(lm, lm16, args.lengths, args.rounds)
        gens.append(generate_tok_s(lm))
        paths = path_logits(lm)
        sampling = measure_sampling(lm, paths, args.rounds)
        precision = measure_precision(lm, lm16, paths)
        gens.append(generate_tok_s(lm))
    result = {"generate_tok_s": gens, "others_share": watch.other_share, "passes": passes, "sampling": sampling,
              "precision": precision}
    if args.compile:
        print("torch.compile ...", flush=True)
        result["compile"] = measure_compile(args.compile_timeout)
        result["generate_tok_s"].append(generate_tok_s(lm))
    print(report(result))
    print(f"wrote {save(args.name, result)}")


if __name__ == "__main__":
    main()
