"""torch.optim on tpu (foreach=True, the default on a PrivateUse1 device, and fused=True)
against the same optimizer on CPU for several steps; and the _foreach_* ops themselves."""

import pytest
import torch
from op_check import assert_same, check_op

# Every op test runs in each eager mode (strict, debug, fused).
pytestmark = pytest.mark.usefixtures("each_mode")


def make_params(dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = [(4, 3), (5,), (2, 3, 2), ()]
    return [torch.randn(s, generator=g, dtype=torch.float64).to(dtype) for s in shapes]


def make_grads(params, step):
    g = torch.Generator().manual_seed(100 + step)
    return [torch.randn(p.shape, generator=g, dtype=torch.float64).to(p.dtype) for p in params]


def run(opt_cls, device, dtype, steps, lr_schedule=None, **kwargs):
    params = [p.to(device).requires_grad_() for p in make_params(dtype)]
    opt = opt_cls(params, **kwargs)
    for step in range(steps):
        for p, g in zip(params, make_grads(params, step)):
            p.grad = g.to(device)
        if lr_schedule:
            for group in opt.param_groups:
                group["lr"] = lr_schedule(step)
        opt.step()
    return params, opt


CONFIGS = [
    (torch.optim.AdamW, {"lr": 1e-2}),
    (torch.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1, "amsgrad": True}),
    (torch.optim.Adam, {"lr": 1e-2}),
    (torch.optim.Adam, {"lr": 1e-2, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
    (torch.optim.SGD, {"lr": 1e-1}),
    (torch.optim.SGD, {"lr": 1e-1, "momentum": 0.9}),
    (torch.optim.SGD, {"lr": 1e-1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    (torch.optim.SGD, {"lr": 1e-1, "momentum": 0.9, "dampening": 0.5, "maximize": True}),
]


def compare(opt_cls, kwargs, dtype=torch.float32, steps=4, **tol):
    cpu, cpu_opt = run(opt_cls, "cpu", dtype, steps, **kwargs)
    tpu, tpu_opt = run(opt_cls, "tpu", dtype, steps, **kwargs)
    for a, e in zip(tpu, cpu):
        assert_same(a.detach(), e.detach(), **tol)
    for pa, pe in zip(tpu, cpu):
        sa, se = tpu_opt.state[pa], cpu_opt.state[pe]
        for key, ve in se.items():
            if isinstance(ve, torch.Tensor) and ve.dim() > 0:
                assert_same(sa[key], ve, **tol)


@pytest.mark.parametrize("opt_cls,kwargs", CONFIGS, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("mode", ["foreach", "fused"])
def test_optimizer_matches_cpu(opt_cls, kwargs, mode):
    compare(opt_cls, dict(kwargs, **{mode: True}))


def test_default_is_foreach():
    from torch.optim.optimizer import _default_to_fused_or_foreach

    params = [torch.zeros(3, device="tpu", requires_grad=True)]
    assert _default_to_fused_or_foreach(params, False, False) == (False, True)
    compare(torch.optim.AdamW, {"lr": 1e-2, "lr_schedule": lambda s: 1e-2 / (s + 1)}, steps=5)


@pytest.mark.parametrize("mode", ["foreach", "fused"])
def test_steps_and_lr_changes_do_not_recompile(mode):
    # Bias corrections (foreach: per-step scalar lists) and lr are runtime inputs.
    import torch_tpu

    params = [p.to("tpu").requires_grad_() for p in make_params()]
    opt = torch.optim.AdamW(params, lr=1e-2, **{mode: True})
    for step in range(6):
        for p, g in zip(params, make_grads(params, step)):
            p.grad = g.to("tpu")
        opt.param_groups[0]["lr"] = 1e-2 / (step + 1)
        opt.step()
        if step == 2:
            misses = torch_tpu.metrics.counters()["cache_misses"]
    assert torch_tpu.metrics.counters()["cache_misses"] == misses


@pytest.mark.parametrize(
    "opt_cls,kwargs",
    [
        (torch.optim.RMSprop, {"lr": 1e-2, "momentum": 0.5, "centered": True}),
        (torch.optim.Adagrad, {"lr": 1e-2}),
        (torch.optim.NAdam, {"lr": 1e-2}),
        (torch.optim.RAdam, {"lr": 1e-2}),
        (torch.optim.Adamax, {"lr": 1e-2}),
        (torch.optim.Rprop, {}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_other_optimizers_foreach(opt_cls, kwargs):
    compare(opt_cls, dict(kwargs, foreach=True), steps=3)


@pytest.mark.parametrize("opt_cls", [torch.optim.Adam, torch.optim.AdamW])
def test_capturable_matches_cpu(opt_cls):
    # capturable keeps the step on the device (bias corrections from _foreach_pow etc.); the
    # CPU reference runs the ordinary foreach path.
    cpu, _ = run(opt_cls, "cpu", torch.float32, 4, lr=1e-2, amsgrad=True, foreach=True)
    tpu, _ = run(
        opt_cls, "tpu", torch.float32, 4, lr=1e-2, amsgrad=True, foreach=True, capturable=True
    )
    for a, e in zip(tpu, cpu):
        assert_same(a.detach(), e.detach())


@pytest.mark.parametrize("mode", ["foreach", "fused"])
def test_adamw_float64_and_bfloat16(mode):
    compare(torch.optim.AdamW, {"lr": 1e-2, mode: True}, dtype=torch.float64)
    # bf16 parameters: both sides compute in float32 and round once per stored tensor; the
    # fused CPU kernel's vector path uses FMA, so a few elements land one bf16 ulp apart.
    compare(
        torch.optim.AdamW,
        {"lr": 1e-2, mode: True},
        dtype=torch.bfloat16,
        steps=3,
        atol=1e-2,
        rtol=1e-2,
    )


def test_fused_tensor_lr_and_grad_scale():
    compare(torch.optim.AdamW, {"lr": torch.tensor(1e-2), "fused": True})
    compare(torch.optim.SGD, {"lr": torch.tensor(1e-1), "momentum": 0.9, "fused": True})

    def fused_step(device, found_inf):
        params = [p.to(device) for p in make_params()]
        grads = [g.to(device) for g in make_grads(params, 0)]
        avgs = [torch.zeros_like(p) for p in params]
        sqs = [torch.zeros_like(p) for p in params]
        steps = [torch.tensor(1.0, device=device) for _ in params]
        scale = torch.tensor(4.0, device=device)
        inf = torch.tensor(found_inf, device=device)
        torch._fused_adamw_(
            params,
            grads,
            avgs,
            sqs,
            [],
            steps,
            lr=1e-2,
            beta1=0.9,
            beta2=0.99,
            weight_decay=0.1,
            eps=1e-8,
            amsgrad=False,
            maximize=False,
            grad_scale=scale,
            found_inf=inf,
        )
        return params + grads + avgs + sqs

    for found_inf in (0.0, 1.0):
        assert_same(fused_step("tpu", found_inf), fused_step("cpu", found_inf))


# ---- the _foreach_ ops directly --------------------------------------------------------------


def lists(n=3, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, k + 1, generator=g).to(dtype) for k in range(n)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_foreach_binary(dtype):
    a, b = lists(dtype=dtype), lists(dtype=dtype, seed=1)
    check_op(lambda x, y: torch._foreach_add(x, y, alpha=0.5), a, b)
    check_op(lambda x: torch._foreach_add(x, 2.5), a)
    check_op(lambda x: torch._foreach_mul(x, [1.5, -2.0, 3]), a)
    check_op(lambda x, y: torch._foreach_div(x, y), a, b)
    check_op(lambda x: torch._foreach_sub(x, [1, 2, 3]), a)
    check_op(lambda x, y: torch._foreach_maximum(x, y), a, b)
    check_op(lambda x: torch._foreach_clamp_min(x, 0.1), a)
    check_op(lambda x, s: torch._foreach_mul(x, s), a, torch.tensor(3.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_foreach_pointwise(dtype):
    a, b, c = lists(dtype=dtype), lists(dtype=dtype, seed=1), lists(dtype=dtype, seed=2)
    c = [t.abs() + 0.5 for t in c]
    check_op(lambda x, y, z: torch._foreach_addcmul(x, y, z, value=0.3), a, b, c)
    check_op(lambda x, y, z: torch._foreach_addcdiv(x, y, z, [0.1, 0.2, 0.3]), a, b, c)
    check_op(lambda x, y: torch._foreach_lerp(x, y, 0.1), a, b)
    check_op(lambda x, y: torch._foreach_lerp(x, y, 0.9), a, b)
    check_op(lambda x, y, w: torch._foreach_lerp(x, y, w), a, b, c)
    check_op(torch._foreach_sqrt, c)
    check_op(torch._foreach_neg, a)
    check_op(torch._foreach_abs, a)
    check_op(torch._foreach_reciprocal, c)
    check_op(lambda x: torch._foreach_norm(x), a)
    check_op(lambda x: torch._foreach_norm(x, float("inf")), a)
    check_op(lambda x: torch._foreach_norm(x, 1), a)


def test_foreach_int_and_inplace():
    a = [torch.arange(6).reshape(2, 3), torch.arange(3)]
    check_op(lambda x: torch._foreach_add(x, 2), a)
    check_op(lambda x: torch._foreach_div(x, 2), a)
    check_op(torch._foreach_sqrt, a)

    def inplace(x, y):
        x = [t.clone() for t in x]
        torch._foreach_mul_(x, 0.5)
        torch._foreach_add_(x, y, alpha=2)
        torch._foreach_addcmul_(x, y, y, value=0.1)
        torch._foreach_zero_(y)
        torch._foreach_copy_(y, x)
        return x + y

    check_op(inplace, lists(), lists(seed=3))
