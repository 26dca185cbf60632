"""The hardening probe's cases, five rounds against one server, and the server's memory after each round.

Issue 20 item 6: two rounds of the outside probe took the server's RSS from 1,019 to 1,372 to 1,618 MB with only
a bystander's session still open. Each round here does, bounded, what the probe did:

- a flood of fresh session hashes from another address (127.0.0.2): queue/join of score_text and next_token, each
  with a new hash (most are refused by the queue's share per address; what gets in runs);
- a room: a teacher opens one, 80 raw joins and guesses from fresh hashes (no page, no heartbeat);
- branches: a student steps, goes back, steps again at other seeds, and compares two branches;
- traces: a student exports its trace and imports it again, three times;
- score any text: a student scores a pasted text five times.

Then every client of the round closes (its heartbeat ends: the page's unload), the server is left 30 s, and its
RSS is read. The bystander (a gradio_client with a heartbeat, as a page) stays for the five rounds.
Target: RSS levels off, the fifth round's end within 10 % of the first's.

    /work/heavy .venv/bin/python -m bench.probe_memory [--rounds 5] [--port 7812]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import httpx
from gradio_client import Client, handle_file

from bench import save, table
from bench.appserver import AppServer

MB = 1 << 20
SETTINGS = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0, order="transformers", seed=0,
                lang="en", layer=0, head="mean")
RAW = [1.0, 0, 1.0, 0.0, 1.0, "transformers", 0, "en", "candidates", 0, "mean"]  # the same, as raw inputs
TEXT = " ".join(["A pasted paragraph for the class to score, token by token, in one pass of the model."] * 6)


def client(url: str) -> Client:
    return Client(url, verbose=False, analytics_enabled=False)


def fn_indices(url: str) -> dict[str, int]:
    config = httpx.get(f"{url}/config", timeout=60, trust_env=False).json()
    return {d["api_name"]: d["id"] for d in config["dependencies"] if isinstance(d.get("api_name"), str)}


def flood(url: str, fns: dict[str, int], n: int, round_no: int) -> dict:
    codes = {}
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(transport=transport, timeout=60, trust_env=False) as http:
        for i in range(n):
            api, data = ("score_text", [TEXT, "en"]) if i % 2 else ("next_token", RAW)
            answer = http.post(f"{url}/gradio_api/queue/join", json={
                "data": data, "fn_index": fns[api], "session_hash": f"flood-{round_no}-{i}"})
            codes[answer.status_code] = codes.get(answer.status_code, 0) + 1
    return codes


def raw(http: httpx.Client, url: str, api: str, data: list) -> str:
    answer = http.post(f"{url}/gradio_api/call/{api}", json={"data": data})
    if answer.status_code != 200:
        return f"HTTP {answer.status_code}"
    return http.get(f"{url}/gradio_api/call/{api}/{answer.json()['event_id']}").text


def room(url: str, followers: int) -> Client:
    teacher = client(url)
    teacher.predict("The teacher's text is", "raw", "smollm2", **SETTINGS, api_name="/start")
    opened = teacher.predict(**SETTINGS, api_name="/open_room")
    code = opened.split('data-code="', 1)[1].split('"', 1)[0] if 'data-code="' in opened else "XXXX"
    with httpx.Client(timeout=60, trust_env=False) as http:
        for _ in range(followers):
            raw(http, url, "join_room", [code, "en", ""])  # (code, language, seat name)
            raw(http, url, "room_guess", [" Paris", "en"])
    return teacher


def branches(url: str) -> Client:
    student = client(url)
    student.predict("Branches grow from", "raw", "smollm2", **SETTINGS, api_name="/start")
    for seed in range(4):
        for _ in range(8):
            student.predict(**{**SETTINGS, "seed": seed}, api_name="/next_token")
        student.predict(4, **SETTINGS, api_name="/back")
    student.predict("", "", **SETTINGS, api_name="/compare_branches")
    return student


def traces(url: str, folder: Path) -> Client:
    student = client(url)
    student.predict("A trace to export", "raw", "smollm2", **SETTINGS, api_name="/start")
    for _ in range(6):
        student.predict(**SETTINGS, api_name="/next_token")
    exported = Path(student.predict(api_name="/export"))
    trace = folder / "trace.json"
    trace.write_text(json.dumps(json.loads(exported.read_text(encoding="utf-8"))), encoding="utf-8")
    for _ in range(3):
        student.predict(handle_file(str(trace)), **SETTINGS, api_name="/import_trace")
    return student


def scores(url: str) -> Client:
    student = client(url)
    for _ in range(5):
        student.predict(TEXT, "en", api_name="/score_text")
    return student


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--flood", type=int, default=200, help="queue/join calls per round, each with a fresh hash")
    ap.add_argument("--followers", type=int, default=80)
    ap.add_argument("--port", type=int, default=7812)
    ap.add_argument("--settle", type=float, default=30.0, help="seconds between a round's end and reading RSS")
    ap.add_argument("--name", default="probe_memory")
    args = ap.parse_args(argv)
    folder = Path("/tmp/tbt-probe-memory")
    folder.mkdir(exist_ok=True)
    rows, rounds = [], []
    with AppServer(port=args.port) as server:
        url = server.url
        fns = fn_indices(url)
        bystander = client(url)
        bystander.predict("I am only watching", "raw", "smollm2", **SETTINGS, api_name="/start")
        start_rss = server.rss_bytes() / MB
        print(f"start: {start_rss:.0f} MB")
        for n in range(1, args.rounds + 1):
            t0 = time.perf_counter()
            codes = flood(url, fns, args.flood, n)
            made, errors = [], []
            for case, call in (("room", lambda: room(url, args.followers)), ("branches", lambda: branches(url)),
                               ("traces", lambda: traces(url, folder)), ("scores", lambda: scores(url))):
                try:
                    made.append(call())
                except Exception as err:  # noqa: BLE001  (a case refused: said, and the round goes on)
                    errors.append(f"{case}: {type(err).__name__}: {str(err)[:120]}")
            for c in made:
                c.close()
            bystander.predict(**SETTINGS, api_name="/next_token")
            took = time.perf_counter() - t0
            time.sleep(args.settle)
            rss = server.rss_bytes() / MB
            rounds.append({"round": n, "rss_mb": rss, "seconds": took, "flood_codes": codes, "errors": errors})
            rows.append([n, round(rss), round(took), json.dumps(codes)])
            print(f"round {n}: RSS {rss:.0f} MB ({took:.0f} s; flood {codes}; errors {errors})", flush=True)
        bystander.close()
    first, last = rounds[0]["rss_mb"], rounds[-1]["rss_mb"]
    results = {"start_rss_mb": start_rss, "rounds": rounds, "last_over_first": last / first,
               "target": "the last round's RSS within 10 % of the first round's"}
    print(table(["round", "RSS MB", "s", "flood answers"], rows))
    print(f"last / first round: {last / first:.3f} (target <= 1.10)")
    save(args.name, results)
    return results


if __name__ == "__main__":
    main()
