"""Checks of torch_tpu.distributed.in_program over 4 devices, each against the same reduction or
data movement computed by torch on CPU copies. test_in_program_collectives.py runs this file
once in a subprocess with TORCH_TPU_CPU_DEVICE_COUNT=4 (its own process has one device) and
reads the report: the last stdout line, JSON {case name: "ok" or what failed}.

Importing the module only names the cases (case_names()); nothing touches a device until main().
"""

import functools
import json
import sys
import traceback

import torch
import torch.distributed as dist

N = 4
OPS = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM")
DTYPES = (
    torch.float32,
    torch.bfloat16,
    torch.float16,
    torch.float64,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
    torch.complex64,
)
PREMUL = 2.5
# (atol, rtol). The collectives reduce in the tensors' dtype, rounding after each of the N - 1
# combining steps (and after PREMUL_SUM's scaling), while the reference rounds once: for
# inputs up to about 8 in magnitude, that is a few half-ulps at 8 (bf16: 2**-5, f16: 2**-8).
# A wrong reduction is off by about the inputs' size, far outside these.
TOL = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-12, 1e-12),
    torch.bfloat16: (1e-1, 2e-2),
    torch.float16: (1.5e-2, 3e-3),
    torch.complex64: (1e-5, 1e-5),
}


def _short(dtype):
    return str(dtype).removeprefix("torch.")


def _error_for(op, dtype):
    """The error torch.distributed gives for `op` on `dtype` (Gloo's rules), or None."""
    bitwise = op in ("BAND", "BOR", "BXOR")
    if bitwise and (dtype.is_floating_point or dtype.is_complex):
        return f"Cannot use ReduceOp.{op} with non-integral dtype"
    if dtype == torch.bool and op in ("AVG", "PREMUL_SUM"):
        return f"Cannot use ReduceOp.{op} with boolean inputs"
    if op == "PREMUL_SUM" and not (dtype.is_floating_point or dtype.is_complex):
        return "Cannot use ReduceOp.PREMUL_SUM with integer inputs"
    if dtype.is_complex and op in ("MIN", "MAX"):
        return f"Cannot use ReduceOp.{op} with complex inputs"
    return None


def _inputs(dtype, op, shape, seed):
    """N CPU tensors whose reduction by `op` stays in range for `dtype` (no integer overflow)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(N):
        if dtype == torch.bool:
            t = torch.randint(0, 2, shape, generator=g).bool()
        elif dtype.is_complex:
            t = torch.randn(shape, dtype=dtype, generator=g)
        elif dtype.is_floating_point:
            if op == "PRODUCT":
                t = torch.empty(shape).uniform_(0.5, 2.0, generator=g).to(dtype)
            else:
                t = torch.randn(shape, generator=g).to(dtype)
        else:
            low = 0 if dtype == torch.uint8 else -3
            t = torch.randint(low, 4, shape, generator=g).to(dtype)
        out.append(t)
    return out


def reference(xs, op):
    """The reduction of CPU tensors `xs` by `op`, in their dtype."""
    dtype = xs[0].dtype
    s = torch.stack(xs)
    if dtype == torch.bool:
        if op in ("SUM", "MAX", "BOR"):
            return s.any(0)
        if op in ("PRODUCT", "MIN", "BAND"):
            return s.all(0)
        return s.sum(0) % 2 == 1  # BXOR
    if op in ("BAND", "BOR", "BXOR"):
        fn = {"BAND": torch.bitwise_and, "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor}[op]
        return functools.reduce(fn, xs)
    if op == "MIN":
        return s.amin(0)
    if op == "MAX":
        return s.amax(0)
    wide = s.to(
        torch.complex128
        if dtype.is_complex
        else torch.float64
        if dtype.is_floating_point
        else torch.int64
    )
    if op == "PREMUL_SUM":
        wide = wide * PREMUL
    r = wide.prod(0) if op == "PRODUCT" else wide.sum(0)
    if op == "AVG":
        r = (
            r / len(xs)
            if (dtype.is_floating_point or dtype.is_complex)
            else torch.div(r, len(xs), rounding_mode="trunc")
        )
    return r.to(dtype)


def _assert_close(actual, expected, exact=False):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    atol, rtol = (0, 0) if exact else TOL.get(expected.dtype, (0, 0))
    torch.testing.assert_close(actual.cpu(), expected, atol=atol, rtol=rtol)


def _on_devices(xs):
    return [x.to(f"tpu:{r}") for r, x in enumerate(xs)]


def _op(name):
    return getattr(dist.ReduceOp, name)


def _expect_error(fn, text):
    try:
        fn()
    except (RuntimeError, ValueError, TypeError) as e:
        assert text in str(e), f"expected an error with {text!r}, got {e!r}"
        return
    raise AssertionError(f"expected an error with {text!r}, nothing raised")


# --- reductions -----------------------------------------------------------------------------


def check_all_reduce(op, dtype, seed):
    from torch_tpu.distributed import in_program as ip

    xs = _inputs(dtype, op, (2, 4), seed)
    ts = _on_devices(xs)
    error = _error_for(op, dtype)
    if error:
        return _expect_error(
            lambda: ip.all_reduce(
                ts, _op(op), premul_factor=PREMUL if op == "PREMUL_SUM" else None
            ),
            error,
        )
    ip.all_reduce(ts, _op(op), premul_factor=PREMUL if op == "PREMUL_SUM" else None)
    want = reference(xs, op)
    for r, t in enumerate(ts):
        assert t.device == torch.device(f"tpu:{r}"), t.device
        _assert_close(t, want, exact=op in ("MIN", "MAX"))


def check_reduce_scatter(op, dtype, seed):
    from torch_tpu.distributed import in_program as ip

    xs = _inputs(dtype, op, (4, 3), seed)  # 12 elements: 4 blocks of 3
    ts = _on_devices(xs)
    outs = [torch.empty(3, dtype=dtype, device=f"tpu:{r}") for r in range(N)]
    kw = {"premul_factor": PREMUL} if op == "PREMUL_SUM" else {}
    error = _error_for(op, dtype)
    if error:
        return _expect_error(lambda: ip.reduce_scatter_tensor(outs, ts, _op(op), **kw), error)
    ip.reduce_scatter_tensor(outs, ts, _op(op), **kw)
    want = reference(xs, op)  # [4, 3]: row r is replica r's block
    for r in range(N):
        _assert_close(outs[r], want[r], exact=op in ("MIN", "MAX"))


# --- data movement (exact) ------------------------------------------------------------------


def check_all_gather(dtype, seed):
    from torch_tpu.distributed import in_program as ip

    xs = _inputs(dtype, "SUM", (2, 3), seed)
    ts = _on_devices(xs)
    outs = [torch.empty(N * 2, 3, dtype=dtype, device=f"tpu:{r}") for r in range(N)]
    ip.all_gather_into_tensor(outs, ts)
    for r in range(N):
        _assert_close(outs[r], torch.cat(xs), exact=True)
    lists = ip.all_gather(ts)
    for r in range(N):
        assert len(lists[r]) == N
        for j in range(N):
            _assert_close(lists[r][j], xs[j], exact=True)
            assert lists[r][j].device == torch.device(f"tpu:{r}")


def check_all_to_all(dtype, seed):
    from torch_tpu.distributed import in_program as ip

    xs = _inputs(dtype, "SUM", (8, 2), seed)  # 4 blocks of 2 rows
    ts = _on_devices(xs)
    outs = [torch.empty(8, 2, dtype=dtype, device=f"tpu:{r}") for r in range(N)]
    ip.all_to_all_single(outs, ts)
    for r in range(N):
        want = torch.cat([xs[j].chunk(N)[r] for j in range(N)])
        _assert_close(outs[r], want, exact=True)


def check_permute(dtype, seed):
    from torch_tpu.distributed import in_program as ip

    xs = _inputs(dtype, "SUM", (3, 2), seed)
    pairs = [(0, 2), (2, 1), (1, 0)]  # replica 3 receives nothing
    got = ip.permute(_on_devices(xs), pairs)
    for src, dst in pairs:
        _assert_close(got[dst], xs[src], exact=True)
        assert got[dst].device == torch.device(f"tpu:{dst}")
    _assert_close(got[3], torch.zeros_like(xs[3]), exact=True)


# --- groups, layouts, modes, caching, errors ------------------------------------------------


def check_groups():
    from torch_tpu.distributed import in_program as ip

    for groups in ([[0, 1], [2, 3]], [[0, 2], [1, 3]], [[3, 0], [2, 1]]):
        xs = _inputs(torch.int32, "SUM", (5,), 7)
        ts = _on_devices(xs)
        ip.all_reduce(ts, dist.ReduceOp.SUM, groups=groups)
        for g in groups:
            for r in g:
                _assert_close(ts[r], reference([xs[j] for j in g], "SUM"), exact=True)
        ts = _on_devices(xs)
        outs = [torch.empty(10, dtype=torch.int32, device=f"tpu:{r}") for r in range(N)]
        ip.all_gather_into_tensor(outs, ts, groups=groups)
        for g in groups:
            for r in g:
                _assert_close(outs[r], torch.cat([xs[j] for j in g]), exact=True)
    xs = _inputs(torch.float32, "SUM", (4,), 8)
    outs = [torch.empty(2, device=f"tpu:{r}") for r in range(N)]
    ip.reduce_scatter_tensor(outs, _on_devices(xs), dist.ReduceOp.MAX, groups=[[0, 1], [2, 3]])
    for g in ([0, 1], [2, 3]):
        want = reference([xs[j] for j in g], "MAX")
        for pos, r in enumerate(g):
            _assert_close(outs[r], want.chunk(2)[pos], exact=True)
    outs = [torch.empty(4, device=f"tpu:{r}") for r in range(N)]
    ip.all_to_all_single(outs, _on_devices(xs), groups=[[0, 2], [1, 3]])
    for g in ([0, 2], [1, 3]):
        for pos, r in enumerate(g):
            _assert_close(outs[r], torch.cat([xs[j].chunk(2)[pos] for j in g]), exact=True)


def check_noncontiguous_and_views():
    from torch_tpu.distributed import in_program as ip

    xs = [torch.randn(3, 4, generator=torch.Generator().manual_seed(r)) for r in range(N)]
    bases = _on_devices([torch.zeros(4, 6) for _ in range(N)])
    views = []
    for r, b in enumerate(bases):
        v = b[1:, 1:5].t()  # offset, transposed, non-contiguous
        v.copy_(xs[r].t().to(v.device))
        views.append(v)
    assert not views[0].is_contiguous()
    ip.all_reduce(views, dist.ReduceOp.SUM)
    want = reference([x.t() for x in xs], "SUM")
    for r in range(N):
        _assert_close(views[r], want)
        # in place: the base sees the reduced values, and nothing outside the view changed
        base = bases[r].cpu()
        torch.testing.assert_close(base[1:, 1:5].t(), want)
        assert (
            base[0].abs().sum() == 0 and base[:, 0].abs().sum() == 0 and base[:, 5].abs().sum() == 0
        )
    # A non-contiguous output of all_gather_into_tensor.
    ins = _on_devices([x.t() for x in xs])  # 4x3 transposed views
    outs = [torch.zeros(3, 2 * N * 4, device=f"tpu:{r}")[:, ::2] for r in range(N)]
    ip.all_gather_into_tensor(outs, ins)
    flat = torch.cat([x.t().reshape(-1) for x in xs])
    for r in range(N):
        _assert_close(outs[r], flat.view(3, N * 4))


def _mode_case(mode):
    import torch_tpu
    from torch_tpu.distributed import in_program as ip

    xs = _inputs(torch.float32, "SUM", (6,), 11)
    with torch_tpu.eager_mode(mode):
        ts = [t * 2 + 1 for t in _on_devices(xs)]  # pending in fused mode
        ip.all_reduce(ts, dist.ReduceOp.SUM)
        ys = [t - 1 for t in ts]
        torch.tpu.synchronize()
    want = reference([x * 2 + 1 for x in xs], "SUM")
    for r in range(N):
        _assert_close(ys[r], want - 1)


def check_premul_from_reduce_op():
    from torch_tpu.distributed import in_program as ip

    xs = _inputs(torch.float32, "SUM", (5,), 12)
    ts = _on_devices(xs)
    ip.all_reduce(ts, dist._make_nccl_premul_sum(PREMUL))
    for t in ts:
        _assert_close(t, reference(xs, "PREMUL_SUM"))
    _expect_error(lambda: ip.all_reduce(ts, dist.ReduceOp.PREMUL_SUM), "needs a factor")


def check_second_call_compiles_nothing():
    from torch_tpu import metrics
    from torch_tpu.distributed import in_program as ip

    def run(seed, shape=(7,)):
        xs = _inputs(torch.float32, "SUM", shape, seed)
        ts = _on_devices(xs)
        before = metrics.counters()
        ip.all_reduce(ts, dist.ReduceOp.MAX)
        torch.tpu.synchronize()
        after = metrics.counters()
        _assert_close(ts[1], reference(xs, "MAX"), exact=True)
        return after["compiles"] - before["compiles"], after["cache_hits"] - before["cache_hits"]

    first, _ = run(1)
    assert first >= 1, first
    again, hits = run(2)
    assert again == 0, f"a second all_reduce with the same shapes compiled {again} programs"
    assert hits >= 1, hits
    other, _ = run(3, (9,))
    assert other >= 1, "a new shape must compile its own program"


def check_errors():
    from torch_tpu.distributed import in_program as ip

    ts = _on_devices([torch.ones(4) for _ in range(N)])
    _expect_error(lambda: ip.all_reduce([ts[0], ts[1].double()]), "has dtype")
    _expect_error(lambda: ip.all_reduce([ts[0], ts[1][:2]]), "has shape")
    _expect_error(lambda: ip.all_reduce([ts[0], ts[0]]), "its own device")
    _expect_error(lambda: ip.all_reduce([ts[0], torch.ones(4)]), "expected a tpu device")
    _expect_error(lambda: ip.all_reduce(ts, groups=[[0, 1], [2]]), "same size")
    _expect_error(lambda: ip.all_reduce(ts, groups=[[0, 1], [1, 2]]), "more than one place")
    _expect_error(lambda: ip.all_reduce(ts, groups=[[0, 4]]), "out of range")
    _expect_error(lambda: ip.permute(ts, [(0, 1), (0, 2)]), "source twice")
    _expect_error(lambda: ip.permute(ts, [(0, 5)]), "out of range")
    _expect_error(
        lambda: ip.reduce_scatter_tensor(ts, _on_devices([torch.ones(6)] * N)), "equal blocks"
    )
    outs = [torch.empty(3, device=f"tpu:{r}") for r in range(N)]
    _expect_error(lambda: ip.all_gather_into_tensor(outs, ts), "elements, expected 16")
    _expect_error(lambda: ip.all_reduce([]), "got none")


def check_supports_multiprocess():
    from torch_tpu.distributed import in_program as ip

    assert ip.supports_multiprocess() is False


def _cases():
    cases = {}
    for op in OPS:
        for i, dtype in enumerate(DTYPES):
            cases[f"all_reduce-{op}-{_short(dtype)}"] = functools.partial(
                check_all_reduce, op, dtype, i
            )
            cases[f"reduce_scatter-{op}-{_short(dtype)}"] = functools.partial(
                check_reduce_scatter, op, dtype, 100 + i
            )
    for i, dtype in enumerate(DTYPES):
        cases[f"all_gather-{_short(dtype)}"] = functools.partial(check_all_gather, dtype, 200 + i)
        cases[f"all_to_all-{_short(dtype)}"] = functools.partial(check_all_to_all, dtype, 300 + i)
        cases[f"permute-{_short(dtype)}"] = functools.partial(check_permute, dtype, 400 + i)
    cases["groups"] = check_groups
    cases["noncontiguous_and_views"] = check_noncontiguous_and_views
    for mode in ("strict", "debug", "fused"):
        cases[f"mode-{mode}"] = functools.partial(_mode_case, mode)
    cases["premul_from_reduce_op"] = check_premul_from_reduce_op
    cases["second_call_compiles_nothing"] = check_second_call_compiles_nothing
    cases["errors"] = check_errors
    cases["supports_multiprocess"] = check_supports_multiprocess
    return cases


def case_names():
    return list(_cases())


def main():
    import torch_tpu  # noqa: F401  (registers the tpu device)

    assert torch.tpu.device_count() == N, (
        f"needs TORCH_TPU_CPU_DEVICE_COUNT={N}, has {torch.tpu.device_count()}"
    )
    report = {}
    for name, fn in _cases().items():
        try:
            fn()
            torch.tpu.synchronize()
            report[name] = "ok"
        except Exception:
            report[name] = traceback.format_exc(limit=6)
    sys.stdout.write("\n" + json.dumps(report) + "\n")


if __name__ == "__main__":
    main()
