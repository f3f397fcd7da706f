"""torchrun worker: every c10d collective on tpu tensors (tpu_dist) equals the same collective
done by Gloo on CPU copies, for each ReduceOp and dtype PyTorch defines it for."""

import torch
import torch.distributed as dist
from common import assert_same, check, finish

import torch_tpu

FLOATS = [torch.float32, torch.bfloat16, torch.float16, torch.float64]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
DTYPES = FLOATS + INTS + [torch.bool]
R = dist.ReduceOp

dist.init_process_group("cpu:gloo,tpu:tpu_dist")
rank, size = dist.get_rank(), dist.get_world_size()


def make(dtype, shape, salt=0):
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(0, 7, shape, generator=g).to(dtype)
    if not dtype.is_floating_point:
        return torch.randint(-5, 6, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


def gloo_dtype(dtype):
    """Gloo has no int16: the reference runs on int32 copies and is narrowed back, which gives
    the same bits (integer arithmetic wraps the same way)."""
    return torch.int32 if dtype == torch.int16 else dtype


def on_gloo(x):
    return x.to(gloo_dtype(x.dtype))


def strided_tpu(x):
    """`x` on the tpu as a non-contiguous view (the transpose of a contiguous tensor)."""
    return x.t().contiguous().to("tpu").t()


def ops_for(dtype):
    if dtype.is_floating_point:
        return [R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX, "premul"]
    return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]


def reduce_op(op):
    return dist._make_nccl_premul_sum(2.5) if op == "premul" else op


def gloo_reference(op, x, collective):
    """Gloo has no PREMUL_SUM: the reference scales first, then sums."""
    if op == "premul":
        x = x * 2.5
        op = R.SUM
    return collective(x, op)


def exact(dtype, op):
    return not dtype.is_floating_point or op in (R.MIN, R.MAX)


for dtype in DTYPES:
    gd = gloo_dtype(dtype)
    for op in ops_for(dtype):

        @check(f"all_reduce {dtype} {op}")
        def _():
            x = make(dtype, (3, 5))
            t = strided_tpu(x)
            dist.all_reduce(t, op=reduce_op(op))

            def gloo(y, o):
                dist.all_reduce(y, op=o)
                return y

            expected = gloo_reference(op, on_gloo(x), gloo).to(dtype)
            assert_same(t, expected, exact(dtype, op), "all_reduce")

    for op in [R.SUM, R.MAX, R.PRODUCT] + (["premul"] if dtype.is_floating_point else []):

        @check(f"reduce {dtype} {op}")
        def _():
            x = make(dtype, (6,), 1)
            t = x.to("tpu")
            dist.reduce(t, dst=1, op=reduce_op(op))

            def gloo(y, o):
                dist.reduce(y, dst=1, op=o)
                return y

            expected = gloo_reference(op, on_gloo(x), gloo).to(dtype)
            if rank == 1:
                assert_same(t, expected, exact(dtype, op), "reduce")

        @check(f"reduce_scatter_tensor {dtype} {op}")
        def _():
            x = make(dtype, (size * 4, 3), 2)
            out = torch.empty(8, 3, dtype=dtype, device="tpu")[::2]  # a strided output
            dist.reduce_scatter_tensor(out, x.to("tpu"), op=reduce_op(op))

            def gloo(y, o):
                res = torch.empty(4, 3, dtype=gd)
                dist.reduce_scatter_tensor(res, y, op=o)
                return res

            expected = gloo_reference(op, on_gloo(x), gloo).to(dtype)
            assert_same(out, expected, exact(dtype, op), "reduce_scatter_tensor")

        @check(f"reduce_scatter {dtype} {op}")
        def _():
            xs = [make(dtype, (2, 3), 10 + i) for i in range(size)]
            out = torch.empty(2, 3, dtype=dtype, device="tpu")
            dist.reduce_scatter(out, [x.to("tpu") for x in xs], op=reduce_op(op))
            expected = torch.empty(2, 3, dtype=gd)
            if op == "premul":
                dist.reduce_scatter(expected, [x * 2.5 for x in xs], op=R.SUM)
            else:
                dist.reduce_scatter(expected, [on_gloo(x) for x in xs], op=op)
            assert_same(out, expected.to(dtype), exact(dtype, op), "reduce_scatter")

    @check(f"broadcast {dtype}")
    def _():
        x = make(dtype, (4, 3), 3)
        t = strided_tpu(x)
        dist.broadcast(t, src=1)
        expected = on_gloo(x)
        dist.broadcast(expected, src=1)
        assert_same(t, expected.to(dtype), True, "broadcast")

    @check(f"all_gather {dtype}")
    def _():
        x = make(dtype, (2, 3), 4)
        outs = [torch.empty(3, 2, dtype=dtype, device="tpu").t() for _ in range(size)]
        dist.all_gather(outs, x.to("tpu"))
        expected = [torch.empty(2, 3, dtype=gd) for _ in range(size)]
        dist.all_gather(expected, on_gloo(x))
        for o, e in zip(outs, expected):
            assert_same(o, e.to(dtype), True, "all_gather")

    @check(f"all_gather_into_tensor {dtype}")
    def _():
        x = make(dtype, (2, 3), 5)
        out = torch.empty(size * 2, 3, dtype=dtype, device="tpu")
        dist.all_gather_into_tensor(out, strided_tpu(x))
        expected = torch.empty(size * 2, 3, dtype=gd)
        dist.all_gather_into_tensor(expected, on_gloo(x))
        assert_same(out, expected.to(dtype), True, "all_gather_into_tensor")

    @check(f"gather/scatter {dtype}")
    def _():
        x = make(dtype, (5,), 6)
        outs = (
            [torch.empty(5, dtype=dtype, device="tpu") for _ in range(size)] if rank == 0 else None
        )
        dist.gather(x.to("tpu"), outs, dst=0)
        expected = [torch.empty(5, dtype=gd) for _ in range(size)] if rank == 0 else None
        dist.gather(on_gloo(x), expected, dst=0)
        for o, e in zip(outs or [], expected or []):
            assert_same(o, e.to(dtype), True, "gather")
        chunks = [make(dtype, (5,), 20 + i) for i in range(size)] if rank == 1 else None
        out = torch.empty(5, dtype=dtype, device="tpu")
        dist.scatter(out, [c.to("tpu") for c in chunks] if chunks else None, src=1)
        expected = torch.empty(5, dtype=gd)
        dist.scatter(expected, [on_gloo(c) for c in chunks] if chunks else None, src=1)
        assert_same(out, expected.to(dtype), True, "scatter")

    @check(f"all_to_all {dtype}")
    def _():
        x = make(dtype, (size * 2, 3), 7)
        out = torch.empty_like(x, device="tpu")
        dist.all_to_all_single(out, x.to("tpu"))
        expected = torch.empty_like(on_gloo(x))
        dist.all_to_all_single(expected, on_gloo(x))
        assert_same(out, expected.to(dtype), True, "all_to_all_single")
        # Uneven: rank r sends r + 1 + j rows to rank j.
        send = [rank + 1 + j for j in range(size)]
        recv = [j + 1 + rank for j in range(size)]
        x = make(dtype, (sum(send), 2), 8)
        out = torch.empty(sum(recv), 2, dtype=dtype, device="tpu")
        dist.all_to_all_single(out, x.to("tpu"), recv, send)
        expected = torch.empty(sum(recv), 2, dtype=gd)
        dist.all_to_all_single(expected, on_gloo(x), recv, send)
        assert_same(out, expected.to(dtype), True, "all_to_all_single uneven")
        # The list form with uneven sizes (Gloo's own needs equal sizes: the reference is the
        # same exchange as one all_to_all_single).
        xs = [make(dtype, (j + 2,), 30 + j) for j in range(size)]
        outs = [torch.empty(rank + 2, dtype=dtype, device="tpu") for _ in range(size)]
        dist.all_to_all(outs, [x.to("tpu") for x in xs])
        flat = torch.empty(size * (rank + 2), dtype=gd)
        dist.all_to_all_single(
            flat, on_gloo(torch.cat(xs)), [rank + 2] * size, [j + 2 for j in range(size)]
        )
        for o, e in zip(outs, flat.split(rank + 2)):
            assert_same(o, e.to(dtype), True, "all_to_all")


@check("complex tensors (torch.distributed reduces them as real pairs)")
def _():
    x = torch.complex(make(torch.float32, (3, 4), 70), make(torch.float32, (3, 4), 71))
    t = strided_tpu(x)
    dist.all_reduce(t)
    dist.all_reduce(x)
    assert_same(t, x, False, "complex all_reduce")
    out = torch.empty(size * 3, 4, dtype=torch.complex64, device="tpu")
    dist.all_gather_into_tensor(out, x.to("tpu"))
    expected = torch.empty(size * 3, 4, dtype=torch.complex64)
    dist.all_gather_into_tensor(expected, x)
    assert_same(out, expected, True, "complex all_gather_into_tensor")


@check("integer AVG raises like Gloo")
def _():
    for device in ("cpu", "tpu"):
        try:
            dist.all_reduce(torch.ones(3, dtype=torch.int32, device=device), op=R.AVG)
        except RuntimeError as e:
            assert "can't be cast" in str(e), str(e)
        else:
            raise AssertionError(f"AVG on int32 on {device} did not raise")


@check("coalesced")
def _():
    xs = [make(torch.float32, (3,), 40), make(torch.float32, (2, 2), 41)]
    ts = [x.to("tpu") for x in xs]
    dist.all_reduce_coalesced(ts)
    dist.all_reduce_coalesced(xs)
    for t, x in zip(ts, xs):
        assert_same(t, x, False, "all_reduce_coalesced")
    # The coalescing manager sends these to allgather_into_tensor_coalesced and
    # reduce_scatter_tensor_coalesced.
    ins = [make(torch.float32, (2,), 42).to("tpu"), make(torch.float32, (3,), 43).to("tpu")]
    outs = [torch.empty(2 * size, device="tpu"), torch.empty(3 * size, device="tpu")]
    with dist._coalescing_manager():
        for o, i in zip(outs, ins):
            dist.all_gather_into_tensor(o, i)
    for o, i in zip(outs, ins):
        expected = torch.empty(o.numel())
        dist.all_gather_into_tensor(expected, i.cpu())
        assert_same(o, expected, True, "allgather_into_tensor_coalesced")
    ins = [
        make(torch.float32, (2 * size,), 44).to("tpu"),
        make(torch.float32, (size,), 45).to("tpu"),
    ]
    outs = [torch.empty(2, device="tpu"), torch.empty(1, device="tpu")]
    with dist._coalescing_manager():
        for o, i in zip(outs, ins):
            dist.reduce_scatter_tensor(o, i)
    for o, i in zip(outs, ins):
        expected = torch.empty(o.numel())
        dist.reduce_scatter_tensor(expected, i.cpu())
        assert_same(o, expected, False, "reduce_scatter_tensor_coalesced")


@check("send/recv, isend/irecv, batch_isend_irecv")
def _():
    peer = (rank + 1) % size
    prev = (rank - 1) % size
    x = make(torch.float32, (4,), 50)
    # Every rank posts its receive first, then its send, and waits on the send first.
    buf = torch.empty(4, 2, device="tpu").t()[1]  # a strided destination
    recv = dist.irecv(buf, src=prev)
    send = dist.isend(x.to("tpu"), dst=peer)
    send.wait()
    recv.wait()
    expected = torch.empty(4)
    r = dist.irecv(expected, src=prev)
    dist.isend(x, dst=peer).wait()
    r.wait()
    assert_same(buf, expected, True, "isend/irecv")
    ops = [dist.P2POp(dist.isend, x.to("tpu") * 2, peer), dist.P2POp(dist.irecv, buf, prev)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert_same(buf, expected * 2, True, "batch_isend_irecv")
    if rank == 0:
        dist.send(x.to("tpu"), dst=1)
    elif rank == 1:
        t = torch.empty(4, device="tpu")
        dist.recv(t, src=0)
        assert torch.equal(t.cpu(), make(torch.float32, (4,), 50 - 1000)), "send/recv"


@check("async work, futures, barrier")
def _():
    t = torch.ones(4, device="tpu") * (rank + 1)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    assert work.is_completed()
    value = work.get_future().wait()
    assert isinstance(value, list) and value[0].device.type == "tpu", value
    assert torch.equal(t.cpu(), torch.full((4,), float(sum(range(1, size + 1))))), t
    dist.barrier()
    dist.barrier(device_ids=[0])


@check("fused mode: pending work is materialized, results are readable")
def _():
    with torch_tpu.eager_mode("fused"):
        x = make(torch.float32, (8,), 60)
        t = x.to("tpu") * 3 + 1  # pending in the fused graph
        dist.all_reduce(t)
        u = t * 2  # recorded after the collective, reads its result
        expected = x * 3 + 1
        dist.all_reduce(expected)
        assert_same(u, expected * 2, False, "fused all_reduce")


finish()
