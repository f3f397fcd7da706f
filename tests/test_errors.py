"""Bad input raises PyTorch's own error at the call, in every mode, and leaves targets intact."""

import pytest
import torch

import torch_tpu

MODES = ["strict", "debug"]


@pytest.fixture(params=MODES)
def mode(request):
    with torch_tpu.eager_mode(request.param):
        yield request.param


def error_of(fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - we compare the exception itself
        return e
    raise AssertionError("no error raised")


def same_error(fn, *cpu_args):
    """fn raises on tpu the exception PyTorch raises for the same call: CPU's, or the one of
    PyTorch's meta kernels (which check shapes for every non-CPU backend, with their wording)."""
    tpu_args = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    meta_args = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    e_cpu, e_tpu = error_of(fn, *cpu_args), error_of(fn, *tpu_args)
    e_meta = error_of(fn, *meta_args)
    assert type(e_tpu) is type(e_cpu), (e_tpu, e_cpu)
    first = lambda e: str(e).split("\n")[0]  # noqa: E731
    assert first(e_tpu) in (first(e_cpu), first(e_meta)), (e_tpu, e_cpu, e_meta)


def test_shape_mismatch(mode):
    same_error(torch.add, torch.ones(3), torch.ones(4))
    same_error(torch.mm, torch.ones(2, 3), torch.ones(4, 5))
    same_error(lambda a: a.view(5), torch.ones(6))


def test_in_place_dtype_error_leaves_target_unchanged(mode):
    x = torch.arange(3, device="tpu")
    with pytest.raises(
        RuntimeError, match="can.t be cast to the desired output type Long|Promotion of int"
    ):
        x.add_(torch.full((3,), 0.5, device="tpu"))
    assert torch.equal(x.cpu(), torch.arange(3))
    with pytest.raises(RuntimeError, match="must match|broadcast"):
        x.add_(torch.ones(4, dtype=torch.int64, device="tpu"))
    assert torch.equal(x.cpu(), torch.arange(3))


def test_mixing_cpu_and_tpu_tensors(mode):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device="tpu") + torch.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.mm(torch.ones(2, 2, device="tpu"), torch.ones(2, 2))
    # CPU 0-d tensors mix with device tensors as on CUDA.
    assert torch.equal(
        (torch.ones(3, device="tpu") + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0)
    )


def test_out_of_range_index_debug_mode_raises_at_the_call():
    x = torch.arange(5.0, device="tpu")
    with torch_tpu.eager_mode("debug"):
        with pytest.raises(IndexError, match="out of"):
            torch.index_select(x, 0, torch.tensor([1, 7], device="tpu"))
        target = torch.zeros(5, device="tpu")
        with pytest.raises(IndexError):
            target.index_copy_(0, torch.tensor([9], device="tpu"), torch.ones(1, device="tpu"))
        assert torch.equal(target.cpu(), torch.zeros(5))
    # The process stays usable.
    assert torch.equal(
        torch.index_select(x, 0, torch.tensor([4, 0], device="tpu")).cpu(), torch.tensor([4.0, 0.0])
    )


BAD_DATA = [
    ("gather", lambda d: torch.zeros(3, device=d).gather(0, torch.tensor([5], device=d))),
    ("scatter", lambda d: torch.zeros(3, device=d).scatter(0, torch.tensor([5], device=d), 1.0)),
    ("take", lambda d: torch.zeros(3, device=d).take(torch.tensor([5], device=d))),
    (
        "index_select",
        lambda d: torch.zeros(3, device=d).index_select(0, torch.tensor([5], device=d)),
    ),
    ("getitem", lambda d: torch.zeros(3, device=d)[torch.tensor([5], device=d)]),
    (
        "nll_loss",
        lambda d: torch.nn.functional.nll_loss(
            torch.zeros(2, 3, device=d), torch.tensor([0, 7], device=d)
        ),
    ),
    (
        "binary_cross_entropy",
        lambda d: torch.nn.functional.binary_cross_entropy(
            torch.full((2,), 2.0, device=d), torch.ones(2, device=d)
        ),
    ),
    (
        "max_unpool2d",
        lambda d: torch.nn.functional.max_unpool2d(
            torch.ones(1, 1, 2, 2, device=d), torch.tensor([[[[0, 1], [2, 99]]]], device=d), 2
        ),
    ),
    ("multinomial", lambda d: torch.multinomial(torch.tensor([0.5, -1.0], device=d), 1)),
    ("linalg.inv", lambda d: torch.linalg.inv(torch.ones(3, 3, device=d))),
    ("cholesky", lambda d: torch.linalg.cholesky(-torch.eye(2, device=d))),
    ("_assert_async", lambda d: torch.ops.aten._assert_async(torch.zeros(1, device=d))),
    ("_assert_async_2", lambda d: torch.ops.aten._assert_async(torch.ones(2, device=d))),
    (
        "_assert_async.msg",
        lambda d: torch.ops.aten._assert_async.msg(torch.tensor(False, device=d), "custom message"),
    ),
]


@pytest.mark.parametrize("name,fn", BAD_DATA, ids=[b[0] for b in BAD_DATA])
def test_device_side_checks_raise_the_exception_class_cpu_raises(name, fn):
    with pytest.raises(Exception) as cpu:
        fn("cpu")
    with torch_tpu.eager_mode("debug"):
        with pytest.raises(Exception) as tpu:
            fn("tpu")
    assert type(tpu.value) is type(cpu.value), (type(tpu.value), type(cpu.value), str(tpu.value))


def test_out_of_range_index_strict_mode_raises_at_next_sync():
    x = torch.arange(5.0, device="tpu")
    y = torch.index_select(x, 0, torch.tensor([1, 7], device="tpu"))  # launched, not yet checked
    with pytest.raises(IndexError, match="LAUNCH_BLOCKING"):
        torch.tpu.synchronize()
    del y
    torch.tpu.synchronize()  # reported once
    assert x.sum().item() == 10.0


def test_embedding_index_out_of_range():
    w = torch.randn(4, 3, device="tpu")
    with torch_tpu.eager_mode("debug"):
        with pytest.raises(IndexError):
            torch.nn.functional.embedding(torch.tensor([0, 4], device="tpu"), w)
