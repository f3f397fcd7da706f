"""Helpers shared by the benchmark scripts (not tests: they print numbers, assert nothing)."""

import os
import socket
import statistics
import sys
import time

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
)

import torch  # noqa: E402


def sync(device):
    if device == "tpu":
        torch.tpu.synchronize()


def time_steps(step, device, warmup, steps):
    """Runs `step` warmup times, then `steps` timed times; returns steps per second."""
    for _ in range(warmup):
        step()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return steps / (time.perf_counter() - t0)


def median_us(fn, n, repeat=5):
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(runs)


def machine():
    return f"{os.cpu_count()} cores, torch {torch.__version__}"


def free_port():
    """A free TCP port on the loopback address."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
