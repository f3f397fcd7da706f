"""Shared by the torchrun workers of tests/test_distributed.py: each worker runs a group of
checks in every rank and exits non-zero (printing what differed) when one fails."""

import os
import sys
import traceback

import torch
import torch.distributed as dist

FAILURES = []


def check(name):
    """Runs the decorated function now, recording (not raising) its failure, so one run reports
    every failing check."""

    def run(fn):
        try:
            fn()
        except Exception:  # noqa: BLE001 - every failure is reported at the end
            FAILURES.append(name)
            print(
                f"[rank {dist.get_rank()}] FAILED {name}\n{traceback.format_exc()}", file=sys.stderr
            )
        return fn

    return run


def assert_same(actual, expected, exact, what=""):
    """The tpu result against Gloo's CPU result: values, dtype, shape and device type."""
    assert actual.device.type == "tpu", f"{what}: result on {actual.device}"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if exact or not expected.is_floating_point():
        assert torch.equal(actual, expected), f"{what}:\n{actual}\n!=\n{expected}"
    else:
        tol = {torch.bfloat16: 2e-2, torch.float16: 2e-3}.get(expected.dtype, 1e-5)
        torch.testing.assert_close(actual, expected, rtol=tol, atol=tol, msg=what)


def finish():
    dist.barrier()
    rank = dist.get_rank()
    dist.destroy_process_group()
    if FAILURES:
        print(f"[rank {rank}] {len(FAILURES)} checks failed: {FAILURES}", file=sys.stderr)
        sys.exit(1)
    print(f"[rank {rank}] all checks passed")


def world():
    return int(os.environ["WORLD_SIZE"])
