"""Out-of-memory errors: torch.OutOfMemoryError with the sizes, nothing left allocated, the
device still usable; memory statistics and the summary."""

import gc

import pytest
import torch

import torch_tpu

pytestmark = pytest.mark.usefixtures("each_mode")

# 2**50 float32 values (4 PiB): more than any machine's memory or address space, so every
# allocator refuses it whatever the overcommit policy.
HUGE = 2**50

# (what, fn(n)): the three ways a program needs new device memory.
ALLOCATIONS = [
    ("unwritten storage read", lambda n: torch.empty(n, device="tpu").add_(1)),
    ("new output", lambda n: torch.ones(1, device="tpu").expand(n).contiguous() * 2),
    ("sampler over a whole storage", lambda n: torch.randn(n, device="tpu")),
]


def _use(make, n):
    y = make(n)  # alive until the value is read, so fused mode must materialize it
    return y.sum().item()


@pytest.mark.parametrize("what,make", ALLOCATIONS, ids=[a[0] for a in ALLOCATIONS])
def test_huge_allocation_raises_out_of_memory(what, make):
    _use(make, 4)  # warm: compiles and caches the small runtime scalars
    torch.tpu.synchronize()
    gc.collect()
    before = torch.tpu.memory_allocated()
    ooms = torch.tpu.memory_stats()["num_ooms"]
    with pytest.raises(torch.OutOfMemoryError) as info:
        _use(make, HUGE)  # strict and debug raise at the op, fused mode where the value is read
    message = str(info.value)
    del info  # its traceback holds the frame that held the tensor
    assert message.startswith("tpu out of memory. Tried to allocate 4096.00 TiB. tpu:0 has"), (
        message
    )
    assert "total capacity of" in message and "is free" in message
    assert torch.tpu.memory_stats()["num_ooms"] == ooms + 1
    gc.collect()
    assert torch.tpu.memory_allocated() == before
    # The device keeps working.
    x = torch.arange(6.0, device="tpu")
    assert torch.equal((x * 2).cpu(), torch.arange(6.0) * 2)


def test_out_of_memory_is_the_class_cuda_code_catches():
    assert torch.OutOfMemoryError is torch.cuda.OutOfMemoryError
    with pytest.raises(torch.cuda.OutOfMemoryError):
        _use(lambda n: torch.zeros(n, device="tpu"), HUGE)


def test_memory_stats_count_live_buffers_exactly():
    # Sizes an earlier test made vary would run the fill padded to its bucket (1024 elements,
    # 96 bytes more): this test counts the exact program's buffer.
    torch_tpu._C._forget_varied_sizes()
    torch.ones(3, device="tpu").sum().item()  # warm the cached runtime scalar
    torch.tpu.synchronize()
    gc.collect()
    before = torch.tpu.memory_stats()
    x = torch.ones(1000, device="tpu")
    torch.tpu.synchronize()
    after = torch.tpu.memory_stats()
    assert after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"] + 4000
    assert after["allocated_bytes.all.current"] == torch.tpu.memory_allocated()
    assert after["reserved_bytes.all.current"] == after["allocated_bytes.all.current"]
    assert after["allocated_bytes.all.peak"] >= after["allocated_bytes.all.current"]
    assert after["allocation.all.current"] == before["allocation.all.current"] + 1
    del x
    assert torch.tpu.memory_allocated() == before["allocated_bytes.all.current"]


def test_memory_summary_reports_the_stats():
    x = torch.ones(1 << 20, device="tpu")  # 4 MiB
    torch.tpu.synchronize()
    summary = torch.tpu.memory_summary()
    allocated = next(line for line in summary.splitlines() if line.startswith(" Allocated memory"))
    mib = torch.tpu.memory_allocated() / 2**20
    assert f"{mib:.2f} MiB" in allocated, (allocated, mib)
    assert "Out-of-memory errors" in summary and "tpu:0" in summary
    del x
