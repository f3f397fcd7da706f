"""The device's peak FLOP/s, the denominator of MFU.

TPUs and GPUs: the vendor's dense bf16 figure for the chip. XLA:CPU has no such figure, so the
peak is measured: the FLOP/s of a large float32 matmul program on this machine, which says how
close a model gets to what XLA:CPU reaches on its best-case kernel, and is labelled as measured.
"""

import time

import torch

# device_kind (lower case) substring -> dense bf16 FLOP/s per chip.
KNOWN_PEAKS = {
    "tpu v6": 918e12,
    "tpu v5p": 459e12,
    "tpu v5 lite": 197e12,
    "tpu v5e": 197e12,
    "tpu v4": 275e12,
    "h200": 989e12,
    "h100": 989e12,
    "a100": 312e12,
    "l4": 121e12,
}


def known_peak(device_kind):
    kind = device_kind.lower()
    return next((v for k, v in KNOWN_PEAKS.items() if k in kind), None)


def measured_matmul_peak(n=2048, repeats=5):
    """FLOP/s of an n x n float32 matmul on tpu (the best of `repeats` timed runs, compiled
    beforehand)."""
    a = torch.randn(n, n, device="tpu")
    b = torch.randn(n, n, device="tpu")
    (a @ b).cpu()
    best = float("inf")
    for _ in range(repeats):
        torch.tpu.synchronize()
        start = time.perf_counter()
        (a @ b).sum().cpu()
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


def device_peak():
    """(FLOP/s, how it was obtained) for tpu:0."""
    from torch_tpu import _C

    kind = _C._runtime_info()["device_kind"]
    peak = known_peak(kind)
    if peak is not None:
        return peak, f"{kind}: vendor dense bf16 peak"
    return measured_matmul_peak(), f"{kind}: measured float32 2048x2048 matmul (no vendor figure)"
