"""Pinned host memory with tpu as the accelerator: pin_memory() / pin_memory=True give tensors
that report is_pinned() (DDP's find_unused_parameters and DataLoader rely on it), and tpu
factories refuse pin_memory=True with PyTorch's error."""

import pytest
import torch
import torch.distributed as dist
from op_check import assert_same

DTYPES = [torch.float32, torch.bfloat16, torch.int64, torch.bool]


@pytest.mark.parametrize("dtype", DTYPES)
def test_pin_memory_copies_values_and_is_pinned(dtype):
    source = torch.arange(24).reshape(4, 6).to(dtype)
    for x in (source, source.t(), source[:, 1::2]):  # contiguous and non-contiguous
        pinned = x.pin_memory()
        assert pinned.is_pinned() and not x.is_pinned()
        assert pinned.device.type == "cpu" and pinned.dtype == x.dtype and pinned.shape == x.shape
        assert torch.equal(pinned, x)
        assert pinned.pin_memory() is pinned  # already pinned: returned as is
        # Views share the pinned allocation, wherever they start in it.
        assert pinned[1:].is_pinned() and pinned.t().is_pinned()
        # Host to device from pinned memory, blocking or not.
        assert_same(pinned.to("tpu", non_blocking=True), x)
        assert_same(pinned.to("tpu"), x)


def test_factories_with_pin_memory_on_cpu():
    assert torch.empty(5, pin_memory=True).is_pinned()
    assert torch.empty(0, pin_memory=True).is_pinned()
    ones = torch.ones(2, 3, dtype=torch.float16, pin_memory=True)
    assert ones.is_pinned() and torch.equal(ones, torch.ones(2, 3, dtype=torch.float16))
    full = torch.full((3,), 7, pin_memory=True)
    assert full.is_pinned() and torch.equal(full, torch.full((3,), 7))
    assert not torch.empty(5).is_pinned()


def test_freed_pinned_memory_is_no_longer_pinned():
    # A plain CPU allocation that reuses a freed pinned block's address must not read as pinned.
    pinned = torch.full((1000,), 3.0).pin_memory()
    address = pinned.data_ptr()
    assert pinned.is_pinned()
    del pinned
    keep = []  # held so that each try gets a fresh block
    for _ in range(20):
        keep.append(torch.full((1000,), 4.0))
        if keep[-1].data_ptr() == address:
            assert not keep[-1].is_pinned()
            return
    pytest.skip("the host allocator did not reuse the freed block's address")


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.empty(3, device="tpu", pin_memory=True),
        lambda: torch.zeros(3, device="tpu", pin_memory=True),
        lambda: torch.randn(3, device="tpu", pin_memory=True),
        lambda: torch.empty_strided((3,), (1,), device="tpu", pin_memory=True),
    ],
    ids=["empty", "zeros", "randn", "empty_strided"],
)
def test_tpu_factories_refuse_pin_memory(make):
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        make()


def test_pin_memory_of_a_tpu_tensor_raises_torchs_error():
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        torch.ones(2, device="tpu").pin_memory()


def test_dataloader_pins_batches():
    data = torch.utils.data.TensorDataset(torch.arange(12.0).reshape(6, 2), torch.arange(6))
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
    batches = list(loader)
    assert all(t.is_pinned() for batch in batches for t in batch)
    expected = list(torch.utils.data.DataLoader(data, batch_size=4))
    for got, want in zip(batches, expected, strict=True):
        assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))


class TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 8)
        self.used = torch.nn.Linear(8, 2)
        self.unused = torch.nn.Linear(8, 2)  # never called: DDP must find it unused

    def forward(self, x):
        return self.used(torch.relu(self.body(x)))


def test_ddp_find_unused_parameters_on_tpu():
    """DDP stages its used-parameter map through pinned host memory and asserts it is pinned."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    reference = TwoHeads()
    x = torch.randn(5, 4)
    reference(x).square().sum().backward()
    dist.init_process_group("tpu_dist", store=dist.HashStore(), rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = DDP(TwoHeads().to("tpu"), find_unused_parameters=True)
        for _ in range(2):  # the map is re-zeroed after each backward: a second step reads it again
            model.zero_grad(set_to_none=True)
            model(x.to("tpu")).square().sum().backward()
    finally:
        dist.destroy_process_group()
    for (name, p), (_, q) in zip(
        model.module.named_parameters(), reference.named_parameters(), strict=True
    ):
        if name.startswith("unused"):
            assert p.grad is None and q.grad is None, name
        else:
            torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-5, msg=name)


def test_accelerator_host_cache_calls_on_an_initialized_device():
    # torch.accelerator's host-allocator calls look up the device's registered host allocator
    # once the device is initialized; with none registered, empty_host_cache() crashed the
    # process (vLLM calls it at shutdown). Nothing is cached: pinned tensors keep their values.
    pinned = torch.arange(6.0).pin_memory()
    assert_same(torch.ones(3, device="tpu") * 2, torch.ones(3) * 2)  # initializes the device
    torch.accelerator.empty_host_cache()
    assert pinned.is_pinned() and torch.equal(pinned, torch.arange(6.0))
    assert_same(pinned.to("tpu"), torch.arange(6.0))
    torch.accelerator.empty_host_cache()
