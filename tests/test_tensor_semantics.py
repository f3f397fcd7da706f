"""Exact eager semantics of storage, views and in-place writes, compared with CPU."""

import io

import pytest
import torch
from op_check import ALL_DTYPES, assert_same

import torch_tpu

# Every test here runs in strict, debug and fused mode (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_mode")


def both(fn):
    """Runs fn(device) on cpu and tpu, returns (tpu_result, cpu_result)."""
    return fn("tpu"), fn("cpu")


def base(device, dtype=torch.float32, shape=(4, 6)):
    n = 1
    for s in shape:
        n *= s
    return torch.arange(n).reshape(shape).to(dtype).to(device)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_roundtrip_dtypes(dtype):
    cpu = (torch.randn(3, 5) * 10).to(dtype)
    t = cpu.to("tpu")
    assert t.dtype == dtype and t.device.type == "tpu"
    assert torch.equal(t.cpu(), cpu)
    assert t.tolist() == cpu.tolist()
    assert t[1, 2].item() == cpu[1, 2].item()


def test_zero_dim_and_empty():
    assert_same(torch.tensor(3.5).to("tpu"), torch.tensor(3.5))
    assert_same(torch.empty(0, 3, device="tpu"), torch.empty(0, 3))
    assert torch.tensor(7, device="tpu").item() == 7


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x[1:3],
        lambda x: x[:, ::2],
        lambda x: x[1::2, 1::3],
        lambda x: x.t(),
        lambda x: x.t()[2:5],
        lambda x: x.transpose(0, 1)[::2],
        lambda x: x[2],
        lambda x: x.select(1, 3),
        lambda x: x.narrow(1, 2, 3),
        lambda x: x.view(3, 8)[1:],
        lambda x: x.reshape(2, 2, 6).permute(2, 0, 1),
        lambda x: x.unsqueeze(1)[:, :, 1:],
        lambda x: x[None, 1:2].squeeze(0),
        lambda x: x.diagonal(),
        lambda x: x.diagonal(offset=1),
        lambda x: x.as_strided((3, 3), (5, 2), 1),
        lambda x: x.reshape(-1).unfold(0, 4, 2),
        lambda x: x[0:1].expand(3, 6),
    ],
)
def test_view_reads(view):
    tpu, cpu = both(lambda d: view(base(d)))
    assert_same(tpu, cpu)
    assert tpu.stride() == cpu.stride() and tpu.storage_offset() == cpu.storage_offset()
    assert_same(tpu.contiguous(), cpu.contiguous())


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x[1:3],
        lambda x: x[:, ::2],
        lambda x: x[1::2, 1::3],
        lambda x: x.t(),
        lambda x: x.t()[2:5],
        lambda x: x[2],
        lambda x: x.select(1, 3),
        lambda x: x.diagonal(),
        lambda x: x.as_strided((3, 3), (5, 2), 1),
        lambda x: x.view(2, 12)[:, 5:9],
        lambda x: x.reshape(2, 2, 6).permute(2, 0, 1)[1:4],
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16], ids=str)
def test_writes_through_views_reach_base_and_other_views(view, dtype):
    def run(device):
        x = base(device, dtype)
        other = x.t()  # a second view of the same storage
        v = view(x)
        v.fill_(-1)
        src = torch.arange(v.numel()).reshape(v.shape).to(dtype).to(device) * 3
        v.copy_(src)
        return x, other, v

    for a, e in zip(*both(run)):
        assert_same(a, e)


def test_copy_across_devices_and_dtypes():
    cpu = torch.randn(4, 5)
    t = torch.zeros(4, 5, dtype=torch.float64, device="tpu")
    t.copy_(cpu)
    assert_same(t, cpu.double())
    half = torch.empty(5, 4, dtype=torch.bfloat16, device="tpu")
    half.t().copy_(t)
    assert_same(half, cpu.t().to(torch.bfloat16).contiguous())
    back = torch.empty(4, 5, dtype=torch.int32)
    back.copy_(t * 10 if hasattr(t, "__mul__") else t)
    assert torch.equal(back, (cpu.double() * 10).int())
    # broadcast copy
    row = torch.arange(5.0)
    t.copy_(row)
    assert_same(t, row.double().expand(4, 5))


def pairs(t):
    """A ComplexHalf tensor as its (re, im) halves, on the CPU (CPU cannot compare chalf)."""
    assert t.dtype == torch.complex32
    return torch.view_as_real(t.cpu())


@pytest.mark.parametrize("dtype", ALL_DTYPES + (torch.complex64, torch.float64), ids=str)
def test_complex_half_is_stored_copied_and_converted(dtype):
    # XLA has no complex32: a tpu ComplexHalf tensor holds (re, im) pairs of halves, and
    # conversions into and out of it must round exactly as CPU's do.
    cpu = (torch.randn(2, 3, 2, 3) * 300).to(dtype)
    t = cpu.to("tpu")
    for kw in ({}, {"memory_format": torch.channels_last}):
        got, want = t.chalf(**kw), cpu.chalf(**kw)
        assert (
            got.device.type == "tpu" and got.shape == want.shape and got.stride() == want.stride()
        )
        assert torch.equal(pairs(got), pairs(want))
    assert torch.equal(pairs(t.transpose(0, 3).chalf()), pairs(cpu.transpose(0, 3).chalf()))
    c = cpu.chalf()
    back = c.to("tpu")  # cpu -> tpu, then out of ComplexHalf into every dtype
    assert torch.equal(pairs(back), pairs(c))
    assert back[1, 2, 0, 1].item() == c[1, 2, 0, 1].item()
    for to in (torch.complex64, torch.float32, torch.bfloat16, torch.int64):
        assert_same(back.to(to), c.to(to))
    view = torch.empty(3, 4, dtype=torch.complex32, device="tpu")
    view.t().copy_(back[0, :, 0, 0])  # a broadcast, strided write into a ComplexHalf view
    assert torch.equal(pairs(view), pairs(c[0, :, 0, 0].expand(4, 3).t().contiguous()))


def test_complex_half_arithmetic_is_a_clear_error():
    t = torch.randn(3, dtype=torch.complex64).chalf().to("tpu")
    with pytest.raises(NotImplementedError, match="ComplexHalf.*cfloat"):
        (t + t).cpu()


def test_non_blocking_and_to():
    cpu = torch.randn(3, 3)
    t = cpu.to("tpu", non_blocking=True)
    torch.tpu.synchronize()
    assert_same(t, cpu)
    assert_same(t.to(torch.float16), cpu.to(torch.float16))
    assert torch.equal(t.to("cpu", non_blocking=True), cpu)


def test_print_shows_values_and_device():
    t = torch.tensor([[1.5, -2.0], [0.0, 4.25]], device="tpu")
    s = str(t)
    assert "device='tpu:0'" in s and "1.5000" in s and "4.2500" in s


def test_save_and_load_tensors_and_state_dict(tmp_path):
    cpu = torch.randn(3, 4)
    t = cpu.to("tpu")
    view = t[:, 1:3]
    buf = io.BytesIO()
    torch.save({"t": t, "view": view, "i": torch.arange(5, device="tpu")}, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["t"].device.type == "tpu"
    assert_same(loaded["t"], cpu)
    assert_same(loaded["view"], cpu[:, 1:3])
    assert_same(loaded["i"], torch.arange(5))
    model = torch.nn.Linear(4, 3).to("tpu")
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    sd = torch.load(path)
    for k, v in model.state_dict().items():
        assert sd[k].device.type == "tpu"
        assert torch.equal(sd[k].cpu(), v.cpu())
    sd_cpu = torch.load(path, map_location="cpu")
    assert sd_cpu["weight"].device.type == "cpu"


def test_resize_and_set():
    t = torch.empty(0, device="tpu")
    t.resize_(2, 3)
    assert t.shape == (2, 3)
    t.fill_(2.0)
    assert_same(t, torch.full((2, 3), 2.0))
    s = torch.arange(6.0, device="tpu")
    u = torch.empty(0, device="tpu").set_(s.untyped_storage(), 2, (2, 2), (2, 1))
    assert_same(u, torch.arange(6.0).as_strided((2, 2), (2, 1), 2))


def test_storage_resize_frees_and_reallocates():
    # FSDP2 frees unsharded parameters with untyped_storage().resize_(0) and resizes back
    # before the next all-gather writes them.
    cpu = torch.arange(8.0)
    x = cpu.to("tpu")
    torch.tpu.synchronize()
    before = torch.tpu.memory_allocated()
    for t in (cpu, x):
        t.untyped_storage().resize_(0)
        assert t.untyped_storage().nbytes() == 0
    assert torch.tpu.memory_allocated() == before - 32
    for t in (cpu, x):
        t.untyped_storage().resize_(32)
        assert t.untyped_storage().nbytes() == 32
        t.copy_(torch.arange(8.0) * 2)
    assert_same(x, cpu)
    # Shrinking keeps the leading bytes, growing keeps the contents, as on CPU.
    for t in (cpu, x):
        t.untyped_storage().resize_(16)
        t.untyped_storage().resize_(32)
    assert_same(x[:4], cpu[:4])
    y = torch.arange(6, dtype=torch.int16, device="tpu")
    y.untyped_storage().resize_(5)  # not a whole number of elements
    assert y.untyped_storage().nbytes() == 5
    y.untyped_storage().resize_(12)
    assert_same(y[:2], torch.arange(2, dtype=torch.int16))


def test_mixing_cpu_and_tpu_is_an_error():
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3, device="tpu").copy_(torch.ones(3)).add_(torch.ones(3))


def test_whole_storage_copy_shares_the_buffer_and_writes_stay_separate():
    a = torch.zeros(4, 3, device="tpu")
    b = torch.arange(12.0, device="tpu").view(4, 3)
    torch.tpu.synchronize()
    before = torch_tpu.metrics.counters()["executions"]
    a.copy_(b)
    assert torch_tpu.metrics.counters()["executions"] == before  # no program ran
    b.add_(1)
    a.mul_(2)
    assert torch.equal(a.cpu(), torch.arange(12.0).view(4, 3) * 2)
    assert torch.equal(b.cpu(), torch.arange(12.0).view(4, 3) + 1)
    c = torch.zeros(3, 4, device="tpu").t()  # same sizes, other strides: a real copy
    c.copy_(b)
    assert torch.equal(c.cpu(), b.cpu())
