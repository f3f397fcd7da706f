"""Derives the coefficients of csrc/lowering/special/special_math.cpp and checks the formulas.

Every approximation is a Chebyshev interpolant computed with mpmath (50 digits) at Chebyshev
points, which is close to the minimax polynomial of the same degree:

  erf(x) / x          = P(x^2)                           |x| < 1       (monomials in x^2)
  erfc(x) e^(x^2) (1 + 2x) = sum c_k T_k((x - 3) / (x + 3))   x >= 0     (Chebyshev series)
  erfinv(a) / a       = P(w - 2.5), w = -log((1 - a)(1 + a))  w < 5      (Giles' variables)
                      = P(sqrt(w) - 3)                        w >= 5

Run `python tools/fit_special_math.py` to print the coefficient tables and the maximum error
(in ulp) of a numpy simulation that evaluates them in float32 / float64 with the same operation
order as the C++ code, against mpmath. Needs mpmath and numpy.
"""

import mpmath as mp
import numpy as np

mp.mp.dps = 50


def cheb_interp(g, n):
    """Chebyshev coefficients c_0..c_n of g on [-1, 1] (interpolation at n + 1 points)."""
    nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / (n + 1)) for j in range(n + 1)]
    vals = [g(u) for u in nodes]
    c = []
    for m in range(n + 1):
        s = mp.fsum(
            vals[j] * mp.cos(mp.pi * m * (j + mp.mpf(1) / 2) / (n + 1)) for j in range(n + 1)
        )
        c.append(s * 2 / (n + 1))
    c[0] /= 2
    return c


def cheb_to_monomial(c, lo, hi):
    """Chebyshev series on [lo, hi] -> monomial coefficients in t, highest degree first."""
    n = len(c) - 1
    T = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for k in range(2, n + 1):
        a = [mp.mpf(0)] + [2 * v for v in T[k - 1]]
        b = T[k - 2] + [mp.mpf(0)] * (len(a) - len(T[k - 2]))
        T.append([x - y for x, y in zip(a, b)])
    pu = [mp.mpf(0)] * (n + 1)
    for k in range(n + 1):
        for i, v in enumerate(T[k]):
            pu[i] += c[k] * v
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    alpha, beta = 2 / (hi - lo), -(hi + lo) / (hi - lo)  # u = alpha t + beta
    pt = [mp.mpf(0)] * (n + 1)
    for i, v in enumerate(pu):
        for j in range(i + 1):
            pt[j] += v * mp.binomial(i, j) * alpha**j * beta ** (i - j)
    return [float(v) for v in pt[::-1]]


def on_interval(f, lo, hi):
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    return lambda u: f((hi + lo) / 2 + (hi - lo) / 2 * u)


def erf_small(degree):
    def g(z):  # erf(sqrt z) / sqrt z
        return 2 / mp.sqrt(mp.pi) if z == 0 else mp.erf(mp.sqrt(z)) / mp.sqrt(z)

    return cheb_to_monomial(cheb_interp(on_interval(g, 0, 1), degree), 0, 1)


ERFCX_MAP = 3


def erfcx_series(degree):
    def g(u):
        if u == 1:
            return 2 / mp.sqrt(mp.pi)
        x = ERFCX_MAP * (1 + u) / (1 - u)
        return mp.exp(x * x) * mp.erfc(x) * (1 + 2 * x)

    return [float(v) for v in cheb_interp(g, degree)]


def erfinv_ratio(w):
    if w == 0:
        return mp.sqrt(mp.pi) / 2
    a = mp.sqrt(-mp.expm1(-w))
    return mp.erfinv(a) / a


def erfinv_central(degree):
    c = cheb_interp(on_interval(erfinv_ratio, 0, 5), degree)
    return cheb_to_monomial(c, -2.5, 2.5)  # in w - 2.5


def erfinv_tail(degree, s_max):
    c = cheb_interp(on_interval(lambda s: erfinv_ratio(s * s), mp.sqrt(5), s_max), degree)
    return cheb_to_monomial(c, mp.sqrt(5) - 3, s_max - 3)  # in sqrt(w) - 3


COEFFS = {
    "kErfSmallF32": erf_small(5),
    "kErfSmallF64": erf_small(11),
    "kErfcxF32": erfcx_series(11),
    "kErfcxF64": erfcx_series(23),
    "kErfinvWF32": erfinv_central(8),
    "kErfinvSF32": erfinv_tail(8, 4.1),  # float32 reaches 1 - 2^-24: sqrt(w) < 4.1
    "kErfinvWF64": erfinv_central(10),
    "kErfinvSF64": erfinv_tail(12, 6.1),  # float64 reaches 1 - 2^-53: sqrt(w) < 6.1
}


# --- numpy simulation of special_math.cpp --------------------------------------------------


def horner(p, t, dt):
    acc = np.full_like(t, dt(p[0]))
    for v in p[1:]:
        acc = acc * t + dt(v)
    return acc


def clenshaw(c, u, dt):
    b1, b2 = np.zeros_like(u), np.zeros_like(u)
    for ck in c[:0:-1]:
        b1, b2 = dt(2) * u * b1 - b2 + dt(ck), b1
    return u * b1 - b2 + dt(c[0])


def erfc_nonneg(a, dt, tag):
    a = np.minimum(a, dt(30 if tag == "F64" else 12))
    u = (a - dt(ERFCX_MAP)) / (a + dt(ERFCX_MAP))
    s = clenshaw(COEFFS["kErfcx" + tag], u, dt)
    hi = np.round(a * dt(16)) / dt(16)
    lo = a - hi
    e = np.exp(-hi * hi) * (np.expm1(-lo * (a + hi)) + dt(1))
    return e * s / (dt(1) + dt(2) * a)


def erf(x, dt, tag):
    a = np.abs(x)
    small = x * horner(COEFFS["kErfSmall" + tag], x * x, dt)
    return np.where(a < 1, small, np.copysign(dt(1) - erfc_nonneg(a, dt, tag), x))


def erfc(x, dt, tag):
    r = erfc_nonneg(np.abs(x), dt, tag)
    return np.where(x < 0, dt(2) - r, r)


def erfinv(y, dt, tag):
    a = np.abs(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log((dt(1) - a) * (dt(1) + a))
        central = horner(COEFFS["kErfinvW" + tag], w - dt(2.5), dt)
        tail = horner(COEFFS["kErfinvS" + tag], np.sqrt(w) - dt(3), dt)
        x = np.where(w < 5, central, tail) * a
        if tag == "F64":  # two Newton steps
            for _ in range(2):
                small = x * horner(COEFFS["kErfSmall" + tag], x * x, dt) - a
                r = np.where(a < 0.5, small, (dt(1) - a) - erfc_nonneg(x, dt, tag))
                x = x - r / (dt(2 / np.sqrt(np.pi)) * np.exp(-x * x))
    return np.copysign(np.where(a == 1, np.inf, x), y)


def max_ulp(fn, ref, xs, dt):
    got = fn(xs.astype(dt)).astype(np.float64)
    want = np.array([float(ref(mp.mpf(float(v)))) for v in xs.astype(dt)])
    ok = np.abs(want) > np.finfo(dt).tiny
    return float(np.max(np.abs(got - want)[ok] / np.abs(want[ok])) / np.finfo(dt).eps)


def main():
    for name, c in COEFFS.items():
        print(f"{name} ({len(c)}):")
        print("    " + ", ".join(f"{v:.17g}" for v in c))
    for dt, tag, top in ((np.float32, "F32", 9.5), (np.float64, "F64", 26.5)):
        eps = np.finfo(dt).eps
        xs = np.linspace(-6, 6, 6001)
        print(tag, "erf    max ulp", round(max_ulp(lambda x: erf(x, dt, tag), mp.erf, xs, dt), 2))
        xs = np.linspace(-3, top, 6001)
        print(tag, "erfc   max ulp", round(max_ulp(lambda x: erfc(x, dt, tag), mp.erfc, xs, dt), 2))
        tail = 1 - np.geomspace(eps / 2, 0.5, 1500)
        ys = np.concatenate([np.linspace(-0.9999, 0.9999, 4001), tail, -tail])
        ys = ys[np.abs(ys.astype(dt)) < 1]
        print(
            tag,
            "erfinv max ulp",
            round(max_ulp(lambda y: erfinv(y, dt, tag), mp.erfinv, ys, dt), 2),
        )


if __name__ == "__main__":
    main()
