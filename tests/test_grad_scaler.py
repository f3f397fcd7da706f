"""torch.amp.GradScaler on tpu: the two ops behind it (_amp_foreach_non_finite_check_and_unscale_,
_amp_update_scale_) against PyTorch's CPU kernels, and small mixed-precision training loops
against the same loop under GradScaler("cpu"), step for step."""

import pytest
import torch
import torch.nn.functional as F
from op_check import noncontiguous

pytestmark = pytest.mark.usefixtures("each_mode")

INF, NAN = float("inf"), float("nan")


def grad_list(seed, bad=None):
    """Gradients of several dtypes and layouts in one list; `bad` = (index, position, value)
    plants a non-finite value."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape, dtype=torch.float32):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * 1000).to(dtype)

    grads = [
        r(4, 3),
        r(7, dtype=torch.float16),
        r(2, 3, 2, dtype=torch.bfloat16),
        r(5, dtype=torch.float64),
        noncontiguous(r(3, 4)),
        r(6, 5, dtype=torch.float16).t(),
        r(()),
        r(0, 3),
    ]
    if bad is not None:
        k, pos, value = bad
        t = grads[k]
        index = torch.unravel_index(torch.tensor(pos), t.shape) if t.dim() else ()
        t[tuple(int(i) for i in index)] = value
    return grads


def keep_layout(t, device):
    """A copy of `t` on `device` with the same sizes and strides."""
    out = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=device)
    out.copy_(t)
    return out


def unscale_both(grads, found, inv):
    cpu = [keep_layout(t, "cpu") for t in grads]
    tpu = [keep_layout(t, "tpu") for t in grads]
    for c, t in zip(cpu, tpu):
        assert c.stride() == t.stride()
    found_c, found_t = torch.tensor(found), torch.tensor(found, device="tpu")
    inv_c, inv_t = torch.tensor(inv), torch.tensor(inv, device="tpu")
    torch._amp_foreach_non_finite_check_and_unscale_(cpu, found_c, inv_c)
    torch._amp_foreach_non_finite_check_and_unscale_(tpu, found_t, inv_t)
    return cpu, tpu, found_c, found_t


def assert_bits_equal(actual, expected):
    assert actual.device.type == "tpu" and actual.dtype == expected.dtype
    assert actual.shape == expected.shape and actual.stride() == expected.stride()
    torch.testing.assert_close(actual.cpu(), expected, atol=0, rtol=0, equal_nan=True)


@pytest.mark.parametrize(
    "bad",
    [
        None,
        (0, 5, INF),
        (1, 0, -INF),
        (2, 3, NAN),
        (3, 4, NAN),
        (4, 0, INF),
        (5, 0, NAN),
        (6, 0, -INF),
    ],
)
@pytest.mark.parametrize("inv", [2.0**-16, 1.0, 0.1])
def test_unscale_matches_cpu(bad, inv):
    grads = grad_list(1, bad)
    cpu, tpu, found_c, found_t = unscale_both(grads, 0.0, inv)
    assert found_c.item() == (0.0 if bad is None else 1.0)
    assert_bits_equal(found_t, found_c)
    for t, c in zip(tpu, cpu):
        assert_bits_equal(t, c)


def test_unscale_never_clears_found_inf():
    # found_inf is only ever set: a finite list leaves an earlier 1.0 in place.
    cpu, tpu, found_c, found_t = unscale_both(grad_list(2), 1.0, 0.5)
    assert found_c.item() == 1.0
    assert_bits_equal(found_t, found_c)
    for t, c in zip(tpu, cpu):
        assert_bits_equal(t, c)


def test_unscale_found_inf_accumulates_over_calls():
    # GradScaler calls the op once per (device, dtype) group with the same found_inf.
    found = torch.zeros((), device="tpu")
    inv = torch.full((), 0.5, device="tpu")
    torch._amp_foreach_non_finite_check_and_unscale_([torch.ones(3, device="tpu")], found, inv)
    assert found.item() == 0.0
    bad = torch.tensor([1.0, NAN], dtype=torch.float16, device="tpu")
    torch._amp_foreach_non_finite_check_and_unscale_([bad], found, inv)
    assert found.item() == 1.0
    torch._amp_foreach_non_finite_check_and_unscale_([torch.ones(3, device="tpu")], found, inv)
    assert found.item() == 1.0


def test_unscale_one_element_found_inf_and_scale():
    # found_inf and inv_scale need one element, not zero dimensions.
    grads = [torch.tensor([3.0, INF]), torch.tensor([1.5], dtype=torch.bfloat16)]
    cpu = [g.clone() for g in grads]
    tpu = [g.to("tpu") for g in grads]
    found_c, found_t = torch.zeros(1), torch.zeros(1, device="tpu")
    torch._amp_foreach_non_finite_check_and_unscale_(cpu, found_c, torch.full((1,), 0.25))
    torch._amp_foreach_non_finite_check_and_unscale_(
        tpu, found_t, torch.full((1,), 0.25, device="tpu")
    )
    assert_bits_equal(found_t, found_c)
    for t, c in zip(tpu, cpu):
        assert_bits_equal(t, c)


def test_unscale_rejects_non_float_found_inf():
    grads = [torch.ones(2)]
    with pytest.raises(RuntimeError, match="found_inf must be a float tensor"):
        torch._amp_foreach_non_finite_check_and_unscale_(
            grads, torch.zeros((), dtype=torch.float64), torch.ones(())
        )
    grads = [torch.ones(2, device="tpu")]
    with pytest.raises(RuntimeError, match="found_inf must be a float tensor"):
        torch._amp_foreach_non_finite_check_and_unscale_(
            grads, torch.zeros((), dtype=torch.float64, device="tpu"), torch.ones((), device="tpu")
        )
        torch.tpu.synchronize()


def update_sequence(found_seq, scale0, growth, backoff, interval, tracker0=0):
    """Runs _amp_update_scale_ over found_seq on CPU and tpu; returns both histories."""
    hist = {}
    for dev in ("cpu", "tpu"):
        scale = torch.full((), scale0, dtype=torch.float32, device=dev)
        tracker = torch.full((), tracker0, dtype=torch.int32, device=dev)
        h = []
        for f in found_seq:
            out = torch._amp_update_scale_(
                scale, tracker, torch.tensor(f, device=dev), growth, backoff, interval
            )
            assert out is scale
            h.append((scale.cpu().clone(), tracker.cpu().clone()))
        hist[dev] = h
    return hist["cpu"], hist["tpu"]


@pytest.mark.parametrize(
    "found_seq,scale0,growth,backoff,interval",
    [
        ([0.0] * 7, 2.0**16, 2.0, 0.5, 3),  # grows every third step
        (
            [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0],
            2.0**16,
            2.0,
            0.5,
            3,
        ),  # inf resets the tracker
        (
            [NAN, 0.0, 0.0, 2.0, 0.0],
            1024.0,
            2.0,
            0.5,
            2,
        ),  # any nonzero found_inf (NaN too) backs off
        ([0.0] * 4, 1.0, 2.0, 0.5, 1),  # interval 1: grows every step
        ([0.0] * 4, 3.0e38, 2.0, 0.5, 1),  # growth would overflow float32: the scale stays
        ([0.0, 0.0, 1.0, 0.0, 0.0], 0.1, 1.0001, 0.3, 2),  # factors rounded once from double
        ([1.0] * 4, 1e-36, 2.0, 0.5, 5),  # backoff to tiny scales
    ],
)
def test_update_scale_matches_cpu(found_seq, scale0, growth, backoff, interval):
    cpu, tpu = update_sequence(found_seq, scale0, growth, backoff, interval)
    for (sc, tc), (st, tt) in zip(cpu, tpu):
        assert torch.equal(st.view(torch.int32), sc.view(torch.int32)), (st, sc)
        assert tt.dtype == torch.int32 and tt.item() == tc.item()


def test_update_scale_tracker_past_interval():
    # A tracker already at or past the interval never equals it again: it just keeps counting.
    cpu, tpu = update_sequence([0.0] * 3, 8.0, 2.0, 0.5, 3, tracker0=5)
    assert [t.item() for _, t in tpu] == [t.item() for _, t in cpu] == [6, 7, 8]
    assert all(s.item() == 8.0 for s, _ in tpu)


# --- training loops ------------------------------------------------------------------------


def make_params(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randn(16, 8, generator=g) * 0.3,
        torch.randn(16, generator=g) * 0.1,
        torch.randn(4, 16, generator=g) * 0.3,
        torch.randn(4, generator=g) * 0.1,
    ]


def forward(params, x, half):
    """A two-layer MLP computed in `half` precision on float32 master weights."""
    w1, b1, w2, b2 = (p.to(half) for p in params)
    h = F.relu(F.linear(x.to(half), w1, b1))
    return F.linear(h, w2, b2).float()


def batches(steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(6, 8, generator=g), torch.randn(6, 4, generator=g)) for _ in range(steps)]


def train(device, half, opt_name, poison, steps=8):
    params = [p.to(device).requires_grad_() for p in make_params()]
    if opt_name == "sgd":
        opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.AdamW(params, lr=1e-2, fused=True)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=2)
    history = []
    for step, (x, y) in enumerate(batches(steps)):
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        if step in poison and poison[step] == "overflow":
            # Huge activations overflow the half-precision backward (fp16) or the loss (bf16).
            x = x * 6e4
        loss = F.mse_loss(forward(params, x, half), y)
        scaler.scale(loss).backward()
        if step in poison and poison[step] == "nan":
            params[2].grad[1, 3] = NAN
        before = [p.detach().clone() for p in params]
        scaler.step(opt)
        scaler.update()
        history.append(
            {
                "params": [p.detach().cpu().clone() for p in params],
                "before": [p.cpu() for p in before],
                "scale": scaler.get_scale(),
                "tracker": scaler._growth_tracker.item(),
            }
        )
    return history


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("opt_name", ["sgd", "adamw_fused"])
def test_training_matches_cpu_grad_scaler(half, opt_name):
    poison = {2: "nan", 5: "overflow"} if half == torch.float16 else {2: "nan", 5: "nan"}
    cpu = train("cpu", half, opt_name, poison)
    tpu = train("tpu", half, opt_name, poison)
    tol = {"atol": 2e-3, "rtol": 2e-3} if half == torch.float16 else {"atol": 2e-2, "rtol": 2e-2}
    skipped = []
    for step, (c, t) in enumerate(zip(cpu, tpu)):
        # The scale and the tracker follow CPU exactly: same skipped steps, same growth.
        assert t["scale"] == c["scale"], (step, t["scale"], c["scale"])
        assert t["tracker"] == c["tracker"], step
        c_skipped = all(torch.equal(a, b) for a, b in zip(c["params"], c["before"]))
        t_skipped = all(torch.equal(a, b) for a, b in zip(t["params"], t["before"]))
        assert t_skipped == c_skipped, step
        if t_skipped:
            skipped.append(step)
        for a, e in zip(t["params"], c["params"]):
            torch.testing.assert_close(a, e, **tol)
    # The poisoned steps, and only those, were skipped, and each halved the scale.
    assert skipped == sorted(poison)
    for step in skipped:
        prev = cpu[step - 1]["scale"]
        assert tpu[step]["scale"] == prev * 0.5
