"""Derives the Lanczos coefficients of csrc/lowering/special/gamma_math.cpp.

Gamma(z + 1) = sqrt(2 pi) t^(z + 1/2) e^-t A(z),  t = z + g + 1/2,
A(z) ~ c_0 + sum_{k=1..n} c_k / (z + k)

For a chosen (g, n) the c_k are the linear least-squares solution, in relative error, of that
form against mpmath's gamma on z in [-0.5, 400] (cubically clustered towards 0, where lgamma is
small and absolute accuracy matters most). The script prints the coefficients and the maximum
relative error of the form on [-0.5, 2000], then a float32 simulation of lgamma for x >= 0.5
(same operation order as the C++ code) against math.lgamma in units of PyTorch's default
float32 tolerance (atol 1e-5, rtol 1.3e-6). Needs mpmath and numpy.
"""

import math

import mpmath as mp
import numpy as np

mp.mp.dps = 40


def fit(g, n, zmax=400, m=600):
    g = mp.mpf(g)
    zs = [mp.mpf(-0.5) + (mp.mpf(zmax) + 0.5) * (mp.mpf(j) / (m - 1)) ** 3 for j in range(m)]
    rows = []
    for z in zs:
        t = z + g + mp.mpf(1) / 2
        a = mp.gamma(z + 1) / (mp.sqrt(2 * mp.pi) * t ** (z + mp.mpf(1) / 2) * mp.exp(-t))
        rows.append([1 / a] + [1 / ((z + k) * a) for k in range(1, n + 1)])
    c, _ = mp.qr_solve(mp.matrix(rows), mp.matrix([mp.mpf(1)] * m))
    return [c[i] for i in range(n + 1)]


def max_rel_error(c, g):
    g, err = mp.mpf(g), mp.mpf(0)
    for z in np.linspace(-0.5, 2000, 3001):
        z = mp.mpf(z)
        t = z + g + mp.mpf(1) / 2
        s = c[0] + sum(c[k] / (z + k) for k in range(1, len(c)))
        err = max(
            err,
            abs(
                mp.sqrt(2 * mp.pi) * t ** (z + mp.mpf(1) / 2) * mp.exp(-t) * s / mp.gamma(z + 1) - 1
            ),
        )
    return err


def lgamma_f32(x, c, g):
    f = np.float32
    z = x - f(1)
    s = f(c[0])
    for k in range(1, len(c)):
        s = s + f(c[k]) / (z + f(k))
    t = z + f(g + 0.5)
    return (z + f(0.5)) * (np.log(t) - f(1)) + f(0.5 * math.log(2 * math.pi) - g) + np.log(s)


def main():
    for tag, g, n in [("F32", 4.5, 5), ("F64", 7, 9)]:
        c = fit(g, n)
        print(f"kLanczos{tag} (g = {g}):", ", ".join(mp.nstr(v, 17) for v in c))
        print("  max relative error of the form:", mp.nstr(max_rel_error(c, g), 3))
        if tag == "F32":
            xs = np.linspace(0.5, 40, 400001).astype(np.float32)
            ref = np.array([math.lgamma(float(v)) for v in xs])
            err = np.abs(lgamma_f32(xs, [float(v) for v in c], g) - ref)
            print(
                "  float32 lgamma on [0.5, 40]: max error / tolerance",
                (err / (1e-5 + 1.3e-6 * np.abs(ref))).max(),
            )


if __name__ == "__main__":
    main()
