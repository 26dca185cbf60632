"""Benchmarks: each `python -m bench.<name>` prints a table and writes bench/results/<name>.json.

The helpers here: a prompt long enough for any benchmark, a watch on what other processes take from the
CPU while a benchmark runs (this machine is shared: its figures are only comparable when that is near 0),
the process's resident memory, and the table / JSON output.
"""
from __future__ import annotations

import json
import os
import platform
import resource
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
PROMPT = (
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined "
    "movable metal type, oil-based ink and a wooden press adapted from those used for wine. Within fifty years, "
    "printers were working in more than two hundred cities across Europe, and the price of books fell so far "
    "that ordinary merchants could own them. Historians still argue about what followed:"
)  # about 75 SmolLM2 tokens


def _busy_jiffies() -> int:
    """CPU time (all cores, clock ticks) the whole machine has spent busy since boot."""
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return user + nice + system + irq + softirq + steal


def _own_cpu_s() -> float:
    """CPU seconds of this process and of its children that have ended (a benchmark's subprocesses)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class CpuWatch:
    """Wall time, this process's CPU time (its finished children's included), and what every *other* process took.

    `other_share` is that other time over the machine's capacity (wall x cores): 0 = we had it to ourselves.
    """

    def __enter__(self):
        self._wall, self._own, self._busy = time.perf_counter(), _own_cpu_s(), _busy_jiffies()
        return self

    def __exit__(self, *exc):
        self.wall_s = time.perf_counter() - self._wall
        own_s = _own_cpu_s() - self._own
        machine_s = (_busy_jiffies() - self._busy) / os.sysconf("SC_CLK_TCK")
        self.other_s = max(0.0, machine_s - own_s)
        self.other_share = self.other_s / (self.wall_s * os.cpu_count())
        return False


def rss_bytes() -> int:
    """Resident memory of this process now (VmRSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("VmRSS not found in /proc/self/status")


def peak_rss_bytes() -> int:
    """Highest resident memory this process has reached (ru_maxrss, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def machine() -> dict:
    """What the figures were measured on."""
    import torch

    return {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "torch": torch.__version__, "python": platform.python_version()}


def table(headers: list[str], rows: list[list]) -> str:
    """A plain text table, numbers right-aligned."""
    cells = [[f"{c:,.3f}" if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(c.rjust(w) if c[:1].isdigit() or c[:1] == "-" else c.ljust(w) for c, w in zip(r, widths))
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])


def save(name: str, results: dict) -> Path:
    """Write bench/results/<name>.json (with the machine it ran on) and return its path."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"benchmark": name, "machine": machine(), **results}, indent=2) + "\n")
    return path


def wait_for_quiet(max_share: float = 0.1, window_s: float = 3.0, timeout_s: float = 600.0) -> float:
    """Wait until other processes use under `max_share` of the CPU over `window_s` (or timeout); return that share."""
    deadline = time.perf_counter() + timeout_s
    while True:
        with CpuWatch() as w:
            time.sleep(window_s)
        if w.other_share < max_share or time.perf_counter() > deadline:
            return w.other_share
