"""Derives the Chebyshev series of csrc/lowering/special/bessel_math.cpp.

Every function is written as a smooth remainder on an interval, mapped to u in [-1, 1] and
interpolated there at Chebyshev points with mpmath (40 digits); the series is then truncated
where its coefficients fall below the target precision (f64: 1e-17, f32: 3e-9 of the largest):

  i0e(x)                              x in [0, 8]    u = x/4 - 1
  sqrt(x) i0e(x)                      x >= 8         u = 16/x - 1
  I1(x) e^(-x/2) / x                  x in [0, 8]    u = x/4 - 1  (flat: no cancellation)
  sqrt(x) i1e(x)                      x >= 8         u = 16/x - 1
  K0(x) + log(x/2) I0(x)              x in [0, 2]    u = x^2/2 - 1
  sqrt(x) e^x K0(x)                   x >= 2         u = 4/x - 1
  x (K1(x) - log(x/2) I1(x))          x in [0, 2]    u = x^2/2 - 1
  sqrt(x) e^x K1(x)                   x >= 2         u = 4/x - 1
  J0(x)                               x in [0, 8]    u = x^2/32 - 1
  Y0(x) - 2/pi log(x/2) J0(x)         x in [0, 8]
  J1(x) / x                           x in [0, 8]
  (Y1(x) - 2/pi (log(x/2) J1(x) - 1/x)) / x   x in [0, 8]
  P_n(x), x Q_n(x) (n = 0, 1)         x >= 8         u = 128/x^2 - 1
  Ai(x)                               x in [-2, 2]   u = x/2
  2 sqrt(pi) x^(1/4) e^zeta Ai(x)     x >= 2         u = 2 zeta(2)/zeta - 1,  zeta = 2/3 x^(3/2)
  F(t), G(t)                          t = -x >= 2    the same u in zeta(t)
with the Hankel form J_n + i Y_n = sqrt(2/(pi x)) (P_n + i Q_n) e^(i (x - (2n+1) pi/4)) and
the oscillatory Airy form sqrt(pi) t^(1/4) Ai(-t) = sin(phi) F - cos(phi) G, phi = zeta + pi/4
(F = sqrt(pi) t^(1/4) (Ai sin phi + Bi cos phi), G = sqrt(pi) t^(1/4) (Bi sin phi - Ai cos phi)).

Run `python tools/fit_bessel_math.py` to print the C++ tables. Needs mpmath.
"""

import mpmath as mp

mp.mp.dps = 40


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


def truncate(c, rel):
    top = max(abs(v) for v in c)
    k = len(c)
    while k > 1 and abs(c[k - 1]) < rel * top:
        k -= 1
    return c[:k]


def hankel_pq(n, x):
    chi = x - (2 * n + 1) * mp.pi / 4
    h = (mp.besselj(n, x) + 1j * mp.bessely(n, x)) * mp.exp(-1j * chi) / mp.sqrt(2 / (mp.pi * x))
    return mp.re(h), mp.im(h)


ZETA2 = mp.mpf(2) / 3 * 2 * mp.sqrt(2)


def t_of_u(u):
    """t >= 2 with 2 zeta(2) / zeta(t) - 1 = u."""
    zeta = 2 * ZETA2 / (u + 1)
    return (3 * zeta / 2) ** (mp.mpf(2) / 3)


def airy_fg(t):
    zeta = mp.mpf(2) / 3 * t * mp.sqrt(t)
    phi = zeta + mp.pi / 4
    ai, bi = mp.airyai(-t), mp.airybi(-t)
    scale = mp.sqrt(mp.pi) * t ** (mp.mpf(1) / 4)
    return scale * (ai * mp.sin(phi) + bi * mp.cos(phi)), scale * (
        bi * mp.sin(phi) - ai * mp.cos(phi)
    )


def log_half(x):
    return mp.log(x / 2)


SERIES = {
    "I0Small": (lambda x: mp.besseli(0, x) * mp.exp(-x), lambda u: 4 * (u + 1)),
    "I0Large": (lambda x: mp.sqrt(x) * mp.besseli(0, x) * mp.exp(-x), lambda u: 16 / (u + 1)),
    "I1Small": (lambda x: mp.besseli(1, x) * mp.exp(-x / 2) / x, lambda u: 4 * (u + 1)),
    "I1Large": (lambda x: mp.sqrt(x) * mp.besseli(1, x) * mp.exp(-x), lambda u: 16 / (u + 1)),
    "K0Small": (
        lambda x: mp.besselk(0, x) + log_half(x) * mp.besseli(0, x),
        lambda u: mp.sqrt(2 * (u + 1)),
    ),
    "K0Large": (lambda x: mp.sqrt(x) * mp.exp(x) * mp.besselk(0, x), lambda u: 4 / (u + 1)),
    "K1Small": (
        lambda x: x * (mp.besselk(1, x) - log_half(x) * mp.besseli(1, x)),
        lambda u: mp.sqrt(2 * (u + 1)),
    ),
    "K1Large": (lambda x: mp.sqrt(x) * mp.exp(x) * mp.besselk(1, x), lambda u: 4 / (u + 1)),
    "J0Small": (lambda x: mp.besselj(0, x), lambda u: mp.sqrt(32 * (u + 1))),
    "Y0Small": (
        lambda x: mp.bessely(0, x) - 2 / mp.pi * log_half(x) * mp.besselj(0, x),
        lambda u: mp.sqrt(32 * (u + 1)),
    ),
    "J1Small": (lambda x: mp.besselj(1, x) / x, lambda u: mp.sqrt(32 * (u + 1))),
    "Y1Small": (
        lambda x: (mp.bessely(1, x) - 2 / mp.pi * (log_half(x) * mp.besselj(1, x) - 1 / x)) / x,
        lambda u: mp.sqrt(32 * (u + 1)),
    ),
    "AiMid": (lambda x: mp.airyai(x), lambda u: 2 * u),
    "AiPos": (
        lambda x: (
            2
            * mp.sqrt(mp.pi)
            * x ** (mp.mpf(1) / 4)
            * mp.exp(mp.mpf(2) / 3 * x * mp.sqrt(x))
            * mp.airyai(x)
        ),
        t_of_u,
    ),
    "AiNegF": (lambda t: airy_fg(t)[0], t_of_u),
    "AiNegG": (lambda t: airy_fg(t)[1], t_of_u),
    "P0": (lambda x: hankel_pq(0, x)[0], lambda u: mp.sqrt(128 / (u + 1))),
    "Q0": (lambda x: x * hankel_pq(0, x)[1], lambda u: mp.sqrt(128 / (u + 1))),
    "P1": (lambda x: hankel_pq(1, x)[0], lambda u: mp.sqrt(128 / (u + 1))),
    "Q1": (lambda x: x * hankel_pq(1, x)[1], lambda u: mp.sqrt(128 / (u + 1))),
}


def fmt(name, c):
    body = ", ".join(mp.nstr(v, 17) for v in c)
    return f"const std::vector<double> k{name} = {{{body}}};"


def main(degree=48):
    for name, (f, x_of_u) in SERIES.items():
        # x -> inf (u = -1) and x = 0 limits are approached, never evaluated.
        g = lambda u: f(x_of_u(u))  # noqa: E731
        c = cheb_interp(g, degree)
        print(fmt(name + "F64", truncate(c, 1e-17)))
        print(fmt(name + "F32", truncate(c, 3e-9)))


if __name__ == "__main__":
    main()
