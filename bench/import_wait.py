"""How long one trace import holds an import slot, and how long another address's import waits behind one address's.

    .venv/bin/python -m bench.import_wait                           # in-process: the largest valid trace, replayed
    .venv/bin/python -m bench.import_wait --served --queued 16      # served: 127.0.0.2 queues 16, 127.0.0.3 imports
    .venv/bin/python -m bench.import_wait --root /tmp/old-checkout --name import_wait_before   # another checkout

The largest valid trace (issue 32 item 10): a 1-token prompt, the current text 511 steps long (the session's 512
tokens), and 15 kept branches that fork late from it with the rest of MAX_TRACE_STEPS (1,024 steps in all), every
step a claimed greedy draw (so each claim is checked). In-process, the replay is timed and the model's forward calls
are counted (a forward pre-hook). Served, the app runs as its own server (bench.appserver); one address (127.0.0.2)
queues `--queued` imports of that file, each from a session of its own, and another address (127.0.0.3) then
imports a 3-step trace: its wait is timed. The machine's other load is read meanwhile (OthersWatch).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import save, table
from bench.appserver import AppServer, OthersWatch

BRANCHES = 15  # kept branches besides the current text (MAX_BRANCHES 16 texts in all)
FILLER = ("The history of the printing press begins in the fifteenth century, when movable type arrived, and within "
          "fifty years printers worked in two hundred cities across Europe. ") * 40


def largest_trace(lm, total: int = 1024, max_tokens: int = 512) -> dict:
    """A valid trace asking for the most work the bounds allow (see the module's docstring), within MAX_TRACE_BYTES."""
    from model.decoding.records import SamplingConfig
    from model.decoding.session import DecodeSession
    from model.decoding.trace import to_trace

    s = DecodeSession(lm)
    s.start("The")  # one token on SmolLM2 and Gemma (a BOS added: two)
    s.step(SamplingConfig(temperature=0.0))
    trace = to_trace(s)
    prompt_len = len(trace["prompt_tokens"])
    room = max_tokens - prompt_len
    ends = s.eos_ids()
    ids = [i for i in lm.tokenizer(FILLER, add_special_tokens=False)["input_ids"] if i not in ends]
    config = trace["steps"][0]["distribution"]["config"]

    def steps(tokens):  # what a replay reads of a step (a whole exported step is ~5 KB: 1,024 would pass 5 MB)
        return [{"distribution": {"config": config, "chosen": {"id": token}, "forced": False}} for token in tokens]

    trace["steps"] = steps(ids[:room])
    rest = total - room
    sizes = [rest // BRANCHES + (1 if i < rest % BRANCHES else 0) for i in range(BRANCHES)]
    trace["branch"] = {"id": 0, "parent": None, "fork": 0, "tail": []}
    trace["branches"] = [{"id": i + 1, "parent": 0, "fork": room - n, "steps": steps(ids[room - n + 1 : room + 1])}
                         for i, n in enumerate(sizes)]  # each forks late and differs from its parent at once
    return trace


def small_trace(lm) -> dict:
    from model.decoding.records import SamplingConfig
    from model.decoding.session import DecodeSession
    from model.decoding.trace import to_trace

    s = DecodeSession(lm)
    s.start("A short trace:")
    for _ in range(3):
        s.step(SamplingConfig(temperature=0.0))
    return to_trace(s)


def in_process(model: str) -> dict:
    """Replay the largest valid trace once (as an import does: rewound to the prompt), timed, passes counted."""
    from model.decoding.loading import load_model
    from model.decoding.session import DecodeSession
    from model.decoding.trace import replay

    lm = load_model(model)
    trace = largest_trace(lm)
    calls, tokens = [0], [0]

    def count(module, args, kwargs):
        calls[0] += 1
        ids = kwargs.get("input_ids", args[0] if args else None)
        tokens[0] += ids.shape[-1] if ids is not None else 0

    hook = lm.model.register_forward_pre_hook(count, with_kwargs=True)
    try:
        with OthersWatch() as w:
            t0 = time.perf_counter()
            steps = replay(DecodeSession(lm), trace, rewind=True)
            took = time.perf_counter() - t0
    finally:
        hook.remove()
    texts = 1 + len(trace["branches"])
    total = len(trace["steps"]) + sum(len(b["steps"]) for b in trace["branches"])
    return {"model": model, "texts": texts, "steps": total, "current_steps": steps, "passes": calls[0],
            "tokens_through_model": tokens[0], "seconds": round(took, 2), "others_share": round(w.share, 2)}


def _post_join(http, url: str, fn_index: int, data: list, session_hash: str, refusable: bool = False):
    """Join the queue; a 503 (the guard's refusal: the address's budget) is returned when `refusable`."""
    r = http.post(f"{url}/gradio_api/queue/join", json={"data": data, "fn_index": fn_index,
                                                        "session_hash": session_hash})
    if not (refusable and r.status_code == 503):
        r.raise_for_status()
    return r


def _wait_complete(http, url: str, session_hash: str, timeout_s: float) -> str:
    """Read the session's event stream until its event completes; the stream's text."""
    seen = []
    with http.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": session_hash},
                     timeout=timeout_s) as r:
        for line in r.iter_lines():
            seen.append(line)
            if '"msg":"process_completed"' in line.replace(" ", ""):
                break
    return "\n".join(seen)


def _upload(http, url: str, path: Path) -> dict:
    with path.open("rb") as f:
        r = http.post(f"{url}/gradio_api/upload", files={"files": (path.name, f, "application/json")})
    r.raise_for_status()
    server_path = r.json()[0]
    return {"path": server_path, "orig_name": path.name, "meta": {"_type": "gradio.FileData"}}


def served(model: str, queued: int, root: str | None) -> dict:
    """127.0.0.2 queues `queued` imports of the largest trace; 127.0.0.3's 3-step import is timed behind them."""
    import httpx
    from model.decoding.loading import load_model

    lm = load_model(model)
    folder = Path(tempfile.mkdtemp(prefix="tbt-bench-import-"))
    big, small = folder / "largest.json", folder / "small.json"
    big.write_text(json.dumps(largest_trace(lm)))
    small.write_text(json.dumps(small_trace(lm)))

    def client_from(host):
        return httpx.Client(transport=httpx.HTTPTransport(local_address=host), trust_env=False, timeout=3600)

    with AppServer(root=root) as srv:
        config = json.loads(httpx.get(srv.url + "/config", trust_env=False).text)
        fn_index, dep = next((d.get("id", i), d) for i, d in enumerate(config["dependencies"])
                             if d.get("api_name") == "import_trace")
        values = {c["id"]: c.get("props", {}).get("value") for c in config["components"]}
        defaults = [values.get(i) for i in dep["inputs"][1:]]  # the page's inputs after the file, as a page sends them
        results = {}
        with client_from("127.0.0.2") as flood, client_from("127.0.0.3") as other, OthersWatch() as w:
            fd = _upload(flood, srv.url, big)
            hashes = [f"flood-{i}-{time.time_ns()}" for i in range(queued)]
            t0 = time.perf_counter()
            taken = [h for h in hashes
                     if _post_join(flood, srv.url, fn_index, [fd, *defaults], h, refusable=True).status_code == 200]
            refused = len(hashes) - len(taken)
            hashes = taken
            done_at = {}

            def drain(h):
                _wait_complete(flood, srv.url, h, 3600)
                done_at[h] = time.perf_counter() - t0

            threads = [threading.Thread(target=drain, args=(h,), daemon=True) for h in hashes]
            for t in threads:
                t.start()
            time.sleep(1.0)  # the flood is queued first
            sd = _upload(other, srv.url, small)
            mine = f"other-{time.time_ns()}"
            t1 = time.perf_counter()
            _post_join(other, srv.url, fn_index, [sd, *defaults], mine)
            text = _wait_complete(other, srv.url, mine, 3600)
            other_wait = time.perf_counter() - t1
            for t in threads:
                t.join()
        ok = '"success":true' in text.replace(" ", "")
        if not ok:
            print(text[-2000:])
        firsts = sorted(done_at.values())
        results = {"model": model, "queued": queued, "refused": refused, "other_import_s": round(other_wait, 1), "other_ok": ok,
                   "flood_first_done_s": round(firsts[0], 1) if firsts else None,
                   "flood_all_done_s": round(firsts[-1], 1) if firsts else None,
                   "others_share": round(w.share, 2), "root": root or "this checkout"}
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--served", action="store_true", help="time another address's import behind a queue")
    parser.add_argument("--queued", type=int, default=16, help="imports of the largest trace one address queues")
    parser.add_argument("--root", default=None, help="another checkout to run (its bench is this one)")
    parser.add_argument("--name", default=None, help="results file name (bench/results/<name>.json)")
    args = parser.parse_args()
    if args.served:
        r = served(args.model, args.queued, args.root)
        print(table(list(r), [list(r.values())]))
    else:
        if args.root:  # the replay of another checkout, in this process: its model/ first on the path
            sys.path.insert(0, str(Path(args.root).resolve()))
            for name in [m for m in sys.modules if m == "model" or m.startswith("model.")]:
                del sys.modules[name]
        r = in_process(args.model)
        print(table(list(r), [list(r.values())]))
    print("saved", save(args.name or ("import_wait_served" if args.served else "import_wait"), {"result": r}))


if __name__ == "__main__":
    main()
