"""The classroom benchmark's server counters: the CPU split by part and the batch sizes (model/runtime.py), and how
bench/classroom.py turns two reads of them into a histogram and CPU per step."""
import time

import pytest

from bench.classroom import cpu_per_step, histogram, stats_delta
from model.runtime import CpuSplit

pytestmark = pytest.mark.unit


def test_a_part_counts_its_calls_and_its_thread_cpu():
    split = CpuSplit()
    with split.part("busy"):
        end = time.thread_time() + 0.02
        while time.thread_time() < end:
            pass
    with split.part("busy"):
        time.sleep(0.02)  # waiting costs wall time, not CPU
    row = split.snapshot()["busy"]
    assert row["calls"] == 2
    assert 0.02 <= row["cpu_s"] < row["wall_s"]
    assert row["wall_s"] >= 0.04


def test_two_reads_give_the_histogram_and_cpu_per_step():
    before = {"process_cpu_s": 10.0, "batch_sizes": {"m": {"1": 5, "4": 1}},
              "parts": {"step": {"calls": 10, "cpu_s": 1.0, "wall_s": 2.0}}}
    after = {"process_cpu_s": 11.0, "batch_sizes": {"m": {"1": 7, "4": 3}},
             "parts": {"step": {"calls": 20, "cpu_s": 1.1, "wall_s": 3.0},
                       "model pass": {"calls": 4, "cpu_s": 0.4, "wall_s": 0.5},
                       "derive": {"calls": 10, "cpu_s": 0.05, "wall_s": 0.05},
                       "render": {"calls": 10, "cpu_s": 0.2, "wall_s": 0.2},
                       "figures": {"calls": 10, "cpu_s": 0.15, "wall_s": 0.15}}}
    delta = stats_delta(before, after)
    assert delta["batch_sizes"] == {"m": {1: 2, 4: 2}}
    hist = histogram(delta["batch_sizes"]["m"])
    assert hist["steps"] == 10 and hist["mean_batch_per_pass"] == 2.5
    assert hist["mean_batch_per_step"] == pytest.approx((1 * 2 + 16 * 2) / 10)  # a step's view: most ran in 4s
    cpu = cpu_per_step(delta)
    assert cpu["steps"] == 10 and cpu["total"] == pytest.approx(100.0)  # 1 s of CPU over 10 steps
    assert cpu["model pass"] == pytest.approx(40.0) and cpu["figures"] == pytest.approx(15.0)
    assert cpu["render (text, list)"] == pytest.approx(5.0) and cpu["sampling (derive)"] == pytest.approx(5.0)
    assert cpu["step + prefetch"] == pytest.approx(5.0)  # the step's 10 ms less the derive inside it
    parts = sum(v for k, v in cpu.items() if k not in ("steps", "total"))
    assert parts == pytest.approx(cpu["total"])  # gradio + rest is what is left
