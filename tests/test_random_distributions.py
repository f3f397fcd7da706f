"""Random distributions on tpu against their exact distributions (scipy.stats goodness-of-fit
tests at fixed seeds), PyTorch's errors, seeding and explicit generators: multinomial, the
torch.normal overloads, cauchy_, log_normal_, geometric_, poisson, binomial, gamma (and its
reparameterized gradient), dirichlet and rrelu."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from op_check import assert_same
from scipy import stats

import torch_tpu

pytestmark = pytest.mark.usefixtures("each_mode")

# Goodness-of-fit tests pass when p > P_MIN: a correct sampler fails one in 10^4 seeds, a wrong
# distribution of these sample sizes fails every time.
P_MIN = 1e-4
TPU = "tpu"


def numpy_of(x):
    return x.detach().cpu().double().numpy().ravel()


def assert_ks(sample, dist):
    p = stats.kstest(numpy_of(sample), dist.cdf).pvalue
    assert p > P_MIN, p


def assert_counts(counts, probs):
    """Chi-square of observed category counts against probabilities (categories of expected
    count below 5 are lumped together, so the test's approximation holds)."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    assert counts[probs == 0].sum() == 0, "a category of probability zero was drawn"
    expected = probs * counts.sum()
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    p = stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue
    assert p > P_MIN, p


def assert_discrete(sample, dist):
    """Integer-valued sample against a scipy discrete distribution: one bin per value between
    the 1e-4 and 1 - 1e-4 quantiles, the tails lumped into one bin each."""
    values = numpy_of(sample)
    assert np.all(values == np.round(values))
    assert values.min() >= dist.support()[0] and values.max() <= dist.support()[1]
    lo, hi = int(dist.ppf(1e-4)), int(dist.ppf(1 - 1e-4))
    ks = np.arange(lo, hi + 1)
    counts = [(values < lo).sum()] + [(values == k).sum() for k in ks] + [(values > hi).sum()]
    probs = np.concatenate([[dist.cdf(lo - 1)], dist.pmf(ks), [dist.sf(hi)]])
    assert_counts(counts, probs)


def cpu_error(fn):
    """PyTorch's own error message for fn on CPU."""
    with pytest.raises(RuntimeError) as info:
        fn("cpu")
    return str(info.value)


def assert_runtime_check(fn, message):
    """A data-dependent argument error is a runtime check: raised at the call in debug mode,
    with CPU's message."""
    with torch_tpu.eager_mode("debug"):
        with pytest.raises(RuntimeError) as info:
            fn(TPU)
    assert message in str(info.value)


def assert_reproducible(sample):
    """sample(generator) is the same after torch.manual_seed and with an explicit tpu
    generator of the same seed, and differs between successive draws."""
    torch.manual_seed(7)
    a = sample(None).cpu()
    b = sample(None).cpu()
    torch.manual_seed(7)
    assert torch.equal(sample(None).cpu(), a)
    assert not torch.equal(a, b)
    g = torch.Generator(TPU).manual_seed(11)
    c = sample(g).cpu()
    assert torch.equal(sample(torch.Generator(TPU).manual_seed(11)).cpu(), c)
    assert not torch.equal(sample(g).cpu(), c)


# --- multinomial ----------------------------------------------------------------------------

WEIGHTS = [2.0, 0.0, 1.0, 5.0, 0.0, 2.0, 0.5]


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64], ids=str
)
def test_multinomial_one_sample_per_row(dtype):
    torch.manual_seed(0)
    w = torch.tensor(WEIGHTS, dtype=dtype)
    rows = w.to(TPU).expand(6000, -1)  # unnormalized, batched, a stride-0 input
    s = torch.multinomial(rows, 1)
    assert s.dtype == torch.int64 and s.shape == (6000, 1) and s.device.type == TPU
    p = np.array(WEIGHTS) / sum(WEIGHTS)
    assert_counts(np.bincount(numpy_of(s).astype(int), minlength=len(p)), p)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_multinomial_with_replacement(dtype):
    torch.manual_seed(1)
    w = torch.tensor(WEIGHTS, dtype=dtype, device=TPU)
    s = torch.multinomial(w, 20000, replacement=True)
    assert s.shape == (20000,) and s.dtype == torch.int64
    p = np.array(WEIGHTS) / sum(WEIGHTS)
    assert_counts(np.bincount(numpy_of(s).astype(int), minlength=len(p)), p)
    # 2-d, non-contiguous rows of different weights.
    big = torch.zeros(2, 8, dtype=dtype)
    big[0, ::2] = torch.tensor([1.0, 0.0, 3.0, 0.0], dtype=dtype)
    big[1, ::2] = torch.tensor([0.0, 0.0, 0.0, 2.5], dtype=dtype)
    s = torch.multinomial(big.to(TPU)[:, ::2], 5000, replacement=True)
    assert s.shape == (2, 5000)
    assert_counts(np.bincount(numpy_of(s[0]).astype(int), minlength=4), [0.25, 0, 0.75, 0])
    assert torch.equal(s[1].cpu(), torch.full((5000,), 3))


def test_multinomial_without_replacement_order():
    """The first two draws of a race without replacement follow sequential sampling:
    P(i, j) = w_i / W * w_j / (W - w_i)."""
    torch.manual_seed(2)
    w = [1.0, 2.0, 3.0, 4.0]
    s = torch.multinomial(torch.tensor(w, device=TPU).expand(8000, 4), 4)
    sc = s.cpu()
    assert torch.equal(sc.sort(1).values, torch.arange(4).expand(8000, 4))  # permutations
    total = sum(w)
    probs = np.array(
        [
            [w[i] / total * w[j] / (total - w[i]) if i != j else 0 for j in range(4)]
            for i in range(4)
        ]
    )
    pairs = np.bincount((sc[:, 0] * 4 + sc[:, 1]).numpy(), minlength=16)
    assert_counts(pairs, probs.ravel())


def test_multinomial_without_replacement_zero_weights_come_last():
    torch.manual_seed(3)
    w = torch.tensor([[0.0, 1.0, 0.0, 2.0, 3.0], [4.0, 0.0, 0.0, 0.0, 1e-6]], device=TPU)
    s = torch.multinomial(w, 3).cpu()
    assert set(s[0].tolist()) == {1, 3, 4}
    assert set(s[1, :2].tolist()) == {0, 4} and s[1, 2] in (1, 2, 3)
    # Every category, the zero ones after the positive ones.
    s = torch.multinomial(w, 5).cpu()
    assert set(s[0, :3].tolist()) == {1, 3, 4} and set(s[0, 3:].tolist()) == {0, 2}
    assert set(s[1, :2].tolist()) == {0, 4}


def test_multinomial_out_and_reproducibility():
    w = torch.tensor(WEIGHTS, device=TPU)
    out = torch.empty(3, dtype=torch.int64, device=TPU)
    torch.manual_seed(5)
    r = torch.multinomial(w, 3, out=out)
    assert r is out
    torch.manual_seed(5)
    assert torch.equal(torch.multinomial(w, 3).cpu(), out.cpu())
    assert_reproducible(lambda g: torch.multinomial(w, 50, replacement=True, generator=g))
    assert_reproducible(lambda g: torch.multinomial(w.expand(4, -1), 5, generator=g))


def test_multinomial_errors():
    good = [1.0, 2.0]
    for k, replacement, probs, dtype in [
        (3, False, good, torch.float32),  # more samples than categories
        (1, False, good, torch.int64),  # integer weights
    ]:

        def fn(d, k=k, replacement=replacement, probs=probs, dtype=dtype):
            return torch.multinomial(torch.tensor(probs, dtype=dtype, device=d), k, replacement)

        msg = cpu_error(fn)
        with pytest.raises(RuntimeError) as info:
            fn(TPU)
        assert msg in str(info.value)
    with pytest.raises(RuntimeError, match="must be 1 or 2"):
        torch.multinomial(torch.ones(2, 2, 2, device=TPU), 1)
    inf, nan = math.inf, math.nan
    for probs, k, replacement in [
        ([1.0, -1.0], 1, False),
        ([1.0, inf], 2, False),
        ([[1.0, 2.0], [0.0, 0.0]], 1, True),
        ([1.0, -1.0], 2, True),
        ([1.0, inf], 2, True),
        ([0.0, 0.0], 2, True),
        ([nan, 1.0], 1, False),
    ]:

        def fn(d, probs=probs, k=k, replacement=replacement):
            return torch.multinomial(torch.tensor(probs, device=d), k, replacement)

        assert_runtime_check(fn, cpu_error(fn))


# --- normal with tensor parameters ----------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_normal_tensor_overloads(dtype):
    torch.manual_seed(0)
    mean = torch.tensor([[-3.0], [0.0], [10.0]], dtype=dtype)
    std = torch.tensor([[0.5, 1.0, 2.0, 4.0]], dtype=dtype).repeat(1, 500)
    x = torch.normal(mean.to(TPU), std.to(TPU))
    assert x.shape == (3, 2000) and x.dtype == dtype
    assert_ks((x.cpu() - mean) / std, stats.norm())
    x = torch.normal(mean.to(TPU).expand(3, 3000), 2.5)
    assert_ks((x.cpu() - mean) / 2.5, stats.norm())
    x = torch.normal(-1.5, std.to(TPU))
    assert_ks((x.cpu() + 1.5) / std, stats.norm())
    out = torch.empty(3, 2000, dtype=dtype, device=TPU)
    assert torch.normal(mean.to(TPU), std.to(TPU), out=out) is out
    assert_ks((out.cpu() - mean) / std, stats.norm())
    # A zero std gives the mean exactly.
    assert torch.equal(
        torch.normal(mean.to(TPU), torch.zeros(1, dtype=dtype, device=TPU)).cpu(), mean
    )


def test_normal_tensor_overloads_bf16_and_errors():
    torch.manual_seed(1)
    x = (
        torch.normal(torch.full((20000,), 2.0, dtype=torch.bfloat16, device=TPU), 3.0)
        .cpu()
        .double()
    )
    assert x.dtype == torch.float64 and abs(x.mean() - 2) < 0.1 and abs(x.std() - 3) < 0.1
    assert_reproducible(
        lambda g: torch.normal(torch.zeros(64, device=TPU), torch.ones(64, device=TPU), generator=g)
    )
    fn = lambda d: torch.normal(torch.zeros(3, device=d), torch.tensor([1.0, -1.0, 1.0], device=d))  # noqa: E731
    assert_runtime_check(fn, cpu_error(fn))
    fn = lambda d: torch.normal(0.0, torch.tensor([1.0, math.nan], device=d))  # noqa: E731
    assert_runtime_check(fn, cpu_error(fn))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        torch.normal(torch.zeros(3, device=TPU), -1.0)


# --- cauchy_, log_normal_, geometric_ --------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_cauchy_log_normal(dtype):
    torch.manual_seed(0)
    x = torch.empty(20000, dtype=dtype, device=TPU).cauchy_(1.5, 0.5)
    assert x.dtype == dtype
    assert_ks(x, stats.cauchy(loc=1.5, scale=0.5))
    x = torch.empty(20000, dtype=dtype, device=TPU).log_normal_(0.5, 0.75)
    assert_ks(x, stats.lognorm(s=0.75, scale=math.exp(0.5)))
    # Non-contiguous targets are filled through their view.
    base = torch.zeros(400, 50, dtype=dtype, device=TPU)
    base[:, ::2].log_normal_()
    bc = base.cpu()
    assert torch.all(bc[:, 1::2] == 0) and torch.all(bc[:, ::2] > 0)
    assert_ks(bc[:, ::2], stats.lognorm(s=2.0, scale=math.e))


def test_cauchy_log_normal_geometric_reduced_precision_and_errors():
    torch.manual_seed(1)
    x = torch.empty(20000, dtype=torch.bfloat16, device=TPU).cauchy_().cpu().double()
    assert abs(x.median()) < 0.05
    x = torch.empty(20000, dtype=torch.float16, device=TPU).log_normal_(0.0, 0.5).cpu().double()
    assert x.min() > 0 and abs(x.log().mean()) < 0.02
    assert_reproducible(lambda g: torch.empty(64, device=TPU).cauchy_(generator=g))
    assert_reproducible(lambda g: torch.empty(64, device=TPU).log_normal_(generator=g))
    assert_reproducible(lambda g: torch.empty(64, device=TPU).geometric_(0.3, generator=g))
    for fn in (
        lambda d: torch.empty(3, device=d).cauchy_(0.0, -1.0),
        lambda d: torch.empty(3, device=d).log_normal_(0.0, 0.0),
        lambda d: torch.empty(3, device=d).geometric_(1.5),
        lambda d: torch.empty(3, dtype=torch.int64, device=d).cauchy_(),
    ):
        msg = cpu_error(fn)
        with pytest.raises(RuntimeError) as info:
            fn(TPU)
        assert str(info.value).split("\n")[0][:40] == msg.split("\n")[0][:40]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("p", [0.02, 0.3, 0.9])
def test_geometric(dtype, p):
    torch.manual_seed(2)
    x = torch.empty(20000, dtype=dtype, device=TPU).geometric_(p)
    assert x.dtype == dtype
    xc = x.cpu()
    assert xc.min() >= 1
    assert_discrete(xc, stats.geom(p))


# --- poisson, binomial ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_poisson(dtype):
    """Both samplers (inversion below rate 10, transformed rejection above) in one call."""
    torch.manual_seed(0)
    rates = [0.3, 4.0, 9.9, 10.0, 55.0, 2.5e4]
    x = torch.poisson(torch.tensor(rates, dtype=dtype, device=TPU).repeat(8000, 1))
    assert x.dtype == dtype and x.shape == (8000, len(rates))
    xc = x.cpu()
    for i, lam in enumerate(rates):
        assert_discrete(xc[:, i], stats.poisson(lam))
    assert torch.equal(
        torch.poisson(torch.zeros(5, dtype=dtype, device=TPU)).cpu(), torch.zeros(5, dtype=dtype)
    )


def test_poisson_reduced_precision_errors_and_seeding():
    torch.manual_seed(1)
    x = torch.poisson(torch.full((20000,), 6.0, dtype=torch.bfloat16, device=TPU)).cpu().double()
    assert abs(x.mean() - 6) < 0.1 and abs(x.var() - 6) < 0.3
    fn = lambda d: torch.poisson(torch.tensor([1.0, -1.0], device=d))  # noqa: E731
    assert_runtime_check(fn, cpu_error(fn))
    rates = torch.tensor([3.0, 300.0], device=TPU).repeat(32)
    assert_reproducible(lambda g: torch.poisson(rates, generator=g))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_binomial(dtype):
    """Inversion (n min(p, 1-p) < 10) and BTRS, with and without the p > 1/2 flip, in one call."""
    torch.manual_seed(0)
    params = [(5, 0.3), (40, 0.2), (50, 0.9), (100, 0.3), (1000, 0.85), (200000, 0.001)]
    n = torch.tensor([c for c, _ in params], dtype=dtype, device=TPU).repeat(8000, 1)
    p = torch.tensor([q for _, q in params], dtype=dtype, device=TPU)
    x = torch.binomial(n, p.expand(8000, -1))
    assert x.dtype == dtype and x.shape == (8000, len(params))
    xc = x.cpu()
    for i, (count, prob) in enumerate(params):
        assert_discrete(xc[:, i], stats.binom(count, prob))
    # Decided without sampling: p = 0, p = 1, count = 0, and NaN p, as CPU gives them.
    count = torch.tensor([7.0, 7.0, 0.0, 7.0, -3.0], dtype=dtype)
    prob = torch.tensor([0.0, 1.0, 0.5, math.nan, 0.5], dtype=dtype)
    assert_same(torch.binomial(count.to(TPU), prob.to(TPU)), torch.binomial(count, prob))
    assert_reproducible(
        lambda g: torch.binomial(
            torch.full((64,), 30.0, device=TPU), torch.full((64,), 0.5, device=TPU), generator=g
        )
    )


# --- gamma, dirichlet -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_standard_gamma(dtype):
    """Marsaglia-Tsang, with the U^(1/alpha) boost for alpha < 1, over several alphas at once.
    (Below alpha ~0.1 a float32 sample is often under the smallest normal float, which CPU
    clamps to it too; that regime is checked in float64.)"""
    torch.manual_seed(0)
    alphas = [0.5, 1.0, 3.7, 250.0] + ([0.02] if dtype == torch.float64 else [])
    x = torch._standard_gamma(torch.tensor(alphas, dtype=dtype, device=TPU).repeat(8000, 1))
    assert x.dtype == dtype and x.shape == (8000, len(alphas))
    xc = x.cpu()
    for i, a in enumerate(alphas):
        assert_ks(xc[:, i], stats.gamma(a))
    # alpha = 0 (and below) give the smallest normal number, as on CPU.
    a = torch.tensor([0.0, -1.0], dtype=dtype)
    assert_same(torch._standard_gamma(a.to(TPU)), torch._standard_gamma(a))
    assert_reproducible(
        lambda g: torch._standard_gamma(torch.full((64,), 0.7, device=TPU), generator=g)
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_standard_gamma_grad_matches_cpu(dtype):
    # Points in each of CPU's regimes: x < 0.8 series, alpha > 8 saddle point (near x ~ alpha
    # and away from it), and the rational fit.
    alpha = torch.tensor([0.3, 2.0, 0.9, 10.0, 50.0, 50.0, 20.0, 1.5, 7.0, 3.0], dtype=dtype)
    x = torch.tensor([0.1, 0.5, 0.79, 10.5, 52.0, 30.0, 40.0, 1.2, 9.0, 0.8], dtype=dtype)
    assert_same(
        torch._standard_gamma_grad(alpha.to(TPU), x.to(TPU)), torch._standard_gamma_grad(alpha, x)
    )
    # Gamma.rsample's backward is that gradient over the rate.
    torch.manual_seed(2)
    conc = torch.tensor([0.4, 2.0, 15.0], dtype=dtype, device=TPU).requires_grad_()
    rate = torch.tensor([2.0, 0.5, 1.0], dtype=dtype, device=TPU)
    sample = torch.distributions.Gamma(conc, rate).rsample()
    sample.sum().backward()
    expected = (
        torch._standard_gamma_grad(conc.detach().cpu(), (sample * rate).detach().cpu()) / rate.cpu()
    )
    assert_same(conc.grad, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_dirichlet(dtype):
    torch.manual_seed(0)
    conc = [0.3, 1.0, 4.0, 0.05]
    x = torch._sample_dirichlet(torch.tensor(conc, dtype=dtype, device=TPU).expand(8000, -1))
    assert x.dtype == dtype and x.shape == (8000, 4)
    xc = x.cpu().double()
    torch.testing.assert_close(xc.sum(1), torch.ones(8000, dtype=torch.float64))
    total = sum(conc)
    for i, a in enumerate(conc[:3]):  # marginals are Beta(a_i, total - a_i)
        assert_ks(xc[:, i], stats.beta(a, total - a))
    d = torch.distributions.Dirichlet(torch.tensor([2.0, 3.0], dtype=dtype, device=TPU))
    assert_ks(d.sample((8000,))[:, 0], stats.beta(2.0, 3.0))
    assert_reproducible(
        lambda g: torch._sample_dirichlet(torch.ones(16, 3, device=TPU), generator=g)
    )


# --- rrelu ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_rrelu_training(dtype):
    torch.manual_seed(0)
    lower, upper = 0.1, 0.4
    x_cpu = torch.randn(20000, dtype=dtype)
    x_cpu[:10] = 0.0  # x == 0 draws a slope too, as on CPU
    x = x_cpu.to(TPU).requires_grad_()
    noise = torch.empty(20000, dtype=dtype, device=TPU)
    y = torch.ops.aten.rrelu_with_noise(x, noise, lower, upper, True)
    yc, nc = y.detach().cpu(), noise.cpu()
    neg = x_cpu <= 0
    assert torch.equal(nc[~neg], torch.ones_like(nc[~neg]))
    assert torch.equal(yc[~neg], x_cpu[~neg])
    # CPU multiplies by the slope before rounding it into the bf16 noise.
    opmath = torch.float64 if dtype == torch.float64 else torch.float32
    tol = {"rtol": 2**-7, "atol": 0} if dtype == torch.bfloat16 else {"rtol": 0, "atol": 0}
    torch.testing.assert_close(yc, (x_cpu.to(opmath) * nc.to(opmath)).to(dtype), **tol)
    slopes = nc[neg]
    assert slopes.min() >= lower and slopes.max() <= upper
    if dtype != torch.bfloat16:
        assert_ks(slopes, stats.uniform(loc=lower, scale=upper - lower))
    # Backward equals CPU's given the same noise.
    g = torch.randn(20000, dtype=dtype)
    y.backward(g.to(TPU))
    expected = torch.ops.aten.rrelu_with_noise_backward(g, x_cpu, nc, lower, upper, True, False)
    assert_same(x.grad, expected)


def test_rrelu_functional_forms():
    torch.manual_seed(1)
    x_cpu = torch.randn(4, 300)
    x = x_cpu.to(TPU).requires_grad_()
    y = F.rrelu(x, 0.2, 0.3, training=True)
    ratio = (y.detach().cpu() / x_cpu)[x_cpu < 0]
    assert ratio.min() >= 0.2 - 1e-6 and ratio.max() <= 0.3 + 1e-6 and ratio.std() > 0.02
    y.sum().backward()
    assert torch.allclose(x.grad.cpu()[x_cpu < 0], ratio) and torch.all(
        x.grad.cpu()[x_cpu > 0] == 1
    )
    # In place, on a non-contiguous view.
    base = x_cpu.to(TPU).clone()
    view = base[:, ::2]
    F.rrelu(view, 0.2, 0.3, training=True, inplace=True)
    bc = base.cpu()
    assert torch.equal(bc[:, 1::2], x_cpu[:, 1::2])
    r = (bc[:, ::2] / x_cpu[:, ::2])[x_cpu[:, ::2] < 0]
    assert r.min() >= 0.2 - 1e-6 and r.max() <= 0.3 + 1e-6
    out, noise = torch.ops.aten.rrelu_with_noise_functional(
        x.detach(), torch.empty_like(x), 0.2, 0.3, True
    )
    assert torch.equal(out.cpu(), (x_cpu * noise.cpu()))
    # The out= form writes the noise and out (of the right size; it does not resize out).
    out, noise = torch.empty_like(x), torch.empty_like(x)
    r = torch.ops.aten.rrelu_with_noise.out(x.detach(), noise, 0.2, 0.3, True, out=out)
    assert r is out and torch.equal(out.cpu(), x_cpu * noise.cpu())
    neg = torch.full((64,), -1.0, device=TPU)
    assert_reproducible(
        lambda g: torch.ops.aten.rrelu_with_noise(
            neg, torch.empty_like(neg), 0.1, 0.3, True, generator=g
        )
    )


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str
)
def test_rrelu_eval_matches_cpu(dtype):
    x = torch.randn(5, 7, dtype=dtype)
    x[0, 0] = 0.0
    for lower, upper in [(0.125, 1 / 3), (0.1, 0.7)]:
        assert_same(F.rrelu(x.to(TPU), lower, upper), F.rrelu(x, lower, upper))
        noise_cpu, noise = torch.full_like(x, 7.0), torch.full_like(x, 7.0).to(TPU)
        assert_same(
            torch.ops.aten.rrelu_with_noise(x.to(TPU), noise, lower, upper, False),
            torch.ops.aten.rrelu_with_noise(x, noise_cpu, lower, upper, False),
        )
        assert_same(noise, noise_cpu)  # untouched
    xg = x.to(TPU).requires_grad_()
    xc = x.clone().requires_grad_()
    F.rrelu(xg).sum().backward()
    F.rrelu(xc).sum().backward()
    assert_same(xg.grad, xc.grad)
